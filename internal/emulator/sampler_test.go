package emulator_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/internal/emulator"
	"github.com/vllm-cibench/cibench/internal/tokenize"
)

// greedyText 返回骨架流的前 n 个片段，即贪心输出。
func greedyText(v *emulator.Vocab, backbone uint64, n int) []string {
	t := v.NewText(backbone)
	return t.AppendPieces(nil, n)
}

// pieceRepeat 返回 1 - 不同片段数/片段数（忽略前导空格）。
func pieceRepeat(ps []string) float64 {
	m := map[string]bool{}
	for _, p := range ps {
		m[strings.TrimLeft(p, " ")] = true
	}
	return 1 - float64(len(m))/float64(len(ps))
}

// prefixLen 返回两个片段序列的公共前缀长度。
func prefixLen(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// TestSampleGreedyAndTruncationFollowTheBackbone 验证 argmax 就是骨架：温度 0、top_k=1、
// top_p=0.1（贪心片段的概率始终 ≥ 0.1）都逐片段等于贪心文本，且与随机种子无关。
func TestSampleGreedyAndTruncationFollowTheBackbone(t *testing.T) {
	v := emulator.NewVocab()
	for _, bb := range []uint64{1, 2, 99} {
		want := greedyText(v, bb, 60)
		for _, s := range []emulator.Sampling{{}, {Temperature: 1, TopK: 1}, {Temperature: 1, TopP: 0.1}, {Temperature: 0.7, TopP: 0.1, TopK: 40}} {
			for _, rnd := range []uint64{3, 4, 5} {
				if got := v.Sample(nil, bb, rnd, 60, &s); !slices.Equal(got, want) {
					t.Fatalf("backbone %d %+v rnd %d:\n got %q\nwant %q", bb, s, rnd, got, want)
				}
			}
		}
	}
}

// TestSampleIsSeededAndSpreads 验证同一种子可复现、不同种子在温度 1 / top_k=50 下分岔。
func TestSampleIsSeededAndSpreads(t *testing.T) {
	v := emulator.NewVocab()
	s := emulator.Sampling{Temperature: 1, TopK: 50}
	a, b := v.Sample(nil, 7, 1, 40, &s), v.Sample(nil, 7, 1, 40, &s)
	if !slices.Equal(a, b) {
		t.Fatalf("same seed differs: %q vs %q", a, b)
	}
	seen := map[string]bool{}
	for rnd := uint64(0); rnd < 6; rnd++ {
		seen[strings.Join(v.Sample(nil, 7, rnd, 40, &s), "")] = true
	}
	if len(seen) != 6 {
		t.Fatalf("top_k=50 at temperature 1: %d distinct outputs of 6 seeds", len(seen))
	}
}

// TestSampleTemperatureScalesSpread 验证温度 0.2 的样本与贪心文本的公共前缀远长于温度 1.5。
func TestSampleTemperatureScalesSpread(t *testing.T) {
	v := emulator.NewVocab()
	greedy := greedyText(v, 11, 40)
	prefix := func(temp float64) int {
		sum := 0
		for rnd := uint64(0); rnd < 8; rnd++ {
			sum += prefixLen(v.Sample(nil, 11, rnd, 40, &emulator.Sampling{Temperature: temp}), greedy)
		}
		return sum
	}
	cold, hot := prefix(0.2), prefix(1.5)
	if cold < 8*20 || hot > 8*2 {
		t.Fatalf("summed common prefix with greedy over 8 seeds: temperature 0.2 %d (want >= 160), 1.5 %d (want <= 16)", cold, hot)
	}
}

// TestSamplePenaltiesChangeRepetition 验证 presence/frequency penalty 按已生成 token 计数起作用：
// +2 的重复率远低于 -2，且 0 介于两者之间。
func TestSamplePenaltiesChangeRepetition(t *testing.T) {
	v := emulator.NewVocab()
	for _, name := range []string{"presence", "frequency"} {
		ratio := func(p float64) float64 {
			sum := 0.0
			for rnd := uint64(0); rnd < 4; rnd++ {
				s := emulator.Sampling{Temperature: 1}
				if name == "presence" {
					s.Presence = p
				} else {
					s.Frequency = p
				}
				sum += pieceRepeat(v.Sample(nil, 5, rnd, 64, &s))
			}
			return sum / 4
		}
		pos, zero, neg := ratio(2), ratio(0), ratio(-2)
		if !(pos+0.3 < neg && pos <= zero && zero <= neg) {
			t.Fatalf("%s: repeat ratio +2 %.3f, 0 %.3f, -2 %.3f", name, pos, zero, neg)
		}
	}
	// 贪心下惩罚同样生效（vLLM 在 argmax 之前施加惩罚）：+2 让贪心文本不再重复片段。
	g := v.Sample(nil, 5, 0, 64, &emulator.Sampling{Presence: 2})
	if r := pieceRepeat(g); r > pieceRepeat(greedyText(v, 5, 64)) || r > 0.05 {
		t.Fatalf("greedy with presence +2 repeat ratio %.3f: %q", r, g)
	}
}

// TestSampleLogitBias 验证 +100 让该片段占满输出（词表内与词表外的片段都可以），-100 让它消失。
func TestSampleLogitBias(t *testing.T) {
	v := emulator.NewVocab()
	for _, p := range []string{" cache", " robot"} {
		for _, temp := range []float64{0, 1} {
			got := v.Sample(nil, 3, 1, 20, &emulator.Sampling{Temperature: temp, Bias: map[string]float64{p: 100}})
			want := slices.Repeat([]string{p}, 20)
			want[0] = strings.TrimLeft(p, " ")
			if !slices.Equal(got, want) {
				t.Fatalf("+100 on %q at temperature %g: %q", p, temp, got)
			}
		}
	}
	greedy := greedyText(v, 3, 30)
	banned := map[string]float64{greedy[0]: -100, greedy[1]: -100}
	got := v.Sample(nil, 3, 0, 30, &emulator.Sampling{Bias: banned})
	for _, p := range got {
		if banned[p] != 0 || banned[" "+p] != 0 {
			t.Fatalf("banned piece %q appears in %q", p, got)
		}
	}
	if got[2] != greedy[2] {
		t.Fatalf("a ban must only move the banned steps: %q vs %q", got, greedy)
	}
}

// TestSamplePiecesAreVocabulary 验证采样出的每个片段都是词表片段（可按 id 反查），
// 包括从“其余词表”整体中抽出的片段（高温且不截断时大多来自那里）。
func TestSamplePiecesAreVocabulary(t *testing.T) {
	v := emulator.NewVocab()
	got := v.Sample(nil, 8, 8, 200, &emulator.Sampling{Temperature: 2, TopK: 600, TopP: 0.99})
	distinct := map[string]bool{}
	for _, p := range got {
		if _, ok := v.PieceByID(tokenize.ID(p)); !ok {
			t.Fatalf("piece %q is not in the vocabulary", p)
		}
		distinct[p] = true
	}
	if len(distinct) < 100 {
		t.Fatalf("temperature 2 gave only %d distinct pieces in 200", len(distinct))
	}
	for _, p := range []string{"。", ",", "The"} {
		if got, ok := v.PieceByID(tokenize.ID(p)); !ok || got != p {
			t.Fatalf("PieceByID(%q) = %q, %v", p, got, ok)
		}
	}
	if _, ok := v.PieceByID(-1); ok {
		t.Fatal("PieceByID(-1) must not resolve")
	}
}
