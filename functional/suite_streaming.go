package functional

import (
	"context"
	"fmt"
	"mime"
	"slices"
	"strings"
)

// streamingChat 是流式用例发往的 chat 路径。
const streamingChat = "/v1/chat/completions"

// streamingCases 生成 streaming 套件：这些断言都落在原始 SSE 字节上。用例按主题分在三个函数
// 里，顺序即目录顺序：增量本身、usage、线上格式（[DONE]、内容类型、分块、id、completions）。
func streamingCases(cfg Config) []Case {
	sc := cfg.Streaming
	return slices.Concat(streamingDeltaCases(sc), streamingUsageCases(sc), streamingWireCases(sc))
}

// streamingDeltaCases 是关于增量的用例：role 只在第一个增量出现一次、拼起来等于非流式结果、
// 每个 choice 恰好一个 finish_reason。
func streamingDeltaCases(sc StreamingConfig) []Case {
	const chat = streamingChat
	return []Case{
		{ID: "streaming/role_first", Suite: SuiteStreaming, Description: "the first delta of each choice carries role=assistant, and the role is sent exactly once",
			Run: func(ctx context.Context, t *T) {
				s := t.stream(ctx, chat, t.chatBody(sc.Prompt, sc.MaxTokens))
				if !s.firstRole[0] {
					t.Fatalf("first delta of choice 0 does not carry role=assistant")
				}
				t.Expect("role deltas for choice 0", 1, s.roleChunks[0])
			}},
		{ID: "streaming/matches_nonstream", Suite: SuiteStreaming, Isolated: true,
			Description: "at temperature 0 the concatenated deltas (reasoning, then content) equal the non-streaming message; without batch_invariant " +
				"they may drift after the first 4 tokens, never drop or repeat a delta",
			Run: func(ctx context.Context, t *T) {
				b := t.chatBody(sc.Prompt, sc.MaxTokens)
				c := t.chat(ctx, b)
				s := t.stream(ctx, chat, b)
				msg := c.Choices[0].Message
				var reasoning string
				for _, k := range t.reasoningKeys() {
					if v, ok := msg.field(k); ok {
						reasoning = v
						break
					}
				}
				want := reasoning + msg.text()
				t.expectSameOutput("reasoning+content", s.seq[0], want)
				if strings.Join(s.seq[0], "") == want {
					// 同一段文本：推理与正文的分界、finish_reason 也必须相同。
					if s.reasoning[0] != reasoning {
						t.Fatalf("streamed reasoning %q != non-streaming reasoning %q", trim(s.reasoning[0]), trim(reasoning))
					}
					if s.finish[0] != str(c.Choices[0].FinishReason) {
						t.Fatalf("streamed finish_reason %q != non-streaming %q", s.finish[0], str(c.Choices[0].FinishReason))
					}
				} else if f := s.finish[0]; !validFinish(f) {
					t.Fatalf("streamed finish_reason=%q", f)
				}
			}},
		{ID: "streaming/single_finish", Suite: SuiteStreaming, Description: "with n=2 every choice gets exactly one finish_reason",
			Run: func(ctx context.Context, t *T) {
				s := t.stream(ctx, chat, t.chatBody(sc.Prompt, sc.MaxTokens).with(map[string]any{"n": 2, "temperature": 0.7, "seed": 3}))
				for i := 0; i < 2; i++ {
					if s.finishes[i] != 1 {
						t.Errorf("choice %d: finish_reason appeared %d times, want exactly 1", i, s.finishes[i])
					} else if f := s.finish[i]; !validFinish(f) {
						t.Errorf("choice %d: finish_reason=%q", i, f)
					}
				}
			}},
	}
}

// streamingUsageCases 是关于 usage 的用例：include_usage 的最后一块与 continuous_usage_stats 的逐块 usage。
func streamingUsageCases(sc StreamingConfig) []Case {
	const chat = streamingChat
	return []Case{
		{ID: "streaming/include_usage", Suite: SuiteStreaming, Description: "stream_options.include_usage adds one final chunk with choices [] and usage; earlier chunks carry usage null",
			Run: func(ctx context.Context, t *T) {
				s := t.streamCap(ctx, chat, t.chatBody(sc.Prompt, sc.MaxTokens).with(map[string]any{
					"stream_options": map[string]any{"include_usage": true}}), "stream_options.include_usage", CapStreamUsage)
				n := len(s.chunks)
				if n == 0 {
					t.Fatalf("empty stream")
				}
				last := s.chunks[n-1]
				if len(last.Choices) != 0 || s.usages[n-1] == nil {
					t.Fatalf("last chunk is not a usage chunk with choices []: %s", trim(string(s.raw.Events[n-1])))
				}
				for i := 0; i < n-1; i++ {
					if s.usages[i] != nil {
						t.Fatalf("chunk %d carries usage before the final usage chunk", i)
					}
				}
				t.checkUsage("stream usage", s.usages[n-1])
			}},
		{ID: "streaming/continuous_usage", Suite: SuiteStreaming, Description: "continuous_usage_stats puts usage on every chunk with non-decreasing completion_tokens",
			Run: func(ctx context.Context, t *T) {
				s := t.streamCap(ctx, chat, t.chatBody(sc.Prompt, sc.MaxTokens).with(map[string]any{
					"stream_options": map[string]any{"include_usage": true, "continuous_usage_stats": true}}), "stream_options.continuous_usage_stats", CapStreamUsage, CapContinuousUsage)
				prev := -1
				for i, u := range s.usages {
					if u == nil {
						t.Fatalf("chunk %d has no usage under continuous_usage_stats", i)
					}
					if u.CompletionTokens < prev {
						t.Fatalf("completion_tokens went back from %d to %d at chunk %d", prev, u.CompletionTokens, i)
					}
					prev = u.CompletionTokens
				}
				if s.usageChunk == nil || s.usageChunk.CompletionTokens != prev {
					t.Fatalf("final usage does not equal the last running completion_tokens %d", prev)
				}
			}},
	}
}

// streamingWireCases 是关于线上格式的用例：[DONE] 结尾、text/event-stream、分块数、同一个 id、
// completions 流的 usage 与 [DONE]。
func streamingWireCases(sc StreamingConfig) []Case {
	const chat = streamingChat
	return []Case{
		{ID: "streaming/done", Suite: SuiteStreaming, Description: "the raw SSE stream ends with data: [DONE] and nothing after it",
			Run: func(ctx context.Context, t *T) {
				s := t.stream(ctx, chat, t.chatBody(sc.Prompt, sc.MaxTokens))
				if !s.raw.Done {
					t.Fatalf("stream ended without data: [DONE] (%d events)", len(s.raw.Events))
				}
				t.Expect("events after [DONE]", 0, s.raw.AfterDone)
			}},
		{ID: "streaming/content_type", Suite: SuiteStreaming, Description: "streaming responses are served as text/event-stream",
			Run: func(ctx context.Context, t *T) {
				s := t.stream(ctx, chat, t.chatBody(sc.Prompt, sc.MaxTokens))
				ct := s.raw.Header.Get("Content-Type")
				mt, _, err := mime.ParseMediaType(ct)
				if err != nil || mt != "text/event-stream" {
					t.Fatalf("Content-Type=%q, want text/event-stream", ct)
				}
			}},
		{ID: "streaming/chunk_size", Suite: SuiteStreaming, Description: "token-bearing chunks number ceil(completion_tokens/chunk_size) (server stream interval from the scenario)",
			Run: func(ctx context.Context, t *T) {
				if sc.ChunkSize == 0 {
					t.Skipf("streaming.chunk_size not set for this scenario")
				}
				s := t.streamCap(ctx, chat, t.chatBody(sc.Prompt, sc.MaxTokens).with(map[string]any{
					"stream_options": map[string]any{"include_usage": true}}), "stream_options.include_usage", CapStreamUsage)
				if s.usageChunk == nil {
					// include_usage 声明为支持（或探测时被接受）却没有 usage chunk：无法把 chunk 与
					// token 对应，这是服务端的问题而不是“不支持”。
					t.Fatalf("server accepted stream_options.include_usage but sent no usage chunk; cannot relate chunks to tokens")
				}
				n := s.usageChunk.CompletionTokens
				want := (n + sc.ChunkSize - 1) / sc.ChunkSize
				if s.contentChunks < want || s.contentChunks > n {
					t.Fatalf("%d token-bearing chunks for %d tokens at chunk_size %d, want %d", s.contentChunks, n, sc.ChunkSize, want)
				}
				if sc.ChunkSize == 1 && s.contentChunks != n {
					t.Fatalf("%d token-bearing chunks for %d tokens at chunk_size 1", s.contentChunks, n)
				}
			}},
		{ID: "streaming/one_id", Suite: SuiteStreaming, Description: "every chunk of a stream (both choices of n=2, chat and completions) carries the same non-empty id",
			// vLLM 与 OpenAI 给一个流（包括 n>1 的所有 choice）只生成一个 id，每个 chunk 都带它；
			// 客户端（openai-python 的流聚合、按 id 归并的网关与日志）靠它把 chunk 认作同一个回答。
			// 每个 chunk 换一个 id 的服务（常见于逐 chunk 重新包装的代理）会让这些客户端把一个
			// 回答拆成许多个，而所有别的用例都照样通过——所以单独断言。
			Run: func(ctx context.Context, t *T) {
				check := func(what string, s *streamed) {
					first := ""
					for i, c := range s.chunks {
						if c.ID == "" {
							t.Fatalf("%s: chunk %d has no id", what, i)
						}
						if i == 0 {
							first = c.ID
						} else if c.ID != first {
							t.Fatalf("%s: chunk %d has id %q, chunk 0 has %q: one stream must keep one id", what, i, c.ID, first)
						}
					}
					if len(s.chunks) < 2 {
						t.Fatalf("%s: only %d chunk(s); cannot compare ids", what, len(s.chunks))
					}
				}
				// n>1 需要采样（vLLM 拒绝贪心解码下的 n>1）；固定 seed 让它不消耗服务端的共享随机流。
				sampled := map[string]any{"n": 2, "temperature": 0.7, "seed": 3}
				check("chat stream n=2", t.stream(ctx, chat, t.chatBody(sc.Prompt, sc.MaxTokens).with(sampled)))
				check("completions stream n=2", t.stream(ctx, "/v1/completions", t.completionBody(sc.Prompt, sc.MaxTokens).with(sampled)))
			}},
		{ID: "streaming/completions_usage", Suite: SuiteStreaming, Description: "completions streams honour include_usage and end with [DONE]",
			Run: func(ctx context.Context, t *T) {
				s := t.streamCap(ctx, "/v1/completions", t.completionBody(sc.Prompt, sc.MaxTokens).with(map[string]any{
					"stream_options": map[string]any{"include_usage": true}}), "stream_options.include_usage", CapStreamUsage)
				if s.usageChunk == nil {
					t.Fatalf("no final usage chunk in the completions stream")
				}
				if got := s.usageChunk.CompletionTokens; got < 1 || got > sc.MaxTokens {
					t.Fatalf("completion_tokens=%d, want 1..%d", got, sc.MaxTokens)
				}
				if strings.TrimSpace(s.text[0]) == "" {
					t.Fatalf("completions stream delivered no text")
				}
			}},
	}
}

// describe 返回 float 的简短文本，用于用例 ID（0.6 → "0.6"）。
func describe(v float64) string { return fmt.Sprintf("%g", v) }
