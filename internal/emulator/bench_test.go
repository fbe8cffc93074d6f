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
