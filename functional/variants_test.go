package functional_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/functional"
)

// TestCatalogOnServerVariants 对几种真实存在的 vLLM 部署形态（旧版 reasoning_content 字段、
// 没有 reasoning parser 的 <think> 正文、每 chunk 多个 token、流中不带 usage、上下文较小）
// 运行整个目录：全部通过或带原因跳过，并且报告出服务端使用的推理形式。
func TestCatalogOnServerVariants(t *testing.T) {
	for name, tc := range map[string]struct {
		emu       func(*emulator.Config)
		cfg       func(*functional.Config)
		caps      map[functional.Capability]functional.Support
		keys      []string
		wantNote  map[string]string
		wantSkips []string
	}{
		"reasoning_content": {
			emu:      func(c *emulator.Config) { c.ReasoningField = "reasoning_content" },
			wantNote: map[string]string{"reasoning/present": "message.reasoning_content"},
		},
		"scenario_keys_first": {
			keys:     []string{"reasoning"},
			wantNote: map[string]string{"reasoning/present": "message.reasoning"},
		},
		"think_in_content": {
			emu:      func(c *emulator.Config) { c.ReasoningInContent = true },
			wantNote: map[string]string{"reasoning/present": "content <think>", "reasoning/separated": "without reasoning parser", "reasoning/stream": "think block"},
		},
		"chunk_of_3": {
			emu: func(c *emulator.Config) { c.TokensPerChunk = 3 },
			cfg: func(c *functional.Config) { c.Streaming.ChunkSize = 3 },
		},
		"no_stream_usage": {
			emu: func(c *emulator.Config) { c.DisableStreamUsage = true },
			// 服务端忽略 stream_options：场景声明 stream_usage 不支持，依赖它的用例跳过。
			caps:      map[functional.Capability]functional.Support{functional.CapStreamUsage: functional.SupportUnsupported},
			wantSkips: []string{"streaming/chunk_size", "streaming/include_usage", "streaming/continuous_usage", "streaming/completions_usage"},
		},
		"small_context_from_config": {
			emu: func(c *emulator.Config) { c.MaxModelLen = 20000 },
			cfg: func(c *functional.Config) {
				c.Errors.MaxModelLen = 20000
				c.ParamsBoundary.MaxTokens = []int{1, 128, 4096}
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			ec := fullEmulator()
			if tc.emu != nil {
				tc.emu(&ec)
			}
			_, target := startEmulator(t, ec)
			target.ReasoningKeys = tc.keys
			target.Capabilities = tc.caps
			cfg := functional.DefaultConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			cat, err := functional.NewCatalog(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			rep := run(t, target, functional.Options{Config: &cfg}, cat.Cases()...)
			for _, res := range rep.Results {
				if res.Status == functional.StatusFail {
					t.Errorf("%s failed: %s\n%s\n%s", res.CaseID, res.Reason, res.Request, res.Response)
				}
				if res.Status == functional.StatusSkip && res.Reason == "" {
					t.Errorf("%s skipped without reason", res.CaseID)
				}
			}
			for id, note := range tc.wantNote {
				if res, _ := rep.Result(id); res.Status != functional.StatusPass || !strings.Contains(res.Reason, note) {
					t.Errorf("%s: want pass noting %q, got %s %q", id, note, res.Status, res.Reason)
				}
			}
			for _, id := range tc.wantSkips {
				if res, _ := rep.Result(id); res.Status != functional.StatusSkip {
					t.Errorf("%s: want skip, got %s %q", id, res.Status, res.Reason)
				}
			}
			// 其余用例全部执行：通过数恰好是总数减去声明的跳过与 top_p=0（unsupported）。
			if want := len(rep.Results) - len(tc.wantSkips) - len(faithfulNotPassing); rep.Count(functional.StatusPass) != want {
				t.Errorf("%d passed, want %d (every case but the declared skips and top_p=0)", rep.Count(functional.StatusPass), want)
			}
		})
	}
}

// TestNothingPassesAgainstAnEmptyServer 证明没有一个用例会“悄悄通过”：对一个
// 对所有请求都回 200 和 "{}" 的服务，每个用例都失败或带原因跳过。
func TestNothingPassesAgainstAnEmptyServer(t *testing.T) {
	empty := func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte("{}"))
		})
	}
	target := serveEmulator(t, emulator.Config{APIKey: "sk-empty-server"}, empty)
	rep := run(t, target, functional.Options{}, functional.DefaultCatalog().Cases()...)
	for _, res := range rep.Results {
		if res.Status == functional.StatusPass {
			t.Errorf("%s passed against a server that answers {} to everything", res.CaseID)
		}
		if res.Status == functional.StatusSkip {
			t.Logf("%s skipped: %s", res.CaseID, res.Reason)
		}
	}
}
