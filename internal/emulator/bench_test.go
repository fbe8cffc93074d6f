package emulator_test

import (
	"encoding/json"
	"testing"

	"github.com/vllm-cibench/cibench/internal/emulator"
)

func BenchmarkTextNext(b *testing.B) {
	v := emulator.NewVocab()
	t := v.NewText(1)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = t.Next()
	}
}

func BenchmarkAppendString(b *testing.B) {
	buf := make([]byte, 0, 256)
	s := "混合 mixed text with \"quotes\" and 中文字符 \n"
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = emulator.AppendString(buf[:0], s)
	}
}

func BenchmarkGenerateJSON(b *testing.B) {
	schema := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":7},"tags":{"type":"array","items":{"type":"string"}}},"required":["city"]}`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := emulator.GenerateJSON(schema, uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
}
