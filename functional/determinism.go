package functional

import (
	"fmt"
	"strings"
)

// 流式与非流式输出的比较（需求："带 seed 的非流式期望完全一致；流式允许小幅差异"）。
//
// vLLM 默认不保证结果可复现："vLLM does not guarantee the reproducibility of the results by
// default"；同一请求与别的并发请求成批时 logits 不同，贪心解码也可能在某个接近平手的
// token 上走向另一个分支，之后整段文本不同（自回归）。所以：
//
//   - 服务端声明 batch_invariant: supported（VLLM_BATCH_INVARIANT=1）时，两段文本必须逐字节相同；
//   - 否则允许"小幅差异"，精确定义为：两段文本在流式的前 MinCommonTokens 个 token（流式增量）
//     上相同，之后可以分叉；但分叉后的流式文本不能是非流式文本去掉（或多出）一段之后的样子——
//     那是流丢了（或重复了）增量，不是批造成的漂移。
//
// 每次比较都报告第一个分叉的 token 序号与共同前缀占流式 token 的比例（用例的 Notes）。

// MinCommonTokens 是容忍模式下流式与非流式文本至少相同的前缀 token 数：批相关的漂移
// 来自接近平手的 logits，几乎总在几个 token 之后；第 0–3 个 token 就不同说明不是同一次解码
// （seed 被忽略、流与非流式走了不同的路径）。
const MinCommonTokens = 4

// divergence 是一次比较的结果。
type divergence struct {
	equal   bool
	token   int     // 第一个不同的流式 token 序号（equal 时为 tokens）
	tokens  int     // 流式 token 数
	share   float64 // 共同前缀占流式 token 的比例
	dropped string  // 非空：分叉处是丢失或重复的增量（说明）
}

// compareStream 比较流式增量 pieces 拼成的文本与非流式文本 want。
func compareStream(pieces []string, want string) divergence {
	got := strings.Join(pieces, "")
	d := divergence{tokens: len(pieces)}
	if got == want {
		d.equal, d.token, d.share = true, len(pieces), 1
		return d
	}
	j := 0
	for j < len(got) && j < len(want) && got[j] == want[j] {
		j++
	}
	// 字节位置 → 包含它的增量序号。
	off := 0
	d.token = len(pieces)
	for i, p := range pieces {
		if off+len(p) > j {
			d.token = i
			break
		}
		off += len(p)
	}
	if d.tokens > 0 {
		d.share = float64(d.token) / float64(d.tokens)
	}
	restGot, restWant := got[j:], want[j:]
	switch {
	case restGot != "" && len(restWant) > len(restGot) && strings.HasSuffix(restWant, restGot):
		d.dropped = fmt.Sprintf("the stream lacks %d byte(s) the non-streaming text has at byte %d (%q): a dropped delta, not batch drift",
			len(restWant)-len(restGot), j, trim(restWant[:len(restWant)-len(restGot)]))
	case restGot == "" && restWant != "":
		d.dropped = fmt.Sprintf("the stream ends at byte %d where the non-streaming text goes on (%q): a dropped delta, not batch drift", j, trim(restWant))
	case restWant != "" && len(restGot) > len(restWant) && strings.HasSuffix(restGot, restWant),
		restWant == "" && restGot != "":
		d.dropped = fmt.Sprintf("the stream has %d extra byte(s) at byte %d (%q): a repeated delta, not batch drift",
			len(restGot)-len(restWant), j, trim(restGot[:len(restGot)-len(restWant)]))
	}
	return d
}

// expectSameOutput 按服务端的批不变声明比较流式输出与非流式输出（what 说明比较的是什么，
// 如 "content"）。严格模式下任何差异都失败；容忍模式下只有前缀过短或丢失/重复增量才失败，
// 允许的漂移记在 Notes 里。
func (t *T) expectSameOutput(what string, pieces []string, want string) {
	d := compareStream(pieces, want)
	if d.equal {
		return
	}
	got := strings.Join(pieces, "")
	detail := fmt.Sprintf("streamed %s diverges from the non-streaming %s at token %d of %d (common prefix %.0f%%): %q vs %q",
		what, what, d.token, d.tokens, d.share*100, trim(got), trim(want))
	switch {
	case t.Support(CapBatchInvariant) == SupportSupported:
		t.Fatalf("%s; the server declares batch_invariant: supported, so they must be identical", detail)
	case d.dropped != "":
		t.Fatalf("streamed %s: %s", what, d.dropped)
	case d.token < MinCommonTokens:
		t.Fatalf("%s; fewer than %d common tokens is not batch drift (allowed only after the first %d tokens)", detail, MinCommonTokens, MinCommonTokens)
	default:
		t.Notef("allowed batch nondeterminism: %s (declare batch_invariant: supported for the strict check)", detail)
	}
}
