package tokenizer_test

import (
	"context"
	"os"
	"testing"

	"github.com/vllm-cibench/cibench/loadgen/tokenizer"
)

// BenchmarkCountVsReference 对每个真实模型，给参考测试的整套语料计数一遍（每次迭代一遍），
// 并以 ref-ns/op 报告 Hugging Face tokenizers（Node 绑定里的 Rust 实现）串行 encode 同一套
// 语料一遍的耗时（两边的缓存都已预热）。目标：ns/op ≤ ref-ns/op。
//
//	go test -run '^$' -bench CountVsReference -benchtime 5x ./loadgen/tokenizer/
func BenchmarkCountVsReference(b *testing.B) {
	dir := tokenizersDir(b)
	texts := corpus(b)
	const repeat = 5
	for _, m := range realModels {
		file := modelFile(dir, m)
		ref := runReference(b, dir, []string{file}, texts, repeat)
		b.Run(m, func(b *testing.B) {
			f, err := os.Open(file)
			if err != nil {
				b.Fatal(err)
			}
			tok, err := tokenizer.Load(f)
			f.Close()
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			for _, t := range texts { // 预热缓存，与参考一侧相同
				tok.CountTokens(ctx, t)
			}
			bytes := 0
			for _, t := range texts {
				bytes += len(t)
			}
			b.SetBytes(int64(bytes))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for _, t := range texts {
					tok.CountTokens(ctx, t)
				}
			}
			b.ReportMetric(ref.NS[file]/repeat, "ref-ns/op")
		})
	}
}
