package emulator

import (
	"context"
	"time"

	emu "github.com/vllm-cibench/cibench/internal/emulator"
)

// emuPerfRun 是一个请求在性能模型（Config.perfModel）下的进度。模型关闭时保持零值，
// 快路径不读它。
type emuPerfRun struct {
	hashes  []uint64         // 提示的链式块哈希（只在 EnablePrefixCaching 时计算）
	hasher  *emu.TokenHasher // 算出 hashes 的哈希器；结束时接着喂生成的 token，登记解码填满的块
	kvTok   int              // 当前持有 KV 的 token 数（提示 + 已算过 KV 的生成 token）
	seq     *emu.Seq         // 在 Server.perf 中的请求
	cached  int              // 首次调度时前缀命中的 token 数（usage 的 cached_tokens）
	gen     int              // 已发出的 token 数（KV 记账：被抢占后要连同它们一起重算）
	prev    time.Time        // 上一步的计划时刻；下一步在它之后 ITL × 批倍数
	resume  time.Time        // 被抢占、重新调度后，下一步（重算完成）的计划时刻
	firstAt time.Time        // 首 token 实际的计划时刻（抢占可能把它推迟到 perfAdmit 算出的时刻之后）
	remote  bool             // decode 角色上的远程 prefill 请求：首 token 时间按 KV 传输计
	prefill bool             // prefill 角色上的 do_remote_decode 请求：只做 prefill
}

// emuWaitResult 是 untilOr 的结果。
type emuWaitResult uint8

const (
	emuWaitOK emuWaitResult = iota
	emuWaitCancelled
	emuWaitPreempted
)

// untilOr 等到 deadline，同时监听 ctx 与抢占信号 pre。
func (wt *emuWaiter) untilOr(ctx context.Context, deadline time.Time, pre <-chan struct{}) emuWaitResult {
	select {
	case <-pre:
		return emuWaitPreempted
	default:
	}
	d := time.Until(deadline)
	if d <= 0 {
		if ctx.Err() != nil {
			return emuWaitCancelled
		}
		return emuWaitOK
	}
	if wt.t == nil {
		wt.t = time.NewTimer(d)
	} else {
		wt.t.Reset(d)
	}
	select {
	case <-ctx.Done():
		wt.t.Stop()
		return emuWaitCancelled
	case <-pre:
		wt.t.Stop()
		return emuWaitPreempted
	case <-wt.t.C:
		return emuWaitOK
	}
}

// batchScaled 返回按当前运行数放大后的时长（BatchFactor 关闭时原样返回）。
func (e *Server) batchScaled(cfg *Config, d time.Duration) time.Duration {
	if cfg.BatchFactor <= 1 || d == 0 {
		return d
	}
	return time.Duration(float64(d) * emu.BatchScale(cfg.BatchFactor, e.perf.Running(), cfg.MaxNumSeqs))
}

// prefillTime 返回一次（重新）调度后到下一个 token 的时长：混合与 prefill 角色为
// TTFT + 需计算的 token × PrefillPerToken；decode 角色上的远程 prefill 请求首次调度时
// 为 TTFT + 本地未命中的 token × KVTransferPerToken（KV 从 prefill 实例拉取，不在本地
// 计算）；两者都乘以批倍数。被抢占后重新调度的请求一律在本地重算（recompute）。
func (e *Server) prefillTime(cfg *Config, run *emuRun, compute int, first bool) time.Duration {
	per := run.prefillPer
	if run.perf.remote && first {
		per = cfg.KVTransferPerToken
	}
	return e.batchScaled(cfg, run.ttft+time.Duration(compute)*per)
}

// perfAdmit 在性能模型下排队、调度 run，返回首 token 的计划时刻；ctx 结束（客户端
// 断开）时返回 false，调用方不再写响应。成功时调用方必须在结束后 e.perf.Release。
func (e *Server) perfAdmit(ctx context.Context, run *emuRun, queued time.Time) (time.Time, bool) {
	pr := &run.perf
	pr.seq = emu.NewSeq(pr.hashes, run.promptTokens)
	if err := e.perf.Admit(ctx, pr.seq); err != nil {
		e.perf.Release(pr.seq)
		return time.Time{}, false
	}
	started := time.Now()
	run.scheduled = started
	pr.cached = e.perf.Cached(pr.seq)
	// 与快路径相同：模拟器自己读取、解析、规划请求的时间从预算中扣除，而不是叠加。
	d := e.prefillTime(run.cfg, run, e.perf.Compute(pr.seq), true)
	first := started.Add(max(0, d-queued.Sub(run.arrival)))
	pr.prev = first
	return first, true
}

// perfStep 等到第 j 步（每个 choice 一个 chunk）的时刻：第 0 步是首 token；之后每步先为
// 新 token 分配 KV 槽位（可能触发抢占），再等 ITL × 批倍数。本请求被抢占时（自己分配
// 失败，或等待期间被别人的分配挤掉），重新排队等待调度，调度后按需计算的 token（提示 +
// 已生成 − 命中）重算，重算完成的时刻产出这一步。ctx 结束时返回 false。
func (e *Server) perfStep(ctx context.Context, wt *emuWaiter, run *emuRun, j int, first time.Time) bool {
	cfg := run.cfg
	pr := &run.perf
	for {
		target := pr.resume
		preempted := false
		if target.IsZero() {
			switch {
			case j == 0:
				target = first
			case !e.perf.Grow(pr.seq, run.promptTokens+pr.gen):
				preempted = true
				pr.kvTok = 0
			default:
				target = pr.prev.Add(e.batchScaled(cfg, run.itl))
			}
		}
		if !preempted {
			switch wt.untilOr(ctx, target, e.perf.Preempted(pr.seq)) {
			case emuWaitOK:
				pr.prev, pr.resume = target, time.Time{}
				pr.kvTok = run.promptTokens + pr.gen
				if j == 0 {
					pr.firstAt = target
				}
				return true
			case emuWaitCancelled:
				return false
			}
		}
		if e.perf.Admit(ctx, pr.seq) != nil {
			return false
		}
		pr.resume = time.Now().Add(e.prefillTime(cfg, run, e.perf.Compute(pr.seq), false))
	}
}

// commitGenerated 在请求成功结束时把解码填满的块登记进前缀缓存：接着提示的哈希链喂入
// 第一个 choice 生成的 token（推理在前、正文在后，与 vLLM 的 token 顺序相同），只登记
// KV 已经算出的部分（最后一步发出的 token 没有 KV）。多轮对话的下一轮提示以
// “上一轮提示 + 上一轮回答”开头，于是像在 vLLM 上一样命中到回答为止。
func (e *Server) commitGenerated(run *emuRun) {
	pr := &run.perf
	if pr.hasher == nil || pr.seq == nil || len(run.choices) == 0 || pr.kvTok <= run.promptTokens {
		return
	}
	c := run.choices[0]
	left := pr.kvTok - run.promptTokens
	for _, pieces := range [][]string{c.reasoning, c.content} {
		for _, piece := range pieces {
			if left == 0 {
				break
			}
			pr.hasher.Token(emu.StringHash(piece))
			left--
		}
	}
	e.perf.CommitGenerated(pr.seq, pr.hasher.Hashes)
}

// stepTokens 返回第 j 步各 choice 发出的 token 数中的最大值：n > 1 的请求按一条序列
// 记 KV（各 choice 共享提示块，生成部分按最长的 choice 计），见 docs/emulator.md。
func stepTokens(states []emuStreamState, j int) int {
	n := 0
	for i := range states {
		if j < len(states[i].ds) {
			n = max(n, states[i].ds[j].ntok)
		}
	}
	return n
}
