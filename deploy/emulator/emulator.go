package emulator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-cibench/cibench/deploy"
	emu "github.com/vllm-cibench/cibench/internal/emulator"
	"github.com/vllm-cibench/cibench/internal/rxstamp"
)

// DefaultModel 是 Config.Model 为空时对外服务的模型名。
const DefaultModel = "cibench-emulator"

// DefaultMaxModelLen 是 Config.MaxModelLen 为 0 时的上下文长度。
const DefaultMaxModelLen = 32768

// DefaultEmbeddingDim 是 Config.EmbeddingDim 为 0 时的嵌入维度。
const DefaultEmbeddingDim = 1024

// failureKinds 列出 Config.FailureKinds 可用的取值；不导出，免得调用方改动它而改变校验规则。
var failureKinds = []string{"429", "500", "503", "stream_error", "drop", "truncate"}

// FailureKinds 返回 Config.FailureKinds 可用取值的副本；返回副本是因为校验读的是
// 包内的那一份，调用方修改返回值不应影响哪些取值被接受。
func FailureKinds() []string { return append([]string(nil), failureKinds...) }

// Config 配置一个 Server。零值可用：所有字段都有默认值。
// 字段名是跨包约定的一部分，只增不改。
type Config struct {
	// Addr 是监听地址，空表示 127.0.0.1:0（随机端口）。
	Addr string `json:"addr,omitempty" yaml:"addr,omitempty"`
	// Model 是对外服务的模型名，空为 DefaultModel。
	Model string `json:"model,omitempty" yaml:"model,omitempty"`
	// MaxModelLen 是上下文长度（提示 + 生成），0 为 DefaultMaxModelLen。
	MaxModelLen int `json:"max_model_len,omitempty" yaml:"max_model_len,omitempty"`
	// APIKey 非空时 /v1/* 需要 "Authorization: Bearer <APIKey>"；/health 等不受保护。
	APIKey string `json:"-" yaml:"-"`
	// TTFT 是请求开始执行（出队）到第一个 token 的固定时间。
	TTFT time.Duration `json:"ttft,omitempty" yaml:"ttft,omitempty"`
	// PrefillPerToken 是每个提示 token 额外增加的首 token 时间。
	PrefillPerToken time.Duration `json:"prefill_per_token,omitempty" yaml:"prefill_per_token,omitempty"`
	// ITL 是相邻两个输出 chunk 之间的时间。
	ITL time.Duration `json:"itl,omitempty" yaml:"itl,omitempty"`
	// TTFTSigma 给每个请求的 TTFT（含 PrefillPerToken 部分）乘一个对数正态因子 exp(σ·Z)，
	// Z 为标准正态：中位数仍是注入值，右尾拉长（docs/report.md 的噪声模型，真实服务的
	// TTFT 就是这样右偏的）。0 关闭（时序完全确定）；取值 [0, 2]。序列由 Seed 决定。
	TTFTSigma float64 `json:"ttft_sigma,omitempty" yaml:"ttft_sigma,omitempty"`
	// ITLSigma 同理给每个请求的 ITL 乘一个对数正态因子（同一请求内各 token 间隔相同，
	// 请求之间不同：批内邻居不同造成的逐请求解码速度差异）。0 关闭；取值 [0, 2]。
	ITLSigma float64 `json:"itl_sigma,omitempty" yaml:"itl_sigma,omitempty"`
	// BatchVariance 复现真实 GPU/NPU 服务在默认配置下的批相关不确定性（vLLM 文档："does
	// not guarantee the reproducibility of the results by default"；同一请求与不同的并发请求
	// 成批时 logits 不同）：请求到达时若还有别的生成请求在服务中，它的正文与推理文本从第
	// 4–11 个 token 起（由提示决定）换成另一段文本，token 数不变；单独到达的请求与以前完全
	// 相同（贪心与带 seed 的采样仍可复现）。工具参数与结构化输出不受影响。用来检验功能用例
	// 对这种漂移的容忍是否恰当，同时仍能抓到真缺陷（seed 被忽略、流丢了 delta）。
	BatchVariance bool `json:"batch_variance,omitempty" yaml:"batch_variance,omitempty"`
	// FunctionalTiming 非 nil 时是功能阶段使用的注入时延（零值字段沿用上面的 TTFT、PrefillPerToken、
	// ITL）。流水线在每个阶段开始前经 deploy.StageTuner 切换：功能阶段换上它，其余阶段换回原值。
	// 性能门禁需要足够大的 TTFT 与 ITL 才能看见回归，而功能用例（例如 16384 个 token 的 max_tokens
	// 边界）只核对行为，不必为此多等几秒。直接调用 Server 的程序不受影响（没有人调用 TuneStage）。
	FunctionalTiming *Timing `json:"functional_timing,omitempty" yaml:"functional_timing,omitempty"`
	// MaxNumSeqs 是同时执行的请求上限，超出的请求排队（排队时间计入 TTFT）；0 表示不限。
	MaxNumSeqs int `json:"max_num_seqs,omitempty" yaml:"max_num_seqs,omitempty"`
	// TokensPerChunk 是每个流式 delta 携带的 token 数，0 为 1。
	TokensPerChunk int `json:"tokens_per_chunk,omitempty" yaml:"tokens_per_chunk,omitempty"`
	// CoalesceZeroLatency 在 TTFT、ITL、PrefillPerToken 全为 0 时不逐 chunk 刷新连接，
	// 而是把多个 chunk 合并成较大的写入（吞吐压测用；默认 false 即每个 chunk 一次刷新，
	// 与 vLLM 一致）。有任何延迟时此项无效。
	CoalesceZeroLatency bool `json:"coalesce_zero_latency,omitempty" yaml:"coalesce_zero_latency,omitempty"`
	// SpecDecode 打开投机解码计数器（vllm:spec_decode_*）。
	SpecDecode bool `json:"spec_decode,omitempty" yaml:"spec_decode,omitempty"`
	// SpecAcceptRate 是投机解码的接受率 [0,1]，0 且 SpecDecode 时取 0.7。
	SpecAcceptRate float64 `json:"spec_accept_rate,omitempty" yaml:"spec_accept_rate,omitempty"`
	// Reasoning 让模型先输出推理文本再输出正文。
	Reasoning bool `json:"reasoning,omitempty" yaml:"reasoning,omitempty"`
	// ReasoningField 是推理文本的字段名："reasoning"（默认）或 "reasoning_content"（旧版 vLLM）。
	ReasoningField string `json:"reasoning_field,omitempty" yaml:"reasoning_field,omitempty"`
	// ReasoningTokens 是推理文本的 token 数；0 时取由提示决定的 8–47 个（短）。真实的思考模型
	// 在 GPQA 这类题目上推理数千个 token，用它复现"max_tokens 128 全部花在推理上"的情形。
	ReasoningTokens int `json:"reasoning_tokens,omitempty" yaml:"reasoning_tokens,omitempty"`
	// ReasoningInContent 模拟未配置 reasoning parser 的服务：推理放在正文的 <think>…</think> 中。
	ReasoningInContent bool `json:"reasoning_in_content,omitempty" yaml:"reasoning_in_content,omitempty"`
	// DisableTools 关闭工具调用（带 tools 的请求得到 400，与未开 --enable-auto-tool-choice 的 vLLM 一致）。
	DisableTools bool `json:"disable_tools,omitempty" yaml:"disable_tools,omitempty"`
	// DisableGuided 关闭结构化输出（response_format json_schema / structured_outputs 得到 400）。
	DisableGuided bool `json:"disable_guided,omitempty" yaml:"disable_guided,omitempty"`
	// DisableStreamUsage 忽略 stream_options（流中不带 usage）。
	DisableStreamUsage bool `json:"disable_stream_usage,omitempty" yaml:"disable_stream_usage,omitempty"`
	// UsageOnlyAtEnd 接受 continuous_usage_stats 但不照办：usage 只出现在流末尾的 usage chunk
	// 中（不支持该选项的 OpenAI 兼容服务就是这样），客户端拿不到逐 chunk 的 token 数。
	UsageOnlyAtEnd bool `json:"usage_only_at_end,omitempty" yaml:"usage_only_at_end,omitempty"`
	// CountSkew 让流式正文与客户端计数规则（internal/tokenize）不一致：每隔一个正文 delta
	// 在文本末尾多一个 "."，本地规则因此数出比 usage 更多的 token（usage 不变），用来复现
	// 分词器与客户端估算不一致的服务。
	CountSkew bool `json:"count_skew,omitempty" yaml:"count_skew,omitempty"`
	// DisableTopK 拒绝 top_k 参数（400）。
	DisableTopK bool `json:"disable_top_k,omitempty" yaml:"disable_top_k,omitempty"`
	// DisablePenalties 拒绝 presence/frequency/repetition penalty 参数（400）。
	DisablePenalties bool `json:"disable_penalties,omitempty" yaml:"disable_penalties,omitempty"`
	// DisableLogprobs 拒绝 logprobs 参数（400）。
	DisableLogprobs bool `json:"disable_logprobs,omitempty" yaml:"disable_logprobs,omitempty"`
	// EnableEmbeddings 开启 /v1/embeddings（否则 404）。
	EnableEmbeddings bool `json:"enable_embeddings,omitempty" yaml:"enable_embeddings,omitempty"`
	// EnableRerank 开启 /v1/rerank 与 /rerank（否则 404）。
	EnableRerank bool `json:"enable_rerank,omitempty" yaml:"enable_rerank,omitempty"`
	// EmbeddingDim 是嵌入向量维度，0 为 DefaultEmbeddingDim。
	EmbeddingDim int `json:"embedding_dim,omitempty" yaml:"embedding_dim,omitempty"`
	// FailureRate 是注入故障的请求比例 [0,1]。
	FailureRate float64 `json:"failure_rate,omitempty" yaml:"failure_rate,omitempty"`
	// FailureKinds 是注入的故障种类，取自 FailureKinds()；为空且 FailureRate>0 时取 "500"。
	FailureKinds []string `json:"failure_kinds,omitempty" yaml:"failure_kinds,omitempty"`
	// Seed 决定故障注入序列与无 seed 采样请求的随机流，使整个运行可复现。
	Seed int64 `json:"seed,omitempty" yaml:"seed,omitempty"`
	// Unhealthy 让 /health 返回 503（模拟引擎已死的 vLLM），用于测试健康等待与失败路径；
	// 生成端点不受影响。Deploy 在此状态下等不到健康，会一直等到 ctx 结束。
	Unhealthy bool `json:"unhealthy,omitempty" yaml:"unhealthy,omitempty"`
	// Defects 打开故意的线上缺陷，见 Defects。
	Defects Defects `json:"defects,omitempty" yaml:"defects,omitempty"`

	// 以下是性能模型（docs/emulator.md 的“性能模型”一节），每一项默认关闭；全部关闭时
	// 时序与以前完全相同（TTFT + PrefillPerToken × 提示 token，之后每 ITL 一个 chunk）。

	// EnablePrefixCaching 打开 vLLM 自动前缀缓存的模型：提示按 BlockSize 切成完整块、
	// 链式哈希，命中的块不再 prefill，首 token 时间 = TTFT + 未命中 token × PrefillPerToken；
	// 更新 vllm:prefix_cache_queries_total / vllm:prefix_cache_hits_total。
	EnablePrefixCaching bool `json:"enable_prefix_caching,omitempty" yaml:"enable_prefix_caching,omitempty"`
	// BlockSize 是 KV 块的 token 数（vLLM --block-size），0 为 DefaultBlockSize（16）。
	BlockSize int `json:"block_size,omitempty" yaml:"block_size,omitempty"`
	// NumKVBlocks 是 KV cache 的总块数（vLLM --num-gpu-blocks-override），0 不限。
	// 有限时运行中的请求持有提示 + 已生成 token 的块，分配失败时抢占最近被调度的请求
	// （recompute 模式），vllm:kv_cache_usage_perc 取块的使用率。必须至少容纳一条
	// MaxModelLen 长的序列（vLLM 启动时同样检查）。
	NumKVBlocks int `json:"num_kv_blocks,omitempty" yaml:"num_kv_blocks,omitempty"`
	// BatchFactor 让 ITL 与 prefill 时间随运行中的请求数变慢：倍数
	// 1 + (BatchFactor − 1)·(running − 1)/(MaxNumSeqs − 1)，满批时为 BatchFactor
	// （llm-d-inference-sim 的 time-factor-under-load）。0 或 1 关闭；需要 MaxNumSeqs ≥ 2。
	BatchFactor float64 `json:"batch_factor,omitempty" yaml:"batch_factor,omitempty"`
	// EnablePromptTokensDetails 在 usage 中给出 prompt_tokens_details.cached_tokens
	// （vLLM --enable-prompt-tokens-details；与 vLLM 一样只在命中数大于 0 时给出，
	// 否则为 null）。
	EnablePromptTokensDetails bool `json:"enable_prompt_tokens_details,omitempty" yaml:"enable_prompt_tokens_details,omitempty"`
	// PDRole 是 PD 分离中的角色：""（混合部署）、"prefill" 或 "decode"。带
	// kv_transfer_params.do_remote_decode 的请求在 prefill 角色上只做 prefill 并返回
	// kv_transfer_params；带 do_remote_prefill 的请求在 decode 角色上跳过 prefill，
	// 改为按 KVTransferPerToken 拉取 KV。两种角色对不带 kv_transfer_params 的请求都按
	// 混合部署完整处理。通常用 NewPD 成对启动，见 PD。
	PDRole string `json:"pd_role,omitempty" yaml:"pd_role,omitempty"`
	// KVTransferPerToken 是 decode 角色从 prefill 拉取每个（本地未命中的）提示 token 的
	// KV 所需时间，计入首 token 时间。
	KVTransferPerToken time.Duration `json:"kv_transfer_per_token,omitempty" yaml:"kv_transfer_per_token,omitempty"`
}

// DefaultBlockSize 是 Config.BlockSize 为 0 时的 KV 块大小（vLLM 在 CUDA 上的默认值）。
const DefaultBlockSize = emu.DefaultBlockSize

// perfModel 报告是否需要性能模型（任何一项打开）；全关时走原来的快路径。
func (c *Config) perfModel() bool {
	return c.EnablePrefixCaching || c.NumKVBlocks > 0 || c.BatchFactor > 1 || c.PDRole != ""
}

// ErrConfig 是所有配置校验错误的哨兵，可用 errors.Is 判断。
var ErrConfig = errors.New("deploy: invalid emulator config")

// withDefaults 返回填好默认值的副本（不修改调用方的值）。
func (c Config) withDefaults() Config {
	if c.Model == "" {
		c.Model = DefaultModel
	}
	if c.MaxModelLen == 0 {
		c.MaxModelLen = DefaultMaxModelLen
	}
	if c.TokensPerChunk == 0 {
		c.TokensPerChunk = 1
	}
	if c.ReasoningField == "" {
		c.ReasoningField = "reasoning"
	}
	if c.EmbeddingDim == 0 {
		c.EmbeddingDim = DefaultEmbeddingDim
	}
	if c.SpecDecode && c.SpecAcceptRate == 0 {
		c.SpecAcceptRate = 0.7
	}
	if c.FailureRate > 0 && len(c.FailureKinds) == 0 {
		c.FailureKinds = []string{"500"}
	}
	if c.BlockSize == 0 {
		c.BlockSize = DefaultBlockSize
	}
	c.FailureKinds = append([]string(nil), c.FailureKinds...)
	return c
}

// validate 检查（已填默认值的）配置，错误信息点名字段与取值。
func (c *Config) validate() error {
	bad := func(field string, v any, why string) error {
		return fmt.Errorf("%w: %s=%v: %s", ErrConfig, field, v, why)
	}
	switch {
	case c.MaxModelLen < 0:
		return bad("MaxModelLen", c.MaxModelLen, "must be >= 0")
	case c.TTFT < 0:
		return bad("TTFT", c.TTFT, "must be >= 0")
	case c.PrefillPerToken < 0:
		return bad("PrefillPerToken", c.PrefillPerToken, "must be >= 0")
	case c.ITL < 0:
		return bad("ITL", c.ITL, "must be >= 0")
	case c.FunctionalTiming != nil && (c.FunctionalTiming.TTFT < 0 || c.FunctionalTiming.PrefillPerToken < 0 || c.FunctionalTiming.ITL < 0):
		return bad("FunctionalTiming", *c.FunctionalTiming, "ttft, prefill_per_token and itl must be >= 0")
	case c.ReasoningTokens < 0 || c.ReasoningTokens > 1<<20:
		return bad("ReasoningTokens", c.ReasoningTokens, "must be in [0, 1048576]")
	case c.TTFTSigma < 0 || c.TTFTSigma > 2 || math.IsNaN(c.TTFTSigma):
		return bad("TTFTSigma", c.TTFTSigma, "must be in [0, 2]")
	case c.ITLSigma < 0 || c.ITLSigma > 2 || math.IsNaN(c.ITLSigma):
		return bad("ITLSigma", c.ITLSigma, "must be in [0, 2]")
	case c.MaxNumSeqs < 0:
		return bad("MaxNumSeqs", c.MaxNumSeqs, "must be >= 0 (0 = unlimited)")
	case c.TokensPerChunk < 0:
		return bad("TokensPerChunk", c.TokensPerChunk, "must be >= 1")
	case c.SpecAcceptRate < 0 || c.SpecAcceptRate > 1:
		return bad("SpecAcceptRate", c.SpecAcceptRate, "must be in [0,1]")
	case c.ReasoningField != "reasoning" && c.ReasoningField != "reasoning_content":
		return bad("ReasoningField", c.ReasoningField, `must be "reasoning" or "reasoning_content"`)
	case c.EmbeddingDim < 0:
		return bad("EmbeddingDim", c.EmbeddingDim, "must be >= 1")
	case !(c.FailureRate >= 0 && c.FailureRate <= 1):
		return bad("FailureRate", c.FailureRate, "must be in [0,1]")
	case strings.ContainsAny(c.Model, " \t\n"):
		return bad("Model", c.Model, "must not contain whitespace")
	case c.BlockSize < 1:
		return bad("BlockSize", c.BlockSize, "must be >= 1 (0 = 16)")
	case c.NumKVBlocks < 0:
		return bad("NumKVBlocks", c.NumKVBlocks, "must be >= 0 (0 = unlimited)")
	case c.NumKVBlocks > 0 && c.NumKVBlocks*c.BlockSize < c.MaxModelLen:
		return bad("NumKVBlocks", c.NumKVBlocks, fmt.Sprintf("%d blocks of %d tokens hold %d tokens, fewer than one MaxModelLen=%d sequence (vLLM refuses to start like this); raise NumKVBlocks or lower MaxModelLen",
			c.NumKVBlocks, c.BlockSize, c.NumKVBlocks*c.BlockSize, c.MaxModelLen))
	case !(c.BatchFactor == 0 || c.BatchFactor >= 1):
		return bad("BatchFactor", c.BatchFactor, "must be 0 (off) or >= 1")
	case c.BatchFactor > 1 && c.MaxNumSeqs < 2:
		return bad("BatchFactor", c.BatchFactor, fmt.Sprintf("needs MaxNumSeqs >= 2 (the batch the factor is reached at), got MaxNumSeqs=%d", c.MaxNumSeqs))
	case c.PDRole != "" && c.PDRole != "prefill" && c.PDRole != "decode":
		return bad("PDRole", c.PDRole, `must be "", "prefill" or "decode"`)
	case c.KVTransferPerToken < 0:
		return bad("KVTransferPerToken", c.KVTransferPerToken, "must be >= 0")
	case c.KVTransferPerToken > 0 && c.PDRole != "decode":
		return bad("KVTransferPerToken", c.KVTransferPerToken, `only used with PDRole "decode"`)
	}
	for _, k := range c.FailureKinds {
		ok := false
		for _, known := range failureKinds {
			ok = ok || k == known
		}
		if !ok {
			return bad("FailureKinds", k, "must be one of "+strings.Join(failureKinds, ","))
		}
	}
	if c.Addr != "" {
		if _, _, err := net.SplitHostPort(c.Addr); err != nil {
			return bad("Addr", c.Addr, err.Error())
		}
	}
	return nil
}

// Server 是一个进程内的、线上行为与 vLLM OpenAI 服务一致的模拟服务器。
//
// 它是 examples/ci 的默认被测对象，也是各包测试与用户测试使用的替身
// （类似 net/http/httptest）：/v1/chat/completions、/v1/completions（流式与非流式）、
// /v1/models、/v1/embeddings、/v1/rerank、/health、/version、/tokenize、/metrics，
// 错误体、usage、finish_reason、stop_reason、工具调用、结构化输出、推理字段等
// 线上格式以 vLLM 为准（见 docs/emulator.md）。生成是确定性的：相同请求 + 相同
// seed 得到相同文本，temperature 0 时与 seed 无关；token 计数统一使用
// internal/tokenize 的规则，因此客户端按同一规则数出的 token 数与 usage 一致。
//
// 它不模拟：真实模型质量（文本是中英混排的确定性占位文字，评测得分约等于随机猜测）、
// 真实分词器（用的是 internal/tokenize 的简化规则，chat 模板不增加 token）、GPU/NPU 本身、
// 多实例路由、生成过程中的 EOS token 计数（自然结束时 EOS 不计入 completion_tokens）。
// 前缀缓存、KV 容量与抢占、批大小对 ITL/prefill 的影响与 PD 分离由性能模型模拟，
// 默认全部关闭（此时 ITL 与并发无关，只有 MaxNumSeqs 排队会拉长 TTFT），见 Config 中
// EnablePrefixCaching 起的字段、NewPD 与 docs/emulator.md 的“性能模型”。
//
// 并发约定：Server 的全部方法都可以并发调用；Update 原子地替换配置，
// 正在进行的请求继续使用开始时的配置快照。
type Server struct {
	cfg     atomic.Pointer[Config]
	updMu   sync.Mutex // 串行化 Update
	engine  *emu.Engine
	metrics *emu.Metrics
	sched   *emu.Scheduler
	perf    *emu.Perf // 性能模型；配置全关时为 nil，走 sched 的快路径
	failer  *emu.Failer
	access  *emu.AccessLog
	handler http.Handler
	reqSeq  atomic.Uint64
	noise   atomic.Uint64 // TTFTSigma/ITLSigma 的抽样序号
	serving atomic.Int64  // 正在 serve 的生成请求数（BatchVariance 判断是否与别的请求成批）
	batchN  atomic.Uint64 // BatchVariance 的漂移序号
	bufs    emuBufPool
	spinner atomic.Int32 // 正在精确等待首 token 的流数，见 emuWaiter.untilPrecise
	idSalt  uint64       // Seed 为 0 时取构造时刻，使不同进程的响应 id 不重复
}

var _ deploy.Deployer = (*Server)(nil)

// New 校验配置并构造模拟器；此时尚未监听端口（见 Deploy 与 Handler）。
func New(cfg Config) (*Server, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	e := &Server{
		engine: emu.NewEngine(),
		sched:  emu.NewScheduler(c.MaxNumSeqs),
		failer: emu.NewFailer(c.Seed),
		access: emu.NewAccessLog(10000),
	}
	if c.Seed == 0 {
		e.idSalt = uint64(time.Now().UnixNano())
	}
	var perfStats func() emu.PerfStats
	if c.perfModel() {
		e.perf = emu.NewPerf(emu.PerfConfig{MaxNumSeqs: c.MaxNumSeqs, BlockSize: c.BlockSize, NumBlocks: c.NumKVBlocks,
			PrefixCaching: c.EnablePrefixCaching})
		perfStats = e.perf.Stats
	}
	e.metrics = emu.NewMetrics(prometheus.NewRegistry(), c.Model, func() (int, int, int) {
		if e.perf != nil {
			st := e.perf.Stats()
			return st.Running, st.Waiting, st.Limit
		}
		run, wait := e.sched.Counts()
		return run, wait, e.cfg.Load().MaxNumSeqs
	}, perfStats)
	e.cfg.Store(&c)
	e.handler = e.newMux()
	return e, nil
}

// Config 返回当前生效配置（已填默认值）的副本。
func (e *Server) Config() Config {
	c := *e.cfg.Load()
	c.FailureKinds = append([]string(nil), c.FailureKinds...)
	return c
}

// Update 在运行中修改配置：fn 修改一份副本，校验通过后原子替换；校验失败时
// 配置保持不变并返回错误。Addr 的修改对已在监听的服务不生效；Model 不可修改。
func (e *Server) Update(fn func(*Config)) error {
	e.updMu.Lock()
	defer e.updMu.Unlock()
	c := e.Config()
	model := c.Model
	fn(&c)
	c = c.withDefaults()
	if c.Model != model {
		// 指标的 model_name 标签在构造时固定，运行中改名会让 /metrics 与服务不一致。
		return fmt.Errorf("deploy: emulator update: %w: Model=%s: cannot change the served model at runtime", ErrConfig, c.Model)
	}
	if err := c.validate(); err != nil {
		return fmt.Errorf("deploy: emulator update: %w", err)
	}
	// 性能模型的结构（是否打开、块大小、容量、前缀缓存、PD 角色）在构造时固定：
	// 运行中改变它们意味着丢弃或重建正在被请求持有的 KV 块，真实服务也只能重启。
	old := e.cfg.Load()
	if c.perfModel() != old.perfModel() || c.EnablePrefixCaching != old.EnablePrefixCaching ||
		c.BlockSize != old.BlockSize || c.NumKVBlocks != old.NumKVBlocks || c.PDRole != old.PDRole {
		return fmt.Errorf("deploy: emulator update: %w: performance model (EnablePrefixCaching, BlockSize, NumKVBlocks, PDRole, BatchFactor on/off) cannot change at runtime; construct a new emulator", ErrConfig)
	}
	e.cfg.Store(&c)
	e.sched.SetLimit(c.MaxNumSeqs)
	if e.perf != nil {
		e.perf.SetLimit(c.MaxNumSeqs)
	}
	return nil
}

// Handler 返回模拟器的 http.Handler，可自行挂载（例如 httptest.NewServer）。
// 多次调用返回同一个处理器，指标与访问日志共享。
func (e *Server) Handler() http.Handler { return e.handler }

// Registry 返回模拟器私有的 Prometheus 注册表（/metrics 暴露的就是它）。
func (e *Server) Registry() *prometheus.Registry { return e.metrics.Registry() }

// Deploy 在 cfg.Addr（默认 127.0.0.1:0）上监听并开始服务，确认 /health 可达后返回。
func (e *Server) Deploy(ctx context.Context) (deploy.Deployment, error) {
	addr := e.cfg.Load().Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	// 监听套接字开启内核接收时间戳（Linux），请求的到达时刻取请求字节进入套接字的
	// 时刻，见 emuArrival。
	ln, err := rxstamp.Listen(ctx, nil, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("deploy: emulator listen %s: %w", addr, err)
	}
	baseCtx, cancelBase := context.WithCancel(context.Background())
	srv := &http.Server{Handler: e.handler, ReadHeaderTimeout: 30 * time.Second,
		BaseContext: func(net.Listener) context.Context { return baseCtx },
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if st := rxstamp.Of(c); st != nil {
				return context.WithValue(ctx, emuConnKey{}, st)
			}
			return ctx
		}}
	d := &emulatorDeployment{em: e, srv: srv, ln: ln, done: make(chan struct{}), cancel: cancelBase}
	go func() {
		defer close(d.done)
		_ = srv.Serve(ln)
	}()
	base := "http://" + ln.Addr().String()
	if err := emuWaitHealthy(ctx, base+"/health"); err != nil {
		_ = d.Teardown(context.Background())
		return nil, err
	}
	d.ep = deploy.Endpoint{BaseURLs: []string{base + "/v1"}, Model: e.cfg.Load().Model, APIKey: e.cfg.Load().APIKey}
	return d, nil
}

// emuConnKey 是连接级 context 中保存 rxstamp.Stamper 的键。
type emuConnKey struct{}

// emuArrival 返回请求的到达时刻：连接带内核接收时间戳时（Deploy 在 Linux 上监听的
// 连接），取请求字节进入套接字的时刻；否则（例如把 Handler 挂在自己的服务器上）取
// 处理函数开始执行的时刻。
//
// 为什么不直接用 time.Now()：并发高时，请求到达套接字与 net/http 的连接 goroutine
// 被调度、读完请求头、调用处理函数之间，可能隔着数毫秒的 CPU 排队（模拟器与压测端
// 共享 2 个核时尤甚）。注入的 TTFT 从处理函数开始算，这段排队就会叠加在注入值上；
// vLLM 的 arrival_time 同样是在 API 服务收到请求时记下的，排队不应被模拟器额外放大。
func emuArrival(r *http.Request) time.Time {
	now := time.Now()
	st, _ := r.Context().Value(emuConnKey{}).(rxstamp.Stamper)
	return rxstamp.Arrival(st, now, time.Minute)
}

// emuWaitHealthy 以 ctx 感知的方式轮询 url 直到返回 200。
func emuWaitHealthy(ctx context.Context, url string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	delay := time.Millisecond
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("deploy: emulator health: %w", err)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: emulator: %w", deploy.ErrNotReady, ctx.Err())
		case <-t.C:
		}
		if delay < 100*time.Millisecond {
			delay *= 2
		}
	}
}

// emulatorDeployment 是 Server.Deploy 返回的运行实例。
// Timing 是一组注入时延（Config.FunctionalTiming）；零值字段沿用 Config 自己的取值。
type Timing struct {
	TTFT            time.Duration `json:"ttft,omitempty" yaml:"ttft,omitempty"`
	PrefillPerToken time.Duration `json:"prefill_per_token,omitempty" yaml:"prefill_per_token,omitempty"`
	ITL             time.Duration `json:"itl,omitempty" yaml:"itl,omitempty"`
}

type emulatorDeployment struct {
	em *Server
	// tuneMu 保护 tuned 与 saved：功能阶段换上 FunctionalTiming 时记下原来的时延，离开时换回。
	tuneMu sync.Mutex
	tuned  bool
	saved  Timing
	srv    *http.Server
	ln     net.Listener
	ep     deploy.Endpoint
	once   sync.Once
	err    error
	done   chan struct{}
	cancel context.CancelFunc // 取消所有请求的 ctx，让仍在等待定时器的流立即结束
}

// TuneStage 实现 deploy.StageTuner：进入功能阶段时换上 Config.FunctionalTiming（没有设置时什么也不做），
// 进入其它阶段时换回原来的时延。
func (d *emulatorDeployment) TuneStage(_ context.Context, stage string) error {
	d.tuneMu.Lock()
	defer d.tuneMu.Unlock()
	ft := d.em.Config().FunctionalTiming
	switch {
	case stage == "functional" && ft != nil && !d.tuned:
		err := d.em.Update(func(c *Config) {
			d.saved = Timing{TTFT: c.TTFT, PrefillPerToken: c.PrefillPerToken, ITL: c.ITL}
			if ft.TTFT > 0 {
				c.TTFT = ft.TTFT
			}
			if ft.PrefillPerToken > 0 {
				c.PrefillPerToken = ft.PrefillPerToken
			}
			if ft.ITL > 0 {
				c.ITL = ft.ITL
			}
		})
		d.tuned = err == nil
		return err
	case stage != "functional" && d.tuned:
		err := d.em.Update(func(c *Config) { c.TTFT, c.PrefillPerToken, c.ITL = d.saved.TTFT, d.saved.PrefillPerToken, d.saved.ITL })
		d.tuned = err != nil
		return err
	}
	return nil
}

var _ deploy.StageTuner = (*emulatorDeployment)(nil)

// emuShutdownGrace 是 Teardown 等待进行中请求自然结束的最长时间，之后强制关闭。
const emuShutdownGrace = 2 * time.Second

// Endpoint 返回 http://127.0.0.1:PORT/v1 形式的地址。
func (d *emulatorDeployment) Endpoint() deploy.Endpoint { return d.ep }

// Teardown 关闭监听并等待服务退出；幂等，第二次起返回第一次的结果。
// 进行中的请求最多再等 emuShutdownGrace（或到 ctx 结束），之后取消它们并强制关闭连接，
// 因此长流不会让 Teardown 无限期阻塞。
func (d *emulatorDeployment) Teardown(ctx context.Context) error {
	d.once.Do(func() {
		sctx, cancel := context.WithTimeout(ctx, emuShutdownGrace)
		defer cancel()
		if err := d.srv.Shutdown(sctx); err != nil {
			d.cancel()
			_ = d.srv.Close()
		}
		d.cancel()
		<-d.done
	})
	return d.err
}

// ArchiveLogs 把访问日志（emulator-access.log，每行一个请求，不含密钥）、
// 请求汇总（emulator-summary.json）与指标快照（emulator-metrics.prom）写入 dir。
func (d *emulatorDeployment) ArchiveLogs(ctx context.Context, dir string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("deploy: emulator archive logs: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("deploy: emulator archive logs: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, "emulator-access.log"))
	if err != nil {
		return fmt.Errorf("deploy: emulator archive logs: %w", err)
	}
	werr := d.em.access.WriteLog(f)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("deploy: emulator archive logs: %w", werr)
	}
	f, err = os.Create(filepath.Join(dir, "emulator-summary.json"))
	if err != nil {
		return fmt.Errorf("deploy: emulator archive logs: %w", err)
	}
	werr = d.em.access.WriteSummary(f, d.em.Config().Model)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("deploy: emulator archive logs: %w", werr)
	}
	// 指标快照（Prometheus 文本格式），便于事后对照客户端测得的数字。
	if err := prometheus.WriteToTextfile(filepath.Join(dir, "emulator-metrics.prom"), d.em.metrics.Registry()); err != nil {
		return fmt.Errorf("deploy: emulator archive logs: %w", err)
	}
	return nil
}
