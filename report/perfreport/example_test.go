package perfreport_test

import (
	"fmt"
	"os"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/perfreport"
	"github.com/vllm-cibench/cibench/runtype"
)

// Example 把采样器与别的出口并列交给 loadgen（这里直接喂两条记录），记下汇总行与样本：
// 汇总行进 summary.json 的 "perf" 键，样本只写 perf/samples.json（性能门禁的置信区间用它）。
func Example() {
	root, _ := os.MkdirTemp("", "artifacts")
	defer os.RemoveAll(root)
	run, _ := report.NewRun(root, runtype.PR, "1", time.Now(), report.WithRenderers(perfreport.Renderer()))

	coll := perfreport.NewSampleCollector("openai-chat", "climb", 0)
	obs := coll.Observer() // loadgen.Tee(csv.Observer(), coll.Observer()) 交给 loadgen.Run
	g := loadgen.Group{InputLength: 128, OutputLength: 128, Concurrency: 2}
	start := time.Unix(0, 0)
	_ = obs.OnRecord(&loadgen.Record{Group: g, OK: true, TTFT: 20 * time.Millisecond, E2E: 300 * time.Millisecond, Intended: start})
	_ = obs.OnRecord(&loadgen.Record{Group: g, OK: true, TTFT: 25 * time.Millisecond, E2E: 320 * time.Millisecond, Intended: start.Add(time.Millisecond)})

	row := loadgen.Summary{InputLength: 128, OutputLength: 128, Concurrency: 2, Backend: "openai-chat", ControlMethod: "climb", NumPrompts: 2, Succeeded: 2}
	_ = perfreport.RecordRows(run, "emu", []loadgen.Summary{row})
	_ = perfreport.RecordSamples(run, "emu", coll.Samples())

	sc := run.Result().Scenarios[0]
	rows, _ := perfreport.Rows(sc)
	samples, _ := perfreport.SamplesOf(sc)
	_, inSummary := sc.Sections[perfreport.SamplesSection().Key]
	fmt.Println(len(rows), samples[0].Seen, samples[0].TTFTMicros, inSummary)
	// Output:
	// 1 2 [20000 25000] false
}
