package metrics

import (
	"fmt"
	"io"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// WriteText 把 res 转换为 Prometheus 文本暴露格式写入 w（带运行标签），
// 用作每次运行（含 PR）的产物 metrics.prom：PR 不推送，但结果仍可审阅、可离线导入。
func WriteText(w io.Writer, res Results, opts Options) error {
	c, err := NewCollector(res, opts)
	if err != nil {
		return err
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		return fmt.Errorf("metrics: write text: %w", err)
	}
	mfs, err := reg.Gather()
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
