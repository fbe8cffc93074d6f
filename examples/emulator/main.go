// Command emulator 独立运行 cibench 的 vLLM 模拟服务器，方便在没有 GPU 的机器上
// 开发测试工具，或从外部把它与其他服务对比。
//
//	go run ./examples/emulator -addr 127.0.0.1:8000 -model qwen3 -ttft 50ms -itl 10ms
//
// API key 通过 -api-key 或环境变量 CIBENCH_EMULATOR_API_KEY 给出（后者不会出现在进程列表里）。
// 缺陷开关用 -defects NoDone,WrongUsageTotal（字段名见 emulator.Defects）。
//
// 性能模型（默认全关）：-enable-prefix-caching、-block-size、-num-kv-blocks、-batch-factor、
// -enable-prompt-tokens-details。PD 分离（OmniInfer 1P1D 的形状）：-pd 启动 prefill
// （-prefill-addr）与 decode（-decode-addr）两个实例，-addr 上是代理；decode 实例用
// -kv-transfer-per-token、-decode-ttft、-decode-max-num-seqs、-decode-num-kv-blocks。
//
//	go run ./examples/emulator -pd -addr 127.0.0.1:9000 -prefill-addr 127.0.0.1:6660 \
//	    -decode-addr 127.0.0.1:6760 -prefill-per-token 100us -itl 10ms -kv-transfer-per-token 20us
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"reflect"
	"strings"
	"syscall"
	"time"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/deploy/emulator"
)

// main 解析参数并运行到收到 SIGINT/SIGTERM。
func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "emulator:", err)
		os.Exit(2)
	}
}

// cliOptions 是命令行参数：单实例的配置（嵌入），以及 PD 模式的额外参数。
type cliOptions struct {
	emulator.Config
	pd                 bool
	prefillAddr        string
	decodeAddr         string
	decodeTTFT         time.Duration
	decodeMaxNumSeqs   int
	decodeNumKVBlocks  int
	kvTransferPerToken time.Duration
}

// pdConfig 由命令行参数组成 PD 配置：两个实例共享全部参数，decode 实例的 TTFT、
// max_num_seqs、KV 容量与 KV 传输时间取 -decode-* 与 -kv-transfer-per-token。
func (o *cliOptions) pdConfig() emulator.PDConfig {
	pre, dec := o.Config, o.Config
	pre.Addr, dec.Addr = o.prefillAddr, o.decodeAddr
	dec.TTFT = o.decodeTTFT
	if o.decodeMaxNumSeqs > 0 {
		dec.MaxNumSeqs = o.decodeMaxNumSeqs
	}
	if o.decodeNumKVBlocks > 0 {
		dec.NumKVBlocks = o.decodeNumKVBlocks
	}
	dec.KVTransferPerToken = o.kvTransferPerToken
	return emulator.PDConfig{Prefill: pre, Decode: dec, Addr: o.Addr}
}

// parseConfig 把命令行参数转换为 cliOptions。
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (cliOptions, error) {
	var o cliOptions
	c := &o.Config
	fs := flag.NewFlagSet("emulator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:8000", "listen address")
	fs.StringVar(&c.Model, "model", emulator.DefaultModel, "served model name")
	fs.IntVar(&c.MaxModelLen, "max-model-len", emulator.DefaultMaxModelLen, "context length")
	apiKey := fs.String("api-key", "", "require this API key on /v1 (or set CIBENCH_EMULATOR_API_KEY)")
	fs.DurationVar(&c.TTFT, "ttft", 0, "time to first token")
	fs.DurationVar(&c.PrefillPerToken, "prefill-per-token", 0, "extra TTFT per prompt token")
	fs.DurationVar(&c.ITL, "itl", 0, "inter-token (inter-chunk) latency")
	fs.Float64Var(&c.TTFTSigma, "ttft-sigma", 0, "log-normal noise on each request's TTFT: factor exp(sigma*Z), median unchanged (0 = none; 0.35 is a realistic right tail)")
	fs.Float64Var(&c.ITLSigma, "itl-sigma", 0, "log-normal noise on each request's inter-token latency (0 = none)")
	fs.IntVar(&c.MaxNumSeqs, "max-num-seqs", 0, "concurrent sequences (0 = unlimited); excess requests queue")
	fs.IntVar(&c.TokensPerChunk, "tokens-per-chunk", 1, "tokens per streamed delta")
	fs.BoolVar(&c.SpecDecode, "spec-decode", false, "emit speculative decoding counters")
	fs.Float64Var(&c.SpecAcceptRate, "spec-accept-rate", 0, "speculative decoding acceptance rate (default 0.7 with -spec-decode)")
	fs.BoolVar(&c.Reasoning, "reasoning", false, "emit reasoning before content")
	fs.StringVar(&c.ReasoningField, "reasoning-field", "reasoning", `reasoning field name: "reasoning" or "reasoning_content"`)
	fs.BoolVar(&c.ReasoningInContent, "reasoning-in-content", false, "no reasoning parser: thinking inside <think>…</think> in content")
	fs.BoolVar(&c.DisableTools, "disable-tools", false, "reject tool calling")
	fs.BoolVar(&c.DisableGuided, "disable-guided", false, "reject structured outputs")
	fs.BoolVar(&c.DisableStreamUsage, "disable-stream-usage", false, "ignore stream_options")
	fs.BoolVar(&c.DisableTopK, "disable-top-k", false, "reject top_k")
	fs.BoolVar(&c.DisablePenalties, "disable-penalties", false, "reject penalties")
	fs.BoolVar(&c.DisableLogprobs, "disable-logprobs", false, "reject logprobs")
	fs.BoolVar(&c.EnableEmbeddings, "embeddings", false, "serve /v1/embeddings")
	fs.BoolVar(&c.EnableRerank, "rerank", false, "serve /v1/rerank and /rerank")
	fs.IntVar(&c.EmbeddingDim, "embedding-dim", emulator.DefaultEmbeddingDim, "embedding dimension")
	fs.Float64Var(&c.FailureRate, "failure-rate", 0, "fraction of requests that fail [0,1]")
	kinds := fs.String("failure-kinds", "", "comma list of "+strings.Join(emulator.FailureKinds(), ","))
	fs.Int64Var(&c.Seed, "seed", 0, "seed for failure injection and unseeded sampling")
	fs.BoolVar(&c.Unhealthy, "unhealthy", false, "make /health return 503")
	fs.BoolVar(&c.CoalesceZeroLatency, "coalesce", false, "at zero latency, coalesce SSE chunks into larger writes")
	defects := fs.String("defects", "", "comma list of emulator.Defects field names to switch on")
	fs.BoolVar(&c.EnablePrefixCaching, "enable-prefix-caching", false, "model vLLM automatic prefix caching (TTFT counts only uncached tokens)")
	fs.IntVar(&c.BlockSize, "block-size", emulator.DefaultBlockSize, "KV block size in tokens")
	fs.IntVar(&c.NumKVBlocks, "num-kv-blocks", 0, "KV cache capacity in blocks (0 = unlimited); running requests are preempted when it runs out")
	fs.Float64Var(&c.BatchFactor, "batch-factor", 0, "ITL and prefill slow-down at a full batch of -max-num-seqs (linear in running requests; 0 = off)")
	fs.BoolVar(&c.EnablePromptTokensDetails, "enable-prompt-tokens-details", false, "report usage.prompt_tokens_details.cached_tokens")
	fs.BoolVar(&o.pd, "pd", false, "PD disaggregation: prefill and decode instances behind a proxy on -addr")
	fs.StringVar(&o.prefillAddr, "prefill-addr", "127.0.0.1:0", "with -pd: prefill instance address")
	fs.StringVar(&o.decodeAddr, "decode-addr", "127.0.0.1:0", "with -pd: decode instance address")
	fs.DurationVar(&o.decodeTTFT, "decode-ttft", 0, "with -pd: fixed first-token overhead on the decode instance")
	fs.IntVar(&o.decodeMaxNumSeqs, "decode-max-num-seqs", 0, "with -pd: max-num-seqs of the decode instance (0 = -max-num-seqs)")
	fs.IntVar(&o.decodeNumKVBlocks, "decode-num-kv-blocks", 0, "with -pd: KV blocks of the decode instance (0 = -num-kv-blocks)")
	fs.DurationVar(&o.kvTransferPerToken, "kv-transfer-per-token", 0, "with -pd: KV transfer time per uncached prompt token on the decode instance")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if !o.pd {
		for _, name := range []string{"prefill-addr", "decode-addr", "decode-ttft", "decode-max-num-seqs", "decode-num-kv-blocks", "kv-transfer-per-token"} {
			if isSet(fs, name) {
				return o, fmt.Errorf("-%s: only used with -pd", name)
			}
		}
	}
	// 库把 0 当作"取默认值"：命令行上明确写出的 0（或负数）不悄悄改成默认值，点名参数报错。
	for _, f := range []struct {
		name string
		v    int
		min  int
	}{{"tokens-per-chunk", c.TokensPerChunk, 1}, {"max-model-len", c.MaxModelLen, 1}, {"embedding-dim", c.EmbeddingDim, 1}, {"max-num-seqs", c.MaxNumSeqs, 0},
		{"block-size", c.BlockSize, 1}, {"num-kv-blocks", c.NumKVBlocks, 0}, {"decode-max-num-seqs", o.decodeMaxNumSeqs, 0}, {"decode-num-kv-blocks", o.decodeNumKVBlocks, 0}} {
		if f.v < f.min {
			return o, fmt.Errorf("-%s %d: must be >= %d", f.name, f.v, f.min)
		}
	}
	c.APIKey = *apiKey
	if c.APIKey == "" {
		c.APIKey = getenv("CIBENCH_EMULATOR_API_KEY")
	}
	if *kinds != "" {
		c.FailureKinds = strings.Split(*kinds, ",")
	}
	if *defects != "" {
		v := reflect.ValueOf(&c.Defects).Elem()
		for _, name := range strings.Split(*defects, ",") {
			f := v.FieldByName(strings.TrimSpace(name))
			if !f.IsValid() || f.Kind() != reflect.Bool {
				return o, fmt.Errorf("-defects: unknown defect %q", name)
			}
			f.SetBool(true)
		}
	}
	return o, nil
}

// isSet 报告命令行上是否显式给出了名为 name 的参数。
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// run 启动模拟器，打印地址，直到 ctx 结束后优雅关闭。
func run(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	o, err := parseConfig(args, getenv, stdout)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	var dep deploy.Deployment
	if o.pd {
		pd, err := emulator.NewPD(o.pdConfig())
		if err != nil {
			return err
		}
		if dep, err = pd.Deploy(ctx); err != nil {
			return err
		}
		pdd := dep.(*emulator.PDDeployment)
		fmt.Fprintf(stdout, "cibench emulator PD: prefill at %s, decode at %s\n", pdd.PrefillEndpoint().BaseURL(), pdd.DecodeEndpoint().BaseURL())
	} else {
		em, err := emulator.New(o.Config)
		if err != nil {
			return err
		}
		if dep, err = em.Deploy(ctx); err != nil {
			return err
		}
	}
	ep := dep.Endpoint()
	fmt.Fprintf(stdout, "cibench emulator serving model %q at %s (auth: %t)\n", ep.Model, ep.BaseURL(), ep.APIKey != "")
	<-ctx.Done()
	return dep.Teardown(context.Background())
}
