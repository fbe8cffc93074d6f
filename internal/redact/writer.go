package redact

import (
	"bytes"
	"errors"
	"io"
	"sync"
)

// ErrClosed 表示向已关闭的 Writer 写入。
var ErrClosed = errors.New("redact: write: writer closed")

// DefaultHold 是 Writer 在遇到换行前最多缓冲的字节数；超过时会把安全的
// 前缀（不与任何匹配相交、且距末尾至少一个密钥长度）先写出，保证内存有界。
const DefaultHold = 64 << 10

// Writer 是脱敏的 io.Writer 包装：按行缓冲，整行脱敏后再写给下游，
// 因此跨多次 Write 被切开的密钥（"sk-ab" + "cdef…"）也会被识别。
//
// 并发：Write/Flush/Close 内部加锁，可被多个 goroutine 共用（例如子进程的
// stdout 与 stderr 同时写入）。调用方负责在结束时 Close（或 Flush）以写出
// 最后一行不带换行符的内容。Close 不关闭下游。
type Writer struct {
	r    *Redactor
	dst  io.Writer
	hold int

	mu     sync.Mutex
	buf    []byte
	inPEM  bool // 处于 PEM 私钥块内部：整块丢弃，只写一次占位符
	closed bool
}

// NewWriter 返回写往 dst 的脱敏 Writer。
func (r *Redactor) NewWriter(dst io.Writer) *Writer {
	return &Writer{r: r, dst: dst, hold: DefaultHold}
}

// Write 缓冲 p，写出其中已完整的行。返回值遵循 io.Writer：成功时 n == len(p)，
// 即使部分内容仍在缓冲中。
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, ErrClosed
	}
	w.buf = append(w.buf, p...)
	if i := bytes.LastIndexByte(w.buf, '\n'); i >= 0 {
		if err := w.emit(w.buf[:i+1]); err != nil {
			return 0, err
		}
		w.buf = append(w.buf[:0], w.buf[i+1:]...)
	}
	if len(w.buf) > w.hold {
		cut := w.safeCut()
		if cut > 0 {
			if err := w.emit(w.buf[:cut]); err != nil {
				return 0, err
			}
			w.buf = append(w.buf[:0], w.buf[cut:]...)
		}
	}
	return len(p), nil
}

// safeCut 为超长无换行的缓冲选择切点：保留至少一个最长密钥（和 1 KiB 规则
// 上下文）长度的尾巴，并把切点移到与之相交的匹配开头之前，使任何可能
// 延伸到缓冲末尾的匹配都留在尾巴里等待后续字节。
func (w *Writer) safeCut() int {
	keep := max(w.r.maxSecretLen(), 1024)
	cut := len(w.buf) - keep
	if cut <= 0 {
		return 0
	}
	for changed := true; changed; {
		changed = false
		for _, s := range w.r.spans(w.buf) {
			if s[0] < cut && s[1] >= cut {
				cut = s[0]
				changed = true
			}
		}
	}
	return cut
}

// emit 把一段文本脱敏后写给下游。规则都不跨行匹配，所以整段处理与逐行
// 处理结果相同而快得多；只有出现 PEM 私钥块（跨行）时才逐行处理。
func (w *Writer) emit(chunk []byte) error {
	if !w.inPEM && !bytes.Contains(chunk, []byte("PRIVATE KEY-----")) {
		if len(chunk) == 0 {
			return nil
		}
		_, err := w.dst.Write(w.r.Bytes(chunk))
		return err
	}
	var out bytes.Buffer
	for len(chunk) > 0 {
		line := chunk
		if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
			line = chunk[:i+1]
		}
		chunk = chunk[len(line):]
		if w.inPEM {
			if w.r.pemEnd.Match(line) {
				w.inPEM = false
			}
			continue
		}
		if w.r.pemBegin.Match(line) && !w.r.pemEnd.Match(line) {
			w.inPEM = true
			out.WriteString(Mask)
			out.WriteByte('\n')
			continue
		}
		out.Write(w.r.Bytes(line))
	}
	if out.Len() == 0 {
		return nil
	}
	_, err := w.dst.Write(out.Bytes())
	return err
}

// Flush 写出缓冲中剩余的内容（即使没有换行），用于进程结束或定期落盘。
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushLocked()
}

// flushLocked 是持锁版本的 Flush。
func (w *Writer) flushLocked() error {
	if len(w.buf) == 0 {
		return nil
	}
	err := w.emit(w.buf)
	w.buf = w.buf[:0]
	return err
}

// Close 写出剩余内容并拒绝后续写入；不关闭下游 Writer。重复 Close 返回 nil。
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	return w.flushLocked()
}
