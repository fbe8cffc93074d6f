package loadgen_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/field"
	"github.com/vllm-cibench/cibench/loadgen"
)

// embeddingsSource 是团队压测 /v1/embeddings 的请求来源：每个请求嵌入一句带序号的文本。
func embeddingsSource(model string) *loadgen.Source {
	return &loadgen.Source{Path: "/embeddings", Body: func(dst []byte, _ loadgen.Group, i int) ([]byte, int) {
		dst = append(dst, `{"model":"`...)
		dst = append(dst, model...)
		dst = append(dst, `","input":"the quick brown fox number `...)
		dst = strconv.AppendInt(dst, int64(i), 10)
		return append(dst, `"}`...), 0
	}}
}

// TestSourceEmbeddingsEndpoint 证明团队可以用 Source 对 embeddings 端点做负载测试：请求发到
// /v1/embeddings，一次性 JSON 响应计为成功，E2E 有值、输入 token 来自 usage，TPOT 不可测；
// 端点报错（这里是关掉了 embeddings 的模拟器）计为失败并带类别，而不是成功。
func TestSourceEmbeddingsEndpoint(t *testing.T) {
	_, tgt := startEmulator(t, emulator.Config{Model: "m", EnableEmbeddings: true})
	c := &collect{}
	p := loadgen.Profile{Concurrency: []int{4}, InputLength: []int{8}, OutputLength: []int{1}, NumRequests: []int{40}, Source: embeddingsSource("m")}
	sums, err := loadgen.Run(context.Background(), tgt, p, c.observer())
	if err != nil {
		t.Fatal(err)
	}
	s := sums[0]
	if s.Succeeded != 40 || s.Failed != 0 || s.E2E.P50 <= 0 || s.TTFT.P50 != s.E2E.P50 && s.TTFT.P50 <= 0 {
		t.Fatalf("summary = %+v", s)
	}
	// issue 36：embeddings 档位的汇总行曾写着 Backend openai-chat；它测的是 /embeddings。
	if s.Backend != "/embeddings" || p.BackendName() != "/embeddings" {
		t.Fatalf("Backend = %q (BackendName %q), want the Source path", s.Backend, p.BackendName())
	}
	for _, r := range c.recs {
		if !r.OK || r.PromptTokens <= 0 || r.TPOT != -1 || r.E2E <= 0 {
			t.Fatalf("record = %+v", r)
		}
	}
	_, off := startEmulator(t, emulator.Config{Model: "m"})
	sums, err = loadgen.Run(context.Background(), off, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sums[0].Succeeded != 0 || sums[0].Failed != 40 {
		t.Fatalf("an endpoint that refuses must count as failures: %+v", sums[0])
	}
}

// TestSourceValidation 覆盖 Source 与 Pacer 的非法组合：错误可用 errors.Is 区分，写明原因。
func TestSourceValidation(t *testing.T) {
	base := loadgen.Profile{Concurrency: []int{1}, InputLength: []int{8}, OutputLength: []int{1}}
	for name, mod := range map[string]func(*loadgen.Profile){
		"nil body": func(p *loadgen.Profile) { p.Source = &loadgen.Source{Path: "/embeddings"} },
		"bad path": func(p *loadgen.Profile) {
			p.Source = &loadgen.Source{Path: "embeddings", Body: embeddingsSource("m").Body}
		},
		"multi-turn": func(p *loadgen.Profile) { p.Source = embeddingsSource("m"); p.MultiTurn.Conversations = 3 },
	} {
		p := base
		mod(&p)
		if err := p.WithDefaults().Validate(); !errors.Is(err, loadgen.ErrSource) {
			t.Errorf("%s: Validate = %v", name, err)
		}
	}
	p := base
	p.Pacer = func(loadgen.Group, float64) loadgen.Pacer { return loadgen.ConstantPacer(1) }
	// issue 36：go doc ErrSource 说它也是 Pacer 设置不对时的错误，而这里曾只包装 ErrInvalidProfile。
	if err := p.WithDefaults().Validate(); !errors.Is(err, loadgen.ErrSource) || !errors.Is(err, loadgen.ErrInvalidProfile) {
		t.Errorf("a Pacer without request_rate: %v, want ErrSource (and ErrInvalidProfile)", err)
	}
}

// TestSourceErrorsAreFieldErrors 复现 issue 36 的两处：Source 的错误不是 *field.Error（其他 Profile
// 错误都是），以及 Source{Path: "embeddings"}（也没有 Body）只报 "Body is nil"，不提缺少的 '/'。现在每个
// 问题都是点名字段与取值的 *field.Error，一次全部报出。
func TestSourceErrorsAreFieldErrors(t *testing.T) {
	p := loadgen.Profile{Concurrency: []int{1}, InputLength: []int{8}, OutputLength: []int{1}, Source: &loadgen.Source{Path: "embeddings"}}
	err := p.WithDefaults().Validate()
	fields := map[string]string{}
	for _, fe := range field.All(err) {
		fields[fe.Field] = fe.Value
		if !errors.Is(fe, loadgen.ErrSource) {
			t.Errorf("%v does not wrap ErrSource", fe)
		}
	}
	if _, ok := fields["Source.Body"]; !ok || fields["Source.Path"] != "embeddings" {
		t.Fatalf("errors %v: want Source.Body and Source.Path (got %q) both reported", err, fields["Source.Path"])
	}
}

// TestPacerDrivesArrivals 证明团队的到达过程决定开环时刻表：一个每 20ms 一次、发 5 次就停止的
// Pacer 让 10 个计划请求只发出 5 个，相邻意图时刻严格相隔 20ms（时刻表由 Pacer 而不是 gamma
// 抽样决定），每组各得到一个新的 Pacer，rate 原样传入。
func TestPacerDrivesArrivals(t *testing.T) {
	_, tgt := startEmulator(t, emulator.Config{Model: "m"})
	var made atomic.Int32
	var gotRate float64
	p := loadgen.Profile{Concurrency: []int{4}, InputLength: []int{8}, OutputLength: []int{2}, NumRequests: []int{10}, RequestRate: 7, Epochs: 2,
		Pacer: func(_ loadgen.Group, rate float64) loadgen.Pacer {
			made.Add(1)
			gotRate = rate
			return loadgen.PacerFunc(func(_ time.Duration, hits uint64) (time.Duration, bool) {
				if hits >= 5 {
					return 0, true
				}
				return 20 * time.Millisecond, false
			})
		}}
	c := &collect{}
	sums, err := loadgen.Run(context.Background(), tgt, p, c.observer())
	if err != nil {
		t.Fatal(err)
	}
	if made.Load() != 2 || gotRate != 7 || len(sums) != 2 {
		t.Fatalf("pacers made %d, rate %v, groups %d", made.Load(), gotRate, len(sums))
	}
	if sums[0].NumPrompts != 5 || sums[0].Succeeded != 5 {
		t.Fatalf("summary = %+v", sums[0])
	}
	var first []time.Time
	for _, r := range c.recs {
		if r.Group.Round == 1 {
			first = append(first, r.Intended)
		}
	}
	if len(first) != 5 {
		t.Fatalf("round 1 records = %d", len(first))
	}
	lo, hi := first[0], first[0]
	for _, at := range first {
		if at.Before(lo) {
			lo = at
		}
		if at.After(hi) {
			hi = at
		}
	}
	if d := hi.Sub(lo); d != 80*time.Millisecond {
		t.Fatalf("intended span = %v, want 80ms (5 arrivals 20ms apart)", d)
	}
}
