package external_test

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/accuracy/external"
	"github.com/vllm-cibench/cibench/endpoint"
)

// TestSubprocessEvaluator 用 testdata/fake_eval.sh 充当外部评测工具，
// 覆盖 JSON 路径、正则（OpenCompass 汇总 CSV、MME 文本）与失败路径。
func TestSubprocessEvaluator(t *testing.T) {
	script, _ := filepath.Abs("testdata/fake_eval.sh")
	target := endpoint.Endpoint{BaseURLs: []string{"http://127.0.0.1:1/v1"}, Model: "m1", APIKey: "sk-x"}
	cases := []struct {
		name string
		cfg  external.Config
		want float64
	}{
		{"json", external.Config{Name: "opencompass", Dataset: "gsm8k", Command: []string{script, "json", "{base_url}"},
			Env: map[string]string{"FAKE_EXTRA": "{model}"}, ResultFile: "*/result.json", Scale: 0.01,
			Score: external.ScoreSpec{Format: "json", Path: "summary.datasets.0.accuracy"}}, 0.815},
		{"csv", external.Config{Name: "opencompass", Command: []string{script, "csv"}, ResultFile: "summary/summary_*.csv",
			Score: external.ScoreSpec{Format: "regex", Pattern: `gsm8k,[^,]*,accuracy,gen,([0-9.]+)`}}, 79.25},
		{"mme", external.Config{Name: "mme", Command: []string{script, "mme"}, ResultFile: "{out_dir}/mme.txt", Timeout: time.Minute,
			Score: external.ScoreSpec{Format: "regex", Pattern: `total score: ([0-9.]+)`}}, 1523.75},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			ev, err := external.New(c.cfg, t.TempDir(), &logs)
			if err != nil {
				t.Fatal(err)
			}
			res, err := ev.Run(context.Background(), target)
			if err != nil {
				t.Fatalf("%v\nlogs: %s", err, logs.String())
			}
			if math.Abs(res.Score-c.want) > 1e-12 || res.Model != "m1" || !strings.Contains(logs.String(), "done "+c.name) || strings.Contains(logs.String(), "sk-x") {
				t.Fatalf("res=%+v logs=%q", res, logs.String())
			}
		})
	}
	for _, c := range []struct {
		arg  string
		spec external.ScoreSpec
		file string
	}{
		{"fail", external.ScoreSpec{Format: "regex", Pattern: "(x)"}, "x"},
		{"none", external.ScoreSpec{Format: "regex", Pattern: "(x)"}, "missing.txt"},
		{"mme", external.ScoreSpec{Format: "regex", Pattern: `nothing ([0-9]+)`}, "mme.txt"},
		{"mme", external.ScoreSpec{Format: "json", Path: "a"}, "mme.txt"},
		{"json", external.ScoreSpec{Format: "json", Path: "summary.nope"}, "run1/result.json"},
		{"json", external.ScoreSpec{Format: "json", Path: "summary.datasets.5"}, "run1/result.json"},
		{"json", external.ScoreSpec{Format: "json", Path: "summary.datasets.0.name"}, "run1/result.json"},
		{"json", external.ScoreSpec{Format: "json", Path: "summary.datasets.0.accuracy.x"}, "run1/result.json"},
	} {
		ev, err := external.New(external.Config{Name: "x", Command: []string{script, c.arg}, Env: map[string]string{"FAKE_EXTRA": ""}, ResultFile: c.file, Score: c.spec}, t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ev.Run(context.Background(), target); err == nil {
			t.Errorf("%s/%s: expected error", c.arg, c.file)
		}
	}
	for _, bad := range []external.Config{
		{Name: "x"}, {Name: "x", Command: []string{"a"}}, {Name: "x", Command: []string{"a"}, ResultFile: "r"},
		{Name: "x", Command: []string{"a"}, ResultFile: "r", Score: external.ScoreSpec{Format: "json"}},
		{Name: "x", Command: []string{"a"}, ResultFile: "r", Score: external.ScoreSpec{Format: "regex", Pattern: "no group"}},
		{Name: "x", Command: []string{"a"}, ResultFile: "r", Score: external.ScoreSpec{Format: "regex", Pattern: "("}},
		{Name: "x", Command: []string{"a"}, ResultFile: "r", Scale: -1, Score: external.ScoreSpec{Format: "regex", Pattern: "(1)"}},
	} {
		if _, err := external.New(bad, t.TempDir(), nil); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
	if _, err := external.New(cases[0].cfg, "", nil); err == nil {
		t.Error("empty out dir accepted")
	}
}

// TestSubprocessGetsAllBaseURLs：外部评测除主地址 {base_url} / CIBENCH_BASE_URL 外，还得到
// 全部实例 {base_urls} / CIBENCH_BASE_URLS（逗号分隔），能分流的工具因此能打全部实例。
func TestSubprocessGetsAllBaseURLs(t *testing.T) {
	script, _ := filepath.Abs("testdata/fake_eval.sh")
	tgt := endpoint.Endpoint{BaseURLs: []string{"http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"}, Model: "m1", APIKey: "sk-x"}
	var logs bytes.Buffer
	ev, err := external.New(external.Config{Name: "multi", Command: []string{script, "urls", "{base_urls}", "{base_url}"},
		ResultFile: "urls.txt", ReportOnly: true, Score: external.ScoreSpec{Format: "regex", Pattern: `score: ([0-9]+)`}}, t.TempDir(), &logs)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ev.Run(context.Background(), tgt)
	if err != nil || res.Score != 1 {
		t.Fatalf("score %v err %v logs %s", res.Score, err, logs.String())
	}
	want := "argv=http://10.0.0.1:8000/v1,http://10.0.0.2:8000/v1 first=http://10.0.0.1:8000/v1 env=http://10.0.0.1:8000/v1,http://10.0.0.2:8000/v1 envfirst=http://10.0.0.1:8000/v1\n"
	if !strings.HasPrefix(logs.String(), want) {
		t.Fatalf("logs %q, want prefix %q", logs.String(), want)
	}
}
