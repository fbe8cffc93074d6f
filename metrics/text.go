package metrics

import (
	"fmt"
	"io"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// NewRegistry 返回注册了 collectors 的 pedantic 注册表（注册时检查名字冲突与一致性，
// 采集时检查每个指标），可直接作为 prometheus.Gatherer 交给 Pusher.Push 或 WriteText。
// nil 元素被跳过（未运行的阶段）。
func NewRegistry(collectors ...prometheus.Collector) (*prometheus.Registry, error) {
	reg := prometheus.NewPedanticRegistry()
	for _, c := range collectors {
		if c == nil {
			continue
		}
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}
	return reg, nil
}

// WriteText 把 g 采集到的全部指标以 Prometheus 文本暴露格式写入 w，用作每次运行（含 PR）的
// 产物 metrics.prom：PR 不推送，但结果仍可审阅、可离线导入。本地暴露时各 Collector 通常
// 以 RunInfo.Labels() 作为 Options.ConstLabels 构造。
func WriteText(w io.Writer, g prometheus.Gatherer) error {
	mfs, err := g.Gather()
	if err != nil {
		return fmt.Errorf("metrics: write text: %w", err)
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("metrics: write text: %w", err)
		}
	}
	return nil
}
