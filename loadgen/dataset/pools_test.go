package dataset_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/internal/tokenize"
	"github.com/vllm-cibench/cibench/loadgen/dataset"
)

// TestCustomPoolGroupsByInputLength 验证 custom 数据集按输入长度分组：InputLength 为 0 的条目属于
// 所有长度，inputLen 为 0 时取全部；没有 prompt_tokens 的条目按共享规则计数，逐条 max_tokens 保留；
// 池最多 n 条；LengthsOf 列出出现过的名义长度（错误信息用）。
func TestCustomPoolGroupsByInputLength(t *testing.T) {
	ps := []dataset.Prompt{{Text: "alpha beta", InputLength: 64, MaxTokens: 5}, {Text: "gamma", InputLength: 128, Tokens: 9},
		{Text: "delta epsilon zeta"}, {Text: "eta", InputLength: 64}}
	pool := dataset.CustomPool(ps, 64, 10)
	var got []string
	for _, q := range pool.Quoted {
		var s string
		if err := json.Unmarshal(q, &s); err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	if strings.Join(got, "|") != "alpha beta|delta epsilon zeta|eta" || pool.Tokens[0] != tokenize.Count("alpha beta") || pool.MaxTokens[0] != 5 || pool.MaxTokens[1] != 0 {
		t.Fatalf("pool for 64: %q tokens %v max %v", got, pool.Tokens, pool.MaxTokens)
	}
	if p := dataset.CustomPool(ps, 128, 10); len(p.Quoted) != 2 || p.Tokens[0] != 9 {
		t.Fatalf("pool for 128: %d prompts, tokens %v", len(p.Quoted), p.Tokens)
	}
	if p := dataset.CustomPool(ps, 0, 2); len(p.Quoted) != 2 {
		t.Fatalf("pool for any length capped at 2: %d prompts", len(p.Quoted))
	}
	if got := dataset.LengthsOf(ps); got != "in the dataset: 64, 128, any" {
		t.Fatalf("LengthsOf = %q", got)
	}
}

// TestShareGPTReadAndPool 验证 ShareGPT 的读取（少于两轮跳过、按 vLLM 的默认条件过滤、输出长度取回答的
// token 数）与池（output_len 覆盖逐条输出长度、打乱可复现；空集合报错并点名数据集）。
func TestShareGPTReadAndPool(t *testing.T) {
	long := strings.Repeat("word ", 1100)
	in := `[{"conversations":[{"from":"human","value":"what is the capital of france please"},{"from":"gpt","value":"paris is the capital of france indeed"}]},
	{"conversations":[{"from":"human","value":"only one turn here"}]},
	{"conversations":[{"from":"human","value":"` + long + `"},{"from":"gpt","value":"too long a prompt for the filter"}]},
	{"conversations":[{"from":"human","value":"hi"},{"from":"gpt","value":"too short a prompt"}]},
	{"conversations":[{"from":"human","value":"tell me a story about a brave knight"},{"from":"gpt","value":"once upon a time there was a brave knight"}]}]`
	ps, err := dataset.ReadShareGPT(strings.NewReader(in), "sg.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].MaxTokens != tokenize.Count("paris is the capital of france indeed") || ps[0].Tokens != tokenize.Count("what is the capital of france please") {
		t.Fatalf("read %+v", ps)
	}
	pool, err := dataset.ShareGPTPool(ps, dataset.ShareGPTConfig{OutputLen: 7}, 3)
	if err != nil || len(pool.Quoted) != 2 || pool.MaxTokens[0] != 7 || pool.MaxTokens[1] != 7 || !pool.Complete {
		t.Fatalf("pool %+v, %v", pool, err)
	}
	again, _ := dataset.ShareGPTPool(ps, dataset.ShareGPTConfig{}, 3)
	if string(again.Quoted[0]) != string(pool.Quoted[0]) || again.MaxTokens[0]+again.MaxTokens[1] != ps[0].MaxTokens+ps[1].MaxTokens {
		t.Fatalf("shuffle not reproducible or output_len 0 did not keep the data's lengths: %+v", again)
	}
	if _, err := dataset.ShareGPTPool(nil, dataset.ShareGPTConfig{}, 3); err == nil || !strings.Contains(err.Error(), "sharegpt: no prompts") {
		t.Fatalf("empty set: %v", err)
	}
	for _, bad := range []struct{ in, want string }{
		{`{"a":1}`, "want a JSON array"}, {`[{"conversations":[{"from":"human","value":"x"}]}]`, "no usable conversation among 1 entries"},
		{`[{"conversations": 5}]`, "entry 0"}, {``, "EOF"},
	} {
		if _, err := dataset.ReadShareGPT(strings.NewReader(bad.in), "x.json"); err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), "x.json") {
			t.Errorf("%q: %v, want %q naming x.json", bad.in, err, bad.want)
		}
	}
}

// TestTracePoolAccessors 验证轨迹池：Complete、窗口长度、回放时刻按 time_scale 缩放、会话 id 与按序号取模，
// 以及 text_input 行原样作为 prompt（含需要转义的字符）。
func TestTracePoolAccessors(t *testing.T) {
	rows := []dataset.TraceRequest{
		{At: 0, InputLength: 4, OutputLength: 2, HashIDs: []int64{1}, SessionID: "a", Line: 1},
		{At: 100 * time.Millisecond, InputLength: 2, OutputLength: 3, Text: `say "hi"`, SessionID: "b", Line: 2},
		{At: 300 * time.Millisecond, InputLength: 3, OutputLength: 1, Line: 3},
	}
	rows[1].InputLength = tokenize.Count(rows[1].Text)
	pool := dataset.TracePool(rows, dataset.TraceConfig{BlockSize: 4, TimeScale: 0.5})
	tr := pool.Trace
	if !pool.Complete || tr == nil || tr.Len() != 3 || tr.At(1) != 50*time.Millisecond || tr.At(2) != 150*time.Millisecond || tr.At(4) != 50*time.Millisecond {
		t.Fatalf("trace pool: complete %v len %d at %v %v %v", pool.Complete, tr.Len(), tr.At(1), tr.At(2), tr.At(4))
	}
	if tr.Session(0) != "a" || tr.Session(4) != "b" || tr.Session(2) != "" {
		t.Fatalf("sessions %q %q %q", tr.Session(0), tr.Session(4), tr.Session(2))
	}
	q, tok, out := tr.Prompt(nil, 1)
	var s string
	if err := json.Unmarshal(q, &s); err != nil || s != `say "hi"` || tok != rows[1].InputLength || out != 3 {
		t.Fatalf("text row: %s (%v) %d tokens, out %d", q, err, tok, out)
	}
	q, tok, _ = tr.Prompt(q, 2) // 没有 hash_ids：整条是这一行独有的文本
	if err := json.Unmarshal(q, &s); err != nil || tokenize.Count(s) != 3 || tok != 3 {
		t.Fatalf("row without blocks: %s (%v), %d tokens", q, err, tok)
	}
}
