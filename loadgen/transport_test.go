package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/internal/hostile"
	"github.com/vllm-cibench/cibench/loadgen/internal/h1"
)

// rawServer 是手写字节的 HTTP/1.1 服务：逐连接读请求（请求头 + Content-Length 请求体），
// 对全局第 n 个请求调用 respond 写出响应字节；respond 返回 false 时关闭连接。
type rawServer struct {
	url     string
	accepts atomic.Int32
	reqs    atomic.Int32
	mu      sync.Mutex
	heads   []string     // 每个请求的原始请求头（含请求行）
	genConn map[int]bool // 收到过生成请求（max_completion_tokens 不是 1，即不是探测）的连接序号
	auxConn map[int]bool // 收到过探测、/tokenize 或 /metrics 的连接序号
}

// startRaw 在回环上启动 rawServer，测试结束时关闭。
func startRaw(t *testing.T, respond func(n int, c net.Conn) bool) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{url: "http://" + ln.Addr().String() + "/v1/chat/completions"}
	var wg sync.WaitGroup
	var conns sync.Map
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			id := int(s.accepts.Add(1))
			conns.Store(c, true)
			wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					head, body, err := readRawRequest(br)
					if err != nil {
						return
					}
					s.mu.Lock()
					s.heads = append(s.heads, head)
					if strings.HasPrefix(head, "POST /v1/chat/completions ") && !strings.Contains(body, `"max_completion_tokens":1}`) {
						if s.genConn == nil {
							s.genConn = map[int]bool{}
						}
						s.genConn[id] = true
					} else {
						if s.auxConn == nil {
							s.auxConn = map[int]bool{}
						}
						s.auxConn[id] = true
					}
					s.mu.Unlock()
					if !respond(int(s.reqs.Add(1)-1), c) {
						return
					}
				}
			})
		}
	})
	return s
}

// readRawRequest 读一个请求，返回请求头原文与请求体（按 Content-Length）。
func readRawRequest(br *bufio.Reader) (string, string, error) {
	var head strings.Builder
	cl := 0
	for {
		ln, err := br.ReadString('\n')
		if err != nil {
			return "", "", err
		}
		head.WriteString(ln)
		if ln == "\r\n" {
			break
		}
		if v, ok := strings.CutPrefix(ln, "Content-Length: "); ok {
			cl, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	body := make([]byte, cl)
	if _, err := io.ReadFull(br, body); err != nil {
		return "", "", err
	}
	return head.String(), string(body), nil
}

// goodSSE 是一个完整的流：角色 chunk、两个内容 chunk（第二个带 finish 与 usage）、[DONE]。
const goodSSE = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
	"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"alpha\"}}]}\n\n" +
	"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" beta\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}\n\n" +
	"data: [DONE]\n\n"

// chunked 把 s 按 size 字节一块编成 chunked 分帧（不含结束块）。
func chunked(s string, size int) string {
	var b strings.Builder
	for len(s) > 0 {
		n := min(size, len(s))
		fmt.Fprintf(&b, "%x\r\n%s\r\n", n, s[:n])
		s = s[n:]
	}
	return b.String()
}

// writeParts 依次写出 parts，每两段之间停 2ms，让它们落在不同的 TCP 段里、被分开读到。
func writeParts(c net.Conn, parts ...string) {
	for i, p := range parts {
		if i > 0 {
			time.Sleep(2 * time.Millisecond)
		}
		_, _ = io.WriteString(c, p)
	}
}

// sseHead 是 chunked SSE 响应的响应头。
const sseHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n"

// h1Result 是一串顺序请求的结果。
type h1Result struct {
	recs []Record
}

// sendSeq 用一个 exchange 顺序发 n 个流式请求。useH1 为 false 时走 net/http（newHTTPClient），
// 用来与 h1 传输逐项比较。
func sendSeq(t *testing.T, url string, useH1 bool, n int, timeout, idle time.Duration) h1Result {
	t.Helper()
	x := newExchange()
	x.idle = idle
	var c *http.Client
	if useH1 {
		x.h1.Pool = h1.NewPool([]string{url}, "sk-test", true, true, 4)
		if x.h1.Pool == nil {
			t.Fatalf("h1 transport not eligible for %s", url)
		}
		defer x.h1.Pool.Close()
	} else {
		c = newHTTPClient(4, true)
		defer c.CloseIdleConnections()
	}
	defer x.h1.Release()
	var res h1Result
	for range n {
		x.body = []byte(`{"model":"m","stream":true}`)
		x.send(context.Background(), c, url, "sk-test", true, time.Now(), timeout)
		r := x.rec
		r.ChunkTimes = append([]time.Duration(nil), r.ChunkTimes...)
		res.recs = append(res.recs, r)
	}
	return res
}

// wantRec 是一条记录应有的值。
type wantRec struct {
	ok     bool
	class  string
	status int
	tokens int    // CompletionTokens
	chunks int    // len(ChunkTimes)
	errSub string // Error 必须包含的片段（ok 时忽略）
}

// check 断言 recs 的每一条都等于 w。
func (w wantRec) check(t *testing.T, path string, recs []Record) {
	t.Helper()
	for i, r := range recs {
		if r.OK != w.ok || r.ErrorClass != w.class || r.Status != w.status || r.CompletionTokens != w.tokens ||
			len(r.ChunkTimes) != w.chunks || !strings.Contains(r.Error, w.errSub) {
			t.Fatalf("%s request %d: ok=%v class=%q status=%d tokens=%d chunks=%d error=%q; want %+v",
				path, i, r.OK, r.ErrorClass, r.Status, r.CompletionTokens, len(r.ChunkTimes), r.Error, w)
		}
	}
}

var okRec = wantRec{ok: true, status: 200, tokens: 3, chunks: 2}

// trailingBytesCase 是 TestH1EdgeCases 里“响应之后多出字节”的场景名：net/http 在这里
// 有自身的竞态，只比较它的第一个请求。
const trailingBytesCase = "bytes after the response are not taken as the next response"

// TestH1EdgeCases 用故意写坏或写得刁钻的手写响应检查 h1 传输：每个场景同样跑一遍 net/http，
// 两条路径的记录（成败、类别、状态码、token 数、chunk 数）必须相同，h1 的连接复用次数（服务端
// accept 次数）必须等于预期。
func TestH1EdgeCases(t *testing.T) {
	body := goodSSE
	cases := []struct {
		name    string
		respond func(n int, c net.Conn) bool
		want    wantRec
		accepts int // 3 个顺序请求下 h1 传输的建连数
	}{
		{"chunk headers split across reads", func(_ int, c net.Conn) bool {
			enc := chunked(body, 40) + "0\r\n\r\n"
			// 在块大小行、CRLF 与数据中间切开。
			writeParts(c, sseHead+enc[:1], enc[1:3], enc[3:50], enc[50:len(enc)-3], enc[len(enc)-3:])
			return true
		}, okRec, 1},
		{"chunk extensions, uppercase hex and trailers", func(_ int, c net.Conn) bool {
			var b strings.Builder
			for s := body; len(s) > 0; {
				n := min(300, len(s))
				fmt.Fprintf(&b, "%X;name=\"v\" \r\n%s\r\n", n, s[:n])
				s = s[n:]
			}
			writeParts(c, sseHead+b.String(), "0;last\r\nX-Trailer: one\r\nX-Other: two\r\n\r\n")
			return true
		}, okRec, 1},
		{"one HTTP chunk per SSE event, flushed one by one", func(_ int, c net.Conn) bool {
			parts := []string{sseHead}
			for ev := range strings.SplitAfterSeq(body, "\n\n") {
				if ev != "" {
					parts = append(parts, chunked(ev, 1<<20))
				}
			}
			writeParts(c, append(parts, "0\r\n\r\n")...)
			return true
		}, okRec, 1},
		{"Content-Length body", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body[:100], body[100:])
			return true
		}, okRec, 1},
		{"close-delimited body", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"+body[:100], body[100:])
			return false
		}, okRec, 3},
		{"Connection: close", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+chunked(body, 64)+"0\r\n\r\n")
			return false
		}, okRec, 3},
		{"HTTP/1.0 without keep-alive", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
			return false
		}, okRec, 3},
		{"HTTP/1.0 with keep-alive", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Type: text/event-stream\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
			return true
		}, okRec, 1},
		{"HTTP/1.0 ignores Transfer-Encoding", func(_ int, c net.Conn) bool {
			// net/http：1.0 响应的 Transfer-Encoding 不算数，响应体读到关闭为止；分帧的字节成了
			// SSE 里不认识的行（被忽略），事件照常解析。
			writeParts(c, "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+chunked(body, 1<<20)+"0\r\n\r\n")
			return false
		}, okRec, 3},
		{"1xx interim responses are skipped", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", sseHead+chunked(body, 128)+"0\r\n\r\n")
			return true
		}, okRec, 1},
		{"many 1xx responses (net/http bounds their bytes, not their number)", func(_ int, c net.Conn) bool {
			writeParts(c, strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 20)+sseHead+chunked(body, 128)+"0\r\n\r\n")
			return true
		}, okRec, 1},
		{"garbage status line", func(_ int, c net.Conn) bool {
			writeParts(c, "HELLO\r\n\r\n")
			return false
		}, wantRec{class: ErrClassTransport, errSub: `malformed HTTP response "HELLO"`}, 3},
		{"bad status code", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 2000 OK\r\n\r\n")
			return false
		}, wantRec{class: ErrClassTransport, errSub: `malformed HTTP status code "2000"`}, 3},
		{"bad version", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTX/1.1 200 OK\r\n\r\n")
			return false
		}, wantRec{class: ErrClassTransport, errSub: `malformed HTTP version "HTTX/1.1"`}, 3},
		{"unsupported transfer encoding", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n")
			return false
		}, wantRec{class: ErrClassTransport, errSub: `unsupported transfer encoding: "gzip"`}, 3},
		{"bad Content-Length", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Length: 12x\r\n\r\n")
			return false
		}, wantRec{class: ErrClassTransport, errSub: `bad Content-Length "12x"`}, 3},
		{"invalid chunk size", func(_ int, c net.Conn) bool {
			writeParts(c, sseHead+chunked(body[:120], 1<<20)+"zz\r\n")
			return false
		}, wantRec{class: ErrClassTruncated, status: 200, errSub: "invalid byte in chunk length"}, 3},
		{"chunk data not followed by CRLF", func(_ int, c net.Conn) bool {
			writeParts(c, sseHead+"5\r\nhelloXX")
			return false
		}, wantRec{class: ErrClassTruncated, status: 200, errSub: "malformed chunked encoding"}, 3},
		{"connection closed mid chunked body", func(_ int, c net.Conn) bool {
			writeParts(c, sseHead+chunked(body[:150], 1<<20))
			return false
		}, wantRec{class: ErrClassTruncated, status: 200, chunks: 1, errSub: "unexpected EOF"}, 3},
		{"connection closed mid Content-Length body", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body[:150])
			return false
		}, wantRec{class: ErrClassTruncated, status: 200, chunks: 1, errSub: "unexpected EOF"}, 3},
		{"connection closed before any response byte", func(_ int, c net.Conn) bool {
			return false
		}, wantRec{class: ErrClassTransport, errSub: "EOF"}, 3},
		{"HTTP error with a small body is drained and the connection reused", func(_ int, c net.Conn) bool {
			e := `{"error":{"message":"overloaded","code":503}}`
			writeParts(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(e))+"\r\n\r\n"+e)
			return true
		}, wantRec{class: ErrClassHTTP, status: 503, errSub: "HTTP 503: overloaded"}, 1},
		{"204 has no body", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 204 No Content\r\n\r\n")
			return true
		}, wantRec{class: ErrClassHTTP, status: 204, errSub: "HTTP 204"}, 1},
		{trailingBytesCase, func(_ int, c net.Conn) bool {
			writeParts(c, sseHead+chunked(body, 1<<20)+"0\r\n\r\nHTTP/1.1 200 OK\r\n")
			return true
		}, okRec, 3},
		{"Content-Length next to chunked: chunked wins", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+chunked(body, 100)+"0\r\n\r\n")
			return true
		}, okRec, 1},
		{"same Content-Length twice", func(_ int, c net.Conn) bool {
			n := strconv.Itoa(len(body))
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Length: "+n+"\r\nContent-Type: text/event-stream\r\ncontent-length:  "+n+"\r\n\r\n"+body)
			return true
		}, okRec, 1},
		{"different Content-Lengths", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd")
			return false
		}, wantRec{class: ErrClassTransport, errSub: "multiple Content-Length"}, 3},
		{"empty Content-Length", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n")
			return false
		}, wantRec{class: ErrClassTransport, errSub: "invalid empty Content-Length"}, 3},
		{"folded header line", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream;\r\n charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n"+chunked(body, 100)+"0\r\n\r\n")
			return true
		}, okRec, 1},
		{"header line without colon", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Type text/event-stream\r\n\r\n")
			return false
		}, wantRec{class: ErrClassTransport, errSub: "malformed MIME header"}, 3},
		{"101 without a protocol switch", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 101 Switching Protocols\r\n\r\n")
			return false
		}, wantRec{class: ErrClassHTTP, status: 101, errSub: "HTTP 101"}, 3},
		{"JSON body on a streaming request", func(_ int, c net.Conn) bool {
			e := `{"error":{"message":"engine failed","code":500}}`
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"+chunked(e, 10)+"0\r\n\r\n")
			return true
		}, wantRec{class: ErrClassStreamError, status: 200, errSub: "engine failed"}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, useH1 := range []bool{false, true} {
				srv := startRaw(t, tc.respond)
				res := sendSeq(t, srv.url, useH1, 3, 10*time.Second, 0)
				path := map[bool]string{false: "net/http", true: "h1"}[useH1]
				recs := res.recs
				if !useH1 && tc.name == trailingBytesCase {
					// net/http 把连接放回空闲池后才由 readLoop 发现多出的字节（"Unsolicited response
					// received on idle HTTP channel"）；在那之前发出的下一个请求会把这些字节当作自己的
					// 响应——这是 net/http 自身的竞态，繁忙的机器上才出现。只比较第一个请求。
					recs = recs[:1]
				}
				tc.want.check(t, path, recs)
				if useH1 {
					if got := int(srv.accepts.Load()); got != tc.accepts {
						t.Fatalf("h1: %d connections for 3 requests, want %d", got, tc.accepts)
					}
				}
			}
		})
	}
}

// TestH1RequestBytesMatchNetHTTP 检查 h1 传输发出的请求头与 net/http 逐字节相同（请求行、
// Host、User-Agent、Content-Length、Accept、Authorization、Content-Type 及其顺序）。
func TestH1RequestBytesMatchNetHTTP(t *testing.T) {
	var heads [2]string
	for i, useH1 := range []bool{false, true} {
		srv := startRaw(t, func(_ int, c net.Conn) bool {
			writeParts(c, sseHead+chunked(goodSSE, 1<<20)+"0\r\n\r\n")
			return true
		})
		okRec.check(t, "request bytes", sendSeq(t, srv.url, useH1, 1, 10*time.Second, 0).recs)
		heads[i] = strings.Replace(srv.heads[0], strings.TrimPrefix(strings.TrimSuffix(srv.url, "/v1/chat/completions"), "http://"), "HOST", 1)
	}
	if heads[0] != heads[1] {
		t.Fatalf("request heads differ:\nnet/http:\n%s\nh1:\n%s", heads[0], heads[1])
	}
	if !strings.Contains(heads[1], "Authorization: Bearer sk-test\r\n") || !strings.HasPrefix(heads[1], "POST /v1/chat/completions HTTP/1.1\r\n") {
		t.Fatalf("unexpected head:\n%s", heads[1])
	}
}

// TestH1OversizeHeaders 检查超过 1 MiB 的响应头在两条路径上都记为 too_large（不是无限缓冲），
// 1 MiB 以内的大头部照常成功。
func TestH1OversizeHeaders(t *testing.T) {
	for _, size := range []int{h1.MaxHeaderBytes - 4096, h1.MaxHeaderBytes + 1} {
		for _, useH1 := range []bool{false, true} {
			srv := startRaw(t, func(_ int, c net.Conn) bool {
				writeParts(c, "HTTP/1.1 200 OK\r\nX-Big: "+strings.Repeat("a", size)+"\r\n"+sseHead[len("HTTP/1.1 200 OK\r\n"):]+chunked(goodSSE, 1<<20)+"0\r\n\r\n")
				return true
			})
			res := sendSeq(t, srv.url, useH1, 2, 10*time.Second, 0)
			path := fmt.Sprintf("h1=%v size=%d", useH1, size)
			if size > h1.MaxHeaderBytes {
				wantRec{class: ErrClassTooLarge}.check(t, path, res.recs)
			} else {
				okRec.check(t, path, res.recs)
			}
		}
	}
}

// TestH1StaleConnectionRetriedOnce 检查复用的连接在收到任何响应字节之前被服务端关掉时，
// 请求在新连接上重发一次并成功；新拨的连接同样失败时不重发。
func TestH1StaleConnectionRetriedOnce(t *testing.T) {
	// 第 2 个请求到达复用的连接后，服务端不回一个字节就关闭（像 keep-alive 超时的竞态）。
	srv := startRaw(t, func(n int, c net.Conn) bool {
		if n == 1 {
			return false
		}
		writeParts(c, sseHead+chunked(goodSSE, 1<<20)+"0\r\n\r\n")
		return true
	})
	res := sendSeq(t, srv.url, true, 3, 10*time.Second, 0)
	okRec.check(t, "stale", res.recs)
	if a, r := srv.accepts.Load(), srv.reqs.Load(); a != 2 || r != 4 {
		t.Fatalf("accepts=%d requests=%d, want 2 connections and 4 requests (one retried)", a, r)
	}
	// 每个请求都在读完请求后被关掉：第 1 个在新连接上（不重发），之后没有可复用的连接。
	srv = startRaw(t, func(int, net.Conn) bool { return false })
	res = sendSeq(t, srv.url, true, 2, 10*time.Second, 0)
	wantRec{class: ErrClassTransport, errSub: "EOF"}.check(t, "fresh", res.recs)
	if a, r := srv.accepts.Load(), srv.reqs.Load(); a != 2 || r != 2 {
		t.Fatalf("accepts=%d requests=%d, want 2 and 2 (no retry on fresh connections)", a, r)
	}
}

// TestH1IdleConnectionChecks 检查连接空闲期间的两种变故：服务端关掉了它（keep-alive 超时），
// 或在上一个响应之后又发来不请自来的字节。两条路径都不复用这条连接，下一个请求在新连接上
// 成功，服务端在旧连接上再也没收到请求（h1 的存活检查，不是重发）。
func TestH1IdleConnectionChecks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after func(c net.Conn)
	}{
		{"server closed the idle connection", func(c net.Conn) { c.Close() }},
		{"unsolicited bytes on the idle connection", func(c net.Conn) { _, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\n") }},
	} {
		for _, useH1 := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/h1=%v", tc.name, useH1), func(t *testing.T) {
				idle := make(chan struct{})
				srv := startRaw(t, func(n int, c net.Conn) bool {
					writeParts(c, sseHead+chunked(goodSSE, 1<<20)+"0\r\n\r\n")
					if n == 0 {
						tc.after(c)
						close(idle)
						return false
					}
					return true
				})
				x := newExchange()
				var hc *http.Client
				if useH1 {
					x.h1.Pool = h1.NewPool([]string{srv.url}, "", true, true, 4)
					defer x.h1.Pool.Close()
				} else {
					hc = newHTTPClient(4, true)
					defer hc.CloseIdleConnections()
				}
				defer x.h1.Release()
				for i := range 2 {
					if i == 1 {
						<-idle // 回环上写与 close 返回时，字节与 FIN 已在客户端的接收队列里
						if !useH1 {
							time.Sleep(20 * time.Millisecond) // net/http 的读循环在另一个 goroutine 里处理它
						}
					}
					x.body = []byte(`{}`)
					x.send(context.Background(), hc, srv.url, "", true, time.Now(), 10*time.Second)
					okRec.check(t, tc.name, []Record{x.rec})
				}
				if a, r := srv.accepts.Load(), srv.reqs.Load(); a != 2 || r != 2 {
					t.Fatalf("accepts=%d requests=%d, want 2 and 2", a, r)
				}
			})
		}
	}
}

// TestH1DeadlinesAndCancel 检查 h1 路径的总超时、静默超时与运行取消的类别，以及被中止的连接
// 不放回池中。
func TestH1DeadlinesAndCancel(t *testing.T) {
	stall := func(first string) func(int, net.Conn) bool {
		return func(_ int, c net.Conn) bool {
			writeParts(c, first)
			_, _ = c.Read(make([]byte, 1)) // 卡住，直到客户端关闭连接
			return false
		}
	}
	firstEvent := sseHead + chunked("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n", 1<<20)
	cases := []struct {
		name          string
		first         string
		timeout, idle time.Duration
		class         string
	}{
		{"silent server hits the total timeout", "", 150 * time.Millisecond, 0, ErrClassTimeout},
		{"headers then silence hits the total timeout", sseHead, 150 * time.Millisecond, 0, ErrClassTimeout},
		{"stall after the first event hits idle_timeout", firstEvent, 10 * time.Second, 150 * time.Millisecond, ErrClassIdleTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := startRaw(t, stall(tc.first))
			start := time.Now()
			res := sendSeq(t, srv.url, true, 2, tc.timeout, tc.idle)
			if el := time.Since(start); el > 5*time.Second {
				t.Fatalf("two requests took %v", el)
			}
			for _, r := range res.recs {
				if r.ErrorClass != tc.class || r.OK {
					t.Fatalf("class %q error %q, want %q", r.ErrorClass, r.Error, tc.class)
				}
			}
			if a := srv.accepts.Load(); a != 2 {
				t.Fatalf("%d connections, want 2 (an aborted connection is never reused)", a)
			}
		})
	}
	t.Run("run cancelled", func(t *testing.T) {
		srv := startRaw(t, stall(sseHead))
		x := newExchange()
		x.h1.Pool = h1.NewPool([]string{srv.url}, "", true, true, 4)
		defer x.h1.Pool.Close()
		defer x.h1.Release()
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		x.body = []byte(`{}`)
		x.send(ctx, nil, srv.url, "", true, time.Now(), 10*time.Second)
		if x.rec.ErrorClass != ErrClassCanceled {
			t.Fatalf("class %q error %q, want canceled", x.rec.ErrorClass, x.rec.Error)
		}
		x.send(ctx, nil, srv.url, "", true, time.Now(), 10*time.Second)
		if x.rec.ErrorClass != ErrClassCanceled || srv.accepts.Load() != 1 {
			t.Fatalf("after cancel: class %q, %d connections; want canceled without dialling", x.rec.ErrorClass, srv.accepts.Load())
		}
	})
}

// TestH1RunRoundRobin 经公开的 Run 检查：默认客户端下生成请求走 h1 传输，两个实例轮流接到请求，
// 每个实例上生成请求只用一条 keep-alive 连接（探测、/tokenize 与 /metrics 走 net/http 的连接）。
func TestH1RunRoundRobin(t *testing.T) {
	respond := func(_ int, c net.Conn) bool {
		writeParts(c, sseHead+chunked(goodSSE, 1<<20)+"0\r\n\r\n")
		return true
	}
	a, b := startRaw(t, respond), startRaw(t, respond)
	tgt := Target{Endpoint: endpoint.Endpoint{BaseURLs: []string{strings.TrimSuffix(a.url, "/chat/completions"), strings.TrimSuffix(b.url, "/chat/completions")}, Model: "m"}}
	sink := &recSink{}
	p := Profile{Backend: BackendChat, Concurrency: []int{1}, InputLength: []int{8}, OutputLength: []int{4}, NumRequests: []int{8}}
	sums, err := Run(context.Background(), tgt, p, &Observer{OnRecord: sink.WriteRecord})
	if err != nil {
		t.Fatal(err)
	}
	if sums[0].Succeeded != 8 || len(sink.recs) != 8 {
		t.Fatalf("succeeded %d of %d records", sums[0].Succeeded, len(sink.recs))
	}
	for i, r := range sink.recs {
		if r.Instance != i%2 || r.CompletionTokens != 3 {
			t.Fatalf("record %d: instance %d tokens %d", i, r.Instance, r.CompletionTokens)
		}
	}
	for i, s := range []*rawServer{a, b} {
		s.mu.Lock()
		n := len(s.genConn)
		for id := range s.genConn {
			if s.auxConn[id] {
				// net/http 会把探测之后空闲的连接拿来发生成请求；h1 传输有自己的连接池。
				t.Errorf("instance %d: generation requests shared connection %d with net/http's probe traffic", i, id)
			}
		}
		s.mu.Unlock()
		if n != 1 {
			t.Fatalf("instance %d: generation requests on %d connections, want 1 kept-alive connection", i, n)
		}
	}
}

// recSink 按到达顺序收集记录（c=1 时即请求顺序）。
type recSink struct{ recs []Record }

// WriteRecord 保存记录的副本（作为 Observer.OnRecord）。
func (s *recSink) WriteRecord(r *Record) error {
	s.recs = append(s.recs, *r)
	return nil
}

// TestH1MatchesNetHTTPOnHostile 对 internal/hostile 的每种故障，用 h1 传输与 net/http 各发 3 个
// 顺序请求，逐项比较记录（成败、类别、状态码、token 数、chunk 数、finish_reason）：h1 传输不能
// 改变任何一个故障的归类。
func TestH1MatchesNetHTTPOnHostile(t *testing.T) {
	srv, err := hostile.New(hostile.Config{Model: "m", BigSize: 256 << 10, HugeSize: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	p := Profile{Backend: BackendChat}.WithDefaults()
	tmpl, err := newBodyTemplate("m", &p, usageContinuous)
	if err != nil {
		t.Fatal(err)
	}
	body := tmpl.build(nil, []byte(`"hello there"`), "", 4)
	for _, f := range hostile.Faults() {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			url := srv.BaseURL(f) + "/chat/completions"
			var got [2][]string
			for i, useH1 := range []bool{false, true} {
				x := newExchange()
				x.idle, x.maxEvent = 300*time.Millisecond, 1<<20
				if f == hostile.FaultBig || f == hostile.FaultHuge {
					// 这两行考的是大小，不是时间：冷运行的负载下，同一个 -race 进程里的服务端生成 2 MiB 时两段之间
					// 停过 300 ms 以上，net/http 一侧于是记成 idle_timeout 而 h1 记成 too_large（对照因此失败过）。
					x.idle = 10 * time.Second
				}
				var c *http.Client
				if useH1 {
					x.h1.Pool = h1.NewPool([]string{url}, "", true, true, 4)
					defer x.h1.Pool.Close()
				} else {
					c = newHTTPClient(4, true)
					defer c.CloseIdleConnections()
				}
				defer x.h1.Release()
				for range 3 {
					x.body = append(x.body[:0], body...)
					x.send(context.Background(), c, url, "", true, time.Now(), 600*time.Millisecond)
					r := x.rec
					got[i] = append(got[i], fmt.Sprintf("ok=%v class=%q status=%d tokens=%d chunks=%d finish=%q",
						r.OK, r.ErrorClass, r.Status, r.CompletionTokens, len(r.ChunkTimes), r.FinishReason))
				}
			}
			if strings.Join(got[0], "\n") != strings.Join(got[1], "\n") {
				t.Fatalf("records differ:\nnet/http:\n%s\nh1:\n%s", strings.Join(got[0], "\n"), strings.Join(got[1], "\n"))
			}
			t.Logf("%s: %s", f, got[1][0])
		})
	}
}
