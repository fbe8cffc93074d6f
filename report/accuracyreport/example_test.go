package accuracyreport_test

import (
	"fmt"
	"os"
	"time"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/accuracyreport"
	"github.com/vllm-cibench/cibench/runtype"
)

// Example 追加一项精度结果并读回：门禁结论来自 accuracy.Gate（与精度门禁、驱动同一个函数）。
func Example() {
	root, _ := os.MkdirTemp("", "artifacts")
	defer os.RemoveAll(root)
	run, _ := report.NewRun(root, runtype.PR, "1", time.Now(), report.WithRenderers(accuracyreport.Renderer()))
	threshold := 0.5
	_ = accuracyreport.Record(run, "emu", accuracyreport.Result{Threshold: &threshold,
		Result: accuracy.EvalResult{Dataset: "gpqa", Score: 0.42, Examples: 20, Planned: 20, Requests: 20}})

	rs, _ := accuracyreport.Results(run.Result().Scenarios[0])
	v := rs[0].Verdict()
	fmt.Println(rs[0].Result.Dataset, v.Pass, v.Reason)
	// Output:
	// gpqa false score 0.4200 < threshold 0.5000
}
