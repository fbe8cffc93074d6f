package acme

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/pipeline"
)

// 本文件是 issue #30 的四个“不 fork 就能加”的故事，全部经公开 API 交给参考流水线：
//
//   - 自己的部署方式 acme-fleet（deploy.Modes）：场景 YAML 写 mode: acme-fleet 与它自己的
//     acme_fleet: 配置块，块由 ACME 的代码严格解码并带文件:行校验；
//   - 自己的到达过程（loadgen.Pacer）：档位 acme-burst 的请求成批到达；
//   - 对 embeddings 端点的压测（loadgen.Source）：档位 acme-embeddings 发 /v1/embeddings；
//   - 从 YAML 读参数的用例 acme/greeting（functional.Case.Params，功能配置的 params.acme/greeting:）。

// ModeFleet 是 ACME 部署方式的名字（场景 YAML 的 mode:）；它的配置块键是 FleetBlock。
const (
	ModeFleet  = "acme-fleet"
	FleetBlock = "acme_fleet"
)

// MaxReplicas 是 acme_fleet.replicas 的上限。
const MaxReplicas = 4

// FleetConfig 是场景 YAML 的 acme_fleet: 块：几份副本、每份的时延与能力。ACME 真实的启动器
// 会在这里拉起自己的进程（docker compose、Slurm 作业……）；示例用 cibench 的进程内模拟器代替
// GPU 上的服务，让这个模块能在没有 GPU 的 CI 机器上跑通。
type FleetConfig struct {
	// Replicas 是副本数，[1, MaxReplicas]，默认 1；端点的 BaseURLs 每份一个（负载均衡由 loadgen 做）。
	Replicas int `yaml:"replicas"`
	// TTFT 与 ITL 是每份副本的首 token 时间与 token 间隔（Go 时长，如 5ms）。
	TTFT time.Duration `yaml:"ttft"`
	ITL  time.Duration `yaml:"itl"`
	// Embeddings 为 true 时副本提供 /v1/embeddings（档位 acme-embeddings 需要它）。
	Embeddings bool `yaml:"embeddings"`
}

// FleetMode 返回 ACME 的部署方式登记项：Prepare 在加载配置时解码并校验 acme_fleet: 块
// （拼错的键、类型不符由严格解码报告，取值错误用 Block.Errorf 定位到块内的行），运行时的
// Plan 才启动副本。
func FleetMode() deploy.Mode {
	return deploy.Mode{Name: ModeFleet, Block: FleetBlock, Emulated: true, Prepare: func(b deploy.Block, sc deploy.Scenario) (deploy.Plan, error) {
		cfg := FleetConfig{Replicas: 1}
		if err := b.Decode(&cfg); err != nil {
			return nil, err
		}
		switch {
		case cfg.Replicas < 1 || cfg.Replicas > MaxReplicas:
			return nil, b.Errorf("replicas", strconv.Itoa(cfg.Replicas), "must be in [1, %d]", MaxReplicas)
		case cfg.TTFT < 0:
			return nil, b.Errorf("ttft", cfg.TTFT.String(), "must not be negative")
		case cfg.ITL < 0:
			return nil, b.Errorf("itl", cfg.ITL.String(), "must not be negative")
		case sc.BaseURL != "":
			return nil, b.Errorf("", sc.BaseURL, "base_url is not used with mode %s (the fleet listens on loopback ports it picks)", ModeFleet)
		}
		model := sc.ServedModelName
		return deploy.PlanFunc(func(rt deploy.Runtime) (deploy.Deployer, error) {
			return &fleetDeployer{cfg: cfg, model: model, apiKey: rt.APIKey}, nil
		}), nil
	}}
}

// fleetDeployer 启动一组副本。
type fleetDeployer struct {
	cfg    FleetConfig
	model  string
	apiKey string
}

// Deploy 依次启动全部副本；任何一份失败时停掉已启动的，返回错误。
func (f *fleetDeployer) Deploy(ctx context.Context) (deploy.Deployment, error) {
	fl := &fleet{ep: deploy.Endpoint{Model: f.model, APIKey: f.apiKey}}
	for i := range f.cfg.Replicas {
		em, err := emulator.New(emulator.Config{Model: f.model, APIKey: f.apiKey, TTFT: f.cfg.TTFT, ITL: f.cfg.ITL,
			EnableEmbeddings: f.cfg.Embeddings, Seed: int64(i + 1)})
		if err == nil {
			var d deploy.Deployment
			if d, err = em.Deploy(ctx); err == nil {
				fl.replicas = append(fl.replicas, d)
				fl.ep.BaseURLs = append(fl.ep.BaseURLs, d.Endpoint().BaseURLs...)
				continue
			}
		}
		return nil, errors.Join(fmt.Errorf("acme-fleet: replica %d: %w", i, err), fl.Teardown(ctx))
	}
	return fl, nil
}

// fleet 是一组正在运行的副本。
type fleet struct {
	ep       deploy.Endpoint
	replicas []deploy.Deployment
	down     bool
}

// Endpoint 返回全部副本的地址。
func (f *fleet) Endpoint() deploy.Endpoint { return f.ep }

// ArchiveLogs 把每份副本的日志归档到 dir/replica-<i>。
func (f *fleet) ArchiveLogs(ctx context.Context, dir string) error {
	var errs []error
	for i, d := range f.replicas {
		errs = append(errs, d.ArchiveLogs(ctx, filepath.Join(dir, "replica-"+strconv.Itoa(i))))
	}
	return errors.Join(errs...)
}

// Teardown 停掉全部副本；可重复调用。
func (f *fleet) Teardown(ctx context.Context) error {
	if f.down {
		return nil
	}
	f.down = true
	var errs []error
	for _, d := range f.replicas {
		errs = append(errs, d.Teardown(ctx))
	}
	return errors.Join(errs...)
}

// 档位名：PerfShaper 按档位名决定改写什么（档位的其余参数——并发、请求数、长度——照常写在
// tests/perf/profiles/<名字>.yaml 里）。
const (
	ProfileBurst      = "acme-burst"
	ProfileEmbeddings = "acme-embeddings"
)

// BurstSize 是 acme-burst 档位每批同时到达的请求数。
const BurstSize = 4

// BurstPacer 返回成批的到达过程：每 size 个请求在同一时刻到达，批与批之间相隔 size/rate 秒，
// 平均速率仍是 rate（档位的 request_rate）。它只看计划时刻表（elapsed、hits），与机器忙不忙
// 无关，所以可复现，分片也各取同一张时刻表。rate <= 0 或 size < 1 时不安排任何到达。
func BurstPacer(size int, rate float64) loadgen.Pacer {
	gap := time.Duration(0)
	if rate > 0 {
		gap = time.Duration(float64(size) / rate * float64(time.Second))
	}
	return loadgen.PacerFunc(func(elapsed time.Duration, hits uint64) (time.Duration, bool) {
		if rate <= 0 || size < 1 {
			return 0, true
		}
		if hits%uint64(size) != 0 {
			return 0, false // 同一批的其余请求：立即
		}
		next := time.Duration(hits/uint64(size)) * gap
		return max(next-elapsed, 0), false
	})
}

// EmbeddingsSource 返回压测 /v1/embeddings 的请求来源：第 i 个请求嵌入一段带序号的文本，
// 一次性 JSON 响应（200、是 JSON、没有 error 即成功）。
func EmbeddingsSource(model string) *loadgen.Source {
	return &loadgen.Source{Path: "/embeddings", Body: func(dst []byte, g loadgen.Group, i int) ([]byte, int) {
		return fmt.Appendf(dst, `{"model":%q,"input":"acme document %d of group c%d"}`, model, i, g.Concurrency), 0
	}}
}

// shaper 是 pipeline.PerfShaper：acme-burst 换上成批的到达过程，acme-embeddings 换成 embeddings
// 请求；其他档位原样运行。
func shaper(run pipeline.PerfRun, p *loadgen.Profile) error {
	switch run.Profile {
	case ProfileBurst:
		p.Pacer = func(_ loadgen.Group, rate float64) loadgen.Pacer { return BurstPacer(BurstSize, rate) }
	case ProfileEmbeddings:
		if run.Model == "" {
			return errors.New("acme-embeddings: the endpoint has no model name")
		}
		p.Source = EmbeddingsSource(run.Model)
	}
	return nil
}

// GreetingParams 是用例 acme/greeting 的参数：功能配置 params.acme/greeting: 块严格解码进它
// （拼错的键在加载配置时带文件:行:列报错），零值字段保留这里的默认值。
type GreetingParams struct {
	// Prompt 是发给服务的问候。
	Prompt string `yaml:"prompt"`
	// MaxTokens 是请求的 max_tokens（与 ignore_eos 一起，回复恰好这么多 token）。
	MaxTokens int `yaml:"max_tokens"`
	// MustContain 非空时回复必须包含它（大小写不敏感）。
	MustContain string `yaml:"must_contain"`
}

// defaultGreeting 是用例 acme/greeting 的默认参数（功能配置没写的字段取这里的值）。
func defaultGreeting() GreetingParams {
	return GreetingParams{Prompt: "Say hello to ACME.", MaxTokens: 6}
}

// greeting 是从 YAML 读参数的功能用例：默认参数在 Case.Params 里，团队在功能配置里改。
func greeting() functional.Case {
	def := defaultGreeting()
	return functional.Case{
		ID: "greeting", Suite: "acme", Params: &def,
		Description: "the greeting from params.acme/greeting gets exactly max_tokens tokens (and must_contain, if set)",
		Run: func(ctx context.Context, t *functional.T) {
			var p GreetingParams // 零值：T.Params 先填上 Case.Params 的默认值，再叠加 YAML
			if err := t.Params(&p); err != nil {
				t.Fatalf("params: %v", err)
			}
			if p.MaxTokens < 1 {
				t.Fatalf("params.acme/greeting.max_tokens = %d, want >= 1", p.MaxTokens)
			}
			resp, err := t.Post(ctx, "/v1/chat/completions", map[string]any{
				"model": t.Model(), "max_tokens": p.MaxTokens, "ignore_eos": true,
				"messages": []map[string]string{{"role": "user", "content": p.Prompt}},
			})
			if err != nil {
				t.Fatalf("request: %v", err)
			}
			t.Expect("HTTP status", 200, resp.Status)
			var body struct {
				Choices []struct {
					Message struct {
						Content string `json:"content"`
					} `json:"message"`
				} `json:"choices"`
				Usage struct {
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal(resp.Body, &body); err != nil || len(body.Choices) == 0 {
				t.Fatalf("decode: %v (%d choices)", err, len(body.Choices))
			}
			t.Expect("completion_tokens", p.MaxTokens, body.Usage.CompletionTokens)
			if p.MustContain != "" && !strings.Contains(strings.ToLower(body.Choices[0].Message.Content), strings.ToLower(p.MustContain)) {
				t.Fatalf("reply %q does not contain %q", body.Choices[0].Message.Content, p.MustContain)
			}
			t.Notef("prompt %q, %d tokens", p.Prompt, body.Usage.CompletionTokens)
		},
	}
}

// applySeams 把本文件的四样东西加进 o：部署方式（o.Modes 为 nil 时从内置登记表出发）、
// PerfShaper 与用例 acme/greeting。
func applySeams(o *pipeline.Options) error {
	if o.Modes == nil {
		o.Modes = pipeline.DefaultModes()
	}
	if err := o.Modes.Register(FleetMode()); err != nil {
		return err
	}
	o.PerfShapers = append(o.PerfShapers, shaper)
	o.Cases = append(o.Cases, greeting())
	return nil
}

// 编译期检查：shaper 是驱动要的函数类型。
var _ pipeline.PerfShaper = shaper
