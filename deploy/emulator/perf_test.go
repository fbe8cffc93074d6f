package emulator_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/internal/tokenize"
)

// perfWords 返回 n 个互不相同、各为一个 token 的词（以 tag 区分不同的词组）。
func perfWords(t *testing.T, tag string, n int) string {
	t.Helper()
	ws := make([]string, n)
	for i := range ws {
		ws[i] = fmt.Sprintf("%s%d", tag, i)
	}
	s := strings.Join(ws, " ")
	if c := tokenize.Count(s); c != n {
		t.Fatalf("precondition: %q has %d tokens, want %d", s, c, n)
	}
	return s
}

// perfChat 构造 system（共享前缀）+ user 的 chat 请求体。
func perfChat(system, user string, maxTokens int, extra map[string]any) map[string]any {
	m := map[string]any{"model": "m", "temperature": 0, "max_tokens": maxTokens, "ignore_eos": true,
		"messages": []map[string]any{{"role": "system", "content": system}, {"role": "user", "content": user}}}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// timedStream 发送流式请求，返回首个正文 chunk 的时刻、各正文 chunk 的到达时刻（相对发送）
// 与最后一个 usage 对象（没有时为 nil）。
func timedStream(t *testing.T, ep deploy.Endpoint, body map[string]any) (ttft time.Duration, chunks []time.Duration, usage map[string]any) {
	t.Helper()
	body["stream"] = true
	body["stream_options"] = map[string]any{"include_usage": true}
	b := strings.NewReader(mustMarshal(t, body))
	start := time.Now()
	resp, err := http.Post(emuRootURL(ep)+"/v1/chat/completions", "application/json", b)
	if err != nil {
		t.Error(err)
		return 0, nil, nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("status %d", resp.StatusCode)
		return 0, nil, nil
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: {") {
			continue
		}
		now := time.Since(start)
		obj := emuObj(t, []byte(line[len("data: "):]))
		if u, ok := obj["usage"].(map[string]any); ok {
			usage = u
		}
		if c := emuStr(emuJget(obj, "choices", 0, "delta", "content")); c != "" {
			if len(chunks) == 0 {
				ttft = now
			}
			chunks = append(chunks, now)
		}
	}
	return ttft, chunks, usage
}

// mustMarshal 把 v 编码为 JSON 字符串。
func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPrefixCacheAnalytic 验证前缀缓存的解析值：N 个请求共享 k = 4 个完整块（64 token）
// 的 system 前缀、各有 20 token 的不同问题，依次发送：
//   - 第一个请求 cached_tokens 为 null（vLLM 只在命中 > 0 时给出），之后每个恰为 64；
//   - vllm:prefix_cache_queries_total = N·84，vllm:prefix_cache_hits_total = (N−1)·64；
//   - TTFT = 未命中 token × PrefillPerToken：首个 84·2ms，之后 20·2ms（下界精确，上界宽松）；
//   - 整段提示恰为 5 个块（80 token）且完全重复时只命中 4 块：最后一个 token 总要重算。
func TestPrefixCacheAnalytic(t *testing.T) {
	const per = 2 * time.Millisecond
	_, ep := emulator.Start(t, emulator.Config{Model: "m", EnablePrefixCaching: true, EnablePromptTokensDetails: true,
		PrefillPerToken: per, MaxModelLen: 4096})
	system := perfWords(t, "s", 64)
	const n = 4
	var ttfts []time.Duration
	for i := 0; i < n; i++ {
		ttft, chunks, usage := timedStream(t, ep, perfChat(system, perfWords(t, fmt.Sprintf("q%dx", i), 20), 3, nil))
		if len(chunks) != 3 || emuNum(usage["prompt_tokens"]) != 84 {
			t.Fatalf("request %d: %d chunks, usage %v", i, len(chunks), usage)
		}
		cached := emuJget(usage, "prompt_tokens_details", "cached_tokens")
		switch {
		case i == 0 && usage["prompt_tokens_details"] != nil:
			t.Fatalf("first request: prompt_tokens_details must be null, got %v", usage["prompt_tokens_details"])
		case i > 0 && emuNum(cached) != 64:
			t.Fatalf("request %d: cached_tokens %v, want 64", i, cached)
		}
		ttfts = append(ttfts, ttft)
	}
	if ttfts[0] < 84*per {
		t.Fatalf("uncached TTFT %v below the model's 84 × %v", ttfts[0], per)
	}
	for i, d := range ttfts[1:] {
		// 下界：20 个未命中 token；上界：远低于不命中时的 168ms（给忙碌机器留 128ms 余量）。
		if d < 20*per || d >= 84*per {
			t.Errorf("cached request %d: TTFT %v, model %v (uncached %v)", i+1, d, 20*per, 84*per)
		}
	}
	m := scrape(t, ep)
	if m["vllm:prefix_cache_queries_total"] != n*84 || m["vllm:prefix_cache_hits_total"] != (n-1)*64 {
		t.Fatalf("queries %v hits %v, want %d and %d", m["vllm:prefix_cache_queries_total"], m["vllm:prefix_cache_hits_total"], n*84, (n-1)*64)
	}
	// 80 token 的提示（5 个完整块）重复一次：命中上限 (80−1)/16 = 4 块。
	body := perfChat(system, perfWords(t, "r", 16), 2, nil)
	emuPost(t, ep, "/v1/chat/completions", body)
	st, _, raw := emuPost(t, ep, "/v1/chat/completions", body)
	if st != 200 || emuNum(emuJget(emuObj(t, raw), "usage", "prompt_tokens_details", "cached_tokens")) != 64 {
		t.Fatalf("repeated 80-token prompt: %d %s", st, raw)
	}
	m = scrape(t, ep)
	if m["vllm:prefix_cache_queries_total"] != n*84+2*80 || m["vllm:prefix_cache_hits_total"] != (n-1)*64+64+64 {
		t.Fatalf("after repeat: queries %v hits %v", m["vllm:prefix_cache_queries_total"], m["vllm:prefix_cache_hits_total"])
	}
}

// TestPromptTokensDetailsOffByDefault 验证不开 EnablePromptTokensDetails 时（vLLM 默认）
// 即使命中也不给 cached_tokens，但计数器照常更新；性能模型关闭时不导出这三个计数器
// （没有模拟就不假装是 0）。
func TestPromptTokensDetailsOffByDefault(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m", EnablePrefixCaching: true})
	body := perfChat(perfWords(t, "s", 40), "hello", 2, nil)
	emuPost(t, ep, "/v1/chat/completions", body)
	_, _, raw := emuPost(t, ep, "/v1/chat/completions", body)
	if d := emuJget(emuObj(t, raw), "usage", "prompt_tokens_details"); d != nil {
		t.Fatalf("prompt_tokens_details without the flag: %v", d)
	}
	if m := scrape(t, ep); m["vllm:prefix_cache_hits_total"] != 32 || m["vllm:prefix_cache_queries_total"] != 82 {
		t.Fatalf("counters: %v", m)
	}
	_, off := emulator.Start(t, emulator.Config{Model: "m"})
	emuPost(t, off, "/v1/chat/completions", body)
	emuPost(t, off, "/v1/chat/completions", body)
	m := scrape(t, off)
	for _, name := range []string{"vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total", "vllm:num_preemptions_total"} {
		if _, ok := m[name]; ok {
			t.Errorf("model off: %s must not be exported", name)
		}
	}
	if _, ok := m["vllm:kv_cache_usage_perc"]; !ok {
		t.Error("kv_cache_usage_perc is always exported")
	}
}

// TestBatchFactorScalesITL 验证批倍数：ITL 20ms、BatchFactor 3、MaxNumSeqs 4 时，单个请求
// 的平均 ITL 约 20ms，4 个并发请求各约 20·(1 + 2·3/3) = 60ms。
//
// 平均 ITL 取"从发出请求到最后一个正文 chunk"/（chunk 数 − 1）：模拟器按绝对时刻排程（TTFT 为 0，第 j 个
// chunk 不早于首个之后 j 步），最后一个 chunk 不可能早到，所以这个均值不低于模型值，负载只能让它变大。
// 以前取首末 chunk 之差：忙的机器上客户端读到首个 chunk 晚了几毫秒，均值就低于模型值（两个忙循环旁的一次
// CI 运行里 17.6ms < 18ms 的下界）。上界留出客户端与调度的滞后。
func TestBatchFactorScalesITL(t *testing.T) {
	const itl = 20 * time.Millisecond
	_, ep := emulator.Start(t, emulator.Config{Model: "m", ITL: itl, BatchFactor: 3, MaxNumSeqs: 4})
	mean := func(chunks []time.Duration) time.Duration {
		if len(chunks) < 2 {
			t.Fatalf("chunks %d", len(chunks))
		}
		return chunks[len(chunks)-1] / time.Duration(len(chunks)-1)
	}
	_, single, _ := timedStream(t, ep, perfChat("a", "b", 11, nil))
	one := mean(single)
	if one < itl || one > 2*itl {
		t.Fatalf("single request mean ITL %v, model %v", one, itl)
	}
	var wg sync.WaitGroup
	means := make([]time.Duration, 4)
	for i := range means {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, c, _ := timedStream(t, ep, perfChat("a", fmt.Sprint("b", i), 11, nil))
			if len(c) == 11 {
				means[i] = c[10] / 10 // 同上：从发出请求算起，负载只能让它变大
			}
		}()
	}
	wg.Wait()
	for i, m := range means {
		// 模型值 60ms；请求不是同一瞬间进入运行，头一两步的批可能还不满，下界留出余量。
		if m < 45*time.Millisecond || m > 120*time.Millisecond {
			t.Errorf("concurrent request %d: mean ITL %v, model %v", i, m, 3*itl)
		}
	}
}

// TestPerfGaugesFollowAdmission 验证性能模型下 running/waiting gauge 与 max_num_seqs 一致：
// 6 个并发长请求、上限 4 时看到 running=4、waiting=2，结束后归零且 KV 使用率为 0。
func TestPerfGaugesFollowAdmission(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m", ITL: 10 * time.Millisecond, MaxNumSeqs: 4, BatchFactor: 2,
		NumKVBlocks: 2048})
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			emuPost(t, ep, "/v1/chat/completions", perfChat("a", fmt.Sprint("b", i), 20, nil))
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	seen := false
	for !seen && time.Now().Before(deadline) {
		m := scrape(t, ep)
		if m["vllm:num_requests_running"] > 4 {
			t.Fatalf("running above max_num_seqs: %v", m)
		}
		seen = m["vllm:num_requests_running"] == 4 && m["vllm:num_requests_waiting"] == 2 && m["vllm:kv_cache_usage_perc"] > 0
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	if !seen {
		t.Fatal("never saw running=4 waiting=2 with KV in use")
	}
	m := scrape(t, ep)
	if m["vllm:num_requests_running"] != 0 || m["vllm:num_requests_waiting"] != 0 || m["vllm:kv_cache_usage_perc"] != 0 {
		t.Fatalf("after the load: %v", m)
	}
}

// TestKVTightPreemption 验证 KV 紧张时的抢占与代价：8 块 × 16 token 的 KV，3 个并发请求各
// 32 token 提示、生成 60 token（各需 6 块）。不抢占时每个请求 E2E 的模型值为
// 32·1ms + 59·5ms = 327ms；KV 只容得下约一条完整序列，所以一定发生抢占，请求被迫轮流
// 执行并重算，最慢的请求 E2E 至少是模型值的 1.5 倍；所有请求仍然完整成功。
func TestKVTightPreemption(t *testing.T) {
	cfg := emulator.Config{Model: "m", MaxModelLen: 128, BlockSize: 16, NumKVBlocks: 8, ITL: 5 * time.Millisecond,
		PrefillPerToken: time.Millisecond, EnablePrefixCaching: true}
	_, ep := emulator.Start(t, cfg)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var worst time.Duration
	peak := 0.0
	stop := make(chan struct{})
	go func() { // 采样 KV 使用率：必须在 (0,1] 内
		for {
			select {
			case <-stop:
				return
			default:
			}
			v := scrape(t, ep)["vllm:kv_cache_usage_perc"]
			mu.Lock()
			peak = max(peak, v)
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			_, chunks, usage := timedStream(t, ep, perfChat(perfWords(t, fmt.Sprint("p", i, "x"), 16), perfWords(t, fmt.Sprint("u", i, "x"), 16), 60, nil))
			if len(chunks) != 60 || emuNum(usage["completion_tokens"]) != 60 {
				t.Errorf("request %d: %d chunks, usage %v", i, len(chunks), usage)
			}
			mu.Lock()
			worst = max(worst, time.Since(start))
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(stop)
	m := scrape(t, ep)
	if m["vllm:num_preemptions_total"] < 1 {
		t.Fatalf("no preemption with 18 blocks of demand on 8: %v", m)
	}
	model := 32*time.Millisecond + 59*5*time.Millisecond
	if worst < model*3/2 {
		t.Fatalf("worst E2E %v, want >= 1.5 × %v (preemption and recompute cost)", worst, model)
	}
	mu.Lock()
	defer mu.Unlock()
	if peak <= 0 || peak > 1 || m["vllm:kv_cache_usage_perc"] != 0 {
		t.Fatalf("kv usage peak %v, final %v", peak, m["vllm:kv_cache_usage_perc"])
	}
	t.Logf("preemptions %v, worst E2E %v (no-preemption model %v), peak KV usage %.2f", m["vllm:num_preemptions_total"], worst, model, peak)
}

// TestPerfConfigValidation 验证性能模型配置的校验：错误包装 ErrConfig 并点名字段与取值。
func TestPerfConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		cfg  emulator.Config
		want string
	}{
		{emulator.Config{BlockSize: -1}, "BlockSize=-1"},
		{emulator.Config{NumKVBlocks: -2}, "NumKVBlocks=-2"},
		{emulator.Config{NumKVBlocks: 10}, "NumKVBlocks=10: 10 blocks of 16 tokens hold 160 tokens, fewer than one MaxModelLen=32768"},
		{emulator.Config{BatchFactor: 0.5, MaxNumSeqs: 4}, "BatchFactor=0.5"},
		{emulator.Config{BatchFactor: 2}, "needs MaxNumSeqs >= 2"},
		{emulator.Config{PDRole: "both"}, "PDRole=both"},
		{emulator.Config{KVTransferPerToken: -1}, "KVTransferPerToken=-1ns"},
		{emulator.Config{KVTransferPerToken: time.Millisecond}, `only used with PDRole "decode"`},
	} {
		_, err := emulator.New(tc.cfg)
		if !errors.Is(err, emulator.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want ErrConfig mentioning %q", tc.cfg, err, tc.want)
		}
	}
	srv, err := emulator.New(emulator.Config{EnablePrefixCaching: true, MaxNumSeqs: 4})
	if err != nil {
		t.Fatal(err)
	}
	if c := srv.Config(); c.BlockSize != emulator.DefaultBlockSize {
		t.Fatalf("default block size %d", c.BlockSize)
	}
	if err := srv.Update(func(c *emulator.Config) { c.NumKVBlocks = 4096 }); !errors.Is(err, emulator.ErrConfig) {
		t.Fatalf("KV capacity must not change at runtime: %v", err)
	}
	if err := srv.Update(func(c *emulator.Config) { c.BatchFactor = 2; c.MaxNumSeqs = 8 }); err != nil {
		t.Fatalf("batch factor may change while the model is on: %v", err)
	}
	off, _ := emulator.New(emulator.Config{MaxNumSeqs: 4})
	if err := off.Update(func(c *emulator.Config) { c.BatchFactor = 2 }); !errors.Is(err, emulator.ErrConfig) {
		t.Fatalf("switching the model on at runtime must fail: %v", err)
	}
}

// TestPrefixCacheMultiTurn 验证解码填满的块也被登记：第二轮提示 = 第一轮提示（42 token）
// + 第一轮回答（30 token）+ 新问题（5 token）= 77 token。第一轮结束时持有 KV 的是
// 42 + 29 = 71 个 token（最后一个 token 没有 KV），登记 ⌊71/16⌋ = 4 块，所以第二轮命中
// 64 个 token；只登记提示的话只会命中 32 个。
func TestPrefixCacheMultiTurn(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m", EnablePrefixCaching: true, EnablePromptTokensDetails: true})
	system, u1 := perfWords(t, "s", 32), perfWords(t, "u", 10)
	st, _, raw := emuPost(t, ep, "/v1/chat/completions", perfChat(system, u1, 30, nil))
	o := emuObj(t, raw)
	answer := emuStr(emuJget(o, "choices", 0, "message", "content"))
	if st != 200 || tokenize.Count(answer) != 30 || emuNum(emuJget(o, "usage", "prompt_tokens")) != 42 {
		t.Fatalf("turn 1: %d %s", st, raw)
	}
	turn2 := map[string]any{"model": "m", "temperature": 0, "max_tokens": 2, "messages": []map[string]any{
		{"role": "system", "content": system}, {"role": "user", "content": u1},
		{"role": "assistant", "content": answer}, {"role": "user", "content": perfWords(t, "v", 5)}}}
	_, _, raw = emuPost(t, ep, "/v1/chat/completions", turn2)
	u := emuJget(emuObj(t, raw), "usage").(map[string]any)
	if emuNum(u["prompt_tokens"]) != 77 || emuNum(emuJget(u, "prompt_tokens_details", "cached_tokens")) != 64 {
		t.Fatalf("turn 2 usage %v, want 77 prompt tokens with 64 cached", u)
	}
}
