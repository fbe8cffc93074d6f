package main

// 容量扫描（control_method: sweep）的命令行选项与输出。这些选项是 cibench 自己的
// （acs-bench 没有对应项），集中在这一个小块里，与 profDefs 的 acs-bench 选项表分开。

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
)

// sweepDefs 返回容量扫描的长选项（只有长名）。--sweep 打开扫描，其余选项对应
// Profile.Sweep 的 YAML 键（sweep.*）；未给出的取 loadgen 的默认值。
func sweepDefs() []*optDef {
	s := func(o *options) *loadgen.SweepConfig { return &o.p.Sweep }
	return []*optDef{
		{long: "sweep", kind: kBool, def: "false", field: "control_method",
			help: "capacity sweep: raise the open-loop arrival rate until the --goodput SLOs (ttft or e2e) stop holding or errors appear",
			setBool: func(o *options, v bool) {
				if v {
					o.p.ControlMethod = loadgen.ControlSweep
				}
			}},
		{long: "sweep-start-rate", kind: kFloat, def: "1", field: "sweep.start_rate", min: 1e-3, max: loadgen.MaxRequestRate,
			help: "sweep: first arrival rate (req/s)", setFloat: func(o *options, v float64) error { s(o).StartRate = v; return nil }},
		{long: "sweep-max-rate", kind: kFloat, def: "1024", field: "sweep.max_rate", min: 1e-3, max: loadgen.MaxRequestRate,
			help: "sweep: highest arrival rate tried (req/s)", setFloat: func(o *options, v float64) error { s(o).MaxRate = v; return nil }},
		{long: "sweep-growth", kind: kFloat, def: "2", field: "sweep.growth", min: 1.01, max: 100,
			help: "sweep: rate factor per step until the first failing step", setFloat: func(o *options, v float64) error { s(o).Growth = v; return nil }},
		{long: "sweep-precision", kind: kFloat, def: "0.05", field: "sweep.precision", min: 1e-3, max: 0.999,
			help: "sweep: stop bisecting when (failing − passing)/passing ≤ this", setFloat: func(o *options, v float64) error { s(o).Precision = v; return nil }},
		{long: "sweep-step-duration", kind: kDuration, def: "10s", field: "sweep.step_duration",
			help: "sweep: planned length of a step (requests = max(min, rate × duration))", setDur: func(o *options, v time.Duration) { s(o).StepDuration = v }},
		{long: "sweep-min-requests", kind: kInt, def: "20", field: "sweep.min_requests", min: 1, max: loadgen.MaxRequests,
			help: "sweep: fewest requests in a step", setInt: func(o *options, v int) { s(o).MinRequests = v }},
		{long: "sweep-budget", kind: kDuration, def: "10m", field: "sweep.budget",
			help: "sweep: time budget per combination; the sweep stops on its own before exceeding it", setDur: func(o *options, v time.Duration) { s(o).Budget = v }},
		{long: "sweep-attainment", kind: kFloat, def: "0.95", field: "sweep.attainment", min: 1e-3, max: 1,
			help: "sweep: fraction of requests that must meet every SLO for a step to pass", setFloat: func(o *options, v float64) error { s(o).Attainment = v; return nil }},
		{long: "sweep-max-fail-rate", kind: kFloat, def: "0", field: "sweep.max_fail_rate", min: 0, max: 0.999,
			help: "sweep: fail rate a step may have (0 = any error ends the sweep there)", setFloat: func(o *options, v float64) error { s(o).MaxFailRate = v; return nil }},
		{long: "emu-max-num-seqs", kind: kInt, def: "0", min: 0, max: loadgen.MaxConcurrency,
			help:   "in-process emulator (no -p): requests executed at once, the rest queue (0 = unlimited); capacity = this / service time",
			setInt: func(o *options, v int) { o.emuMaxNumSeqs = v }},
	}
}

// runSweep 执行扫描，写出每次扫描的逐级 CSV 与容量汇总 CSV，并在 stderr 打印容量行。
// 返回各级的汇总行（照常打印）与写出的文件名。
func runSweep(ctx context.Context, tgt loadgen.Target, o *options, obs *loadgen.Observer, stderr io.Writer) ([]loadgen.Summary, []string, error) {
	results, runErr := loadgen.RunSweep(ctx, tgt, o.p, obs)
	var sums []loadgen.Summary
	var files []string
	ts := time.Now().Format("20060102150405")
	write := func(name string, fn func(io.Writer) error) error {
		f, err := os.Create(filepath.Join(o.savePath, name))
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			_ = f.Close()
			return err
		}
		files = append(files, name)
		return f.Close()
	}
	for _, r := range results {
		for _, st := range r.Steps {
			sums = append(sums, st.Summary)
			mark := "ok  "
			if !st.Pass {
				mark = "FAIL"
			}
			fmt.Fprintf(stderr, "sweep %s %8.2f req/s: SLO attainment %5.1f%%, goodput %.2f req/s, TTFT p99 %.4fs, E2E p99 %.4fs %s\n",
				mark, st.OfferedRate, st.Attainment*100, st.Summary.Goodput, st.Summary.TTFT.P99.Seconds(), st.Summary.E2E.P99.Seconds(), st.Reason)
		}
		fmt.Fprintf(stderr, "capacity in=%d out=%d c=%d: %.2f req/s within %s (knee %.2f req/s, max goodput %.2f req/s, %d steps, stop %s, %s)\n",
			r.InputLength, r.OutputLength, r.Concurrency, r.MaxSustainableRate, r.SLO, r.KneeRate, r.MaxGoodput, len(r.Steps), r.Stop, r.Elapsed.Round(time.Second))
		name := fmt.Sprintf("sweep_%s_input%d_output%d_concurrency%d_%s.csv", tgt.Provider, r.InputLength, r.OutputLength, r.Concurrency, ts)
		if err := write(name, func(w io.Writer) error { return loadgen.WriteSweepCSV(w, r) }); err != nil && runErr == nil {
			runErr = err
		}
	}
	if len(results) > 0 {
		if err := write("capacity_"+tgt.Provider+"_"+ts+".csv", func(w io.Writer) error { return loadgen.WriteCapacityCSV(w, results) }); err != nil && runErr == nil {
			runErr = err
		}
	}
	return sums, files, runErr
}
