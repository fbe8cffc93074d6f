package perfreport_test

import (
	"os"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/perfreport"
	"github.com/vllm-cibench/cibench/runtype"
)

// TestRecordingNothingIsNotAnError 是 issue 36 那个缺陷（每个请求都失败的档位让性能阶段多报一个
// "section samples: nothing to record (nil value)"）在本包其他记录函数上的同类检查：没有样本、没有
// 时间线行、没有容量结论、没有汇总行的运行都如实记为空列表，而不是失败。
func TestRecordingNothingIsNotAnError(t *testing.T) {
	run, err := newRun(t.TempDir(), runtype.PR, "empty", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := run.AddScenario(report.ScenarioInfo{Name: "emu"}); err != nil {
		t.Fatal(err)
	}
	for name, rec := range map[string]func() error{
		"samples":  func() error { return perfreport.RecordSamples(run, "emu", nil) },
		"timeline": func() error { return perfreport.RecordTimeline(run, "emu", nil) },
		"capacity": func() error { return perfreport.RecordCapacity(run, "emu", nil) },
		"rows":     func() error { return perfreport.RecordRows(run, "emu", nil) },
	} {
		if err := rec(); err != nil {
			t.Errorf("%s: recording nothing failed: %v", name, err)
		}
	}
	res, err := report.Load(os.DirFS(run.Dir()))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := perfreport.Rows(res.Scenarios[0])
	if err != nil || len(rows) != 0 {
		t.Fatalf("rows %v err %v", rows, err)
	}
}
