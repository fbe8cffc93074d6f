package shard

import (
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/loadgen"
)

// startShardEmulator 在本进程启动模拟器（有固定的首 token 与 token 间隔，时延分布不退化），
// 返回指向它的目标。
func startShardEmulator(t *testing.T) loadgen.Target {
	t.Helper()
	_, ep := emulator.Start(t, emulator.Config{Model: "m", TTFT: 3 * time.Millisecond, ITL: 500 * time.Microsecond})
	return loadgen.Target{Endpoint: endpoint.Endpoint{BaseURLs: ep.BaseURLs, Model: ep.Model}, Provider: "emu"}
}
