package functional

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// unresponsiveStrikes 是判定服务无响应所需的接连“没有回答”的用例数：单个慢用例（或两个）不会触发。
const unresponsiveStrikes = 3

// liveness 在一次 Runner.Run 中判断被测服务是否已经停止回答。
//
// 规则：一个用例以超时或传输故障结束，且从它开始到结束这段时间里没有任何用例收到过服务端的一个字节
// （响应头或响应体），记一次“没有回答”；任何用例收到字节，或以别的结局结束（通过、断言失败、4xx……），
// 计数清零。接连 unresponsiveStrikes 次“没有回答”即判定无响应：其余用例不再运行，进行中的被取消，
// 都以 ClassUnresponsive 失败，原因写明从哪个用例起。一个健康但很慢的服务还在吐字节（流式的长生成），
// 不会被误判；一个只有一个用例超时的服务也不会。
//
// 所有方法可并发调用。
type liveness struct {
	mu        sync.Mutex
	now       func() time.Time
	lastHeard time.Time
	strikes   []string
	reason    string
}

// newLiveness 返回用时钟 now 的判定器。
func newLiveness(now func() time.Time) *liveness { return &liveness{now: now} }

// heard 记下收到了服务端的字节。
func (l *liveness) heard() {
	t := l.now()
	l.mu.Lock()
	if t.After(l.lastHeard) {
		l.lastHeard = t
	}
	l.mu.Unlock()
}

// ended 记下用例 id（开始于 started）以 class 结束；返回值为 true 表示这次结束使服务被判定为无响应
// （只在判定的那一刻返回 true 一次）。
func (l *liveness) ended(id string, started time.Time, class Class) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reason != "" {
		return false
	}
	silent := (class == ClassTimeout || class == ClassTransport) && !l.lastHeard.After(started)
	if !silent {
		l.strikes = l.strikes[:0]
		return false
	}
	l.strikes = append(l.strikes, id)
	if len(l.strikes) < unresponsiveStrikes {
		return false
	}
	l.reason = fmt.Sprintf("server unresponsive since case %s (%d cases in a row ended in a timeout or transport fault with no byte from the server: %s)",
		l.strikes[0], len(l.strikes), strings.Join(l.strikes, ", "))
	return true
}

// unresponsive 返回判定的原因；还没有判定时为空。
func (l *liveness) unresponsive() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reason
}
