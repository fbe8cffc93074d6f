package loadgen

import (
	"errors"
	"github.com/vllm-cibench/cibench/field"
	"strings"
	"time"
)

// Pacer 决定开环到达的时刻，与 vegeta 的 Pacer 同一个形状：已安排 hits 次到达、其中最后一次
// 在本组开始后 elapsed 时，Pace 返回距下一次到达还要等多久；stop 为 true 表示本组不再有到达
// （组内剩下的请求不发，Summary.Planned 照记计划数）。第一次调用是 Pace(0, 0)。
//
// elapsed 是计划时刻表上的时间，不是墙钟：时刻表因此只由 Pacer 决定，与机器忙不忙无关——
// 排队与发送滞后如实计入时延（不协调遗漏），分片（RunShard）各取同一张时刻表的一部分，合起来
// 与单进程完全相同。Pace 在分发 goroutine 中串行调用，不必并发安全；它应当很快返回。
type Pacer interface {
	Pace(elapsed time.Duration, hits uint64) (wait time.Duration, stop bool)
}

// PacerFunc 让普通函数满足 Pacer。
type PacerFunc func(elapsed time.Duration, hits uint64) (time.Duration, bool)

// Pace 调用 f。
func (f PacerFunc) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	return f(elapsed, hits)
}

// NewPacer 为一组构造到达过程：g 是组（输入/输出长度、并发、轮次），rate 是该组的
// Profile.RequestRate。每组调用一次，返回的 Pacer 只用于这一组。
type NewPacer func(g Group, rate float64) Pacer

// ConstantPacer 返回每秒 rate 次、间隔严格相等的到达（vegeta 的 ConstantPacer）。rate <= 0 时立即停止。
func ConstantPacer(rate float64) Pacer {
	return PacerFunc(func(_ time.Duration, hits uint64) (time.Duration, bool) {
		if rate <= 0 {
			return 0, true
		}
		if hits == 0 {
			return 0, false
		}
		return time.Duration(float64(time.Second) / rate), false
	})
}

// Source 是请求来源的接缝：请求发到哪个路径、请求体是什么、怎样的响应算成功。它让团队压测
// 内置 chat/completions 之外的端点（/embeddings、/rerank、/score）或发送自己的请求体，而不 fork。
// 设置了 Source 的 Profile 不再生成内置数据集（dataset_type、input_length 的内容只用于分组标签），
// 其余一切——并发、到达、预热、分组、统计、观察者、CSV——与内置请求相同。
type Source struct {
	// Path 是相对 base_url（…/v1）的路径，如 "/embeddings"；必须以 '/' 开头。
	Path string
	// Body 把组 g 中第 i 个请求（组内全局序号，从 0 开始；预热请求也从 0 编号）的完整 JSON 体
	// 追加到 dst（长度为 0、容量可复用）并返回，以及请求的提示 token 数（不知道时 0；服务端回了
	// usage 时以服务端为准）。它在 worker goroutine 中并发调用，必须并发安全；复用 dst 的容量使
	// 每个请求不必分配。
	Body func(dst []byte, g Group, i int) (body []byte, promptTokens int)
	// Generative 为 true 表示请求会生成 token（chat/completions 的兼容端点）：响应按内置请求的
	// 规则解析（流式与否由 Profile.Stream 决定，Body 里的 "stream" 应与之一致），TTFT、TPOT、ITL
	// 照常测量。为 false 表示一次性 JSON 响应（embeddings、rerank）：状态 200、是 JSON、没有
	// "error" 即成功，E2E 是整个响应的时延（TTFT 记为同一个值，TPOT/ITL 不可测），usage.prompt_tokens
	// 计入输入 token。
	Generative bool
}

// ErrSource 表示 Profile.Source 或 Profile.Pacer 的设置不合法。这些错误是 *field.Error（字段路径
// Source.Body、Source.Path、Source、request_rate），同时包装 ErrInvalidProfile。
var ErrSource = errors.New("loadgen: invalid source")

// validate 检查 Source 与 Profile 其余设置的组合。
func (s *Source) validate(p *Profile) error {
	// 每个问题都是点名字段与取值的 *field.Error（Err 为 ErrSource，Cause 为 ErrInvalidProfile，两者
	// errors.Is 都成立），一次全部报出：只改一处又撞上下一处错误的来回是不必要的。Source 不来自 YAML，
	// 字段路径用 Go 的名字。
	var errs []error
	bad := func(name string, value any, why string) {
		e := field.New(ErrSource, name, value, why)
		e.Cause = ErrInvalidProfile
		errs = append(errs, e)
	}
	if s.Body == nil {
		bad("Source.Body", nil, "is nil: it builds each request's JSON body")
	}
	if !strings.HasPrefix(s.Path, "/") {
		bad("Source.Path", s.Path, "must start with '/' (relative to base_url, e.g. /embeddings)")
	}
	switch {
	case p.MultiTurn.On():
		bad("Source", "multi_turn", "multi_turn builds its own conversations; it cannot be combined with a Source")
	case isTrace(p.DatasetType):
		bad("Source", p.DatasetType, "dataset_type "+string(p.DatasetType)+" replays its own requests; it cannot be combined with a Source")
	case p.ModalType == ModalImageText:
		bad("Source", p.ModalType, "modal_type image-text builds its own bodies; put the image in Source.Body instead")
	case p.ControlMethod == ControlSweep:
		bad("Source", p.ControlMethod, "control_method sweep is not supported with a Source")
	}
	return errors.Join(errs...)
}

// BackendName 返回汇总行与逐请求样本里 Backend 列的取值：通常是 Profile.Backend（openai-chat 或
// openai）；设置了 Source 时是它的路径（如 /embeddings）——请求不是 chat/completions，行上不该写
// openai-chat。
func (p Profile) BackendName() string {
	if p.Source != nil {
		return p.Source.Path
	}
	return string(p.Backend)
}
