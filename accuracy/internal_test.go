package accuracy

import (
	"math"
	"strings"
	"testing"
)

// TestAggregateNumpy 校验均值/总体标准差与 Python 的键顺序规则。
func TestAggregateNumpy(t *testing.T) {
	// 离差平方之和精确舍入后就是 1.2000000000000002，因此 numpy 得到 ...565 而不是 sqrt(0.24)。
	if got := npStd([]float64{1, 0, 1, 1, 0}); got != 0.48989794855663565 {
		t.Errorf("std=%v", got)
	}
	if got := npMean([]float64{1, 0, 1, 1, 0}); got != 0.6 {
		t.Errorf("mean=%v", got)
	}
	if !math.IsNaN(npMean(nil)) || !math.IsNaN(npStd(nil)) {
		t.Error("empty must be NaN")
	}
	// 成对求和与顺序求和在这组数上结果不同：numpy 的 8 路展开先把 1e16 与 -1e16 抵消。
	xs := []float64{1e16, 1, 1, 1, 1, 1, 1, 1, -1e16, 1, 1, 1, 1, 1, 1, 1}
	naive := 0.0
	for _, x := range xs {
		naive += x
	}
	if pw := pairwiseSum(xs); pw == naive || pw != 14 {
		t.Errorf("pairwise=%v naive=%v", pw, naive)
	}
	// 超过 128 个元素时递归对半；超过 8192 时按缓冲块累加。
	big := make([]float64, 20000)
	for i := range big {
		big[i] = 0.1
	}
	if got := npSum(big); math.Abs(got-2000) > 1e-9 {
		t.Errorf("sum=%v", got)
	}
	if npSum(big) != pairwiseSum(big[:8192])+pairwiseSum(big[8192:16384])+pairwiseSum(big[16384:]) {
		t.Error("blocked summation order changed")
	}
	// 真实的 numpy 输出：openai/simple-evals 仓库 results/2024-11-28_05-04-56/mgsm_customgpt.json
	// （每语言 1 题的 debug 运行）。11 个值走 8 路展开分支，键序也与该文件一致。
	var mg []SingleResult
	for _, l := range []struct {
		lang  string
		score float64
	}{{"bn", 0}, {"de", 1}, {"en", 1}, {"es", 1}, {"fr", 1}, {"ja", 1}, {"ru", 1}, {"sw", 1}, {"te", 0}, {"th", 0}, {"zh", 1}} {
		group := "group_non_latin"
		if strings.Contains("de en es fr sw", l.lang) {
			group = "group_latin"
		}
		mg = append(mg, SingleResult{Score: l.score, Metrics: Metrics{{l.lang, l.score}, {group, l.score}}})
	}
	r := EvalResult{Examples: 11}
	r.Score, r.Metrics, r.MetricOrder = aggregate(mg)
	var js strings.Builder
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	const wantMGSM = "{\n  \"bn\": 0.0,\n  \"bn:std\": 0.0,\n  \"group_non_latin\": 0.5,\n  \"group_non_latin:std\": 0.5,\n  \"score:std\": 0.4453617714151233,\n  \"de\": 1.0,\n  \"de:std\": 0.0,\n  \"group_latin\": 1.0,\n  \"group_latin:std\": 0.0,\n  \"en\": 1.0,\n  \"en:std\": 0.0,\n  \"es\": 1.0,\n  \"es:std\": 0.0,\n  \"fr\": 1.0,\n  \"fr:std\": 0.0,\n  \"ja\": 1.0,\n  \"ja:std\": 0.0,\n  \"ru\": 1.0,\n  \"ru:std\": 0.0,\n  \"sw\": 1.0,\n  \"sw:std\": 0.0,\n  \"te\": 0.0,\n  \"te:std\": 0.0,\n  \"th\": 0.0,\n  \"th:std\": 0.0,\n  \"zh\": 1.0,\n  \"zh:std\": 0.0,\n  \"score\": 0.7272727272727273\n}"
	if js.String() != wantMGSM {
		t.Errorf("mgsm json:\n%s\nwant\n%s", js.String(), wantMGSM)
	}

	singles := []SingleResult{
		{Score: 1, Metrics: Metrics{{"stem", 1}}},
		{Score: 0, Metrics: Metrics{{"other", 0}}},
		{Score: 1, Metrics: Metrics{{"stem", 1}}},
	}
	score, m, order := aggregate(singles)
	want := []string{"stem", "stem:std", "score:std", "other", "other:std", "score"}
	if strings.Join(order, ",") != strings.Join(want, ",") || score != 2.0/3 || m["other"] != 0 || m["stem:std"] != 0 {
		t.Errorf("order=%v score=%v m=%v", order, score, m)
	}
}
