package emulator_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/deploy/emulator"
)

// startPD 启动一组 PD 模拟器，测试结束时关闭。
func startPD(t *testing.T, cfg emulator.PDConfig) *emulator.PDDeployment {
	t.Helper()
	pd, err := emulator.NewPD(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dep, err := pd.Deploy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dep.Teardown(context.Background()) })
	return dep.(*emulator.PDDeployment)
}

// TestPDTransferTimeAndRouting 验证 PD 模式：客户端经代理请求时，prefill 实例只算 1 个
// token（它的 generation_tokens_total 为 1），decode 实例生成全部 token；首 token 时间
// = prefill（100 token × 1ms）+ KV 传输（100 token × 0.5ms）+ 解码。同一提示再来一次时
// 两边的前缀缓存都命中 96 个 token：prefill 只算 4 个、decode 只拉 4 个的 KV。
func TestPDTransferTimeAndRouting(t *testing.T) {
	dep := startPD(t, emulator.PDConfig{
		Prefill: emulator.Config{Model: "m", PrefillPerToken: time.Millisecond, EnablePrefixCaching: true},
		Decode: emulator.Config{Model: "m", ITL: 5 * time.Millisecond, KVTransferPerToken: 500 * time.Microsecond,
			EnablePrefixCaching: true, EnablePromptTokensDetails: true},
	})
	ep := dep.Endpoint()
	if ep.BaseURL() == dep.PrefillEndpoint().BaseURL() || ep.BaseURL() == dep.DecodeEndpoint().BaseURL() ||
		dep.PrefillEndpoint().BaseURL() == dep.DecodeEndpoint().BaseURL() {
		t.Fatalf("three distinct ports expected: %s %s %s", ep.BaseURL(), dep.PrefillEndpoint().BaseURL(), dep.DecodeEndpoint().BaseURL())
	}
	body := func() map[string]any { return perfChat(perfWords(t, "s", 90), perfWords(t, "u", 10), 10, nil) }
	ttft1, chunks, usage := timedStream(t, ep, body())
	if len(chunks) != 10 || emuNum(usage["prompt_tokens"]) != 100 || emuNum(usage["completion_tokens"]) != 10 {
		t.Fatalf("via proxy: %d chunks, usage %v", len(chunks), usage)
	}
	if usage["prompt_tokens_details"] != nil {
		t.Fatalf("first request has no local cache hit on decode: %v", usage["prompt_tokens_details"])
	}
	if want := 100*time.Millisecond + 50*time.Millisecond; ttft1 < want {
		t.Fatalf("TTFT %v below prefill + transfer = %v", ttft1, want)
	}
	pm, dm := scrape(t, dep.PrefillEndpoint()), scrape(t, dep.DecodeEndpoint())
	if pm["vllm:generation_tokens_total"] != 1 || pm["vllm:prompt_tokens_total"] != 100 ||
		dm["vllm:generation_tokens_total"] != 10 || dm["vllm:prompt_tokens_total"] != 100 {
		t.Fatalf("prefill %v / decode %v", pm, dm)
	}
	ttft2, _, usage := timedStream(t, ep, body())
	if emuNum(emuJget(usage, "prompt_tokens_details", "cached_tokens")) != 96 {
		t.Fatalf("second request: decode-side cached_tokens %v, want 96", usage["prompt_tokens_details"])
	}
	// 模型值 4·1ms + 4·0.5ms = 6ms；上界远低于不命中时的 150ms。
	if ttft2 < 6*time.Millisecond || ttft2 >= 150*time.Millisecond {
		t.Fatalf("cached TTFT %v (uncached %v)", ttft2, ttft1)
	}
	if pm := scrape(t, dep.PrefillEndpoint()); pm["vllm:prefix_cache_hits_total"] != 96 {
		t.Fatalf("prefill hits %v", pm["vllm:prefix_cache_hits_total"])
	}
	// 非流式经代理同样可用。
	st, _, raw := emuPost(t, ep, "/v1/chat/completions", body())
	if st != 200 || emuNum(emuJget(emuObj(t, raw), "usage", "completion_tokens")) != 10 {
		t.Fatalf("non-stream via proxy: %d %s", st, raw)
	}
	// 代理没有自己的指标；错误原样转给客户端。
	if st, _, _ := emuDo(t, ep, http.MethodGet, "/metrics", nil); st != 404 {
		t.Fatalf("proxy /metrics = %d", st)
	}
	st, _, raw = emuPost(t, ep, "/v1/chat/completions", map[string]any{"model": "nope", "messages": []map[string]any{{"role": "user", "content": "x"}}})
	if st != 404 || emuJget(emuObj(t, raw), "error", "param") != "model" {
		t.Fatalf("prefill error passed through: %d %s", st, raw)
	}
	dir := t.TempDir()
	if err := dep.ArchiveLogs(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"prefill/emulator-metrics.prom", "decode/emulator-access.log"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
}

// TestPDInstancesDirectly 验证两个实例各自的线上约定：prefill 实例对 do_remote_decode 的
// 请求返回 NixlConnector 形状的 kv_transfer_params（remote_host/port 是 prefill 自己），
// 对普通请求完整生成；decode 实例对普通请求同样完整生成。
func TestPDInstancesDirectly(t *testing.T) {
	dep := startPD(t, emulator.PDConfig{Prefill: emulator.Config{Model: "m"}, Decode: emulator.Config{Model: "m"}})
	pre := dep.PrefillEndpoint()
	body := perfChat(perfWords(t, "w", 40), "q", 1, map[string]any{"kv_transfer_params": map[string]any{"do_remote_decode": true}})
	st, _, raw := emuPost(t, pre, "/v1/chat/completions", body)
	if st != 200 {
		t.Fatalf("%d %s", st, raw)
	}
	kv, _ := emuObj(t, raw)["kv_transfer_params"].(map[string]any)
	ids, _ := kv["remote_block_ids"].([]any)
	host := strings.TrimPrefix(emuRootURL(pre), "http://")
	if kv["do_remote_prefill"] != true || kv["do_remote_decode"] != false || len(ids) != 3 || // 41 token = 3 块
		emuStr(kv["remote_host"])+":"+itoaAny(kv["remote_port"]) != host || emuNum(kv["tp_size"]) != 1 {
		t.Fatalf("kv_transfer_params %v (prefill at %s)", kv, host)
	}
	for _, ep := range []deploy.Endpoint{pre, dep.DecodeEndpoint()} {
		st, _, raw := emuPost(t, ep, "/v1/chat/completions", perfChat("a", "b", 7, nil))
		o := emuObj(t, raw)
		if st != 200 || emuNum(emuJget(o, "usage", "completion_tokens")) != 7 || o["kv_transfer_params"] != nil {
			t.Fatalf("plain request on %s: %d %s", ep.BaseURL(), st, raw)
		}
	}
}

// itoaAny 把 JSON 数字转成十进制字符串。
func itoaAny(v any) string { return itoa(emuNum(v)) }

// TestPDConfigErrors 验证 NewPD 的校验点名实例与字段。
func TestPDConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  emulator.PDConfig
		want string
	}{
		{emulator.PDConfig{Prefill: emulator.Config{TTFT: -1}}, "prefill: deploy: invalid emulator config: TTFT=-1ns"},
		{emulator.PDConfig{Decode: emulator.Config{KVTransferPerToken: -1}}, "decode: deploy: invalid emulator config: KVTransferPerToken=-1ns"},
		{emulator.PDConfig{Prefill: emulator.Config{Model: "a"}, Decode: emulator.Config{Model: "b"}}, "Decode.Model=b: must equal Prefill.Model=a"},
		{emulator.PDConfig{Addr: "nohost"}, "Addr=nohost"},
		{emulator.PDConfig{Timeout: -time.Second}, "Timeout=-1s"},
	} {
		_, err := emulator.NewPD(tc.cfg)
		if !errors.Is(err, emulator.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	pd, err := emulator.NewPD(emulator.PDConfig{Decode: emulator.Config{KVTransferPerToken: time.Millisecond}})
	if err != nil || pd.Prefill().Config().PDRole != "prefill" || pd.Decode().Config().PDRole != "decode" {
		t.Fatalf("roles: %v", err)
	}
}
