package sse_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/vllm-cibench/cibench/internal/sse"
)

// collect 读出流中的全部事件数据（复制后返回），直到 io.EOF。
func collect(t *testing.T, r io.Reader) []string {
	t.Helper()
	rd := sse.NewReader(r)
	var out []string
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		out = append(out, string(ev.Name)+"|"+string(ev.Data))
	}
}

// TestReaderFraming 覆盖规范中的各种分帧：CRLF、注释、多行 data、event 字段、
// 冒号后无空格、无换行结尾。
func TestReaderFraming(t *testing.T) {
	in := ": keep-alive\n\n" +
		"data: {\"a\":1}\n\n" +
		"data:{\"b\":2}\r\n\r\n" +
		"event: error\ndata: line1\ndata: line2\nid: 7\nretry: 10\n\n" +
		"data\n\n" +
		"data: [DONE]"
	got := collect(t, strings.NewReader(in))
	want := []string{`|{"a":1}`, `|{"b":2}`, "error|line1\nline2", "|", "|[DONE]"}
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

// TestReaderOneByteReads 确认底层每次只返回 1 字节时解析结果不变。
func TestReaderOneByteReads(t *testing.T) {
	in := "data: {\"x\":\"你好\"}\n\ndata: [DONE]\n\n"
	got := collect(t, iotest.OneByteReader(strings.NewReader(in)))
	if len(got) != 2 || got[0] != `|{"x":"你好"}` || got[1] != "|[DONE]" {
		t.Fatalf("got %q", got)
	}
}

// TestReaderHugeLine 确认 16 MiB 的单行事件可以完整解析（不设行长上限）。
func TestReaderHugeLine(t *testing.T) {
	payload := bytes.Repeat([]byte("x"), 16<<20)
	var buf bytes.Buffer
	buf.WriteString("data: ")
	buf.Write(payload)
	buf.WriteString("\n\ndata: [DONE]\n\n")
	rd := sse.NewReader(&buf)
	ev, err := rd.Next()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ev.Data, payload) {
		t.Fatalf("payload length %d, want %d", len(ev.Data), len(payload))
	}
	ev, err = rd.Next()
	if err != nil || !ev.IsDone() {
		t.Fatalf("want [DONE], got %v %v", ev, err)
	}
	if _, err := rd.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("want EOF, got %v", err)
	}
}

// TestReaderTruncatedHugeLine 确认长行在流中途断开时仍返回已读到的部分而不是挂起或丢失。
func TestReaderTruncatedHugeLine(t *testing.T) {
	in := "data: " + strings.Repeat("y", 200<<10)
	rd := sse.NewReader(strings.NewReader(in))
	ev, err := rd.Next()
	if err != nil || len(ev.Data) != 200<<10 {
		t.Fatalf("got len %d err %v", len(ev.Data), err)
	}
}

// TestReaderError 确认底层读错误被原样返回。
func TestReaderError(t *testing.T) {
	boom := errors.New("boom")
	rd := sse.NewReader(io.MultiReader(strings.NewReader("data: 1\n\n"), iotest.ErrReader(boom)))
	if ev, err := rd.Next(); err != nil || string(ev.Data) != "1" {
		t.Fatalf("first: %v %v", ev, err)
	}
	if _, err := rd.Next(); !errors.Is(err, boom) {
		t.Fatalf("want boom, got %v", err)
	}
	long := io.MultiReader(strings.NewReader("data: "+strings.Repeat("z", 100<<10)), iotest.ErrReader(boom))
	rd.Reset(long)
	if _, err := rd.Next(); !errors.Is(err, boom) {
		t.Fatalf("long line: want boom, got %v", err)
	}
}

// TestReaderReset 确认 Reset 后丢弃旧状态并读取新流。
func TestReaderReset(t *testing.T) {
	rd := sse.NewReader(strings.NewReader("data: a\n"))
	rd.Reset(strings.NewReader("data: b\n\n"))
	ev, err := rd.Next()
	if err != nil || string(ev.Data) != "b" {
		t.Fatalf("got %v %v", ev, err)
	}
}

// FuzzReader 确认任意输入都不会 panic，且每个事件的数据都来自输入中的 data 行。
func FuzzReader(f *testing.F) {
	f.Add([]byte("data: {\"a\":1}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("event: e\r\ndata:x\r\n\r\n:c\n"))
	f.Add([]byte("data"))
	f.Fuzz(func(t *testing.T, in []byte) {
		rd := sse.NewReader(bytes.NewReader(in))
		for i := 0; i <= len(in)+1; i++ {
			ev, err := rd.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(ev.Data) > len(in) {
				t.Fatalf("data longer than input")
			}
		}
		t.Fatalf("more events than input bytes")
	})
}

// BenchmarkReader 测量典型 chat chunk 的解析吞吐（chunks/s 由 ns/op 换算）。
func BenchmarkReader(b *testing.B) {
	chunk := "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" 你好\"},\"finish_reason\":null}]}\n\n"
	stream := strings.Repeat(chunk, 1000)
	rd := sse.NewReader(strings.NewReader(stream))
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	for i := 0; i < b.N; i++ {
		rd.Reset(strings.NewReader(stream))
		for {
			if _, err := rd.Next(); err != nil {
				break
			}
		}
	}
}

// endless 是一个永远给出 'x'（没有换行）的读取器，记录被读走的字节数。
type endless struct{ n int }

// Read 填满 p。
func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.n += len(p)
	return len(p), nil
}

// TestMaxEventSize 验证单行与单事件的上限：恰好等于上限的事件可以解析，超过一个字节即
// ErrEventTooLarge（长行、多行 data 累计、比读缓冲区小的上限都算）。
func TestMaxEventSize(t *testing.T) {
	next := func(max int, in string) (string, error) {
		rd := sse.NewReader(strings.NewReader(in))
		rd.SetMaxEventSize(max)
		ev, err := rd.Next()
		if err != nil {
			return "", err
		}
		return string(ev.Data), nil
	}
	for _, tc := range []struct {
		name string
		max  int
		in   string
		want int // 数据字节数；-1 表示应当超限
	}{
		{"at limit", 10, "data: 0123456789\n\n", 10},
		{"one over", 10, "data: 0123456789A\n\n", -1},
		{"multi-line sum over", 10, "data: 01234\ndata: 56789\n\n", -1}, // 5 + '\n' + 5 = 11
		{"multi-line at limit", 11, "data: 01234\ndata: 56789\n\n", 11},
		{"long line under", 200 << 10, "data: " + strings.Repeat("y", 150<<10) + "\n\n", 150 << 10},
		{"long line over", 100 << 10, "data: " + strings.Repeat("y", 150<<10) + "\n\n", -1},
		{"unlimited", 0, "data: " + strings.Repeat("y", 150<<10) + "\n\n", 150 << 10},
	} {
		got, err := next(tc.max, tc.in)
		if tc.want >= 0 && (err != nil || len(got) != tc.want) {
			t.Errorf("%s: got %d bytes, err %v, want %d bytes", tc.name, len(got), err, tc.want)
		}
		if tc.want < 0 && !errors.Is(err, sse.ErrEventTooLarge) {
			t.Errorf("%s: err %v, want ErrEventTooLarge", tc.name, err)
		}
	}
}

// TestEndlessLineStopsAtLimit 验证一个没有尽头的行在读到上限（加一个读缓冲区）后就停下，
// 内存与读取量都不随服务端发送的数据增长：1 GiB 的行曾让压测进程涨到 4.6 GB RSS。
func TestEndlessLineStopsAtLimit(t *testing.T) {
	src := &endless{}
	rd := sse.NewReader(io.MultiReader(strings.NewReader("data: "), src))
	rd.SetMaxEventSize(1 << 20)
	if _, err := rd.Next(); !errors.Is(err, sse.ErrEventTooLarge) {
		t.Fatalf("err %v", err)
	}
	if src.n > 1<<20+128<<10 {
		t.Fatalf("read %d bytes of an endless line with a 1 MiB limit", src.n)
	}
	if d := sse.NewReader(nil); d == nil {
		t.Fatal("nil reader")
	}
}

// TestDefaultMaxEventSize 验证 NewReader 的默认上限是 64 MiB。
func TestDefaultMaxEventSize(t *testing.T) {
	src := &endless{}
	rd := sse.NewReader(io.MultiReader(strings.NewReader("data: "), src))
	if _, err := rd.Next(); !errors.Is(err, sse.ErrEventTooLarge) || !strings.Contains(err.Error(), "67108864") {
		t.Fatalf("err %v", err)
	}
	if src.n < sse.DefaultMaxEventSize || src.n > sse.DefaultMaxEventSize+128<<10 {
		t.Fatalf("read %d bytes", src.n)
	}
}

// TestUnterminatedEvent 验证 Event.Unterminated：以空行结束的事件为 false，流在结束空行
// 之前结束时交出的最后一个事件为 true（调用方据此把半个 JSON 归为截断），复用的事件结构
// 不会把标记带到下一个流。
func TestUnterminatedEvent(t *testing.T) {
	rd := sse.NewReader(strings.NewReader("data: a\n\ndata: {\"b\":"))
	var got []string
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(ev.Data)+"|"+map[bool]string{true: "cut", false: "whole"}[ev.Unterminated])
	}
	if want := []string{"a|whole", `{"b":|cut`}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("events %q, want %q", got, want)
	}
	rd.Reset(strings.NewReader("data: c\n\n"))
	if ev, err := rd.Next(); err != nil || string(ev.Data) != "c" || ev.Unterminated {
		t.Fatalf("after Reset: %+v %v, want a whole event c", ev, err)
	}
}

// TestUnrecognized 验证不认识的字段行被计数（id、retry、注释、空行不计），Reset 清零。
func TestUnrecognized(t *testing.T) {
	rd := sse.NewReader(strings.NewReader("id: 1\nretry: 5\n: c\n{\"error\":\"x\"}\n\x01\xfe garbage\ndata: a\n\n"))
	ev, err := rd.Next()
	if err != nil || string(ev.Data) != "a" || rd.Unrecognized() != 2 {
		t.Fatalf("event %q err %v unrecognized %d, want a and 2", ev.Data, err, rd.Unrecognized())
	}
	rd.Reset(strings.NewReader("data: b\n\n"))
	if rd.Unrecognized() != 0 {
		t.Fatalf("Reset kept %d", rd.Unrecognized())
	}
}
