package emulator_test

import (
	"encoding/json"
	"testing"

	"github.com/vllm-cibench/cibench/internal/emulator"
)

// BenchmarkTextNext 衡量生成一个 token 片段的开销。
func BenchmarkTextNext(b *testing.B) {
	v := emulator.NewVocab()
	t := v.NewText(1)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = t.Next()
	}
}

// BenchmarkSampleShaped 衡量分布采样（带改变分布形状的参数的请求才走这条路径）每个片段的
// 开销：64 个片段的惩罚项 + top_p 请求，与 loadgen 默认配置（temperature 0.6、top_k 8）的
// 2048 个片段长输出——按计数分桶使每步代价不随输出长度增长。
func BenchmarkSampleShaped(b *testing.B) {
	v := emulator.NewVocab()
	for _, bc := range []struct {
		name string
		n    int
		s    emulator.Sampling
	}{
		{"penalties_top_p_64", 64, emulator.Sampling{Temperature: 0.8, TopP: 0.9, Presence: 0.5, Frequency: 0.5}},
		{"loadgen_default_2048", 2048, emulator.Sampling{Temperature: 0.6, TopK: 8}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			dst := make([]string, 0, bc.n)
			for i := 0; i < b.N; i++ {
				dst = v.Sample(dst[:0], 1, uint64(i), bc.n, &bc.s)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*bc.n), "ns/token")
		})
	}
}

// BenchmarkAppendString 衡量 JSON 字符串转义的开销。
func BenchmarkAppendString(b *testing.B) {
	buf := make([]byte, 0, 256)
	s := "混合 mixed text with \"quotes\" and 中文字符 \n"
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = emulator.AppendString(buf[:0], s)
	}
}

// BenchmarkGenerateJSON 衡量按 schema 生成 JSON 的开销。
func BenchmarkGenerateJSON(b *testing.B) {
	schema := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":7},"tags":{"type":"array","items":{"type":"string"}}},"required":["city"]}`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := emulator.GenerateJSON(schema, uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
}
