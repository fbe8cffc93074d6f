package loadgen_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/internal/tokenize"
	"github.com/vllm-cibench/cibench/loadgen"
)

// pacedUsageAtEnd 返回一个每 10ms 流出一个 token、只在最后一个正文 chunk 里带 usage 的服务
// （不理会 continuous_usage_stats）。偶数 token 的文本是 " word."，本地计数规则数成 2 个。
func pacedUsageAtEnd(t *testing.T, tokens int) loadgen.Target {
	return scripted(t, func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fl := w.(http.Flusher)
		if strings.Contains(body, `"hi"`) {
			fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", contentChunk("a"))
			return
		}
		fmt.Fprintf(w, "data: %s\n\n", roleChunk)
		fl.Flush()
		for i := range tokens {
			text := " word"
			if i%2 == 0 {
				text = " word."
			}
			if i == tokens-1 {
				fmt.Fprintf(w, `data: {"choices":[{"index":0,"delta":{"content":%q},"finish_reason":"length"}],"usage":{"prompt_tokens":16,"completion_tokens":%d,"total_tokens":%d}}`+"\n\n", text, tokens, 16+tokens)
			} else {
				fmt.Fprintf(w, "data: %s\n\n", contentChunk(text))
			}
			fl.Flush()
			time.Sleep(10 * time.Millisecond)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
}

// checkOnePerChunk 断言每个请求的 token 都按一 chunk 一个归属、未标记为估算，首两 token 间隔
// 等于前两个 chunk 的间隔，且 token 级间隔的平均值不小于服务端的 10ms 节拍（允许 0.5ms 误差）。
func checkOnePerChunk(t *testing.T, recs []loadgen.Record, s loadgen.Summary, tokens int) {
	t.Helper()
	for _, r := range recs {
		if !r.OK || r.CompletionTokens != tokens || r.TokenSource != loadgen.TokenSourceUsage {
			t.Fatalf("record ok=%v tokens=%d source=%s err=%s", r.OK, r.CompletionTokens, r.TokenSource, r.Error)
		}
		if len(r.ChunkTokens) != tokens {
			t.Fatalf("%d chunks, want %d", len(r.ChunkTokens), tokens)
		}
		sum := 0
		for i, k := range r.ChunkTokens {
			sum += int(k)
			if k != 1 {
				t.Errorf("chunk %d attributed %d tokens, want 1 (usage %d over %d chunks)", i, k, tokens, tokens)
			}
		}
		if sum != r.CompletionTokens {
			t.Errorf("chunk tokens sum %d, usage %d", sum, r.CompletionTokens)
		}
		if r.ChunkTokensEstimated {
			t.Errorf("counts agree (one per chunk) but attribution marked estimated")
		}
		// 一个 token 一个 chunk：首两 token 间隔就是前两个 chunk 的间隔（两者同一次读到时才为 0）。
		if want := r.ChunkTimes[1] - r.ChunkTimes[0]; r.FirstToSecond != want {
			t.Errorf("first-to-second %v, want the first chunk gap %v", r.FirstToSecond, want)
		}
	}
	// 服务端两次写之间至少隔 10ms，所以间隔之和不小于 (tokens−1)×10ms；只断言平均值，
	// 单个间隔在忙碌的机器上可能因一次读到两个 chunk 而变短。
	if s.TPOTSec.Avg < 9500*time.Microsecond {
		t.Errorf("AVG_TPOT_SEC %v, server paces 10ms", s.TPOTSec.Avg)
	}
	if want := int64(len(recs) * (tokens - 1)); s.TPOTSec.Count != want {
		t.Errorf("TPOT_SEC samples %d, want %d", s.TPOTSec.Count, want)
	}
}

// TestUsageOnlyInLastChunkAttribution 复现 issue 13 §2：服务端 32 个 token 每 10ms 一个 chunk、
// usage 只在最后一个 chunk，本地规则数出约 48 个 token。修复前最后一个 chunk 被记成 32 个 token、
// 其余按本地估算，AVG_TPOT_SEC 约 6ms、首两 token 间隔出现 0。
func TestUsageOnlyInLastChunkAttribution(t *testing.T) {
	const tokens = 32
	recs, s := runOne(t, pacedUsageAtEnd(t, tokens), loadgen.Profile{OutputLength: []int{tokens}}, 2)
	checkOnePerChunk(t, recs, s, tokens)
}

// TestEmulatorUsageOnlyAtEndAttribution 用模拟器复现同一问题：忽略 continuous_usage_stats
// （usage 只在末尾的 usage chunk），正文文本的本地计数多于 usage。
func TestEmulatorUsageOnlyAtEndAttribution(t *testing.T) {
	const tokens = 32
	_, tgt := startEmulator(t, emulator.Config{Model: "m", ITL: 10 * time.Millisecond, UsageOnlyAtEnd: true, CountSkew: true})
	recs, s := runOne(t, tgt, loadgen.Profile{OutputLength: []int{tokens}}, 2)
	checkOnePerChunk(t, recs, s, tokens)
}

// TestEstimatedAttributionSumsToUsage 验证 chunk 数与 usage 不一致时（每 chunk 两个 token）：
// 归属之和等于 usage、每个 chunk 至少一个、记录标为估算，且首两 token 间隔不因估算而为 0。
func TestEstimatedAttributionSumsToUsage(t *testing.T) {
	const chunks = 8
	tgt := scripted(t, func(w http.ResponseWriter, body string) {
		if strings.Contains(body, `"hi"`) {
			sseWrite(w, contentChunk("a"), "[DONE]")
			return
		}
		ev := []string{roleChunk}
		for i := range chunks {
			text := " two words"
			if i%3 == 0 {
				text = " two, words!"
			}
			ev = append(ev, contentChunk(text))
		}
		ev = append(ev, fmt.Sprintf(`{"choices":[],"usage":{"prompt_tokens":16,"completion_tokens":%d,"total_tokens":%d}}`, 2*chunks, 16+2*chunks), "[DONE]")
		sseWrite(w, ev...)
	})
	recs, _ := runOne(t, tgt, loadgen.Profile{OutputLength: []int{2 * chunks}}, 1)
	r := recs[0]
	if !r.OK || r.CompletionTokens != 2*chunks {
		t.Fatalf("ok=%v tokens=%d", r.OK, r.CompletionTokens)
	}
	if !r.ChunkTokensEstimated {
		t.Error("attribution not marked estimated although chunks (8) != usage (16)")
	}
	sum := 0
	for i, k := range r.ChunkTokens {
		if k < 1 {
			t.Errorf("chunk %d attributed %d tokens", i, k)
		}
		sum += int(k)
	}
	if sum != 2*chunks {
		t.Errorf("attributed %d tokens (%v), usage %d", sum, r.ChunkTokens, 2*chunks)
	}
	if want := r.ChunkTimes[1] - r.ChunkTimes[0]; r.FirstToSecond != want {
		t.Errorf("first-to-second %v from an estimated attribution, want the first chunk gap %v", r.FirstToSecond, want)
	}
	// 估算权重来自本地计数：" two, words!" 数成 4，" two words" 数成 2。
	if tokenize.Count(" two, words!") != 4 || r.ChunkTokens[0] <= r.ChunkTokens[1] {
		t.Errorf("extra tokens not weighted by local counts: %v", r.ChunkTokens)
	}
}

// TestAttributionFewerTokensThanChunks 验证 usage 少于 chunk 数时（服务端把一个 token 的文本拆进
// 多个 chunk）：按本地计数的比例分摊，和仍等于 usage，余数按最大余数法给靠前的 chunk。
func TestAttributionFewerTokensThanChunks(t *testing.T) {
	tgt := scripted(t, func(w http.ResponseWriter, body string) {
		if strings.Contains(body, `"hi"`) {
			sseWrite(w, contentChunk("a"), "[DONE]")
			return
		}
		sseWrite(w, roleChunk, contentChunk(" a"), contentChunk(" b c"), contentChunk(" d"), contentChunk(" e"),
			`{"choices":[],"usage":{"prompt_tokens":16,"completion_tokens":2,"total_tokens":18}}`, "[DONE]")
	})
	recs, _ := runOne(t, tgt, loadgen.Profile{}, 1)
	r := recs[0]
	if !r.OK || r.CompletionTokens != 2 || !r.ChunkTokensEstimated {
		t.Fatalf("ok=%v tokens=%d estimated=%v", r.OK, r.CompletionTokens, r.ChunkTokensEstimated)
	}
	if got := fmt.Sprint(r.ChunkTokens); got != "[1 1 0 0]" {
		t.Fatalf("chunk tokens %s, want [1 1 0 0] (weights 1,2,1,1 over 2 tokens)", got)
	}
}
