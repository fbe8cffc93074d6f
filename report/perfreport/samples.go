package perfreport

import (
	"encoding/json"
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
)

// DefaultMaxSamples 是每个组合每项指标保留的逐请求样本上限。超过时按蓄水池
// 抽样（Algorithm R）等概率保留，所以 samples.json 的大小与请求数无关：
// 每个组合最多 3×2048 个整数（约 40 KB），每日档 60 个组合约 2.4 MB。
// 2048 个样本足以支撑 P99（需要 ≥100）且让自助区间的宽度主要由数据决定。
const DefaultMaxSamples = 2048

// Samples 是 samples.json 里一个压测组合（后端 × 控制方式 × 输入 × 输出 × 并发，多轮合并）
// 的逐请求样本。它就是门禁的输入 gate.Samples（别名而不是第二份同字段的结构体：
// 文件格式与门禁输入只有一个定义，不会一边加字段另一边忘了）。
type Samples = gate.Samples

// reservoir 是一个固定容量、确定性种子的蓄水池。
type reservoir struct {
	vals []int64
	seen int64
	cap  int
	rng  *rand.Rand
}

// add 以等概率保留的方式加入 v。
func (r *reservoir) add(v int64) {
	r.seen++
	if len(r.vals) < r.cap {
		r.vals = append(r.vals, v)
		return
	}
	if j := r.rng.Int64N(r.seen); j < int64(r.cap) {
		r.vals[j] = v
	}
}

// comboState 是采样器中一个组合的状态。
type comboState struct {
	ttft, e2e, gap *reservoir
	seen           int64
	lastEnd        time.Time // 本组内最近一次成功完成的时刻
	group          int       // lastEnd 所属的分组序号
}

// SampleCollector 按组合保留有界的成功请求样本（TTFT、E2E、相邻完成间隔），
// 供 RecordSamples 写入产物、性能门禁计算置信区间。预热与被取消的请求不计入，与汇总口径一致。
//
// 它只是一个观察者，不包住别的接收方：Observer 给出只带 OnRecord 的 loadgen.Observer，
// 与 CSV 写入器等别的出口用 loadgen.Tee 并列交给 loadgen.Run——以前它包住下一个接收方
// 并按类型断言转发，漏掉了容量扫描的 EndSweep；并列之后谁也拿不走别人的事件。
// loadgen 串行调用钩子，所以它不加锁；Samples 须在 Run 返回后调用。
type SampleCollector struct {
	backend, ctrl string
	max           int
	combos        map[[3]int]*comboState
	order         [][3]int
}

// NewSampleCollector 返回一个采样器。backend 与 controlMethod 是档位级的取值
// （记录里没有），用于把样本与汇总行的组合对上；max ≤ 0 取 DefaultMaxSamples。
func NewSampleCollector(backend, controlMethod string, max int) *SampleCollector {
	if max <= 0 {
		max = DefaultMaxSamples
	}
	return &SampleCollector{backend: backend, ctrl: controlMethod, max: max, combos: map[[3]int]*comboState{}}
}

// Observer 返回只带 OnRecord 的 loadgen.Observer（用 loadgen.Tee 与别的出口组合）。
func (c *SampleCollector) Observer() *loadgen.Observer {
	return &loadgen.Observer{OnRecord: c.WriteRecord}
}

// WriteRecord 记下成功请求的样本（作为 Observer.OnRecord；从不返回错误）。
func (c *SampleCollector) WriteRecord(r *loadgen.Record) error {
	if !r.Warmup && r.OK && r.ErrorClass != loadgen.ErrClassCanceled {
		key := [3]int{r.Group.InputLength, r.Group.OutputLength, r.Group.Concurrency}
		st := c.combos[key]
		if st == nil {
			h := fnv.New64a()
			_, _ = h.Write([]byte(c.backend + "/" + c.ctrl))
			seed := h.Sum64() ^ uint64(key[0])<<40 ^ uint64(key[1])<<20 ^ uint64(key[2])
			mk := func(stream uint64) *reservoir {
				return &reservoir{cap: c.max, rng: rand.New(rand.NewPCG(seed, stream))}
			}
			st = &comboState{ttft: mk(1), e2e: mk(2), gap: mk(3), group: -1}
			c.combos[key] = st
			c.order = append(c.order, key)
		}
		st.seen++
		st.ttft.add(r.TTFT.Microseconds())
		st.e2e.add(r.E2E.Microseconds())
		end := r.Intended.Add(r.E2E)
		if st.group == r.Group.Index && !st.lastEnd.IsZero() {
			// 记录按完成顺序（近似）到达；只取单调递增的部分，间隔之和恰为首末完成之间的跨度。
			if end.After(st.lastEnd) {
				st.gap.add(end.Sub(st.lastEnd).Microseconds())
				st.lastEnd = end
			} else {
				st.gap.add(0)
			}
		} else {
			st.group, st.lastEnd = r.Group.Index, end
		}
	}
	return nil
}

// Samples 返回各组合的样本（按首次出现的顺序）。
func (c *SampleCollector) Samples() []Samples {
	out := make([]Samples, 0, len(c.order))
	for _, k := range c.order {
		st := c.combos[k]
		out = append(out, Samples{Backend: c.backend, ControlMethod: c.ctrl, InputLength: k[0], OutputLength: k[1], Concurrency: k[2],
			Seen: st.seen, TTFTMicros: append([]int64(nil), st.ttft.vals...), E2EMicros: append([]int64(nil), st.e2e.vals...),
			GapMicros: append([]int64(nil), st.gap.vals...)})
	}
	return out
}

// RecordSamples 追加场景的逐请求样本（通常是 SampleCollector.Samples 的返回值），
// 写入 <scenario>/perf/samples.json。同一组合再次记录时合并（蓄水池容量内按
// 记录顺序截断），分阶段 CI job 重复记录也不会无界增长。
func RecordSamples(run *report.Run, scenario string, sets []Samples) error {
	return run.UpdateSection(scenario, SamplesSection(), func(old json.RawMessage) (any, error) {
		// 从空列表（而不是 nil）开始：一次什么也没记下的运行（例如每个请求都失败）记为 []，不是 null。
		all := []Samples{}
		if old != nil {
			if err := json.Unmarshal(old, &all); err != nil {
				return nil, err
			}
		}
		for _, s := range sets {
			if prev := findExact(all, s); prev != nil {
				prev.Seen += s.Seen
				prev.TTFTMicros = capAppend(prev.TTFTMicros, s.TTFTMicros)
				prev.E2EMicros = capAppend(prev.E2EMicros, s.E2EMicros)
				prev.GapMicros = capAppend(prev.GapMicros, s.GapMicros)
				continue
			}
			all = append(all, s)
		}
		return &all, nil
	})
}

// findExact 返回与 s 组合完全相同的样本集。
func findExact(sets []Samples, s Samples) *Samples {
	for i := range sets {
		p := &sets[i]
		if p.Backend == s.Backend && p.ControlMethod == s.ControlMethod && p.InputLength == s.InputLength &&
			p.OutputLength == s.OutputLength && p.Concurrency == s.Concurrency {
			return p
		}
	}
	return nil
}

// capAppend 追加 b 到 a，总长不超过 DefaultMaxSamples 的两倍（合并多次记录时的上限）。
func capAppend(a, b []int64) []int64 {
	room := 2*DefaultMaxSamples - len(a)
	if room <= 0 {
		return a
	}
	return append(a, b[:min(len(b), room)]...)
}
