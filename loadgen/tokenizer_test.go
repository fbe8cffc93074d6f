package loadgen_test

import (
	"net/http"
	"os"
	"testing"

	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/loadgen/dataset"
	"github.com/vllm-cibench/cibench/loadgen/tokenizer"
)

// loadTok 读取 tokenizer 包 testdata 中的小型 tokenizer.json。
func loadTok(t *testing.T, name string) *tokenizer.BPE {
	t.Helper()
	f, err := os.Open("tokenizer/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := tokenizer.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestTargetTokenizerUsedWithoutServerTokenize 验证服务端没有 /tokenize 时用 Target.Tokenizer 校准提示长度。
func TestTargetTokenizerUsedWithoutServerTokenize(t *testing.T) {
	tok := loadTok(t, "gpt2_tiny_tokenizer.json")
	var prompts []string
	tgt := scripted(t, func(w http.ResponseWriter, body string) {
		prompts = append(prompts, body)
		sseWrite(w, contentChunk("a"), "[DONE]")
	})
	var _ dataset.TokenCounter = tok // *tokenizer.BPE 满足 loadgen 的计数接口
	tgt.Tokenizer = tok
	_, s := runOne(t, tgt, loadgen.Profile{InputLength: []int{200}}, 4)
	if s.Failed != 0 {
		t.Fatal("failed")
	}
	// 没有 usage 时提示 token 数来自数据集，即按 tokenizer.json 校准后的计数。
	if s.AvgPromptTokens < 197 || s.AvgPromptTokens > 203 {
		t.Fatalf("avg prompt tokens %v, want ≈200 byte-level tokens", s.AvgPromptTokens)
	}
}
