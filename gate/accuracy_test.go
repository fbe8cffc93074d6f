package gate_test

import (
	"math"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/gate"
)

// TestJudgeAccuracy 逐条核对精度门禁规则的唯一实现：判定顺序（指标缺失 → 部分运行 → 没有
// 样本 → 失败比例 → 阈值）、没有阈值时只判前置条件、非 score 指标、NaN，以及判定与
// AccuracyGate 的对应（skipped / fail / pass）。
func TestJudgeAccuracy(t *testing.T) {
	th := func(v float64) *float64 { return &v }
	ok := gate.AccuracyOutcome{Dataset: "gpqa", Score: 0.5, Examples: 10, Planned: 10, Requests: 10}
	for _, c := range []struct {
		name   string
		rule   gate.AccuracyRule
		mod    func(o *gate.AccuracyOutcome)
		pass   bool
		reason string
		gv     gate.Verdict
	}{
		{"pass", gate.AccuracyRule{Threshold: th(0.4)}, nil, true, "score 0.5000 >= threshold 0.4000", gate.VerdictPass},
		{"below", gate.AccuracyRule{Threshold: th(0.6)}, nil, false, "score 0.5000 < threshold 0.6000", gate.VerdictFail},
		{"missing metric", gate.AccuracyRule{Metric: "f1_score", Threshold: th(0.1)}, nil, false, `metric "f1_score" not produced by gpqa`, gate.VerdictFail},
		{"other metric", gate.AccuracyRule{Metric: "f1_score", Threshold: th(60)}, func(o *gate.AccuracyOutcome) { o.Metrics = map[string]float64{"f1_score": 70} }, true, "f1_score 70.0000 >= threshold 60.0000", gate.VerdictPass},
		{"partial beats a good score", gate.AccuracyRule{Threshold: th(0.1)}, func(o *gate.AccuracyOutcome) { o.Partial, o.Examples = true, 3 }, false, "partial run: 3 of 10 examples", gate.VerdictFail},
		{"no examples", gate.AccuracyRule{}, func(o *gate.AccuracyOutcome) { o.Examples = 0 }, false, "no examples were scored", gate.VerdictFail},
		{"errors over the limit", gate.AccuracyRule{Threshold: th(0.1), MaxErrorRate: 0.1}, func(o *gate.AccuracyOutcome) {
			o.Errors, o.ErrorClasses = 2, map[string]int{"timeout": 1, "http_500": 1}
		}, false, "2 of 10 requests failed (http_500: 1, timeout: 1), error rate 0.2000 > max_error_rate 0.1000", gate.VerdictFail},
		{"errors unclassified", gate.AccuracyRule{}, func(o *gate.AccuracyOutcome) { o.Errors, o.Requests = 1, 0 }, false, "(unclassified)", gate.VerdictFail},
		{"errors at the limit", gate.AccuracyRule{Threshold: th(0.1), MaxErrorRate: 0.2}, func(o *gate.AccuracyOutcome) { o.Errors = 2 }, true, ">= threshold", gate.VerdictPass},
		{"not gated", gate.AccuracyRule{}, nil, true, "score 0.5000 not gated (no threshold: built-in sample or report_only); 0 of 10 requests failed", gate.VerdictSkipped},
		{"NaN", gate.AccuracyRule{Threshold: th(0)}, func(o *gate.AccuracyOutcome) { o.Score = math.NaN() }, false, "score is NaN", gate.VerdictFail},
	} {
		o := ok
		if c.mod != nil {
			c.mod(&o)
		}
		v := gate.JudgeAccuracy(c.rule, o)
		if v.Pass != c.pass || !strings.Contains(v.Reason, c.reason) {
			t.Errorf("%s: pass=%v %q, want pass=%v containing %q", c.name, v.Pass, v.Reason, c.pass, c.reason)
		}
		if v.ScoreGated != (c.rule.Threshold != nil) || v.Dataset != "gpqa" {
			t.Errorf("%s: verdict %+v", c.name, v)
		}
		if v.ErrorRateExceeded != strings.HasPrefix(c.name, "errors") && c.name != "errors at the limit" {
			t.Errorf("%s: ErrorRateExceeded = %v", c.name, v.ErrorRateExceeded)
		}
		g := gate.AccuracyGate(gate.Scenario{Name: "s"}, v.Input(o))
		if g.Verdict != c.gv || g.Reason != v.Reason || g.Name != "accuracy/gpqa" {
			t.Errorf("%s: gate %s %q, want %s", c.name, g.Verdict, g.Reason, c.gv)
		}
	}
}
