package functional

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"net/http"
	"sort"
	"strings"

	"github.com/openai/openai-go/v3"
)

// errorsCases 生成 errors 套件：非法/冲突参数与超出上下文得到 4xx，未知模型 404，
// 错误体形状符合 vLLM，鉴权生效，服务在错误之后仍正常服务。
func errorsCases(cfg Config) []Case {
	ec := cfg.Errors
	cases := []Case{
		{ID: "errors/context_overflow", Suite: SuiteErrors, Description: "a prompt longer than max_model_len is rejected with 400",
			Run: func(ctx context.Context, t *T) {
				limit := maxModelLen(ctx, t, ec)
				prompt := strings.Repeat("hello ", limit+64)
				resp := t.mustPost(ctx, "/v1/chat/completions", t.chatBody(prompt, ec.BoundaryMaxTokens))
				t.Expect("HTTP status for a prompt over max_model_len", 400, resp.Status)
			}},
		{ID: "errors/context_boundary", Suite: SuiteErrors, Description: "using /tokenize: prompt + max_tokens == max_model_len succeeds, one token more is rejected with 400",
			Run: func(ctx context.Context, t *T) { runBoundary(ctx, t, ec) }},
		{ID: "errors/unknown_model", Suite: SuiteErrors, Description: "an unknown model name is rejected with 404",
			Run: func(ctx context.Context, t *T) {
				resp := t.mustPost(ctx, "/v1/chat/completions", t.chatBody(ec.Prompt, 8).with(map[string]any{"model": "cibench-no-such-model"}))
				t.Expect("HTTP status for an unknown model", 404, resp.Status)
			}},
		{ID: "errors/body_shape", Suite: SuiteErrors, Description: `error bodies are JSON {"error":{message,type,code}} with code == HTTP status (older flat form accepted), for 400 and 404`,
			Run: func(ctx context.Context, t *T) {
				for _, tc := range []struct {
					b    body
					want int
				}{
					{t.chatBody(ec.Prompt, 8).with(map[string]any{"temperature": -1.0}), 400},
					{t.chatBody(ec.Prompt, 8).with(map[string]any{"model": "cibench-no-such-model"}), 404},
				} {
					resp := t.mustPost(ctx, "/v1/chat/completions", tc.b)
					// 状态码不对时无法检查错误体的形状；这是服务端的错误（其他用例也会失败），
					// 不是“不支持”，所以失败而不是跳过。
					t.Expect(fmt.Sprintf("HTTP status for the %d probe", tc.want), tc.want, resp.Status)
					e, err := parseError(resp.Body)
					if err != nil {
						t.Fatalf("HTTP %d body is not an error object: %v: %s", resp.Status, err, trim(string(resp.Body)))
					}
					if e.Message == "" || e.Type == "" {
						t.Fatalf("HTTP %d error without message/type: %s", resp.Status, trim(string(resp.Body)))
					}
					var code int
					if json.Unmarshal(e.Code, &code) == nil && code != resp.Status {
						t.Fatalf("error.code=%d differs from HTTP status %d", code, resp.Status)
					}
				}
			}},
		{ID: "errors/malformed_json", Suite: SuiteErrors, Description: "a body that is not JSON is rejected with 400",
			Run: func(ctx context.Context, t *T) {
				resp := t.mustPost(ctx, "/v1/chat/completions", []byte(`{"model": "x", "messages": [`))
				if resp.Status != 400 && resp.Status != 422 {
					t.Fatalf("HTTP %d for malformed JSON, want 400 (or 422)", resp.Status)
				}
			}},
		{ID: "errors/unknown_field_ignored", Suite: SuiteErrors, Description: "unknown top-level fields are accepted and ignored (200)",
			Run: func(ctx context.Context, t *T) {
				t.chat(ctx, t.chatBody(ec.Prompt, 8).with(map[string]any{"cibench_unknown_field": 1}))
			}},
		{ID: "errors/recovers", Suite: SuiteErrors, Description: "after a burst of bad requests the server still serves a normal request",
			Run: func(ctx context.Context, t *T) {
				for _, bad := range []any{[]byte("{"), t.chatBody(ec.Prompt, 8).with(map[string]any{"temperature": -3.0}),
					t.chatBody(ec.Prompt, 8).with(map[string]any{"model": "cibench-no-such-model"}), t.chatBody(ec.Prompt, 8).with(map[string]any{"n": 0})} {
					t.mustPost(ctx, "/v1/chat/completions", bad)
				}
				c := t.chat(ctx, t.plainBody(ec.Prompt, 16))
				if strings.TrimSpace(c.Choices[0].Message.text()) == "" {
					t.Fatalf("normal request after errors returned empty content")
				}
			}},
		{ID: "errors/auth", Suite: SuiteErrors, Description: "with an API key configured, a missing or wrong key gets 401 while /health stays open",
			Run: func(ctx context.Context, t *T) {
				if t.target.APIKey == "" {
					t.Skipf("target has no API key; authentication not configured")
				}
				for _, key := range []string{"", "cibench-wrong-key"} {
					req, err := t.newRequest(ctx, http.MethodPost, "/v1/chat/completions", t.chatBody(ec.Prompt, 4), false)
					if err != nil {
						t.Fatalf("%v", err)
					}
					if key != "" {
						req.Header.Set("Authorization", "Bearer "+key)
					}
					resp, err := t.hc.Do(req)
					if err != nil {
						t.failErr("request", err)
					}
					_ = resp.Body.Close()
					if resp.StatusCode != http.StatusUnauthorized {
						t.Fatalf("HTTP %d with key %q, want 401", resp.StatusCode, map[bool]string{true: "<none>", false: "<wrong>"}[key == ""])
					}
				}
				resp, err := t.do(ctx, http.MethodGet, "/health", nil, false)
				if err != nil {
					t.failErr("health", err)
				}
				t.Expect("/health status without a key", 200, resp.Status)
			}},
	}
	for _, inv := range ec.Invalid {
		want := inv.Status
		if want == 0 {
			want = 400
		}
		cases = append(cases, Case{ID: "errors/invalid/" + inv.Name, Suite: SuiteErrors, Requires: inv.Requires,
			Description: fmt.Sprintf("invalid or conflicting %s parameters %v are rejected with %d", inv.Endpoint, keys(inv.Params), want),
			Run: func(ctx context.Context, t *T) {
				p, b := "/v1/chat/completions", t.chatBody(ec.Prompt, 8)
				if inv.Endpoint == "completions" {
					p, b = "/v1/completions", t.completionBody(ec.Prompt, 8)
				}
				resp := t.mustPost(ctx, p, b.with(inv.Params))
				t.Expect("HTTP status", want, resp.Status)
			}})
	}
	return cases
}

// keys 返回 map 的键（排序），用于描述。
func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// mustPost 发送请求，传输错误时失败；任何 HTTP 状态都返回给调用方断言。
func (t *T) mustPost(ctx context.Context, p string, b any) *Response {
	resp, err := t.Post(ctx, p, b)
	if err != nil {
		t.failErr(p, err)
	}
	return resp
}

// tokenizeResp 是 vLLM /tokenize 的响应。
type tokenizeResp struct {
	Count       int `json:"count"`
	MaxModelLen int `json:"max_model_len"`
}

// tokenizeMessages 调用 /tokenize（messages 形式，计入 chat 模板）；能力 tokenize 的
// 声明决定服务端拒绝时的结论（见 postCap）。
func tokenizeMessages(ctx context.Context, t *T, prompt string) tokenizeResp {
	raw := t.postCap(ctx, "/tokenize", map[string]any{"model": t.Model(),
		"messages": []any{map[string]any{"role": "user", "content": prompt}}}, "/tokenize", CapTokenize)
	var tr tokenizeResp
	if err := json.Unmarshal(raw, &tr); err != nil {
		t.Fatalf("/tokenize answer is not JSON: %v: %s", err, trim(string(raw)))
	}
	return tr
}

// maxModelLen 依次取配置、/tokenize、/v1/models 中的 max_model_len；都没有时跳过。
func maxModelLen(ctx context.Context, t *T, ec ErrorsConfig) int {
	if ec.MaxModelLen > 0 {
		return ec.MaxModelLen
	}
	if resp, err := t.Post(ctx, "/tokenize", map[string]any{"model": t.Model(), "prompt": "hi"}); err == nil && resp.Status == 200 {
		var tr tokenizeResp
		if json.Unmarshal(resp.Body, &tr) == nil && tr.MaxModelLen > 0 {
			return tr.MaxModelLen
		}
	}
	resp, err := t.Get(ctx, "/v1/models")
	if err == nil && resp.Status == 200 {
		var ml struct {
			Data []struct {
				ID          string `json:"id"`
				MaxModelLen int    `json:"max_model_len"`
			} `json:"data"`
		}
		if json.Unmarshal(resp.Body, &ml) == nil {
			for _, m := range ml.Data {
				if m.ID == t.Model() && m.MaxModelLen > 0 {
					return m.MaxModelLen
				}
			}
		}
	}
	t.Skipf("max_model_len unknown: set errors.max_model_len or serve /tokenize or /v1/models with max_model_len")
	return 0
}

// runBoundary 构造恰好填满上下文的提示：用 /tokenize 量出 chat 模板开销，
// 调整重复词的个数直到 prompt_tokens + max_tokens == max_model_len。
func runBoundary(ctx context.Context, t *T, ec ErrorsConfig) {
	t.need(CapTokenize)
	limit := maxModelLen(ctx, t, ec)
	gen := ec.BoundaryMaxTokens
	words := limit - gen - 16
	var prompt string
	var count int
	for range 4 {
		if words < 1 {
			t.Skipf("max_model_len %d too small for the boundary case", limit)
		}
		prompt = strings.Repeat("hello ", words) + "end"
		count = tokenizeMessages(ctx, t, prompt).Count
		if count+gen == limit {
			break
		}
		words += limit - gen - count
	}
	if count+gen != limit {
		t.Skipf("could not build a prompt of exactly %d tokens via /tokenize (got %d)", limit-gen, count)
	}
	ok := t.mustPost(ctx, "/v1/chat/completions", t.chatBody(prompt, gen))
	t.Expect(fmt.Sprintf("HTTP status for prompt %d + max_tokens %d == max_model_len %d", count, gen, limit), 200, ok.Status)
	if errorBody(ok.Body) {
		// 200 却是错误体：服务端并没有接受边界上的请求。
		t.failf(ClassServerError, "prompt at max_model_len: server returned an error in a 200 body: %s", serverMessage(ok.Body))
	}
	over := t.mustPost(ctx, "/v1/chat/completions", t.chatBody(prompt, gen+1))
	t.Expect(fmt.Sprintf("HTTP status for prompt %d + max_tokens %d == max_model_len+1", count, gen+1), 400, over.Status)
}

// multimodalCases 生成 multimodal 套件。
func multimodalCases(cfg Config) []Case {
	mc := cfg.Multimodal
	return []Case{
		{ID: "multimodal/image_data_url", Suite: SuiteMultimodal, Requires: []Feature{FeatureMultimodal},
			Description: "an image_url data URL plus text is answered, and the image adds prompt tokens",
			Run: func(ctx context.Context, t *T) {
				url, err := pngDataURL(mc.ImageSize)
				if err != nil {
					t.Fatalf("build image: %v", err)
				}
				msg := map[string]any{"role": "user", "content": []any{
					map[string]any{"type": "text", "text": mc.Prompt},
					map[string]any{"type": "image_url", "image_url": map[string]any{"url": url}},
				}}
				img := t.chat(ctx, t.chatBody(mc.Prompt, mc.MaxTokens).with(map[string]any{"messages": []any{msg}}))
				txt := t.chat(ctx, t.chatBody(mc.Prompt, mc.MaxTokens))
				if strings.TrimSpace(stripThink(img.Choices[0].Message.text())) == "" {
					t.Fatalf("empty answer for the image request")
				}
				if img.Usage == nil || txt.Usage == nil || img.Usage.PromptTokens <= txt.Usage.PromptTokens {
					t.Fatalf("image request prompt_tokens not larger than text-only (image not counted)")
				}
			}},
		{ID: "multimodal/invalid_image_rejected", Suite: SuiteMultimodal, Requires: []Feature{FeatureMultimodal},
			Description: "an image_url data URL that is not an image is rejected with 400, not answered",
			Run: func(ctx context.Context, t *T) {
				bad := "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte("definitely not a png"))
				msg := map[string]any{"role": "user", "content": []any{
					map[string]any{"type": "text", "text": mc.Prompt},
					map[string]any{"type": "image_url", "image_url": map[string]any{"url": bad}},
				}}
				resp := t.mustPost(ctx, "/v1/chat/completions", t.chatBody(mc.Prompt, mc.MaxTokens).with(map[string]any{"messages": []any{msg}}))
				t.Expect("HTTP status for a broken image", 400, resp.Status)
			}},
	}
}

// pngDataURL 生成一张 size×size 的渐变 PNG，并编码为 data URL（与需求中 Qwen3-VL 的调用方式一致）。
func pngDataURL(size int) (string, error) {
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			img.Set(x, y, color.RGBA{R: uint8(x * 255 / size), G: uint8(y * 255 / size), B: 128, A: 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return "", err
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// embeddingsCases 生成 embeddings 套件。
func embeddingsCases(cfg Config) []Case {
	ec := cfg.Embeddings
	req := []Feature{FeatureEmbeddings}
	return []Case{
		{ID: "embeddings/batch", Suite: SuiteEmbeddings, Requires: req,
			Description: "a batch of inputs (openai-go) returns one finite, non-zero vector per input, same dimension, indexes in order",
			Run: func(ctx context.Context, t *T) {
				resp, err := t.openai().Embeddings.New(ctx, openai.EmbeddingNewParams{
					Model: openai.EmbeddingModel(t.Model()),
					Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: ec.Inputs},
				})
				if err != nil {
					t.failErr("embeddings", err)
				}
				if len(resp.Data) != len(ec.Inputs) {
					t.Fatalf("%d embeddings for %d inputs", len(resp.Data), len(ec.Inputs))
				}
				dim := len(resp.Data[0].Embedding)
				if ec.Dim > 0 && dim != ec.Dim {
					t.Fatalf("dimension %d, want %d", dim, ec.Dim)
				}
				for i, d := range resp.Data {
					if int(d.Index) != i {
						t.Errorf("data[%d].index=%d", i, d.Index)
					}
					if len(d.Embedding) != dim || dim == 0 {
						t.Fatalf("data[%d] has dimension %d, data[0] has %d", i, len(d.Embedding), dim)
					}
					if norm(d.Embedding) == 0 {
						t.Fatalf("data[%d] is a zero or non-finite vector", i)
					}
				}
			}},
		{ID: "embeddings/dimensions", Suite: SuiteEmbeddings, Requires: req,
			Description: "dimensions=N returns vectors of exactly N values",
			Run: func(ctx context.Context, t *T) {
				if ec.Dimensions == 0 {
					t.Skipf("embeddings.dimensions not set for this scenario")
				}
				raw := t.postCap(ctx, "/v1/embeddings", map[string]any{"model": t.Model(), "input": ec.Inputs, "dimensions": ec.Dimensions}, fmt.Sprintf("dimensions=%d", ec.Dimensions), CapEmbeddingDimensions)
				vs := decodeEmbeddings(t, raw)
				for i, v := range vs {
					if len(v) != ec.Dimensions {
						t.Fatalf("data[%d] has %d values, want dimensions=%d", i, len(v), ec.Dimensions)
					}
				}
			}},
		{ID: "embeddings/base64", Suite: SuiteEmbeddings, Requires: req,
			Description: "encoding_format base64 decodes (little-endian float32) to the float vectors",
			Run: func(ctx context.Context, t *T) {
				t.need(CapEmbeddingBase64)
				b := map[string]any{"model": t.Model(), "input": ec.Inputs}
				fl := decodeEmbeddings(t, t.postOK(ctx, "/v1/embeddings", b))
				b["encoding_format"] = "base64"
				raw := t.postCap(ctx, "/v1/embeddings", b, "encoding_format=base64", CapEmbeddingBase64)
				var r struct {
					Data []struct {
						Embedding string `json:"embedding"`
					} `json:"data"`
				}
				if err := json.Unmarshal(raw, &r); err != nil || len(r.Data) != len(fl) {
					t.Fatalf("base64 response: %v (%d items, want %d)", err, len(r.Data), len(fl))
				}
				for i, d := range r.Data {
					bs, err := base64.StdEncoding.DecodeString(d.Embedding)
					if err != nil || len(bs) != 4*len(fl[i]) {
						t.Fatalf("data[%d]: %d bytes (%v), want %d", i, len(bs), err, 4*len(fl[i]))
					}
					for k := range fl[i] {
						v := float64(math.Float32frombits(binary.LittleEndian.Uint32(bs[4*k:])))
						if math.Abs(v-fl[i][k]) > 1e-6*math.Max(1, math.Abs(fl[i][k])) {
							t.Fatalf("data[%d][%d]: base64 %g != float %g", i, k, v, fl[i][k])
						}
					}
				}
			}},
	}
}

// decodeEmbeddings 解码 float 格式的嵌入响应。
func decodeEmbeddings(t *T, raw []byte) [][]float64 {
	var r struct {
		Data []struct {
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || len(r.Data) == 0 {
		t.Fatalf("embeddings response: %v", err)
	}
	out := make([][]float64, len(r.Data))
	for i, d := range r.Data {
		out[i] = d.Embedding
	}
	return out
}

// norm 返回向量的 L2 范数；含非有限值时返回 0。
func norm(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0
		}
		s += x * x
	}
	return math.Sqrt(s)
}

// rerankResp 是 /v1/rerank 的响应。
type rerankResp struct {
	Results []struct {
		Index          int     `json:"index"`
		RelevanceScore float64 `json:"relevance_score"`
	} `json:"results"`
}

// rerankCases 生成 rerank 套件。
func rerankCases(cfg Config) []Case {
	rc := cfg.Rerank
	req := []Feature{FeatureRerank}
	call := func(ctx context.Context, t *T, topN int) rerankResp {
		b := map[string]any{"model": t.Model(), "query": rc.Query, "documents": rc.Documents}
		if topN > 0 {
			b["top_n"] = topN
		}
		var r rerankResp
		if err := json.Unmarshal(t.postOK(ctx, "/v1/rerank", b), &r); err != nil {
			t.Fatalf("rerank response: %v", err)
		}
		return r
	}
	return []Case{
		{ID: "rerank/sorted", Suite: SuiteRerank, Requires: req,
			Description: "every document is scored once and results are sorted by relevance_score, highest first",
			Run: func(ctx context.Context, t *T) {
				r := call(ctx, t, 0)
				if len(r.Results) != len(rc.Documents) {
					t.Fatalf("%d results for %d documents", len(r.Results), len(rc.Documents))
				}
				seen := map[int]bool{}
				for i, x := range r.Results {
					if x.Index < 0 || x.Index >= len(rc.Documents) || seen[x.Index] {
						t.Fatalf("result %d has invalid or repeated index %d", i, x.Index)
					}
					seen[x.Index] = true
					if i > 0 && x.RelevanceScore > r.Results[i-1].RelevanceScore {
						t.Fatalf("results not sorted: %g after %g", x.RelevanceScore, r.Results[i-1].RelevanceScore)
					}
				}
			}},
		{ID: "rerank/documents", Suite: SuiteRerank, Requires: req,
			Description: "each result's index maps back to its document (returned text matches) and scores are finite",
			Run: func(ctx context.Context, t *T) {
				b := map[string]any{"model": t.Model(), "query": rc.Query, "documents": rc.Documents, "return_documents": true}
				var r struct {
					Results []struct {
						Index          int     `json:"index"`
						RelevanceScore float64 `json:"relevance_score"`
						Document       *struct {
							Text string `json:"text"`
						} `json:"document"`
					} `json:"results"`
				}
				if err := json.Unmarshal(t.postOK(ctx, "/v1/rerank", b), &r); err != nil || len(r.Results) == 0 {
					t.Fatalf("rerank response: %v (%d results)", err, len(r.Results))
				}
				for i, x := range r.Results {
					if x.Index < 0 || x.Index >= len(rc.Documents) {
						t.Fatalf("result %d: index %d out of range", i, x.Index)
					}
					if math.IsNaN(x.RelevanceScore) || math.IsInf(x.RelevanceScore, 0) {
						t.Fatalf("result %d: score %g is not finite", i, x.RelevanceScore)
					}
					if x.Document != nil && x.Document.Text != rc.Documents[x.Index] {
						t.Fatalf("result %d: document %q does not match documents[%d] %q", i, x.Document.Text, x.Index, rc.Documents[x.Index])
					}
				}
			}},
		{ID: "rerank/top_n", Suite: SuiteRerank, Requires: req,
			Description: "top_n limits the results to the n best documents",
			Run: func(ctx context.Context, t *T) {
				all := call(ctx, t, 0)
				top := call(ctx, t, rc.TopN)
				if len(top.Results) != rc.TopN {
					t.Fatalf("%d results with top_n=%d", len(top.Results), rc.TopN)
				}
				best := make([]float64, 0, len(all.Results))
				for _, x := range all.Results {
					best = append(best, x.RelevanceScore)
				}
				sort.Sort(sort.Reverse(sort.Float64Slice(best)))
				for i, x := range top.Results {
					if math.Abs(x.RelevanceScore-best[i]) > 1e-9 {
						t.Fatalf("top_n result %d has score %g, the %d-th best is %g", i, x.RelevanceScore, i+1, best[i])
					}
				}
			}},
	}
}
