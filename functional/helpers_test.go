package functional_test

import (
	"testing"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/functional"
)

// fullEmulator 返回开启全部能力（推理、嵌入、rerank、鉴权）的模拟器配置。
func fullEmulator() emulator.Config {
	return emulator.Config{
		Model:            "qwen3-test",
		APIKey:           "sk-cibench-test",
		Reasoning:        true,
		EnableEmbeddings: true,
		EnableRerank:     true,
	}
}

// startEmulator 用 emulator.Start 启动模拟器，并返回指向它的 Target（全部能力开启）。
func startEmulator(t testing.TB, cfg emulator.Config) (*emulator.Server, functional.Target) {
	t.Helper()
	em, ep := emulator.Start(t, cfg)
	return em, functional.Target{
		Endpoint: ep,
		Features: functional.DefaultFeatures().All(),
	}
}
