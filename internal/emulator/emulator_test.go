package emulator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/vllm-cibench/cibench/internal/emulator"
	"github.com/vllm-cibench/cibench/internal/tokenize"
)

// TestAppendStringMatchesJSON 验证手写 JSON 转义可被 encoding/json 往返解析，且不做 HTML 转义。
func TestAppendStringMatchesJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `quote " back \ slash`, "tab\tnl\ncr\r", "\x00\x01\x1f", "中文 ok 😀",
		"<html>&", "bad \xff utf8", "line\u2028sep\u2029", "mixed 世界\n\"end\""} {
		b := emulator.AppendString(nil, s)
		if !json.Valid(b) {
			t.Fatalf("%q → invalid JSON %s", s, b)
		}
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		want := strings.ToValidUTF8(s, "\ufffd")
		if back != want {
			t.Fatalf("round trip %q → %q", s, back)
		}
	}
	if got := string(emulator.AppendString(nil, "<&>")); got != `"<&>"` {
		t.Fatalf("must not HTML-escape: %s", got)
	}
}

// FuzzAppendString 以模糊测试验证任意输入的转义结果都是合法 JSON 字符串。
func FuzzAppendString(f *testing.F) {
	f.Add("hello 世界")
	f.Add("\x00\"\\\u2028")
	f.Fuzz(func(t *testing.T, s string) {
		b := emulator.AppendString(nil, s)
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if back != strings.ToValidUTF8(s, "\ufffd") && utf8.ValidString(s) {
			t.Fatalf("round trip %q → %q", s, back)
		}
	})
}

// TestAppendFloat 验证浮点数编码及 NaN/Inf 的退化。
func TestAppendFloat(t *testing.T) {
	for f, want := range map[float64]string{1.5: "1.5", -0.25: "-0.25", math.NaN(): "0", math.Inf(1): "0", 1e21: "1e+21"} {
		if got := string(emulator.AppendFloat(nil, f)); got != want {
			t.Errorf("%v → %s, want %s", f, got, want)
		}
	}
}

// TestTextPiecesRetokenize 验证生成的片段按 internal/tokenize 重新切分后数量不变、确定且中英混排。
func TestTextPiecesRetokenize(t *testing.T) {
	v := emulator.NewVocab()
	for seed := uint64(0); seed < 200; seed++ {
		tx := v.NewText(seed)
		pieces := tx.AppendPieces(nil, 150)
		text := strings.Join(pieces, "")
		if got := tokenize.Count(text); got != len(pieces) {
			t.Fatalf("seed %d: %d pieces re-tokenize to %d: %q", seed, len(pieces), got, text)
		}
		tx2 := v.NewText(seed)
		if strings.Join(tx2.AppendPieces(nil, 150), "") != text {
			t.Fatal("not deterministic")
		}
	}
	tx := v.NewText(1)
	text := strings.Join(tx.AppendPieces(nil, 400), "")
	if !regexp.MustCompile(`\p{Han}`).MatchString(text) || !regexp.MustCompile(`[a-z]{3}`).MatchString(text) {
		t.Fatalf("text should mix Chinese and English: %q", text)
	}
	if v.RandomPiece(2) == "" || v.RandomPiece(3) == "" {
		t.Fatal("empty random piece")
	}
}

// TestRandAndHash 验证哈希分隔、随机数范围与长度函数的取值区间。
func TestRandAndHash(t *testing.T) {
	if emulator.Hash("ab", "c") == emulator.Hash("a", "bc") {
		t.Fatal("hash separators missing")
	}
	r := emulator.NewRand(1)
	seen := map[int]bool{}
	for i := 0; i < 1000; i++ {
		n := r.Intn(10)
		if n < 0 || n >= 10 {
			t.Fatal(n)
		}
		seen[n] = true
		if f := r.Float64(); f < 0 || f >= 1 {
			t.Fatal(f)
		}
	}
	if len(seen) != 10 || r.Intn(0) != 0 {
		t.Fatal("Intn distribution")
	}
	for s := uint64(0); s < 100; s++ {
		if n := emulator.NaturalLength(s); n < 24 || n > 223 {
			t.Fatal(n)
		}
		if n := emulator.ReasoningLength(s); n < 8 || n > 47 {
			t.Fatal(n)
		}
	}
	e := emulator.NewEngine()
	f1 := e.Fresh(1)
	if f2 := e.Fresh(1); f1 == f2 {
		t.Fatal("Fresh must differ per call")
	}
}

// TestScriptedAnswer 验证评测提示的脚本化回答。
func TestScriptedAnswer(t *testing.T) {
	if _, ok := emulator.ScriptedAnswer("hello"); ok {
		t.Fatal("plain prompt scripted")
	}
	a, ok := emulator.ScriptedAnswer(emulator.MultipleChoiceMarker + " Q? A) x B) y C) z D) w")
	if !ok || !regexp.MustCompile(`\nAnswer: [ABCD]$`).MatchString(a) {
		t.Fatalf("mc: %q", a)
	}
	a, ok = emulator.ScriptedAnswer(`format of "Answer:". 12 apples and 30 pears`)
	if !ok || !strings.HasSuffix(a, "Answer: 30") {
		t.Fatalf("math: %q", a)
	}
	a, ok = emulator.ScriptedAnswer("Passage: 7 goals. Think step by step, then write a line of the form \"Answer: $ANSWER\" at the end")
	if !ok || !strings.HasSuffix(a, "Answer: 7") {
		t.Fatalf("drop: %q", a)
	}
	a, _ = emulator.ScriptedAnswer(`integer answer, no digits`)
	if !strings.HasSuffix(a, "Answer: 0") {
		t.Fatalf("no digits: %q", a)
	}
	a, _ = emulator.ScriptedAnswer(`integer answer 12345678901234`)
	if !strings.HasSuffix(a, "Answer: 678901234") {
		t.Fatalf("long number: %q", a)
	}
}

// mustSchema 编译 schema 文本。
func mustSchema(t *testing.T, s string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem://s", doc); err != nil {
		t.Fatal(err)
	}
	sc, err := c.Compile("mem://s")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestGenerateJSONSatisfiesSchemas 用 jsonschema/v6 验证生成的值满足多种 schema。
func TestGenerateJSONSatisfiesSchemas(t *testing.T) {
	schemas := []string{
		`{}`,
		`{"type":"object","properties":{"a":{"type":"string","minLength":5,"maxLength":6},"b":{"type":["integer","null"],"minimum":-5,"maximum":-3},"c":{"type":"boolean"},"d":{"type":"null"}},"required":["a","b","z"]}`,
		`{"type":"array","items":{"type":"number","exclusiveMinimum":1,"exclusiveMaximum":2},"minItems":3,"maxItems":3}`,
		`{"type":"array","prefixItems":[{"const":1},{"enum":["x",{"k":[1,2]}]}],"items":false}`,
		`{"allOf":[{"type":"object","properties":{"x":{"type":"integer","multipleOf":7,"minimum":10}}},{"required":["x","y"],"properties":{"y":{"format":"date-time","type":"string"}}}]}`,
		`{"oneOf":[{"type":"null"},{"$ref":"#/definitions/p"}],"definitions":{"p":{"type":"object","properties":{"uuid":{"type":"string","format":"uuid"},"d":{"type":"string","format":"date"},"u":{"type":"string","format":"uri"},"ip":{"type":"string","format":"ipv4"},"h":{"type":"string","format":"hostname"},"tm":{"type":"string","format":"time"}},"required":["uuid"]}}}`,
		`{"type":"object","minProperties":2,"additionalProperties":{"type":"integer"}}`,
		`{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string"},"n":{"type":"number","multipleOf":0.5,"minimum":3.2}}}`,
		`{"type":"integer","maximum":-100}`,
		`{"type":"integer","minimum":100}`,
		`{"type":"number","minimum":5}`,
		`{"type":"number","maximum":-5}`,
		`{"properties":{"self":{"$ref":"#"}},"type":"object"}`,
		`{"type":"string","pattern":"^[a-f0-9]{8}$"}`,
		`{"type":"array","items":{"type":"object","properties":{"q":{"type":"array","items":{"type":"string","enum":["p"]}}},"required":["q"]}}`,
	}
	for i, s := range schemas {
		sc := mustSchema(t, s)
		for seed := uint64(0); seed < 20; seed++ {
			out, err := emulator.GenerateJSON(json.RawMessage(s), seed)
			if err != nil {
				t.Fatal(err)
			}
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
			if err != nil {
				t.Fatalf("schema %d: invalid JSON %s", i, out)
			}
			if err := sc.Validate(v); err != nil {
				t.Fatalf("schema %d seed %d: %s does not validate: %v", i, seed, out, err)
			}
		}
	}
	if _, err := emulator.GenerateJSON(json.RawMessage(`{bad`), 0); !errors.Is(err, emulator.ErrSchema) {
		t.Fatalf("bad schema: %v", err)
	}
	if out, _ := emulator.GenerateJSON(nil, 0); string(out) != "{}" {
		t.Fatalf("nil schema: %s", out)
	}
}

// TestGenerateRegex 验证生成的字符串完整匹配正则。
func TestGenerateRegex(t *testing.T) {
	for _, p := range []string{`\d{3}-\d{4}`, `(yes|no)`, `[A-Z][a-z]+ [0-9]?x*`, `a{2,5}b+c?`, `.\w\s`, `^(foo|bar)+$`, `[^0-9]{3}`} {
		re := regexp.MustCompile(`^(?:` + p + `)$`)
		for seed := uint64(0); seed < 20; seed++ {
			s, err := emulator.GenerateRegex(p, seed)
			if err != nil || !re.MatchString(s) {
				t.Fatalf("%s seed %d → %q (%v)", p, seed, s, err)
			}
		}
	}
	if _, err := emulator.GenerateRegex(`a((`, 0); err == nil {
		t.Fatal("invalid regex accepted")
	}
}

// TestEmbedAndRerank 验证嵌入的确定性、截断与 rerank 分数的相对大小。
func TestEmbedAndRerank(t *testing.T) {
	a := emulator.Embed("sunny weather today", 128)
	b := emulator.Embed("sunny weather today", 128)
	c := emulator.Embed("stock market", 128)
	if emulator.Cosine(a, b) < 0.9999 || emulator.Cosine(a, c) > 0.9 {
		t.Fatalf("cosines %f %f", emulator.Cosine(a, b), emulator.Cosine(a, c))
	}
	tr := emulator.Truncate(a, 16)
	if len(tr) != 16 || math.Abs(emulator.Cosine(tr, tr)-1) > 1e-9 {
		t.Fatal("truncate")
	}
	if len(emulator.Truncate(a, 500)) != 128 {
		t.Fatal("truncate beyond length")
	}
	if e := emulator.Embed("", 4); e[0] != 1 {
		t.Fatalf("empty embed %v", e)
	}
	if emulator.Cosine([]float64{0, 0}, []float64{1, 0}) != 0 {
		t.Fatal("zero cosine")
	}
	hi, lo := emulator.RerankScore("sunny weather", "weather is sunny"), emulator.RerankScore("sunny weather", "stock crash")
	if !(hi > lo && hi < 1 && lo > 0) {
		t.Fatalf("rerank scores %f %f", hi, lo)
	}
}

// TestScheduler 验证 FIFO 排队、取消与放宽上限。
func TestScheduler(t *testing.T) {
	s := emulator.NewScheduler(1)
	ctx := context.Background()
	if err := s.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- s.Acquire(ctx) }()
	waitFor(t, func() bool { _, w := s.Counts(); return w == 1 })
	s.Release()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if r, w := s.Counts(); r != 1 || w != 0 {
		t.Fatalf("counts %d %d", r, w)
	}
	// 取消排队
	cctx, cancel := context.WithCancel(ctx)
	go func() { got <- s.Acquire(cctx) }()
	waitFor(t, func() bool { _, w := s.Counts(); return w == 1 })
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel: %v", err)
	}
	// 放宽上限唤醒排队者
	go func() { got <- s.Acquire(ctx) }()
	waitFor(t, func() bool { _, w := s.Counts(); return w == 1 })
	s.SetLimit(0)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Counts(); r != 2 {
		t.Fatalf("running %d", r)
	}
}

// waitFor 以短间隔轮询条件，最多 5 秒。
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestFailer 验证故障抽签的确定性与比例。
func TestFailer(t *testing.T) {
	f1, f2 := emulator.NewFailer(3), emulator.NewFailer(3)
	n := 0
	for i := 0; i < 1000; i++ {
		a, b := f1.Next(0.3, []string{"500", "drop"}), f2.Next(0.3, []string{"500", "drop"})
		if a != b {
			t.Fatal("not deterministic")
		}
		if a != "" {
			n++
		}
	}
	if n < 200 || n > 400 {
		t.Fatalf("rate 0.3 gave %d/1000", n)
	}
	if f1.Next(0, []string{"500"}) != "" || f1.Next(1, nil) != "" {
		t.Fatal("zero rate or no kinds must not fail")
	}
}

// TestAccessLog 验证环形访问日志与汇总。
func TestAccessLog(t *testing.T) {
	l := emulator.NewAccessLog(2)
	for i := 0; i < 3; i++ {
		l.Add(emulator.AccessEntry{Time: time.Unix(int64(i), 0), Method: "POST", Path: "/v1/completions", Status: 200 + i, PromptTokens: 1, CompletionTokens: 2, Fault: map[bool]string{true: "drop"}[i == 2]})
	}
	es := l.Entries()
	if len(es) != 2 || es[0].Status != 201 || es[1].Status != 202 {
		t.Fatalf("ring: %+v", es)
	}
	var buf bytes.Buffer
	if err := l.WriteLog(&buf); err != nil || strings.Count(buf.String(), "\n") != 2 || !strings.Contains(buf.String(), "fault=drop") {
		t.Fatalf("log: %v %s", err, buf.String())
	}
	buf.Reset()
	if err := l.WriteSummary(&buf, "m"); err != nil {
		t.Fatal(err)
	}
	var s emulator.Summary
	if err := json.Unmarshal(buf.Bytes(), &s); err != nil || s.Requests != 3 || s.PromptTokens != 3 || s.CompletionTokens != 6 || s.ByPath["/v1/completions"] != 3 {
		t.Fatalf("summary %+v %v", s, err)
	}
	if emulator.NewAccessLog(0) == nil {
		t.Fatal("nil log")
	}
}

// TestMetrics 验证指标族与 lint（vLLM 指标名中的冒号除外）。
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	run, wait, limit := 2, 3, 4
	m := emulator.NewMetrics(reg, "m", func() (int, int, int) { return run, wait, limit }, nil)
	m.Success("stop")
	m.Success("tool_calls")
	m.Success("length")
	m.Success("abort")
	if v := testutil.ToFloat64(m.Running); v != 2 || testutil.ToFloat64(m.Waiting) != 3 {
		t.Fatal(v)
	}
	if v := testutil.ToFloat64(m.KVCacheUsage); v != 0 { // 没有 KV 模型：不报使用率
		t.Fatal(v)
	}
	run, wait, limit = 1, 0, 0
	if v := testutil.ToFloat64(m.KVCacheUsage); v != 0 {
		t.Fatal(v)
	}
	if m.Registry() != reg {
		t.Fatal("registry")
	}
	n, err := testutil.GatherAndCount(reg, "vllm:request_success_total")
	if err != nil || n != 3 {
		t.Fatalf("success series %d %v", n, err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		for _, p := range problems {
			if !strings.Contains(p.Text, "should not contain ':'") { // vLLM 的指标名本身带冒号
				t.Errorf("lint %s: %s", p.Metric, p.Text)
			}
		}
	}
}
