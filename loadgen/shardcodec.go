package loadgen

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/tidwall/gjson"

	"github.com/vllm-cibench/cibench/loadgen/servermetrics"
)

// ErrBadShardResult 表示分片结果无法解码或内容自相矛盾（格式、计数与样本不符等）。
var ErrBadShardResult = errors.New("loadgen: bad shard result")

// MaxShardResultBytes 是一个分片结果（一行 JSON）的字节上限：8 个指标各 exactCap 个精确样本
// 按差分变长编码远小于它；上限让一个坏掉的 Pod 日志不能耗尽合并方的内存。
const MaxShardResultBytes = 256 << 20

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
	// At 是抓取完成的墙钟纳秒（Unix），0 表示未知。
	At int64 `json:"at_unix_ns,omitempty"`
}

// encodeSnap 编码一次抓取；nil（没有 /metrics）编码为 nil。
func encodeSnap(s *servermetrics.Snapshot) *snapWire {
	if s == nil {
		return nil
	}
	w := &snapWire{}
	for i, h := range s.Hist {
		if h == nil {
			continue
		}
		up := slices.Clone(h.Upper)
		for j, u := range up {
			if math.IsInf(u, 1) {
				up[j] = -1
			}
		}
		w.Hist[i] = &histWire{Upper: up, Cum: slices.Clone(h.Cum), Sum: h.Sum, Count: h.Count}
	}
	num := func(v float64) *float64 {
		if math.IsNaN(v) {
			return nil
		}
		return &v
	}
	w.Accept, w.Draft = num(s.Accept), num(s.Draft)
	if !s.At.IsZero() {
		w.At = s.At.UnixNano()
	}
	return w
}

// decode 还原抓取快照。
func (w *snapWire) decode() *servermetrics.Snapshot {
	if w == nil {
		return nil
	}
	s := &servermetrics.Snapshot{Accept: math.NaN(), Draft: math.NaN(), Running: math.NaN(), Waiting: math.NaN(), Preemptions: math.NaN()}
	for i, h := range w.Hist {
		if h == nil || len(h.Upper) != len(h.Cum) {
			continue
		}
		up := slices.Clone(h.Upper)
		for j, u := range up {
			if u == -1 {
				up[j] = math.Inf(1)
			}
		}
		s.Hist[i] = &servermetrics.Histogram{Upper: up, Cum: slices.Clone(h.Cum), Sum: h.Sum, Count: h.Count}
	}
	if w.Accept != nil {
		s.Accept = *w.Accept
	}
	if w.Draft != nil {
		s.Draft = *w.Draft
	}
	s.At = unixTime(w.At)
	return s
}

// WriteShardResult 把分片结果写成一行 JSON（以换行结尾），适合作为 Pod 日志的最后一行。
func WriteShardResult(w io.Writer, res *ShardResult) error {
	b, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("loadgen: encode shard result: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("loadgen: write shard result: %w", err)
	}
	return nil
}

// ReadShardResult 从 r 中读出最后一个分片结果行（以 {"format":"cibench.shard/v1" 开头的行），
// 前面的日志行被忽略；r 超过 MaxShardResultBytes 或没有结果行时报错。
func ReadShardResult(r io.Reader) (*ShardResult, error) { return ReadShardResultFor(r, -1) }

// ReadShardResultFor 与 ReadShardResult 相同，但只取 index 字段等于 index 的结果行（index<0 时不限）：
// 收集方知道每个 Pod 是第几片，别的分片的结果行（例如共享的日志文件）不会被误认。
func ReadShardResultFor(r io.Reader, index int) (*ShardResult, error) {
	return readShardResult(r, index, nil, false)
}

// ReadShardResultOf 与 ReadShardResultFor 相同，另外只取限定分组（ShardResult.Only，即 Shard.Groups）
// 恰为 groups 的结果行：每组一个 Job 时，第 k 个 Job 的 Pod 交回的必须是第 k 组的结果。
func ReadShardResultOf(r io.Reader, index int, groups []int) (*ShardResult, error) {
	return readShardResult(r, index, groups, true)
}

// readShardResult 取最后一个符合条件的结果行：index ≥ 0 时 index 字段相等，byGroups 时 only 字段等于 groups。
func readShardResult(r io.Reader, index int, groups []int, byGroups bool) (*ShardResult, error) {
	sc := bufio.NewScanner(io.LimitReader(r, MaxShardResultBytes+1))
	sc.Buffer(make([]byte, 64<<10), MaxShardResultBytes)
	var last []byte
	prefix := []byte(`{"format":"` + ShardResultFormat + `"`)
	match := func(line []byte) bool {
		if len(line) < len(prefix) || string(line[:len(prefix)]) != string(prefix) {
			return false
		}
		if index >= 0 && gjson.GetBytes(line, "index").Int() != int64(index) {
			return false
		}
		if !byGroups {
			return true
		}
		only := gjson.GetBytes(line, "only").Array()
		if len(only) != len(groups) {
			return false
		}
		for i, g := range only {
			if g.Int() != int64(groups[i]) {
				return false
			}
		}
		return true
	}
	for sc.Scan() {
		if line := sc.Bytes(); match(line) {
			last = append(last[:0], line...)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: read: %v", ErrBadShardResult, err)
	}
	if last == nil {
		if byGroups {
			return nil, fmt.Errorf("%w: no %s line (shard %d, groups %v) in the output", ErrBadShardResult, ShardResultFormat, index, groups)
		}
		return nil, fmt.Errorf("%w: no %s line (shard %d) in the output", ErrBadShardResult, ShardResultFormat, index)
	}
	var res ShardResult
	if err := json.Unmarshal(last, &res); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadShardResult, err)
	}
	return &res, nil
}

// unixTime 把墙钟纳秒还原为 time.Time；0 表示没有。
func unixTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
