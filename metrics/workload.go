package metrics

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-cibench/cibench/loadgen"
)

// LabelTurn 是多轮会话按轮次导出的序列的轮次标签（1 起；轮数有上限 loadgen.MaxTurns，基数有界）。
const LabelTurn = "turn"

// addTurns 导出多轮会话每个轮次的 TTFT（summary 族 perf_turn_ttft_seconds，标签在分组组合之外
// 加 turn）：第 k 轮的 prompt 带着前 k−1 轮的问答，轮次越大 TTFT 越低说明服务端的前缀缓存在起作用。
func (b *Builder) addTurns(s *loadgen.Summary, combo []string) error {
	if len(s.Workload.Turns) == 0 {
		return nil
	}
	labels := append(append([]string(nil), comboLabels...), LabelTurn)
	for _, t := range s.Workload.Turns {
		if !t.TTFT.Valid() {
			continue
		}
		l := t.TTFT
		qs := map[float64]float64{0.5: l.P50.Seconds(), 0.9: l.P90.Seconds(), 0.99: l.P99.Seconds()}
		vals := append(append([]string(nil), combo...), strconv.Itoa(t.Turn))
		m, err := prometheus.NewConstSummary(b.desc(NamePerfTurnTTFT, "Multi-turn sessions: time to first token by turn index (quantiles, _sum, _count)", labels),
			uint64(l.Count), l.Avg.Seconds()*float64(l.Count), qs, vals...)
		if err != nil {
			return fmt.Errorf("metrics: build %s: %w", MetricName(b.prefix, NamePerfTurnTTFT), err)
		}
		b.out.metrics = append(b.out.metrics, m)
	}
	return nil
}
