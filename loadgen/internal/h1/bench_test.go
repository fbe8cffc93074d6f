package h1

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/internal/sse"
)

// segConn 是基准用的 net.Conn：每次 Read 交出 segs 中的一段（模拟零时延服务端每个 chunk
// 一次刷新、客户端每次读到一个 chunk），没有系统调用，只测用户态的分帧与 SSE 解析。
type segConn struct {
	net.Conn
	segs [][]byte
	i    int
}

// Read 交出下一段；交完后返回 io.EOF。
func (c *segConn) Read(p []byte) (int, error) {
	if c.i == len(c.segs) {
		return 0, io.EOF
	}
	n := copy(p, c.segs[c.i])
	c.i++
	return n, nil
}

// vllmStream 返回一个 32 个内容 chunk 的 vLLM 式 SSE 响应体的 chunked 分帧，每个 HTTP
// chunk 一个事件（与 vLLM 逐 chunk 刷新相同）。
func vllmStream() [][]byte {
	var segs [][]byte
	ev := func(s string) {
		segs = append(segs, fmt.Appendf(nil, "%x\r\n%s\r\n", len(s), s))
	}
	ev(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	for i := range 32 {
		ev(fmt.Sprintf(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":" tok%d"},"logprobs":null,"finish_reason":null}]}`+"\n\n", i))
	}
	ev(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[],"usage":{"prompt_tokens":64,"total_tokens":96,"completion_tokens":32}}` + "\n\n")
	ev("data: [DONE]\n\n")
	segs = append(segs, []byte("0\r\n\r\n"))
	return segs
}

// BenchmarkH1StreamRead 比较 h1 的 chunked 响应体经 bufio（Reset）与就地（ResetSource）
// 交给 SSE 读取器的用户态开销：每次迭代读完一个 35 个事件的流。
func BenchmarkH1StreamRead(b *testing.B) {
	segs := vllmStream()
	for _, mode := range []string{"bufio", "source"} {
		b.Run(mode, func(b *testing.B) {
			c := newConn(&segConn{}, "x")
			rd := sse.NewReader(strings.NewReader(""))
			for b.Loop() {
				c.nc = &segConn{segs: segs}
				c.r, c.w, c.mode, c.cstate, c.remain, c.berr = 0, 0, bodyChunked, csSize, 0, nil
				if mode == "source" {
					rd.ResetSource(c)
				} else {
					rd.Reset(c)
				}
				n := 0
				for {
					_, err := rd.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n != 35 || !c.reusable() {
					b.Fatalf("%d events, reusable %v", n, c.reusable())
				}
			}
		})
	}
}

// BenchmarkH1ReadHead 测响应头的读取与解析（状态行、头部、分帧）：vLLM（uvicorn）流式响应的
// 头部，每次迭代一个响应。热路径上每个请求走一次，拆分 readOneHead 前后用它比较。
func BenchmarkH1ReadHead(b *testing.B) {
	head := []byte("HTTP/1.1 200 OK\r\ndate: Fri, 27 Nov 2026 12:00:00 GMT\r\nserver: uvicorn\r\ncontent-type: text/event-stream; charset=utf-8\r\n" +
		"transfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n")
	c := newConn(&segConn{}, "x")
	for b.Loop() {
		c.nc = &segConn{segs: [][]byte{head}}
		c.r, c.w = 0, 0
		if err := c.readHead(); err != nil || c.status != 200 || c.mode != bodyChunked || c.closeAfter {
			b.Fatalf("err %v status %d mode %v close %v", err, c.status, c.mode, c.closeAfter)
		}
	}
}
