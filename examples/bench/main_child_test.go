package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestMain 让测试二进制在被 --shards 当作 bench 重新执行时（环境里有 shardChildEnv）
// 扮演 bench 主程序，而不是再跑一遍全部测试——否则 README 里的 --shards 命令会让
// 测试二进制递归地复制自己。
func TestMain(m *testing.M) {
	if os.Getenv(shardChildEnv) != "" || os.Getenv(asMainEnv) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// asMainEnv 让测试二进制扮演 bench 主程序（测试用它像用户一样手动启动分片进程）。
const asMainEnv = "CIBENCH_BENCH_TEST_AS_MAIN"

// TestShardsNeverNest 证明分片子进程不会再启动分片：环境里有 shardChildEnv 时
// --shards 在发出任何请求之前就报错（曾经的失控自我复制就是这样发生的）。
func TestShardsNeverNest(t *testing.T) {
	t.Setenv(shardChildEnv, "1")
	var out bytes.Buffer
	err := run([]string{"prof", "-c", "4", "-il", "8", "-ol", "4", "-n", "8", "--shards", "2", "--quiet"}, &out)
	if err == nil || !strings.Contains(err.Error(), "shards never start shards") {
		t.Fatalf("nested --shards: err = %v, want a refusal", err)
	}
}
