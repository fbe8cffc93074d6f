package dataset

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vllm-cibench/cibench/internal/tokenize"
)

// TraceRequest 是轨迹中的一个请求（mooncake_trace 的一行 JSONL，或 azure_trace 的一行 CSV）。
type TraceRequest struct {
	// At 是到达时刻，相对轨迹的时间零点（Mooncake 的 timestamp 毫秒；Azure 为相对第一行的时间）。
	At time.Duration
	// InputLength / OutputLength 是输入、输出 token 数（有 Text 时 InputLength 取 Text 的计数）。
	InputLength  int
	OutputLength int
	// HashIDs 是 Mooncake 的块哈希：相同的 id 生成相同的块文本，所以 id 序列的公共前缀就是
	// prompt 的公共前缀。为空时 prompt 是这一行独有的随机文本。
	HashIDs []int64
	// SessionID 非空时作为 X-Session-ID 请求头发送（Mooncake 的 session_id）。
	SessionID string
	// Text 非空时原样作为 prompt（Mooncake 的 text_input），不按 hash_ids 生成。
	Text string
	// Source 与 Line 指出这一行的出处（文件名与 1 起的行号），用于错误信息。
	Source string
	Line   int
}

// maxTraceLine 是轨迹文件单行的字节上限（text_input 可以很长）。
const maxTraceLine = 64 << 20

// mooncakeRow 是 Mooncake / AIPerf 轨迹的一行。timestamp 与 delay 是毫秒（可带小数）；
// session_id 在不同生成器里是字符串或数字，两种都收。
type mooncakeRow struct {
	Timestamp    *float64        `json:"timestamp"`
	InputLength  int             `json:"input_length"`
	OutputLength int             `json:"output_length"`
	HashIDs      []int64         `json:"hash_ids"`
	SessionID    json.RawMessage `json:"session_id"`
	Delay        *float64        `json:"delay"`
	TextInput    string          `json:"text_input"`
}

// ReadMooncakeTrace 读取 Mooncake 轨迹（AIPerf 的 mooncake_trace：每行一个 JSON 对象，字段
// timestamp 毫秒、input_length、output_length、hash_ids，可选 session_id、delay、text_input）。
// name 是文件名（只用于错误信息），blockSize 是 hash_id 块大小：每行的最后一块
// input_length − (n−1)·blockSize 必须在 (0, blockSize] 内，否则报错并指出文件与行号。
//
// 没有 timestamp 的行：若同一 session 已有前一行，到达时刻是前一行的时刻加 delay，否则是
// 0 加 delay（AIPerf 在前一轮完成后才计 delay；这里按时刻表开环发送，见 docs/loadgen.md）。
// 结果按到达时刻稳定排序。
func ReadMooncakeTrace(r io.Reader, name string, blockSize int) ([]TraceRequest, error) {
	if blockSize < 1 {
		return nil, fmt.Errorf("dataset: read trace %s: block size %d must be >= 1", name, blockSize)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxTraceLine)
	var out []TraceRequest
	lastAt := map[string]time.Duration{}
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if len(out) >= MaxTraceRequests {
			return nil, fmt.Errorf("dataset: read trace %s: more than %d requests", name, MaxTraceRequests)
		}
		var row mooncakeRow
		if err := json.Unmarshal(b, &row); err != nil {
			return nil, fmt.Errorf("dataset: read trace %s:%d: %w", name, line, err)
		}
		tr := TraceRequest{InputLength: row.InputLength, OutputLength: row.OutputLength, HashIDs: row.HashIDs,
			Text: row.TextInput, Source: name, Line: line}
		if len(row.SessionID) > 0 && string(row.SessionID) != "null" {
			var s string
			if json.Unmarshal(row.SessionID, &s) != nil {
				s = string(row.SessionID) // 数字形式的 session_id
			}
			if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) || len(s) > 1024 {
				return nil, fmt.Errorf("dataset: read trace %s:%d: session_id %q is not a valid header value (control characters or longer than 1024 bytes)", name, line, validUTF8Prefix(s, 64))
			}
			tr.SessionID = s
		}
		if tr.Text != "" {
			tr.InputLength = tokenize.Count(tr.Text)
		}
		ms, err := mooncakeTime(row, lastAt[tr.SessionID], tr.SessionID != "" && hasKey(lastAt, tr.SessionID))
		if err != nil {
			return nil, fmt.Errorf("dataset: read trace %s:%d: %w", name, line, err)
		}
		tr.At = ms
		if tr.SessionID != "" {
			lastAt[tr.SessionID] = tr.At
		}
		switch {
		case tr.InputLength < 1 || tr.InputLength > MaxTokens:
			return nil, fmt.Errorf("dataset: read trace %s:%d: input_length %d must be in [1, %d]", name, line, tr.InputLength, MaxTokens)
		case tr.OutputLength < 1 || tr.OutputLength > MaxTokens:
			return nil, fmt.Errorf("dataset: read trace %s:%d: output_length %d must be in [1, %d]", name, line, tr.OutputLength, MaxTokens)
		}
		if tr.Text == "" {
			if err := tr.CheckBlocks(blockSize); err != nil {
				return nil, fmt.Errorf("dataset: read trace %w", err)
			}
		}
		out = append(out, tr)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("dataset: read trace %s: line %d: %w", name, line+1, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("dataset: read trace %s: no requests", name)
	}
	slices.SortStableFunc(out, func(a, b TraceRequest) int { return int(a.At - b.At) })
	return out, nil
}

// maxTraceMillis 是轨迹时刻与 delay 的上限（毫秒）：1000 天，远超任何真实轨迹，只挡住打错的数。
const maxTraceMillis = float64(1000 * 24 * time.Hour / time.Millisecond)

// hasKey 报告 m 中是否有 k。
func hasKey(m map[string]time.Duration, k string) bool { _, ok := m[k]; return ok }

// mooncakeTime 求一行的到达时刻：有 timestamp 时取它，否则取同一 session 前一行（prev，
// hasPrev 为 true 时）或 0，再加 delay。时刻与 delay 都是非负的有限毫秒数。
func mooncakeTime(row mooncakeRow, prev time.Duration, hasPrev bool) (time.Duration, error) {
	msDur := func(field string, v float64) (time.Duration, error) {
		if !finite(v) || v < 0 || v > maxTraceMillis {
			return 0, fmt.Errorf("%s %v must be a non-negative number of milliseconds", field, v)
		}
		return time.Duration(math.Round(v * float64(time.Millisecond))), nil
	}
	if row.Timestamp != nil {
		return msDur("timestamp", *row.Timestamp)
	}
	at := time.Duration(0)
	if hasPrev {
		at = prev
	}
	if row.Delay != nil {
		d, err := msDur("delay", *row.Delay)
		if err != nil {
			return 0, err
		}
		at += d
	}
	return at, nil
}

// CheckBlocks 检查 hash_ids 与 input_length 相容：n 个块时最后一块
// input_length − (n−1)·blockSize 在 (0, blockSize] 内。没有 hash_ids 的行不受约束。
func (tr TraceRequest) CheckBlocks(blockSize int) error {
	n := len(tr.HashIDs)
	if n == 0 || tr.Text != "" {
		return nil
	}
	last := tr.InputLength - (n-1)*blockSize
	if last <= 0 || last > blockSize {
		return fmt.Errorf("%s:%d: input_length %d with %d hash_ids leaves a last block of %d tokens at block size %d, want (0, %d] (input_length must be in [%d, %d])",
			tr.Source, tr.Line, tr.InputLength, n, last, blockSize, blockSize, (n-1)*blockSize+1, n*blockSize)
	}
	return nil
}

// azureTimeLayouts 是 Azure 轨迹 TIMESTAMP 列的格式（2023 年的文件带 7 位小数，2024 年的带时区）。
var azureTimeLayouts = []string{"2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05.999999999-07:00", time.RFC3339Nano}

// ReadAzureTrace 读取 Azure LLM 推理轨迹（AzurePublicDataset 的 AzureLLMInferenceTrace_*.csv：
// 表头 TIMESTAMP, ContextTokens, GeneratedTokens，列序任意）。到达时刻是相对最早一行的时间。
// GeneratedTokens 为 0 的行（轨迹里有少量）按 1 个输出 token 发送：服务端不接受 max_tokens 0。
// 坏行报错并指出文件与行号。
func ReadAzureTrace(r io.Reader, name string) ([]TraceRequest, error) {
	cr := csv.NewReader(bufio.NewReaderSize(r, 64<<10))
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("dataset: read trace %s: header: %w", name, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))] = i
	}
	ti, ok1 := col["timestamp"]
	ci, ok2 := col["contexttokens"]
	gi, ok3 := col["generatedtokens"]
	if !ok1 || !ok2 || !ok3 {
		return nil, fmt.Errorf("dataset: read trace %s:1: header %q lacks TIMESTAMP, ContextTokens or GeneratedTokens", name, strings.Join(head, ","))
	}
	var out []TraceRequest
	var times []time.Time
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			return nil, fmt.Errorf("dataset: read trace %s: %w", name, err)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(out) >= MaxTraceRequests {
			return nil, fmt.Errorf("dataset: read trace %s: more than %d requests", name, MaxTraceRequests)
		}
		if len(rec) <= max(ti, ci, gi) {
			return nil, fmt.Errorf("dataset: read trace %s:%d: %d columns, want %d", name, line, len(rec), len(head))
		}
		ts, err := parseAzureTime(strings.TrimSpace(rec[ti]))
		if err != nil {
			return nil, fmt.Errorf("dataset: read trace %s:%d: TIMESTAMP %q: %w", name, line, rec[ti], err)
		}
		in, err1 := strconv.Atoi(strings.TrimSpace(rec[ci]))
		gen, err2 := strconv.Atoi(strings.TrimSpace(rec[gi]))
		switch {
		case err1 != nil || in < 1 || in > MaxTokens:
			return nil, fmt.Errorf("dataset: read trace %s:%d: ContextTokens %q must be an integer in [1, %d]", name, line, rec[ci], MaxTokens)
		case err2 != nil || gen < 0 || gen > MaxTokens:
			return nil, fmt.Errorf("dataset: read trace %s:%d: GeneratedTokens %q must be an integer in [0, %d]", name, line, rec[gi], MaxTokens)
		}
		times = append(times, ts)
		out = append(out, TraceRequest{InputLength: in, OutputLength: max(gen, 1), Source: name, Line: line})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("dataset: read trace %s: no requests", name)
	}
	t0 := slices.MinFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	for i := range out {
		out[i].At = times[i].Sub(t0)
	}
	slices.SortStableFunc(out, func(a, b TraceRequest) int { return int(a.At - b.At) })
	return out, nil
}

// parseAzureTime 按 azureTimeLayouts 依次尝试解析时间。
func parseAzureTime(s string) (time.Time, error) {
	var err error
	for _, l := range azureTimeLayouts {
		var t time.Time
		if t, err = time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, err
}

// Window 返回到达时刻落在 [StartOffset, EndOffset) 内的请求（EndOffset 为 0 表示到结尾）。
// reqs 已按时刻排序，结果是 reqs 的子切片。
func Window(reqs []TraceRequest, c TraceConfig) []TraceRequest {
	lo, _ := slices.BinarySearchFunc(reqs, c.StartOffset, func(tr TraceRequest, t time.Duration) int { return int(tr.At - t) })
	hi := len(reqs)
	if c.EndOffset > 0 {
		hi, _ = slices.BinarySearchFunc(reqs, c.EndOffset, func(tr TraceRequest, t time.Duration) int { return int(tr.At - t) })
	}
	if lo >= hi {
		return nil
	}
	return reqs[lo:hi]
}

// traceSchedule 把窗口内请求的轨迹时刻换成回放时刻（相对回放开始）：减去 StartOffset，
// 间隔乘 TimeScale，再把每个间隔压到 MaxIdle（0 = 不压）。
func traceSchedule(win []TraceRequest, c TraceConfig) []time.Duration {
	out := make([]time.Duration, len(win))
	prevTrace, at := c.StartOffset, time.Duration(0)
	for i, tr := range win {
		gap := time.Duration(float64(tr.At-prevTrace) * c.TimeScale)
		if c.MaxIdle > 0 && gap > c.MaxIdle {
			gap = c.MaxIdle
		}
		at += gap
		out[i], prevTrace = at, tr.At
	}
	return out
}

// traceBlockCacheSize 是块文本缓存的条数上限：超过时整个清空重建（块文本由种子决定，
// 清空只影响速度不影响内容）。Mooncake 的公共前缀集中在少数热块上，热块很快回到缓存里。
const traceBlockCacheSize = 16384

// Trace 是一次运行的轨迹回放状态：窗口内的请求、回放时刻表与块文本缓存。
// Prompt 可被多个 worker 并发调用（缓存由 mu 保护）。
type Trace struct {
	rows      []TraceRequest
	sched     []time.Duration
	blockSize int
	salt      int64
	mu        sync.Mutex
	blocks    map[int64]*traceBlock
}

// traceBlock 是一个 hash_id 的块文本：text 是 blockSize 个片段的拼接，ends[k] 是前 k+1 个片段的
// 字节长度，最后一块不满时取 text[:ends[L-1]]，所以同 id 的短块是长块的前缀。
type traceBlock struct {
	text string
	ends []int32
}

// NewTrace 由轨迹与回放参数（已填默认值：BlockSize ≥ 1、TimeScale > 0）建立回放状态，
// 只含窗口 [StartOffset, EndOffset) 内的请求。
func NewTrace(reqs []TraceRequest, c TraceConfig) *Trace {
	win := Window(reqs, c)
	return &Trace{rows: win, sched: traceSchedule(win, c), blockSize: c.BlockSize, salt: c.Salt,
		blocks: map[int64]*traceBlock{}}
}

// TracePool 返回轨迹回放的池：Complete 为真，prompt 由 Trace 按序号现生成。
func TracePool(reqs []TraceRequest, c TraceConfig) *Pool {
	return &Pool{Complete: true, Trace: NewTrace(reqs, c)}
}

// Len 返回窗口内的请求数。
func (s *Trace) Len() int { return len(s.rows) }

// At 返回第 i 个请求的回放时刻（相对回放开始；i 按窗口长度取模）。
func (s *Trace) At(i int) time.Duration { return s.sched[i%len(s.sched)] }

// Session 返回第 i 个请求的会话 id（X-Session-ID，没有为空；i 按窗口长度取模）。
func (s *Trace) Session(i int) string { return s.rows[i%len(s.rows)].SessionID }

// blockSeed 是 hash_id 的块种子：salt 与 id 经 splitmix64 混合，相邻 id 的文本互不相关。
func blockSeed(salt, id int64) uint64 {
	z := uint64(salt)*0x9e3779b97f4a7c15 ^ uint64(id) + 0x632be59bd9b4e019
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// block 返回 id 的块文本（缓存中没有时生成）。
func (s *Trace) block(id int64) *traceBlock {
	s.mu.Lock()
	b, ok := s.blocks[id]
	s.mu.Unlock()
	if ok {
		return b
	}
	g := newTextGen(blockSeed(s.salt, id))
	var sb strings.Builder
	b = &traceBlock{ends: make([]int32, s.blockSize)}
	for k := range s.blockSize {
		sb.WriteString(g.piece())
		b.ends[k] = int32(sb.Len())
	}
	b.text = sb.String()
	s.mu.Lock()
	if len(s.blocks) >= traceBlockCacheSize {
		clear(s.blocks)
	}
	s.blocks[id] = b
	s.mu.Unlock()
	return b
}

// Prompt 返回第 i 个轨迹请求的 prompt（JSON 字符串字面量，追加到 dst[:0]）、其 token 数
// （按 internal/tokenize 规则精确）与输出长度。每个片段恰好 1 个 token 且相邻片段不会合并，
// 所以块拼接后的 token 数就是各块长度之和。
func (s *Trace) Prompt(dst []byte, i int) ([]byte, int, int) {
	tr := &s.rows[i%len(s.rows)]
	dst = dst[:0]
	if tr.Text != "" {
		q, _ := json.Marshal(tr.Text)
		return append(dst, q...), tr.InputLength, tr.OutputLength
	}
	dst = append(dst, '"')
	if len(tr.HashIDs) == 0 {
		// 没有块信息（Azure 轨迹、没有 hash_ids 的行）：整条是这一行独有的文本。
		g := newTextGen(blockSeed(s.salt^0x7a3e, int64(tr.Line)))
		for range tr.InputLength {
			dst = appendJSONText(dst, g.piece())
		}
		return append(dst, '"'), tr.InputLength, tr.OutputLength
	}
	for k, id := range tr.HashIDs {
		b := s.block(id)
		n := s.blockSize
		if k == len(tr.HashIDs)-1 {
			n = tr.InputLength - (len(tr.HashIDs)-1)*s.blockSize
		}
		dst = appendJSONText(dst, b.text[:b.ends[n-1]])
	}
	return append(dst, '"'), tr.InputLength, tr.OutputLength
}

// appendJSONText 把生成的文本按 JSON 字符串内容追加（生成器的素材里没有引号、反斜杠与控制字符，
// 这里仍逐字节检查，防止素材改动后静默地产生坏 JSON）。
func appendJSONText(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, fmt.Sprintf(`\u%04x`, c)...)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
