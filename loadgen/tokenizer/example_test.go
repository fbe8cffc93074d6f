package tokenizer_test

import (
	"context"
	"fmt"
	"os"

	"github.com/vllm-cibench/cibench/loadgen/tokenizer"
)

// ExampleLoad 读取模型目录里的 tokenizer.json 并数 token；得到的 *BPE 可直接赋给
// loadgen.Target.Tokenizer，用于没有 /tokenize 的服务端。
func ExampleLoad() {
	f, err := os.Open("testdata/gpt2_tiny_tokenizer.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	tok, err := tokenizer.Load(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	n, _ := tok.CountTokens(context.Background(), "hello world")
	fmt.Println(n)
	// Output: 5
}
