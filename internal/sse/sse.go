// Package sse 实现一个低分配的 Server-Sent Events 读取器，单个事件的大小由配置限定。
//
// Python 客户端（aiohttp 默认 64 KiB 行缓冲）曾因超长 SSE 行而出错；本读取器的上限
// 默认是 DefaultMaxEventSize（64 MiB，远超任何真实的 chunk，16 MiB 的事件照常解析），
// 但不是无限：一个 1 GiB 的行曾让压测进程涨到 4.6 GB RSS。超过上限时 Next 返回
// ErrEventTooLarge，已缓冲的内存不超过上限加一个读缓冲区。热路径上复用缓冲区，
// 以支撑 loadgen 每秒数十万个 chunk 的解析目标。
//
// 并发约定：Reader 不是并发安全的，一个流由一个 goroutine 读取。
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Done 是 OpenAI 兼容流的结束标记 `data: [DONE]` 的数据部分。
var Done = []byte("[DONE]")

// DefaultMaxEventSize 是 NewReader 的单事件（以及单行）大小上限：64 MiB。
const DefaultMaxEventSize = 64 << 20

// ErrEventTooLarge 表示一行或一个事件的数据超过了 Reader 的上限。返回的错误包装它并给出上限。
var ErrEventTooLarge = errors.New("sse: event too large")

// Event 是一个解析完成的 SSE 事件。Data 在下一次调用 Next 之前有效，
// 调用方如需保留必须自行复制。
type Event struct {
	// Name 是 `event:` 字段的值，未出现时为空。
	Name []byte
	// Data 是所有 `data:` 行按 "\n" 连接后的内容。
	Data []byte
	// Unterminated 为 true 表示流在这个事件的结束空行之前就结束了（见 Next）：
	// 数据可能不完整，调用方据此把解析失败归为截断而不是坏数据。
	Unterminated bool
}

// IsDone 报告该事件是否为 `data: [DONE]` 结束标记。
func (e *Event) IsDone() bool { return bytes.Equal(e.Data, Done) }

// Source 是能把已缓冲的数据就地交给 Reader 的来源（见 ResetSource）：例如一个自己解析
// HTTP 分帧的连接，载荷本来就在它的读缓冲区里，不必再经 bufio 拷贝一次。
type Source interface {
	// Peek 返回下一段已缓冲的连续数据（没有时先读入更多），至少一个字节；流结束或出错时
	// 返回 nil 与错误（正常结束为 io.EOF）。切片在下一次调用 Peek 之前有效。
	Peek() ([]byte, error)
	// Discard 消费上一次 Peek 返回的数据中接下来的 n 个字节；两次 Peek 之间可以调用多次，
	// 合计不超过那次 Peek 的长度。
	Discard(n int)
}

// Reader 从底层 io.Reader（或 Source）逐个读取 SSE 事件。
type Reader struct {
	br   *bufio.Reader
	src  Source // 非 nil 时直接从它读行（ResetSource），不经 br
	line []byte // 超过 bufio 缓冲区的长行在此拼接
	data []byte
	name []byte
	ev   Event
	saw  bool // 当前事件是否已出现过任何字段
	max  int  // 单行 / 单事件数据的字节上限，<=0 表示不限
	odd  int  // 自上次 Reset 以来字段名不认识的行数，见 Unrecognized
}

// Unrecognized 返回自上次 Reset（或创建）以来字段名不是 data/event/id/retry 的非空行数。
// 规范要求忽略这些行；调用方在流没有交出任何事件就结束时，据此区分"根本不是 SSE"
// （例如一段 JSON 或二进制垃圾）与"流被截断"。
func (r *Reader) Unrecognized() int { return r.odd }

// NewReader 返回读取 r 的 SSE 读取器，内部缓冲区 64 KiB（只影响性能），
// 单事件上限 DefaultMaxEventSize。
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, bufSize), max: DefaultMaxEventSize}
}

// bufSize 是 Reset 模式下 bufio 读缓冲区的大小，也是 ResetSource 模式检查长行上限的粒度。
const bufSize = 64 << 10

// SetMaxEventSize 设置单行与单个事件数据的字节上限；n <= 0 表示不限（只应对可信的来源）。
func (r *Reader) SetMaxEventSize(n int) { r.max = n }

// tooLarge 返回带上限的 ErrEventTooLarge。
func (r *Reader) tooLarge() error {
	return fmt.Errorf("%w: more than %d bytes", ErrEventTooLarge, r.max)
}

// Reset 让 Reader 改读 r 并丢弃未完成的事件，用于在多个响应之间复用缓冲区。
func (r *Reader) Reset(src io.Reader) {
	r.br.Reset(src)
	r.src = nil
	r.line, r.data, r.name = r.line[:0], r.data[:0], r.name[:0]
	r.saw, r.odd = false, 0
}

// ResetSource 与 Reset 相同，但直接在 src 的缓冲区里找行：落在一段 Peek 之内的行不再拷贝
// （热路径上每个事件少一次拷贝与一层 Read 调用）；跨段的行拼接到自己的缓冲区里，大小上限与
// 错误和 Reset 模式相同。
func (r *Reader) ResetSource(src Source) {
	r.Reset(nil)
	r.src = src
}

// readLine 读取一整行（不含行尾 \n 或 \r\n），长度不设上限（上限见 checkLine）。
func (r *Reader) readLine() ([]byte, error) {
	if r.src != nil {
		return r.readSourceLine()
	}
	b, err := r.br.ReadSlice('\n')
	if err == nil {
		return r.checkLine(trimEOL(b))
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		if len(b) > 0 && errors.Is(err, io.EOF) {
			return r.checkLine(trimEOL(b)) // 最后一行没有换行符
		}
		return nil, err
	}
	r.line = append(r.line[:0], b...)
	for {
		if r.max > 0 && len(r.line) > r.max+lineSlack+2 { // +2：行尾的 \r\n
			r.line = nil // 不把接近上限的缓冲留给后续的流
			return nil, r.tooLarge()
		}
		b, err = r.br.ReadSlice('\n')
		r.line = append(r.line, b...)
		if err == nil || (errors.Is(err, io.EOF) && len(r.line) > 0) {
			return r.checkLine(trimEOL(r.line))
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

// readSourceLine 是 readLine 的 Source 版本：行在一段 Peek 之内时直接返回那段缓冲区的切片，
// 否则逐段拼接到 r.line。上限检查的时机与 bufio 版本逐字节相同：bufio 版本每攒满一个读缓冲区
// （bufSize 字节）还没见到换行时才检查上限，因此这里也按 bufSize 的边界取数据、在边界上检查，
// 一个超过上限但不到 bufSize 的行随后以错误结束时，两种模式给出的都是那个错误而不是超限
// （故障类别不随读取方式改变）。流在行中途结束（io.EOF）时返回已读到的部分，其余错误丢弃半行。
func (r *Reader) readSourceLine() ([]byte, error) {
	b, err := r.src.Peek()
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return nil, io.ErrNoProgress
	}
	if i := bytes.IndexByte(b[:min(len(b), bufSize)], '\n'); i >= 0 {
		r.src.Discard(i + 1)
		return r.checkLine(trimEOL(b[:i+1]))
	}
	r.line = r.line[:0]
	for boundary := bufSize; ; {
		// b 是已 Peek、尚未消费的数据；只取到下一个边界为止。
		take := b[:min(len(b), boundary-len(r.line))]
		if i := bytes.IndexByte(take, '\n'); i >= 0 {
			r.line = append(r.line, take[:i+1]...)
			r.src.Discard(i + 1)
			return r.checkLine(trimEOL(r.line))
		}
		r.line = append(r.line, take...)
		r.src.Discard(len(take))
		if len(r.line) == boundary {
			if r.max > 0 && len(r.line) > r.max+lineSlack+2 { // +2：行尾的 \r\n
				r.line = nil // 不把接近上限的缓冲留给后续的流
				return nil, r.tooLarge()
			}
			boundary += bufSize
		}
		if len(take) < len(b) {
			b = b[len(take):]
			continue
		}
		b, err = r.src.Peek()
		if err != nil {
			if errors.Is(err, io.EOF) && len(r.line) > 0 {
				return r.checkLine(trimEOL(r.line)) // 最后一行没有换行符
			}
			return nil, err
		}
		if len(b) == 0 {
			return nil, io.ErrNoProgress
		}
	}
}

// lineSlack 是一行中字段名（"data: "）的余量：上限约束的是数据，行可以比它略长。
const lineSlack = 64

// checkLine 在行超过上限时报错（上限可能小于读缓冲区，所以短路径也要查）。
func (r *Reader) checkLine(line []byte) ([]byte, error) {
	if r.max > 0 && len(line) > r.max+lineSlack {
		return nil, r.tooLarge()
	}
	return line, nil
}

// trimEOL 去掉行尾的 "\n" 或 "\r\n"。
func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}

// Next 返回下一个事件。流正常结束且没有未完成事件时返回 io.EOF；
// 流在一个事件中途结束时，已读到的字段仍作为最后一个事件返回。
// 返回的 Event 及其切片在下一次调用 Next 前有效。
func (r *Reader) Next() (*Event, error) {
	r.data, r.name = r.data[:0], r.name[:0]
	r.saw = false
	hasData := false
	for {
		line, err := r.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && r.saw {
				ev := r.emit()
				ev.Unterminated = true
				return ev, nil
			}
			return nil, err
		}
		if len(line) == 0 { // 空行：事件结束
			if r.saw {
				ev := r.emit()
				ev.Unterminated = false
				return ev, nil
			}
			continue
		}
		if line[0] == ':' { // 注释行
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if hasData {
				r.data = append(r.data, '\n')
			}
			if r.max > 0 && len(r.data)+len(value) > r.max {
				r.data, r.line = nil, nil
				return nil, r.tooLarge()
			}
			r.data = append(r.data, value...)
			hasData = true
			r.saw = true
		case "event":
			r.name = append(r.name[:0], value...)
			r.saw = true
		case "id", "retry": // 按规范处理为忽略（OpenAI 兼容流不用它们）
		default: // 未知字段按规范忽略，但记下数目
			r.odd++
		}
	}
}

// emit 组装当前事件。
func (r *Reader) emit() *Event {
	r.ev.Data, r.ev.Name = r.data, r.name
	return &r.ev
}
