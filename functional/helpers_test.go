package functional_test

import (
	"context"
	"testing"
	"time"

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

// startEmulator 启动模拟器并返回指向它的 Target（全部能力开启）。
func startEmulator(t testing.TB, cfg emulator.Config) (*emulator.Server, functional.Target) {
	t.Helper()
	em, err := emulator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dep, err := em.Deploy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dep.Teardown(context.Background()) })
	ep := dep.Endpoint()
	return em, functional.Target{
		BaseURLs: ep.BaseURLs, Model: ep.Model, APIKey: ep.APIKey,
		Features: functional.AllFeatures(),
	}
}
