package sse_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/internal/sse"
)

// segSource 是测试用的 sse.Source：把 in 按 seg 字节一段交出，交完后返回 end。
// 它检查 Discard 不越过上一次 Peek 的范围，并在下一次 Peek 前把已交出的字节涂掉，
// 让引用了旧切片的实现在测试里露出来。
type segSource struct {
	t      *testing.T
	in     []byte
	seg    int
	end    error
	peeked []byte
}

// Peek 实现 sse.Source。
func (s *segSource) Peek() ([]byte, error) {
	for i := range s.peeked {
		s.peeked[i] = '#'
	}
	if len(s.in) == 0 {
		s.peeked = nil
		return nil, s.end
	}
	n := min(s.seg, len(s.in))
	s.peeked = append([]byte(nil), s.in[:n]...)
	return s.peeked, nil
}

// Discard 实现 sse.Source。
func (s *segSource) Discard(n int) {
	if n < 0 || n > len(s.peeked) {
		s.t.Fatalf("Discard(%d) after Peek of %d bytes", n, len(s.peeked))
	}
	s.in = s.in[n:]
	s.peeked = s.peeked[n:]
}

// errReader 先交出 r 的全部数据，然后返回 end（代替 io.EOF）。
type errReader struct {
	r   io.Reader
	end error
}

// Read 实现 io.Reader。
func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		err = e.end
	}
	return n, err
}

// transcript 读完 rd 的所有事件，返回每个事件（名字、数据、是否未终止）与最终错误的文字记录。
func transcript(rd *sse.Reader) string {
	var b strings.Builder
	for range 1000 {
		ev, err := rd.Next()
		if err != nil {
			fmt.Fprintf(&b, "err=%v too_large=%v odd=%d", err, errors.Is(err, sse.ErrEventTooLarge), rd.Unrecognized())
			return b.String()
		}
		fmt.Fprintf(&b, "[%q %q %v]", ev.Name, ev.Data, ev.Unterminated)
	}
	return b.String() + "…"
}

// TestResetSourceMatchesReader 是 ResetSource 模式与 bufio 模式的差分测试：各种分帧、
// 超长行与超大事件（上限很小）、行中途结束、以非 EOF 错误结束、非 SSE 内容，在每种分段
// 大小下两种模式交出的事件、错误类别与 Unrecognized 完全相同。
func TestResetSourceMatchesReader(t *testing.T) {
	inputs := []string{
		"",
		": keep-alive\n\ndata: {\"a\":1}\n\ndata:{\"b\":2}\r\n\r\nevent: error\ndata: line1\ndata: line2\nid: 7\nretry: 10\n\ndata\n\ndata: [DONE]",
		"data: {\"x\":\"你好\"}\n\ndata: [DONE]\n\n",
		"data: " + strings.Repeat("y", 300) + "\n\ndata: ok\n\n",                           // 超过上限的行
		"data: " + strings.Repeat("z", 40) + "\ndata: " + strings.Repeat("z", 40) + "\n\n", // 多行合计超过上限
		"data: " + strings.Repeat("w", 1000),                                               // 没有换行的超长尾行
		"data: {\"partial\":",                                                              // 事件中途结束
		"data: a\n\ndata: b\n",                                                             // 最后一个事件缺空行
		"{\"error\":\"not sse\"}\nplain text\n",                                            // 不是 SSE
		"\r\n\n\ndata: x\r\n\r\n",
	}
	// 跨越 bufio 缓冲区（64 KiB）边界的长行：上限检查的时机必须与 bufio 版本相同。
	for _, n := range []int{64<<10 - 7, 64<<10 - 6, 64<<10 - 5, 64 << 10, 64<<10 + 1, 100000, 128<<10 - 6, 128<<10 + 3, 200000} {
		line := "data: " + strings.Repeat("L", n-6)
		inputs = append(inputs, line, line+"\n\ndata: next\n\n", line+"\r\n\r\n")
	}
	ends := []error{io.EOF, io.ErrUnexpectedEOF}
	for _, limit := range []int{0, 64, 64<<10 - 70, 64<<10 - 60, 70000, 128<<10 - 66} {
		for ii, in := range inputs {
			for _, end := range ends {
				ref := sse.NewReader(&errReader{r: strings.NewReader(in), end: end})
				ref.SetMaxEventSize(limit)
				want := transcript(ref)
				segs := []int{1, 2, 3, 7, 64, 1 << 20}
				if len(in) > 4096 {
					segs = []int{7, 4096, 16 << 10, 64<<10 - 1, 64 << 10, 1 << 20}
				}
				for _, seg := range segs {
					rd := sse.NewReader(strings.NewReader("data: stale\n\n"))
					rd.ResetSource(&segSource{t: t, in: []byte(in), seg: seg, end: end})
					rd.SetMaxEventSize(limit)
					if got := transcript(rd); got != want {
						t.Errorf("input %d, limit %d, end %v, seg %d:\n got %s\nwant %s", ii, limit, end, seg, got, want)
					}
				}
			}
		}
	}
}

// TestResetAfterResetSource 确认 ResetSource 之后再 Reset 回到按 io.Reader 读取。
func TestResetAfterResetSource(t *testing.T) {
	rd := sse.NewReader(strings.NewReader(""))
	rd.ResetSource(&segSource{t: t, in: []byte("data: src\n\n"), seg: 4, end: io.EOF})
	if ev, err := rd.Next(); err != nil || string(ev.Data) != "src" {
		t.Fatalf("source mode: %v %v", ev, err)
	}
	rd.Reset(strings.NewReader("data: rdr\n\n"))
	if ev, err := rd.Next(); err != nil || string(ev.Data) != "rdr" {
		t.Fatalf("reader mode after ResetSource: %v %v", ev, err)
	}
	if _, err := rd.Next(); err != io.EOF {
		t.Fatalf("want io.EOF, got %v", err)
	}
}
