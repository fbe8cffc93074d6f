package simpleevals

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// mgsmUpstream 是 testdata/reference/mgsm_upstream.json：上游 mgsm_eval.py 的
// 指令与答案前缀（文件中以 \u 转义保存，来源见其 _provenance）。
type mgsmUpstream struct {
	Provenance   string            `json:"_provenance"`
	AllLanguages []string          `json:"all_languages"`
	Latin        []string          `json:"latin_languages"`
	Instructions map[string]string `json:"instructions"`
	AnswerPrefix map[string]string `json:"answer_prefix"`
}

// loadMGSMUpstream 读取上游文本；文件缺失或语言不全时测试失败而不是跳过。
func loadMGSMUpstream(t *testing.T) mgsmUpstream {
	t.Helper()
	data, err := os.ReadFile("testdata/reference/mgsm_upstream.json")
	if err != nil {
		t.Fatal(err)
	}
	var up mgsmUpstream
	if err := json.Unmarshal(data, &up); err != nil {
		t.Fatal(err)
	}
	if len(up.Instructions) != 11 || len(up.AnswerPrefix) != 11 || !strings.Contains(up.Provenance, "simple-evals") {
		t.Fatalf("reference incomplete: %d instructions, %d prefixes", len(up.Instructions), len(up.AnswerPrefix))
	}
	return up
}

// TestMGSMInstructionsMatchUpstream 逐字节比较 11 种语言的指令与答案前缀：
// 曾经 bn 指令把上游的 U+09DF 写成了 U+09AF U+09BC，导致每道孟加拉语题的提示都不同。
func TestMGSMInstructionsMatchUpstream(t *testing.T) {
	up := loadMGSMUpstream(t)
	if !slices.Equal(up.AllLanguages, MGSMLanguages()) {
		t.Errorf("languages %v, upstream ALL_LANGUAGES %v", MGSMLanguages(), up.AllLanguages)
	}
	for _, lang := range up.AllLanguages {
		if mgsmLatin[lang] != slices.Contains(up.Latin, lang) {
			t.Errorf("%s: latin=%v, upstream LATIN_LANGUAGES %v", lang, mgsmLatin[lang], up.Latin)
		}
		if got, want := mgsmInstructions[lang], up.Instructions[lang]; got != want {
			i := 0
			for i < min(len(got), len(want)) && got[i] == want[i] {
				i++
			}
			t.Errorf("%s instruction differs from upstream at byte %d:\n got % x\nwant % x", lang, i,
				got[i:min(len(got), i+12)], want[i:min(len(want), i+12)])
		}
		if got, want := mgsmAnswerPrefix[lang], up.AnswerPrefix[lang]; got != want {
			t.Errorf("%s answer prefix %q (% x), upstream %q (% x)", lang, got, got, want, want)
		}
	}
	if len(mgsmInstructions) != 11 || len(mgsmAnswerPrefix) != 11 {
		t.Errorf("%d instructions, %d prefixes; want 11 each", len(mgsmInstructions), len(mgsmAnswerPrefix))
	}
}

// TestMGSMBengaliCodePoints 在码点层面钉住上游的拼写：দেওয়ার 中的 য় 是单个 U+09DF，
// 而 চূড়ান্ত 中的 ড় 是 U+09A1 U+09BC（两处）。NFC 规范化会把 U+09DF 拆成两个码点，
// 所以编辑器或复制粘贴很容易悄悄引入这个差异。
func TestMGSMBengaliCodePoints(t *testing.T) {
	bn := []rune(mgsmInstructions["bn"])
	count := func(seq ...rune) int {
		n := 0
		for i := range bn {
			if i+len(seq) <= len(bn) && slices.Equal(bn[i:i+len(seq)], seq) {
				n++
			}
		}
		return n
	}
	if n := count(0x09DF); n != 1 {
		t.Errorf("U+09DF occurs %d times in bn, upstream has 1 (in দেওয়ার)", n)
	}
	if n := count(0x09AF, 0x09BC); n != 0 {
		t.Errorf("U+09AF U+09BC occurs %d times in bn, upstream has 0", n)
	}
	if n := count(0x09A1, 0x09BC); n != 2 {
		t.Errorf("U+09A1 U+09BC occurs %d times in bn, upstream has 2 (চূড়ান্ত twice)", n)
	}
	if n := count(0x09DC); n != 0 {
		t.Errorf("U+09DC occurs %d times in bn, upstream has 0", n)
	}
	if len(bn) != 210 {
		t.Errorf("bn instruction has %d code points, upstream has 210", len(bn))
	}
}

// TestMGSMPromptsUseUpstreamText 通过 Examples 检查发出的提示就是上游
// instruction.format(input=...)：每种语言的第一题逐字节相同。
func TestMGSMPromptsUseUpstreamText(t *testing.T) {
	up := loadMGSMUpstream(t)
	g, err := NewMGSM(SampleData(), MGSMOptions{NumExamplesPerLang: 1})
	if err != nil {
		t.Fatal(err)
	}
	exs, err := g.Examples(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(exs) != 11 {
		t.Fatalf("%d examples, want 11", len(exs))
	}
	for i, lang := range up.AllLanguages {
		want := strings.Replace(up.Instructions[lang], "{input}", g.items[i].inputs, 1)
		if got := exs[i].Messages[0].Content; got != want {
			t.Errorf("%s prompt differs from upstream", lang)
		}
	}
}
