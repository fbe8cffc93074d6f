// Package retry 是 functional、metrics（推送）与 accuracy 共用的重试循环与退避，
// 也定义三处共同的 Retries 语义：
//
//   - Retries == 0：取该包的默认次数（functional 2、metrics 推送 2、accuracy 3）；
//   - Retries < 0：不重试（只尝试一次）；
//   - Retries == n > 0：失败后至多再尝试 n 次。
//
// 于是同一个 "retries: 0" 在每个包里意思相同（"用默认"），零值配置总是安全的默认值。
package retry

import (
	"context"
	"math"
	"time"
)

// Count 按包文档的语义把用户给的 n 规范化为额外尝试次数：0 取 def，负数为 0。
func Count(n, def int) int {
	switch {
	case n == 0:
		return max(def, 0)
	case n < 0:
		return 0
	}
	return n
}

// Policy 是一次重试循环的次数与退避。
type Policy struct {
	// Retries 是失败后的额外尝试次数（已经过 Count 规范化；负数按 0 处理）。
	Retries int
	// Backoff 是第一次重试前的等待。
	Backoff time.Duration
	// Linear 为 true 时第 k 次重试前等待 k·Backoff（functional 的行为）；
	// 否则每次翻倍：Backoff、2·Backoff、4·Backoff……（推送与 simple-evals 采样器的行为）。
	Linear bool
}

// Delay 返回第 k 次重试（k 从 1 开始）前的等待。
func (p Policy) Delay(k int) time.Duration {
	if k < 1 || p.Backoff <= 0 {
		return 0
	}
	if p.Linear {
		return p.Backoff * time.Duration(k)
	}
	d := p.Backoff
	for i := 1; i < k; i++ {
		if d >= math.MaxInt64/2 {
			return d // 防止翻倍溢出成负数；这么长的等待早已被 ctx 截断
		}
		d *= 2
	}
	return d
}

// Verdict 是一次尝试的结论，由 Stop、Again、After 构造。
type Verdict struct {
	again bool
	after time.Duration
	fixed bool
}

// Stop 表示不再尝试：成功，或失败但不值得重试。
var Stop = Verdict{}

// Again 表示这次失败可以重试，等待按 Policy 的退避。
func Again() Verdict { return Verdict{again: true} }

// After 表示这次失败可以重试，等待 d 而不是 Policy 的退避（例如 429 的 Retry-After，可以为 0）。
func After(d time.Duration) Verdict { return Verdict{again: true, after: max(d, 0), fixed: true} }

// Do 调用 op 直到它返回 Stop、次数用尽（1+Retries 次）或 ctx 在等待中结束。
// attempt 从 0 开始；last 为 true 表示这是最后一次机会（它的 Again 不会再被重试），
// op 据此决定是否把失败的响应留给调用方。结果经 op 的闭包带出。
// 返回值 n 是 op 被调用的次数；只有 ctx 在两次尝试之间的等待中结束时 err 才非 nil
// （为 ctx.Err()），尝试本身的错误由 op 自己记录。
func Do(ctx context.Context, p Policy, op func(attempt int, last bool) Verdict) (n int, err error) {
	retries := max(p.Retries, 0)
	for attempt := 0; ; attempt++ {
		v := op(attempt, attempt >= retries)
		n++
		if !v.again || attempt >= retries {
			return n, nil
		}
		wait := p.Delay(attempt + 1)
		if v.fixed {
			wait = v.after
		}
		if wait <= 0 {
			if err := ctx.Err(); err != nil {
				return n, err
			}
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return n, ctx.Err()
		case <-t.C:
		}
	}
}
