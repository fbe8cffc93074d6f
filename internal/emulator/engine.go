package emulator

import "sync/atomic"

// Engine 持有生成所需的只读数据（词表）与无 seed 采样请求的随机计数器。
//
// 并发约定：全部方法并发安全。
type Engine struct {
	Vocab *Vocab
	ctr   atomic.Uint64
}

// NewEngine 构造引擎。
func NewEngine() *Engine { return &Engine{Vocab: NewVocab()} }

// Fresh 返回一个每次调用都不同的值，用作“未给 seed 的采样请求”的随机源；
// 序列由 base（通常为配置的 Seed）决定，因此整个运行仍然可复现。
func (e *Engine) Fresh(base uint64) uint64 { return Mix(base^0x5bd1e995, e.ctr.Add(1)) }
