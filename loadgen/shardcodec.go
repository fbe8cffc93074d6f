package loadgen

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/vllm-cibench/cibench/loadgen/servermetrics"
)

// ErrBadShardResult 表示分片结果无法解码或内容自相矛盾（格式、计数与样本不符等）。
var ErrBadShardResult = errors.New("loadgen: bad shard result")

// GroupStats 是一个分片在一个分组上的原始统计：8 个时长 / token 分布（精确样本或 HDR 快照）、
// 始终精确的计数与 token 之和、首发 / 末完成时刻，以及分组前后的 /metrics 快照。它对外不透明：
// 编码（MarshalJSON）就是分片结果里的传输形式，合并（MergeShardGroups）在本包里完成——分布与
// 直方图的内部表示不出 loadgen，分片的打包、交回与合并编排在 loadgen/shard。
type GroupStats struct{ w groupWire }

// groupWire 是 GroupStats 的 JSON 形式：统计各字段平铺，快照在 before / after 下。
type groupWire struct {
	statsWire
	Before *snapWire `json:"before,omitempty"`
	After  *snapWire `json:"after,omitempty"`
}

// MarshalJSON 把原始统计编码成分片结果里的 JSON 对象。
func (g GroupStats) MarshalJSON() ([]byte, error) { return json.Marshal(g.w) }

// UnmarshalJSON 读回 MarshalJSON 的输出；内容是否自洽（样本数、单位）在合并时检查。
func (g *GroupStats) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &g.w) }

// Requests 返回本分片在该组测量的请求数（发出并计入统计的请求，成功与失败都算，不含预热与被取消的
// 在途请求）：它等于本分片在该组交给 Observer.OnRecord 的非取消记录条数，收集方据此核对交回的逐请求
// 记录流是否完整（shard.ReadOutput）。
func (g GroupStats) Requests() int { return int(g.w.Sent) }

// Window 返回本分片在该组的首个请求发出时刻与最后一个请求完成时刻（没有请求时都为零值）：
// 合并后的 TotalTime 是各分片窗口之并，读者据此核对它不短于任何一个分片自己的窗口。
func (g GroupStats) Window() (firstSent, lastEnd time.Time) {
	return unixTime(g.w.FirstSent), unixTime(g.w.LastEnd)
}

// distWire 是 dist 的编码：精确样本（升序差分 varint，base64）或 HDR 快照
// （hdrhistogram-go 的 V2 压缩编码），外加始终精确的计数、和、极值。
type distWire struct {
	N     int64   `json:"n"`
	Sum   float64 `json:"sum"`
	Min   int64   `json:"min"`
	Max   int64   `json:"max"`
	Unit  int64   `json:"unit"`
	Exact []byte  `json:"exact,omitempty"`
	HDR   string  `json:"hdr,omitempty"`
}

// statsWire 是一个分组全部统计的编码；Dists 的顺序固定为 statsDists 的顺序。
type statsWire struct {
	Dists     [8]distWire `json:"dists"`
	Sent      int64       `json:"sent"`
	OK        int64       `json:"ok"`
	Failed    int64       `json:"failed"`
	Good      int64       `json:"good"`
	PromptTok int64       `json:"prompt_tokens"`
	ComplTok  int64       `json:"completion_tokens"`
	ReasonTok int64       `json:"reasoning_tokens"`
	UsageTok  int64       `json:"usage_token_requests"`
	// FirstSent 与 LastEnd 是墙钟纳秒（Unix），0 表示没有请求。
	FirstSent int64 `json:"first_sent_unix_ns"`
	LastEnd   int64 `json:"last_end_unix_ns"`
}

// statsDists 返回 s 的各分布，顺序即编码顺序。
func statsDists(s *stats) [8]*dist {
	return [8]*dist{s.ttft, s.tpot, s.tpotSec, s.f2s, s.e2e, s.slot, s.compl, s.lag}
}

// encodeStats 把一组的合并统计编码成可传输的形式。
func encodeStats(s *stats) statsWire {
	w := statsWire{Sent: s.sent, OK: s.ok, Failed: s.failed, Good: s.good, PromptTok: s.promptTok,
		ComplTok: s.complTok, ReasonTok: s.reasonTok, UsageTok: s.usageTok}
	if !s.firstSent.IsZero() {
		w.FirstSent = s.firstSent.UnixNano()
	}
	if !s.lastEnd.IsZero() {
		w.LastEnd = s.lastEnd.UnixNano()
	}
	for i, d := range statsDists(s) {
		w.Dists[i] = encodeDist(d)
	}
	return w
}

// decode 还原一个分片的统计：第 k 个分布按 exact[k] 保持精确或转成 HDR，单位必须与合并目标
// want 的相同。
func (w statsWire) decode(exact [8]bool, want [8]*dist) (*stats, error) {
	s := &stats{sent: w.Sent, ok: w.OK, failed: w.Failed, good: w.Good, promptTok: w.PromptTok, complTok: w.ComplTok,
		reasonTok: w.ReasonTok, usageTok: w.UsageTok, firstSent: unixTime(w.FirstSent), lastEnd: unixTime(w.LastEnd)}
	var ds [8]*dist
	for k := range ds {
		d, err := w.Dists[k].decode(exact[k])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", distNames[k], err)
		}
		if d.unit != want[k].unit {
			return nil, fmt.Errorf("%w: %s: unit %d, want %d", ErrBadShardResult, distNames[k], d.unit, want[k].unit)
		}
		ds[k] = d
	}
	s.ttft, s.tpot, s.tpotSec, s.f2s, s.e2e, s.slot, s.compl, s.lag = ds[0], ds[1], ds[2], ds[3], ds[4], ds[5], ds[6], ds[7]
	return s, nil
}

// encodeDist 编码一个分布：精确样本排序后写成差分 varint（第一个值 zigzag），否则写 HDR 快照。
func encodeDist(d *dist) distWire {
	w := distWire{N: d.n, Sum: d.sum, Min: d.min, Max: d.max, Unit: d.unit}
	if d.n == 0 {
		w.Min, w.Max = 0, 0
		return w
	}
	if d.h != nil {
		b, err := d.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
		if err == nil {
			w.HDR = string(b)
		}
		return w
	}
	xs := slices.Clone(d.exact)
	slices.Sort(xs)
	buf := binary.AppendVarint(nil, xs[0])
	for i := 1; i < len(xs); i++ {
		buf = binary.AppendUvarint(buf, uint64(xs[i]-xs[i-1]))
	}
	w.Exact = buf
	return w
}

// decode 还原分布；exact 为 false 时即使分片带了精确样本也转成 HDR（与单进程超出精确样本
// 预算时的做法相同）。样本数、极值与编码的计数不符时报错。
func (w distWire) decode(exact bool) (*dist, error) {
	if w.Unit <= 0 {
		return nil, fmt.Errorf("%w: unit %d", ErrBadShardResult, w.Unit)
	}
	d := newDist(w.Unit, nil)
	if w.N == 0 {
		return d, nil
	}
	if w.N < 0 || w.Min > w.Max {
		return nil, fmt.Errorf("%w: n=%d min=%d max=%d", ErrBadShardResult, w.N, w.Min, w.Max)
	}
	d.n, d.sum, d.min, d.max = w.N, w.Sum, w.Min, w.Max
	switch {
	case w.HDR != "":
		h, err := hdrhistogram.Decode([]byte(w.HDR))
		if err != nil {
			return nil, fmt.Errorf("%w: hdr snapshot: %v", ErrBadShardResult, err)
		}
		if h.TotalCount() != w.N {
			return nil, fmt.Errorf("%w: hdr snapshot holds %d values, n=%d", ErrBadShardResult, h.TotalCount(), w.N)
		}
		d.h = hdrhistogram.New(histLowest, histHighest, histSigFigs)
		d.h.Merge(h)
	case len(w.Exact) > 0:
		xs := make([]int64, 0, min(w.N, exactCap))
		b := w.Exact
		v, k := binary.Varint(b)
		for k > 0 {
			xs = append(xs, v)
			b = b[k:]
			if len(b) == 0 {
				break
			}
			var dv uint64
			dv, k = binary.Uvarint(b)
			if dv > math.MaxInt64/2 {
				k = 0
			}
			v += int64(dv)
		}
		if k <= 0 || int64(len(xs)) != w.N || xs[0] != w.Min || xs[len(xs)-1] != w.Max {
			return nil, fmt.Errorf("%w: exact samples do not match n=%d min=%d max=%d", ErrBadShardResult, w.N, w.Min, w.Max)
		}
		d.exact, d.sorted = xs, true
		if !exact {
			d.spill()
		}
	default:
		return nil, fmt.Errorf("%w: %d values but neither samples nor hdr snapshot", ErrBadShardResult, w.N)
	}
	return d, nil
}

// histWire 与 snapWire 是 /metrics 快照的编码（只含汇总需要的直方图与推测解码计数器）。
type histWire struct {
	Upper []float64 `json:"upper"` // 最后一个 +Inf 编码为 -1（JSON 没有 Inf）
	Cum   []float64 `json:"cum"`
	Sum   float64   `json:"sum"`
	Count float64   `json:"count"`
}

// snapWire 是一次 /metrics 抓取的编码；NaN 计数器编码为 nil。
type snapWire struct {
	Hist   [3]*histWire `json:"hist"`
	Accept *float64     `json:"accept,omitempty"`
	Draft  *float64     `json:"draft,omitempty"`
	// Phase 是请求阶段直方图（servermetrics.PhaseQueue 等）；缓存与抢占计数器、各实例的
	// 快照（Parts，带名字与 PD 角色）随之编码，合并后的行因此也有阶段分解（Summary.Phases）。
	Phase       [servermetrics.NumPhases]*histWire `json:"phase,omitempty"`
	Preemptions *float64                           `json:"preemptions,omitempty"`
	PrefixHits  *float64                           `json:"prefix_hits,omitempty"`
	PrefixQuery *float64                           `json:"prefix_queries,omitempty"`
	Name        string                             `json:"name,omitempty"`
	Role        string                             `json:"role,omitempty"`
	Parts       []*snapWire                        `json:"parts,omitempty"`
	// At 是抓取完成的墙钟纳秒（Unix），0 表示未知。
	At int64 `json:"at_unix_ns,omitempty"`
}

// encodeSnap 编码一次抓取；nil（没有 /metrics）编码为 nil。
func encodeSnap(s *servermetrics.Snapshot) *snapWire {
	if s == nil {
		return nil
	}
	w := &snapWire{Name: s.Name, Role: s.Role}
	for i, h := range s.Hist {
		w.Hist[i] = encodeHist(h)
	}
	for i, h := range s.Phase {
		w.Phase[i] = encodeHist(h)
	}
	num := func(v float64) *float64 {
		if math.IsNaN(v) {
			return nil
		}
		return &v
	}
	w.Accept, w.Draft = num(s.Accept), num(s.Draft)
	w.Preemptions, w.PrefixHits, w.PrefixQuery = num(s.Preemptions), num(s.PrefixHits), num(s.PrefixQueries)
	for _, p := range s.Parts {
		w.Parts = append(w.Parts, encodeSnap(p))
	}
	if !s.At.IsZero() {
		w.At = s.At.UnixNano()
	}
	return w
}

// encodeHist 编码一个直方图；nil 编码为 nil。
func encodeHist(h *servermetrics.Histogram) *histWire {
	if h == nil {
		return nil
	}
	up := slices.Clone(h.Upper)
	for j, u := range up {
		if math.IsInf(u, 1) {
			up[j] = -1
		}
	}
	return &histWire{Upper: up, Cum: slices.Clone(h.Cum), Sum: h.Sum, Count: h.Count}
}

// decode 还原一个直方图；nil 或上界与计数个数不一致时为 nil。
func (h *histWire) decode() *servermetrics.Histogram {
	if h == nil || len(h.Upper) != len(h.Cum) {
		return nil
	}
	up := slices.Clone(h.Upper)
	for j, u := range up {
		if u == -1 {
			up[j] = math.Inf(1)
		}
	}
	return &servermetrics.Histogram{Upper: up, Cum: slices.Clone(h.Cum), Sum: h.Sum, Count: h.Count}
}

// decode 还原抓取快照。
func (w *snapWire) decode() *servermetrics.Snapshot {
	if w == nil {
		return nil
	}
	s := &servermetrics.Snapshot{Accept: math.NaN(), Draft: math.NaN(), Running: math.NaN(), Waiting: math.NaN(), Preemptions: math.NaN(),
		PrefixHits: math.NaN(), PrefixQueries: math.NaN(), Name: w.Name, Role: w.Role}
	for i, h := range w.Hist {
		s.Hist[i] = h.decode()
	}
	for i, h := range w.Phase {
		s.Phase[i] = h.decode()
	}
	for dst, src := range map[*float64]*float64{&s.Accept: w.Accept, &s.Draft: w.Draft, &s.Preemptions: w.Preemptions,
		&s.PrefixHits: w.PrefixHits, &s.PrefixQueries: w.PrefixQuery} {
		if src != nil {
			*dst = *src
		}
	}
	for _, p := range w.Parts {
		if p != nil {
			s.Parts = append(s.Parts, p.decode())
		}
	}
	s.At = unixTime(w.At)
	return s
}

// unixTime 把墙钟纳秒还原为 time.Time；0 表示没有。
func unixTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
