package dataset

import (
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/internal/tokenize"
)

// TestTracePromptBlocks 验证 hash_id 块：token 数按规则恰好等于 input_length；相同的 id 前缀
// 得到逐字节相同的文本前缀，第一个不同的 id 之后文本立即不同；换 salt 后没有公共块。
func TestTracePromptBlocks(t *testing.T) {
	const B = 16
	rows := []TraceRequest{
		{InputLength: 2*B + 5, OutputLength: 4, HashIDs: []int64{1, 2, 3}, Line: 1},
		{InputLength: 3 * B, OutputLength: 4, HashIDs: []int64{1, 2, 9}, Line: 2},
		{InputLength: B + 1, OutputLength: 4, HashIDs: []int64{7, 2}, Line: 3},
		{InputLength: 11, OutputLength: 4, Line: 4}, // 没有 hash_ids：独有文本
	}
	ts := NewTrace(rows, TraceConfig{BlockSize: B, TimeScale: 1})
	texts := make([]string, len(rows))
	for i := range rows {
		q, tok, out := ts.Prompt(nil, i)
		texts[i] = unquote(t, q)
		if tok != rows[i].InputLength || out != 4 {
			t.Fatalf("row %d: tokens %d out %d, want %d 4", i, tok, out, rows[i].InputLength)
		}
		if got := tokenize.Count(texts[i]); got != rows[i].InputLength {
			t.Fatalf("row %d: %d tokens by the shared rules, want %d", i, got, rows[i].InputLength)
		}
	}
	// 前两块共享：两个文本的公共前缀正好是前 2 块（2B 个片段）的字节数。
	b1, b2 := ts.block(1), ts.block(2)
	shared := len(b1.text) + len(b2.text)
	if texts[0][:shared] != texts[1][:shared] {
		t.Fatal("rows with equal leading hash_ids do not share the prefix text")
	}
	if texts[0][shared:shared+8] == texts[1][shared:shared+8] {
		t.Fatal("different third hash_ids produced the same text")
	}
	if strings.HasPrefix(texts[2], b1.text) || !strings.Contains(texts[2], b2.text[:b2.ends[0]]) {
		t.Fatal("row 3 should start with block 7 and contain block 2's first piece")
	}
	// 换 salt：块 1 的文本完全不同。
	ts2 := NewTrace(rows, TraceConfig{BlockSize: B, TimeScale: 1, Salt: 42})
	if ts2.block(1).text == b1.text {
		t.Fatal("salt does not change the block text")
	}
	// 缓存清空后重新生成的块与原来相同（内容只由种子决定）。
	clear(ts.blocks)
	if ts.block(1).text != b1.text {
		t.Fatal("block text is not deterministic")
	}
}

// TestTraceSchedule 验证窗口、时间缩放与空闲上限。
func TestTraceSchedule(t *testing.T) {
	ms := time.Millisecond
	rows := []TraceRequest{{At: 0}, {At: 100 * ms}, {At: 150 * ms}, {At: 5000 * ms}, {At: 6000 * ms}}
	c := TraceConfig{TimeScale: 0.5, StartOffset: 100 * ms, EndOffset: 6000 * ms, MaxIdle: time.Second}
	win := Window(rows, c)
	if len(win) != 3 || win[0].At != 100*ms || win[2].At != 5000*ms {
		t.Fatalf("window %+v", win)
	}
	got := traceSchedule(win, c)
	want := []time.Duration{0, 25 * ms, 25*ms + time.Second} // 4850ms×0.5 = 2425ms 被压到 1s
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("schedule %v, want %v", got, want)
		}
	}
	if w := Window(rows, TraceConfig{StartOffset: 7 * time.Second}); w != nil {
		t.Fatalf("empty window: %v", w)
	}
}

// TestSetPools 验证 shared_prefix 与 prefix_repetition 的集合：条数、token 数精确、组内共享
// 系统提示 / 前缀、打乱可复现。
func TestSetPools(t *testing.T) {
	sp := SharedPrefixConfig{NumGroups: 3, NumPromptsPerGroup: 4, SystemPromptLen: 20, QuestionLen: 7, OutputLen: 9}
	pl, err := SharedPrefixPool(sp, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Quoted) != 12 || !pl.Complete {
		t.Fatalf("%d prompts", len(pl.Quoted))
	}
	for i, q := range pl.Quoted {
		s := unquote(t, q)
		if n := tokenize.Count(s); n != 27 || pl.Tokens[i] != 27 || pl.MaxTokens[i] != 9 {
			t.Fatalf("prompt %d: %d tokens (%d recorded), max %d", i, n, pl.Tokens[i], pl.MaxTokens[i])
		}
	}
	pl2, _ := SharedPrefixPool(sp, 0)
	for i := range pl.Quoted {
		if string(pl.Quoted[i]) != string(pl2.Quoted[i]) {
			t.Fatal("shared_prefix set is not reproducible")
		}
	}
	// 每组的系统提示是前 20 个片段：按系统提示文本分组，应恰好 3 组各 4 条。
	groups := map[string]int{}
	for g := range 3 {
		sys := strings.Join(newTextGen(0*1_000_003+uint64(g)*7919+0x5157).pieces(nil, 20), "")
		for _, q := range pl.Quoted {
			if strings.HasPrefix(unquote(t, q), sys) {
				groups[sys]++
			}
		}
	}
	if len(groups) != 3 {
		t.Fatalf("groups %v", groups)
	}
	for _, n := range groups {
		if n != 4 {
			t.Fatalf("groups %v", groups)
		}
	}

	pl, err = PrefixRepetitionPool(PrefixRepetitionConfig{PrefixLen: 10, SuffixLen: 5, NumPrefixes: 3, OutputLen: 2}, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for i, q := range pl.Quoted {
		s := unquote(t, q)
		if tokenize.Count(s) != 15 || pl.MaxTokens[i] != 2 {
			t.Fatalf("prompt %d: %d tokens", i, tokenize.Count(s))
		}
		for k := range 3 {
			pre := strings.Join(newTextGen(uint64(k)*7919+0x9f1e).pieces(nil, 10), "")
			if strings.HasPrefix(s, pre) {
				count[pre]++
			}
		}
	}
	if len(pl.Quoted) != 10 || len(count) != 3 {
		t.Fatalf("%d prompts, prefixes %v", len(pl.Quoted), count)
	}
	total := 0
	for _, n := range count {
		total += n
		if n < 3 || n > 4 {
			t.Fatalf("prefix use %v, want 4/3/3", count)
		}
	}
	if total != 10 {
		t.Fatalf("prefix use %v", count)
	}
}
