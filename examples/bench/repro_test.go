package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReproBoolValueForms 复现：acs-bench 写法的布尔值（--ignore-eos true、-ub True）曾终止解析。
func TestReproBoolValueForms(t *testing.T) {
	for _, args := range [][]string{{"--ignore-eos", "true"}, {"-ub", "True", "-c", "2"}, {"--use-climb", "False"}} {
		if _, err := parseFlags(args, &bytes.Buffer{}); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// TestReproBadListAndEpochs 复现：空列表项被丢弃、--epochs 0 被当成 1。
func TestReproBadListAndEpochs(t *testing.T) {
	for _, args := range [][]string{{"--concurrency", "1,,2"}, {"--epochs", "0"}, {"--request-rate", "NaN"}} {
		if _, err := parseFlags(args, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: err %v, want an error naming the flag", args, err)
		}
	}
}

// TestReproAbsurdProfile 复现：档位 YAML 中荒谬的 requests_per_concurrency 被接受。
func TestReproAbsurdProfile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "p.yaml")
	os.WriteFile(f, []byte("concurrency: [1]\ninput_length: [16]\noutput_length: [8]\nrequests_per_concurrency: 999999999999\n"), 0o644)
	_, err := parseFlags([]string{"--perf-profile", f}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), f+":4") {
		t.Fatalf("err %v, want %s:4", err, f)
	}
}

// TestReproProvidersFileName 复现：坏的 providers.yaml 报错不带文件名。
func TestReproProvidersFileName(t *testing.T) {
	f := filepath.Join(t.TempDir(), "providers.yaml")
	os.WriteFile(f, []byte("providers:\n  - id: a\n    base_url: [\n"), 0o644)
	err := run([]string{"--provider", f, "--quiet"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), f) {
		t.Fatalf("err %v", err)
	}
}

// TestReproRangeRatioIsOutput 复现：--range-ratio-above 抖动的是输入长度而不是输出长度。
func TestReproRangeRatioIsOutput(t *testing.T) {
	o, err := parseFlags([]string{"--range-ratio-above", "0.5"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.p.OutputRangeRatioAbove != 0.5 || o.p.RangeRatioAbove != 0 {
		t.Fatalf("output %v input %v", o.p.OutputRangeRatioAbove, o.p.RangeRatioAbove)
	}
}
