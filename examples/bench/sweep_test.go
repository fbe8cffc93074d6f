package main

import (
	"io"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
)

// TestSweepFlags 检查扫描选项写进 Profile.Sweep，并且 --sweep 打开 control_method sweep；
// 越界取值被点名拒绝。
func TestSweepFlags(t *testing.T) {
	o, err := parseFlags([]string{"--sweep", "-g", "e2e:240", "--sweep-start-rate", "5", "--sweep-max-rate", "80", "--sweep-growth", "1.5",
		"--sweep-precision", "0.1", "--sweep-step-duration", "2s", "--sweep-min-requests", "12", "--sweep-budget", "90s",
		"--sweep-attainment", "0.9", "--sweep-max-fail-rate", "0.01", "--emu-max-num-seqs", "4"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := loadgen.SweepConfig{StartRate: 5, MaxRate: 80, Growth: 1.5, Precision: 0.1, StepDuration: 2 * time.Second, MinRequests: 12,
		Budget: 90 * time.Second, Attainment: 0.9, MaxFailRate: 0.01}
	if o.p.Sweep != want || o.p.ControlMethod != loadgen.ControlSweep || o.emuMaxNumSeqs != 4 {
		t.Errorf("sweep %+v control %q emu seqs %d", o.p.Sweep, o.p.ControlMethod, o.emuMaxNumSeqs)
	}
	if err := o.p.WithDefaults().Validate(); err != nil {
		t.Errorf("validate: %v", err)
	}
	if _, err := parseFlags([]string{"--sweep", "--sweep-growth", "1"}, io.Discard); err == nil {
		t.Error("--sweep-growth 1 accepted")
	}
}
