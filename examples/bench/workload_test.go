package main

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// filesWithPrefix 返回目录中以 prefix 开头的文件（排序）。
func filesWithPrefix(t *testing.T, dir, prefix string) []string {
	t.Helper()
	es, _ := os.ReadDir(dir)
	var out []string
	for _, e := range es {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out
}

// TestWorkloadRunsWriteNewFiles 端到端：轨迹回放写 sessions_ 与 workload_（发出滞后列有值），
// 多轮会话另写 turns_（每轮一行）；acs-bench 的汇总 CSV 表头不变。
func TestWorkloadRunsWriteNewFiles(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	if err := run([]string{"-dt", "mooncake_trace", "-i", writeTrace(t), "--trace-block-size", "8", "-s", dir, "--quiet"}, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	ws := filesWithPrefix(t, dir, "workload_")
	ss := filesWithPrefix(t, dir, "sessions_")
	if len(ws) != 1 || len(ss) != 1 || len(filesWithPrefix(t, dir, "turns_")) != 0 {
		t.Fatalf("files %v %v", ws, ss)
	}
	w := readCSV(t, ws[0])
	if len(w) != 2 || w[0][6] != "Dispatch_Lag_P50(s)" || w[1][4] != "mooncake_trace" || w[1][5] != "2" || w[1][6] == "-1" {
		t.Fatalf("workload csv %v", w)
	}
	if s := readCSV(t, ss[0]); len(s) != 3 || s[1][7] != "8" && s[1][7] != "6" {
		t.Fatalf("sessions csv %v", s)
	}
	if !strings.Contains(stderr.String(), "dispatch lag p50") {
		t.Fatalf("no dispatch lag line:\n%s", stderr.String())
	}
	sum := readCSV(t, filesWithPrefix(t, dir, "summary_")[0])
	if sum[0][0] != "Execution_Time" && !strings.Contains(strings.Join(sum[0], ","), "TTFT") {
		t.Fatalf("summary header changed: %v", sum[0])
	}

	dir = t.TempDir()
	stderr.Reset()
	if err := run([]string{"-c", "2", "-il", "8", "-ol", "3", "--multi-turn-conversations", "2", "--multi-turn-turns-mean", "2", "-s", dir, "--quiet"}, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	tr := filesWithPrefix(t, dir, "turns_")
	if len(tr) != 1 {
		t.Fatalf("no turns file: %v", filesWithPrefix(t, dir, ""))
	}
	rows := readCSV(t, tr[0])
	if len(rows) != 3 || rows[1][4] != "1" || rows[2][4] != "2" || rows[1][5] != "2" {
		t.Fatalf("turns csv %v", rows)
	}
	s := readCSV(t, filesWithPrefix(t, dir, "sessions_")[0])
	if len(s) != 5 || !strings.HasPrefix(s[1][5], "cibench-g0-c") {
		t.Fatalf("sessions csv %v", s)
	}
}

// TestWorkloadBadInputNamesFlagFileLine 验证坏输入在任何请求之前报错，点名选项、文件与行号。
func TestWorkloadBadInputNamesFlagFileLine(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	_ = os.WriteFile(bad, []byte(`{"timestamp":0,"input_length":8,"output_length":2,"hash_ids":[1]}`+"\n"+`{"timestamp":1,"input_length":30,"output_length":2,"hash_ids":[1]}`+"\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-dt", "mooncake_trace", "-i", bad, "--trace-block-size", "8"}, "bad.jsonl:2: input_length 30 with 1 hash_ids"},
		{[]string{"-dt", "azure_trace"}, "needs -i/--input-path"},
		{[]string{"-dt", "shared_prefix", "-il", "64"}, "-il"},
		{[]string{"-dt", "prefix_repetition", "--prefix-repetition-num-prefixes", "0"}, "--prefix-repetition-num-prefixes"},
		{[]string{"--multi-turn-conversations", "2", "--multi-turn-sampling", "lru"}, "--multi-turn-sampling lru"},
		{[]string{"-dt", "mooncake_trace", "-i", writeTrace(t), "--trace-start-offset", "60000"}, "no trace request falls in the window"},
	} {
		_, err := parseFlags(c.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}

// TestWorkloadYAMLErrorsNameLine 验证 --perf-profile 里真实负载子字段的错误点名 文件:行 与字段路径，
// 未知子字段被严格解码拒绝。
func TestWorkloadYAMLErrorsNameLine(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ yaml, want string }{
		{"dataset_type: shared_prefix\nshared_prefix:\n  num_groups: 2\n  question_len: -3\n", "p.yaml:4: shared_prefix.question_len: -3"},
		{"multi_turn:\n  conversations: 2\n  sampling: lru\n", "p.yaml:3:13: multi_turn.sampling"},
		{"multi_turn:\n  conversation: 2\n", `unknown field "conversation"`},
	} {
		f := filepath.Join(dir, "p.yaml")
		if err := os.WriteFile(f, []byte(c.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := parseFlags([]string{"--perf-profile", f}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.yaml, err, c.want)
		}
	}
}
