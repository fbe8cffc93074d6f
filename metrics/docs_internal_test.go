package metrics

import (
	"os"
	"strings"
	"testing"
)

// TestDocsListEveryFamily 防止文档与代码漂移：docs/metrics.md 必须提到每个导出的指标族名
// （min/max/avg 以 perf_{min,max,avg}_… 的写法出现时也算）。
func TestDocsListEveryFamily(t *testing.T) {
	raw, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Skipf("docs not available: %v", err)
	}
	doc := string(raw)
	var names []string
	for _, d := range distSpecs {
		names = append(names, d.name)
	}
	for _, s := range scalarSpecs {
		names = append(names, s.name)
	}
	names = append(names, NameRunInfo, NamePerfInfo, NameFunctionalPassRatio, NameFunctionalCasesTotal, NameFunctionalCasesFailed,
		NameFunctionalCasesPassed, NameFunctionalCasesSkipped, NameFunctionalCasePass, NameFunctionalCaseDuration,
		NameFunctionalDuration, NameAccuracyScore, NameAccuracyExamples, NameAccuracyMetric, NameAccuracyDataInfo,
		NameAccuracyRequests, NameAccuracyFailedRequests)
	for _, n := range names {
		if !strings.Contains(doc, "`"+n) && !strings.Contains(doc, n+"`") && !strings.Contains(doc, n+"{") {
			t.Errorf("docs/metrics.md does not mention %s", n)
		}
	}
}
