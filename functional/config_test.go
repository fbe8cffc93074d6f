package functional_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/vllm-cibench/cibench/functional"
)

// normalize 经 JSON 往返消除 int/float 等表示差异，便于比较两个配置。
func normalize(t *testing.T, c functional.Config) string {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.MarshalIndent(v, "", " ")
	return string(out)
}

// TestShippedConfigsEqualDefaults 保证 configs/tests/functional/*.yaml 与 DefaultConfig 一致，
// 并且每个套件恰好一个文件。
func TestShippedConfigsEqualDefaults(t *testing.T) {
	fsys := os.DirFS("../configs/tests/functional")
	got, err := functional.LoadConfig(fsys, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := normalize(t, got), normalize(t, functional.DefaultConfig()); g != w {
		t.Fatalf("shipped YAML differs from DefaultConfig:\n%s\n---\n%s", g, w)
	}
	for _, s := range functional.DefaultCatalog().Suites() {
		if _, err := os.Stat("../configs/tests/functional/" + s + ".yaml"); err != nil {
			t.Errorf("suite %s has no config file: %v", s, err)
		}
	}
}

// TestConfigDecodeOverlaysAndRejects 检查叠加语义与严格解码的错误信息。
func TestConfigDecodeOverlaysAndRejects(t *testing.T) {
	cfg := functional.DefaultConfig()
	if err := cfg.Decode("chat_core.yaml", strings.NewReader("chat_core: {max_tokens: 8}\n"), nil); err != nil {
		t.Fatal(err)
	}
	if cfg.ChatCore.MaxTokens != 8 || cfg.ChatCore.N != 2 || cfg.ChatCore.Prompt == "" {
		t.Fatalf("overlay lost defaults or value: %+v", cfg.ChatCore)
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"unknown.yaml", "chat_core: {max_tokenz: 8}\n", "max_tokenz"},
		{"type.yaml", "params_boundary: {top_k: [one]}\n", `type.yaml:1:27: params_boundary.top_k[0]: want an integer`},
		{"range.yaml", "params_boundary: {top_p: [1.5]}\n", `params_boundary.top_p[0]: must be in [0, 1] (got "1.5")`},
		{"n.yaml", "chat_core: {n: 1}\n", `chat_core.n: must be >= 2 (got "1")`},
		{"hist.yaml", "chat_core: {history: [a]}\n", "chat_core.history"},
		{"stop.yaml", "params_boundary: {stop: [weird]}\n", `params_boundary.stop[0]: must be single, multiple or unicode (got "weird")`},
		{"schema.yaml", "guided: {json_schema: {type: 12}}\n", "guided.json_schema"},
		{"tools.yaml", "function_call: {tools: []}\n", "function_call.tools"},
		{"inv.yaml", "errors: {invalid: [{name: a b, endpoint: x, status: 200, requires: [gpu]}]}\n", `errors.invalid[0].endpoint: must be chat or completions (got "x")`},
		{"rerank.yaml", "rerank: {top_n: 9}\n", `rerank.top_n: must be in [1, len(documents)] (got "9")`},
		{"dup.yaml", "params_boundary: {top_k: [1, 1]}\n", `params_boundary.top_k[1]: duplicate value (each value becomes one case) (got "1")`},
	} {
		c := functional.DefaultConfig()
		before := normalize(t, c)
		err := c.Decode(tc.name, strings.NewReader(tc.doc), nil)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.name) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not name the file and %q", tc.name, err, tc.want)
		}
		if tc.name != "unknown.yaml" && tc.name != "type.yaml" && !errors.Is(err, functional.ErrConfig) {
			t.Errorf("%s: error is not ErrConfig: %v", tc.name, err)
		}
		if normalize(t, c) != before {
			t.Errorf("%s: failed Decode modified the config", tc.name)
		}
	}
	if _, err := functional.LoadConfig(fstest.MapFS{"x.yaml": {Data: []byte("nope: 1\n")}}, nil); err == nil {
		t.Fatal("LoadConfig accepted an unknown suite key")
	}
	if _, err := functional.NewCatalog(functional.Config{}, nil); err == nil {
		t.Fatal("NewCatalog accepted the zero Config")
	}
}

// FuzzConfigDecode 保证任意 YAML 都不会让 Decode panic，失败时不修改配置，
// 成功时得到的配置一定能构建目录。
func FuzzConfigDecode(f *testing.F) {
	for _, seed := range []string{"chat_core: {max_tokens: 8}\n", "params_boundary: {temperature: [0.1, 0.10]}\n", "params_boundary: {top_p: [0.5]}\n", "errors: {invalid: []}\n", "{", "guided: {json_schema: {type: object}}\n"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		c := functional.DefaultConfig()
		before := normalize(t, c)
		if err := c.Decode("fuzz.yaml", strings.NewReader(doc), nil); err != nil {
			if normalize(t, c) != before {
				t.Fatalf("failed Decode modified the config")
			}
			return
		}
		if _, err := functional.NewCatalog(c, nil); err != nil {
			t.Fatalf("Decode accepted a config NewCatalog rejects: %v", err)
		}
	})
}
