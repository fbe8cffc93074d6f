package dataset_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/internal/tokenize"
	"github.com/vllm-cibench/cibench/loadgen/dataset"
)

// TestTraceReaders 验证两种轨迹的解析与坏输入的报错（点名文件与行号）。
func TestTraceReaders(t *testing.T) {
	tr, err := dataset.ReadMooncakeTrace(strings.NewReader(`{"timestamp": 30, "input_length": 5, "output_length": 2, "hash_ids": [4]}
{"session_id": "a", "input_length": 4, "output_length": 1, "delay": 7}
{"session_id": "a", "input_length": 4, "output_length": 1, "delay": 5}
{"timestamp": 10, "text_input": "hello world", "output_length": 2}
`), "m.jsonl", 8)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr) != 4 || tr[0].At != 7*time.Millisecond || tr[1].At != 10*time.Millisecond || tr[2].At != 12*time.Millisecond || tr[3].At != 30*time.Millisecond {
		t.Fatalf("sorted trace %+v", tr)
	}
	if tr[1].Text != "hello world" || tr[1].InputLength != tokenize.Count("hello world") {
		t.Fatalf("text_input row %+v", tr[1])
	}
	for _, c := range []struct{ in, want string }{
		{`{"timestamp": 0, "input_length": 21, "output_length": 2, "hash_ids": [1, 2]}`, "m.jsonl:1: input_length 21 with 2 hash_ids leaves a last block of 11 tokens"},
		{"\n" + `{"timestamp": 0, "input_length": 8, "output_length": 2, "hash_ids": [1, 2]}`, "m.jsonl:2: input_length 8 with 2 hash_ids leaves a last block of -2 tokens"},
		{`{"timestamp": -1, "input_length": 8, "output_length": 2}`, "m.jsonl:1: timestamp -1"},
		{`{"timestamp": 0, "input_length": 8, "output_length": 0}`, "m.jsonl:1: output_length 0"},
		{`{"timestamp": 0, "input_length": 8,`, "m.jsonl:1:"},
		{``, "no requests"},
		{`{"timestamp": 0, "input_length": 8, "output_length": 2, "session_id": "a\r\nX-Evil: 1"}`, "m.jsonl:1: session_id"},
	} {
		_, err := dataset.ReadMooncakeTrace(strings.NewReader(c.in), "m.jsonl", 10)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.in, err, c.want)
		}
	}
	num, err := dataset.ReadMooncakeTrace(strings.NewReader(`{"timestamp": 0, "input_length": 8, "output_length": 2, "session_id": 17}`), "n.jsonl", 8)
	if err != nil || num[0].SessionID != "17" {
		t.Fatalf("numeric session_id: %v %+v", err, num)
	}
	az, err := dataset.ReadAzureTrace(strings.NewReader("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:46.1805900,396,0\n"), "a.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(az) != 2 || az[0].At != 0 || az[0].InputLength != 396 || az[0].OutputLength != 1 || az[1].At != 500*time.Millisecond || az[1].Line != 2 {
		t.Fatalf("azure %+v", az)
	}
	for _, c := range []struct{ in, want string }{
		{"TIME,ContextTokens,GeneratedTokens\n", "a.csv:1: header"},
		{"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,x,1\n", "a.csv:2: ContextTokens"},
		{"TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,1,1\n", "a.csv:2: TIMESTAMP"},
		{"TIMESTAMP,ContextTokens,GeneratedTokens\n", "no requests"},
	} {
		_, err := dataset.ReadAzureTrace(strings.NewReader(c.in), "a.csv")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.in, err, c.want)
		}
	}
}

// TestGenerateDatasetAndReadBack 验证 GenerateDataset 的每行形状、长度与可复现性，
// 以及 ReadPrompts 读回 input_length / prompt_tokens、拒绝越界的长度。
func TestGenerateDatasetAndReadBack(t *testing.T) {
	spec := dataset.Spec{InputLength: 20, NumRequests: 5, PrefixLength: 3, Seed: 1}
	if spec.FileName() != "random_input20_num5_prefix3.jsonl" {
		t.Fatal(spec.FileName())
	}
	var a, b bytes.Buffer
	n, err := dataset.Generate(context.Background(), &a, spec, nil)
	if err != nil || n != 5 {
		t.Fatal(n, err)
	}
	if _, err := dataset.Generate(context.Background(), &b, spec, nil); err != nil || a.String() != b.String() {
		t.Fatal("not reproducible", err)
	}
	ps, err := dataset.ReadPrompts(&a)
	if err != nil || len(ps) != 5 {
		t.Fatal(len(ps), err)
	}
	for _, p := range ps {
		if p.InputLength != 20 || p.Tokens != 20 || p.Text == "" {
			t.Fatalf("%+v", p)
		}
		if p.Text == dataset.RandomText(1, 20) {
			t.Fatal("dataset ignores the prefix/index seed")
		}
	}
	for _, bad := range []dataset.Spec{{InputLength: 0, NumRequests: 1}, {InputLength: 8, NumRequests: 0},
		{InputLength: 8, NumRequests: 1, PrefixLength: 8}, {InputLength: 8, NumRequests: 1, RangeRatioBelow: 1},
		{InputLength: 8, NumRequests: 1, RangeRatioAbove: math.NaN()}, {InputLength: 8, NumRequests: dataset.MaxRequests + 1}} {
		if _, err := dataset.Generate(context.Background(), &bytes.Buffer{}, bad, nil); !errors.Is(err, dataset.ErrInvalidSpec) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if _, err := dataset.ReadPrompts(strings.NewReader(`{"prompt":"x","input_length":-1}`)); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("negative input_length: %v", err)
	}
}

// ExampleRandomText 生成可复现、长度精确的中英混合随机文本。
func ExampleRandomText() {
	a := dataset.RandomText(7, 12)
	fmt.Println(a == dataset.RandomText(7, 12), a != dataset.RandomText(8, 12))
	// Output: true true
}

// ExampleReadMooncakeTrace 读入一段 Mooncake 轨迹：hash_ids 相同的块生成相同的文本，
// 最后一块不在 (0, 块大小] 内的行被拒绝并点名文件与行号。
func ExampleReadMooncakeTrace() {
	trace := `{"timestamp": 0, "input_length": 20, "output_length": 4, "hash_ids": [7, 8]}
{"timestamp": 250, "input_length": 12, "output_length": 4, "hash_ids": [7], "session_id": "s1"}
`
	rows, err := dataset.ReadMooncakeTrace(strings.NewReader(trace), "t.jsonl", 16)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range rows {
		fmt.Printf("%s %d %v session=%q\n", r.At, r.InputLength, r.HashIDs, r.SessionID)
	}
	_, err = dataset.ReadMooncakeTrace(strings.NewReader(`{"timestamp": 0, "input_length": 40, "output_length": 4, "hash_ids": [7, 8]}`), "bad.jsonl", 16)
	fmt.Println(err)
	// Output:
	// 0s 20 [7 8] session=""
	// 250ms 12 [7] session="s1"
	// dataset: read trace bad.jsonl:1: input_length 40 with 2 hash_ids leaves a last block of 24 tokens at block size 16, want (0, 16] (input_length must be in [17, 32])
}
