package servermetrics

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"math"
	"strconv"
	"sync"
	"time"
)

// 本文件是服务端缓存真相的读取部分：前缀缓存计数器、KV-cache 占用与组内峰值采样。由此
// 算出的 loadgen.ServerCache（命中率、抢占、峰值）在 loadgen 里组装，那里拥有汇总的类型。

// 服务端缓存真相用到的 vLLM 计数器（v1 的名字在前，v0 的 gpu_ 前缀名在后）。单位是 token：
// queries 是查询前缀缓存的 prompt token 数，hits 是其中命中的。
var (
	metricPrefixHits    = []string{"vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"}
	metricPrefixQueries = []string{"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"}
)

// KVUsage 返回一次抓取的 KV-cache 占用（各实例平均，0..1）；s 为 nil 或没有该指标时为 NaN。
func (s *Snapshot) KVUsage() float64 {
	if s == nil || s.KVN == 0 {
		return math.NaN()
	}
	return s.KVSum / float64(s.KVN)
}

// kvSampleInterval 是组内 KV 占用峰值的采样间隔。
const kvSampleInterval = 200 * time.Millisecond

// Peak 在一个分组期间定时抓取 /metrics，记下 KV-cache 占用的最大值（见 Scraper.StartPeak）。
type Peak struct {
	mu      sync.Mutex
	peak    float64
	waiting float64 // 组内采样到的最大排队数（NaN 为没有）
	stop    context.CancelFunc
	done    chan struct{}
}

// StartPeak 以 before 的 KV 占用为起点，每 kvSampleInterval 抓取一次，记下组内峰值
// （before 没有 KV 指标时不启动：服务端不暴露它，采样只是白白抓取）。采样 goroutine 由
// StartPeak 启动、由 Finish 停止并等待退出：调用方必须调用 Finish（可重复调用）。ctx 结束时
// 采样也停止。
func (s *Scraper) StartPeak(ctx context.Context, before *Snapshot) *Peak {
	ps := &Peak{peak: before.KVUsage(), waiting: math.NaN(), done: make(chan struct{})}
	if before != nil {
		ps.waiting = before.Waiting
	}
	if math.IsNaN(ps.peak) {
		close(ps.done)
		ps.stop = func() {}
		return ps
	}
	ctx, ps.stop = context.WithCancel(ctx)
	go func() {
		defer close(ps.done)
		for sleep(ctx, kvSampleInterval) {
			ps.observe(s.ScrapeGauges(ctx))
		}
	}()
	return ps
}

// observe 把一次抓取计入峰值（s 为 nil 或没有 KV 指标时不计）。
func (ps *Peak) observe(s *Snapshot) {
	v := s.KVUsage()
	if math.IsNaN(v) {
		return
	}
	ps.mu.Lock()
	if w := s.Waiting; !math.IsNaN(w) && (math.IsNaN(ps.waiting) || w > ps.waiting) {
		ps.waiting = w
	}
	if math.IsNaN(ps.peak) || v > ps.peak {
		ps.peak = v
	}
	ps.mu.Unlock()
}

// Finish 停止采样并等待采样 goroutine 退出，计入组后的抓取 after（可为 nil），返回峰值
// （没有时为 NaN）。可重复调用：提前返回的路径先以 nil 调用回收 goroutine 也无妨。
func (ps *Peak) Finish(after *Snapshot) float64 {
	ps.stop()
	<-ps.done
	ps.observe(after)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.peak
}

// Waiting 返回组内采样到的 vllm:num_requests_waiting 最大值（各实例之和）；没有时为 NaN。
// 在 Finish 之后调用才包括组后的抓取。
func (ps *Peak) Waiting() float64 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.waiting
}

// ScrapeGauges 只读各实例的 KV 占用与排队数（组内峰值采样用）：逐行扫描 /metrics，不做完整的
// expfmt 解析。真实的 vLLM /metrics 有几百行直方图桶，峰值采样每 200 ms 一次、持续整个分组，
// 完整解析的分配与 CPU 随运行时长增长；这里每行只比较前缀，不为不关心的行分配。返回的快照
// 只有 KVSum、KVN、Waiting 有效（其余为零值或 NaN）；任一实例失败返回 nil。
func (s *Scraper) ScrapeGauges(ctx context.Context) *Snapshot {
	out := &Snapshot{Waiting: math.NaN(), Running: math.NaN(), Preemptions: math.NaN(), KVSum: math.NaN(),
		Accept: math.NaN(), Draft: math.NaN(), PrefixHits: math.NaN(), PrefixQueries: math.NaN()}
	for _, u := range s.urls {
		kv, kvN, wait, waitN, err := s.gauges(ctx, u)
		if err != nil {
			return nil
		}
		if kvN > 0 {
			if out.KVN == 0 {
				out.KVSum = 0
			}
			out.KVSum += kv / float64(kvN)
			out.KVN++
		}
		if waitN > 0 {
			if math.IsNaN(out.Waiting) {
				out.Waiting = 0
			}
			out.Waiting += wait
		}
	}
	out.At = time.Now()
	return out
}

// gauges 抓取一个实例，返回 KV 占用各序列之和与序列数、排队数各序列之和与序列数（名字按
// metricKVUsage、metricWaiting 的顺序取第一个出现的）。
func (s *Scraper) gauges(ctx context.Context, url string) (kv float64, kvN int, wait float64, waitN int, err error) {
	err = s.fetch(ctx, url, func(r io.Reader) error {
		kv, kvN, wait, waitN, err = scanGauges(r)
		return err
	})
	if err != nil {
		return 0, 0, 0, 0, err
	}
	return kv, kvN, wait, waitN, nil
}

// scanGauges 逐行扫描 /metrics 文本，返回 KV 占用与排队数各序列之和与序列数。
func scanGauges(r io.Reader) (kv float64, kvN int, wait float64, waitN int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	kvIdx, waitIdx := len(metricKVUsage), len(metricWaiting) // 已采用的名字的下标（越小越优先）
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if i, v, ok := sampleOf(line, metricKVUsage); ok && i <= kvIdx {
			if i < kvIdx {
				kv, kvN, kvIdx = 0, 0, i
			}
			kv += v
			kvN++
		}
		if i, v, ok := sampleOf(line, metricWaiting); ok && i <= waitIdx {
			if i < waitIdx {
				wait, waitN, waitIdx = 0, 0, i
			}
			wait += v
			waitN++
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, 0, 0, err
	}
	return kv, kvN, wait, waitN, nil
}

// sampleOf 判断一行样本是否属于 names 中的某个指标（名字后紧跟 '{' 或空格），返回名字的下标与值。
func sampleOf(line []byte, names []string) (int, float64, bool) {
	for i, n := range names {
		if len(line) <= len(n) || string(line[:len(n)]) != n {
			continue
		}
		rest := line[len(n):]
		switch rest[0] {
		case '{':
			j := bytes.LastIndexByte(rest, '}')
			if j < 0 {
				return 0, 0, false
			}
			rest = rest[j+1:]
		case ' ', '\t':
		default:
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			return 0, 0, false
		}
		v, err := strconv.ParseFloat(string(f[0]), 64)
		if err != nil || math.IsNaN(v) {
			return 0, 0, false
		}
		return i, v, true
	}
	return 0, 0, false
}
