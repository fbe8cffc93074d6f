package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rawServer 是手写字节的 HTTP/1.1 服务：逐连接读请求（请求头 + Content-Length 请求体），
// 对全局第 n 个请求调用 respond 写出响应字节；respond 返回 false 时关闭连接。
type rawServer struct {
	url     string
	accepts atomic.Int32
	reqs    atomic.Int32
	mu      sync.Mutex
	heads   []string // 每个请求的原始请求头（含请求行）
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
			s.accepts.Add(1)
			conns.Store(c, true)
			wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					head, err := readRawRequest(br)
					if err != nil {
						return
					}
					s.mu.Lock()
					s.heads = append(s.heads, head)
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

// readRawRequest 读一个请求，返回请求头原文（请求体按 Content-Length 读掉）。
func readRawRequest(br *bufio.Reader) (string, error) {
	var head strings.Builder
	cl := 0
	for {
		ln, err := br.ReadString('\n')
		if err != nil {
			return "", err
		}
		head.WriteString(ln)
		if ln == "\r\n" {
			break
		}
		if v, ok := strings.CutPrefix(ln, "Content-Length: "); ok {
			cl, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if _, err := io.CopyN(io.Discard, br, int64(cl)); err != nil {
		return "", err
	}
	return head.String(), nil
}

// sseBody 是一个完整的流式响应体。
const sseBody = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"alpha\"}}]}\n\n" +
	"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" beta\"},\"finish_reason\":\"stop\"}]}\n\n" +
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

// outcome 是一个请求在传输层的结果：状态码、响应体、错误（没有时为 ""）。
type outcome struct {
	status int
	body   string
	err    string
}

// viaH1 用一个 Session 顺序发 n 个请求，每个读完响应体（chunked 时经 Peek/Discard）。
func viaH1(t *testing.T, rawURL string, n int) []outcome {
	t.Helper()
	p := NewPool([]string{rawURL}, "sk-test", true, false, 4)
	if p == nil {
		t.Fatalf("not eligible: %s", rawURL)
	}
	defer p.Close()
	s := &Session{Pool: p}
	defer s.Release()
	var out []outcome
	for range n {
		s.Begin(context.Background())
		c, err := s.RoundTrip(context.Background(), p.Target(rawURL), time.Now().Add(10*time.Second), []byte(`{"stream":true}`), "")
		if err != nil {
			out = append(out, outcome{err: errText(err)})
			s.End()
			continue
		}
		var body []byte
		if c.Chunked() {
			body, err = readSource(c)
		} else {
			body, err = io.ReadAll(c)
		}
		out = append(out, outcome{status: c.Status(), body: string(body), err: errText(err)})
		s.End()
	}
	return out
}

// readSource 经 Peek/Discard 读完 chunked 响应体（loadgen 的 SSE 读取器就是这样读的）。
func readSource(c *Conn) ([]byte, error) {
	var b []byte
	for {
		p, err := c.Peek()
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		b = append(b, p...)
		c.Discard(len(p))
	}
}

// viaNetHTTP 用 net/http 顺序发 n 个同样的请求，作为对照。
func viaNetHTTP(t *testing.T, rawURL string, n int) []outcome {
	t.Helper()
	tr := &http.Transport{MaxResponseHeaderBytes: MaxHeaderBytes, Proxy: nil}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var out []outcome
	for range n {
		req, _ := http.NewRequest(http.MethodPost, rawURL, strings.NewReader(`{"stream":true}`))
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer sk-test")
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			out = append(out, outcome{err: errText(err)})
			continue
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		out = append(out, outcome{status: resp.StatusCode, body: string(body), err: errText(err)})
	}
	return out
}

// errText 返回错误的文字，去掉 net/http 与 h1 都会加的 `Post "url": ` 前缀（比较的是原因）。
func errText(err error) string {
	if err == nil {
		return ""
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// TestMatchesNetHTTP 用故意写坏或写得刁钻的手写响应，对照 net/http 检查 h1 传输的分帧与错误：
// 3 个顺序请求的状态码、响应体与错误文字必须与 net/http 相同，h1 的建连数等于预期（复用是否正确）。
func TestMatchesNetHTTP(t *testing.T) {
	cases := []struct {
		name    string
		respond func(n int, c net.Conn) bool
		accepts int
	}{
		{"chunk headers split across reads", func(_ int, c net.Conn) bool {
			enc := chunked(sseBody, 40) + "0\r\n\r\n"
			writeParts(c, sseHead+enc[:1], enc[1:3], enc[3:50], enc[50:len(enc)-3], enc[len(enc)-3:])
			return true
		}, 1},
		{"chunk extensions, uppercase hex and trailers", func(_ int, c net.Conn) bool {
			var b strings.Builder
			for s := sseBody; len(s) > 0; {
				n := min(30, len(s))
				fmt.Fprintf(&b, "%X;name=\"v\" \r\n%s\r\n", n, s[:n])
				s = s[n:]
			}
			writeParts(c, sseHead+b.String(), "0;last\r\nX-Trailer: one\r\nX-Other: two\r\n\r\n")
			return true
		}, 1},
		{"Content-Length body", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: "+strconv.Itoa(len(sseBody))+"\r\n\r\n"+sseBody[:20], sseBody[20:])
			return true
		}, 1},
		{"close-delimited body", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"+sseBody[:20], sseBody[20:])
			return false
		}, 3},
		{"Connection: close", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"+chunked(sseBody, 64)+"0\r\n\r\n")
			return false
		}, 3},
		{"HTTP/1.0 without keep-alive", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.0 200 OK\r\nContent-Length: "+strconv.Itoa(len(sseBody))+"\r\n\r\n"+sseBody)
			return false
		}, 3},
		{"HTTP/1.0 with keep-alive", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: "+strconv.Itoa(len(sseBody))+"\r\n\r\n"+sseBody)
			return true
		}, 1},
		{"HTTP/1.0 ignores Transfer-Encoding", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"+chunked(sseBody, 1<<20)+"0\r\n\r\n")
			return false
		}, 3},
		{"1xx interim responses are skipped", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", sseHead+chunked(sseBody, 128)+"0\r\n\r\n")
			return true
		}, 1},
		{"garbage status line", func(_ int, c net.Conn) bool { writeParts(c, "HELLO\r\n\r\n"); return false }, 3},
		{"empty status line", func(_ int, c net.Conn) bool { writeParts(c, "\r\nHTTP/1.1 200 OK\r\n\r\n"); return false }, 3},
		{"bad status code", func(_ int, c net.Conn) bool { writeParts(c, "HTTP/1.1 2000 OK\r\n\r\n"); return false }, 3},
		{"non-numeric status code", func(_ int, c net.Conn) bool { writeParts(c, "HTTP/1.1 2x0 OK\r\n\r\n"); return false }, 3},
		{"bad version", func(_ int, c net.Conn) bool { writeParts(c, "HTTX/1.1 200 OK\r\n\r\n"); return false }, 3},
		{"unsupported transfer encoding", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n")
			return false
		}, 3},
		{"two transfer encodings", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n")
			return false
		}, 3},
		{"bad Content-Length", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Length: 12x\r\n\r\n")
			return false
		}, 3},
		{"invalid chunk size", func(_ int, c net.Conn) bool {
			writeParts(c, sseHead+chunked(sseBody[:40], 1<<20)+"zz\r\n")
			return false
		}, 3},
		{"chunk data not followed by CRLF", func(_ int, c net.Conn) bool {
			writeParts(c, sseHead+"5\r\nhelloXX")
			return false
		}, 3},
		{"chunk size line too long", func(_ int, c net.Conn) bool {
			writeParts(c, sseHead+"5"+strings.Repeat(" ", 5000)+"\r\nhello\r\n0\r\n\r\n")
			return false
		}, 3},
		{"connection closed mid chunked body", func(_ int, c net.Conn) bool {
			writeParts(c, sseHead+chunked(sseBody[:50], 1<<20))
			return false
		}, 3},
		{"connection closed mid Content-Length body", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(sseBody))+"\r\n\r\n"+sseBody[:50])
			return false
		}, 3},
		{"connection closed mid headers", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Le")
			return false
		}, 3},
		{"connection closed before any response byte", func(int, net.Conn) bool { return false }, 3},
		{"204 has no body", func(_ int, c net.Conn) bool { writeParts(c, "HTTP/1.1 204 No Content\r\n\r\n"); return true }, 1},
		{"empty Content-Length body", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
			return true
		}, 1},
		{"bytes after the response are not taken as the next response", func(_ int, c net.Conn) bool {
			writeParts(c, sseHead+chunked(sseBody, 1<<20)+"0\r\n\r\nHTTP/1.1 200 OK\r\n")
			return true
		}, 3},
		{"same Content-Length twice", func(_ int, c net.Conn) bool {
			n := strconv.Itoa(len(sseBody))
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Length: "+n+"\r\ncontent-length:  "+n+"\r\n\r\n"+sseBody)
			return true
		}, 1},
		{"different Content-Lengths", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd")
			return false
		}, 3},
		{"empty Content-Length", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n")
			return false
		}, 3},
		{"folded header lines", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream;\r\n charset=utf-8\r\nConnection: keep-alive\r\nConnection: x\r\n\tclose\r\nTransfer-Encoding: chunked\r\n\r\n"+chunked(sseBody, 100)+"0\r\n\r\n")
			return true
		}, 1},
		{"folded first header line", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\n X: y\r\n\r\n")
			return false
		}, 3},
		{"header line without colon", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Type text/event-stream\r\n\r\n")
			return false
		}, 3},
		{"101 without a protocol switch", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 101 Switching Protocols\r\n\r\n")
			return false
		}, 3},
		{"JSON content type", func(_ int, c net.Conn) bool {
			e := `{"error":{"message":"engine failed"}}`
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(e))+"\r\n\r\n"+e)
			return true
		}, 1},
		{"uncommon content type", func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")
			return true
		}, 1},
	}
	// net/http 在这些用例上的结果取决于调度，不能当对照：响应后面跟着多余字节时，它的后台读循环
	// 把连接放回空闲池之后才 Peek；Peek 先于下一个请求登记就判"不请自来"、关连接（下一个请求走新连接、
	// 成功），下一个请求先登记就把多余字节当成它的响应（malformed MIME header）。安静的机器上几乎总是前者，
	// 冷启动的测试运行里出现过后者（第 3 个请求失败）。h1 每次复用前都查，结果是确定的：3 个请求都成功、
	// 每个一条新连接——这正是 net/http 在没有竞态时的结果，所以这里直接写出来。
	cleanRef := []outcome{{status: 200, body: sseBody}, {status: 200, body: sseBody}, {status: 200, body: sseBody}}
	racyRef := map[string]bool{"bytes after the response are not taken as the next response": true}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ref := cleanRef
			if !racyRef[tc.name] {
				ref = viaNetHTTP(t, startRaw(t, tc.respond).url, 3)
			}
			srv := startRaw(t, tc.respond)
			got := viaH1(t, srv.url, 3)
			for i := range got {
				// net/http 的错误文字在 1xx、分帧等处与 h1 一致；比较成败、状态码与响应体，
				// 错误文字只要求两边都有或都没有（文字已由 loadgen 的 transport_test 逐条钉住）。
				if got[i].status != ref[i].status || got[i].body != ref[i].body || (got[i].err == "") != (ref[i].err == "") {
					t.Fatalf("request %d:\n h1       %+v\n net/http %+v", i, got[i], ref[i])
				}
			}
			if a := int(srv.accepts.Load()); a != tc.accepts {
				t.Fatalf("h1: %d connections for 3 requests, want %d", a, tc.accepts)
			}
		})
	}
}

// TestRequestHeadAndSession 检查发出的请求头（与 net/http 的顺序相同）与 X-Session-ID，以及
// 含换行的会话 id 在发出之前被拒绝。
func TestRequestHeadAndSession(t *testing.T) {
	srv := startRaw(t, func(_ int, c net.Conn) bool {
		writeParts(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
		return true
	})
	p := NewPool([]string{srv.url}, "k", true, false, 4)
	defer p.Close()
	s := &Session{Pool: p}
	defer s.Release()
	s.Begin(context.Background())
	if _, err := s.RoundTrip(context.Background(), p.Target(srv.url), time.Now().Add(10*time.Second), []byte("{}"), "sess-1"); err != nil {
		t.Fatal(err)
	}
	s.End()
	host := strings.TrimSuffix(strings.TrimPrefix(srv.url, "http://"), "/v1/chat/completions")
	want := "POST /v1/chat/completions HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: 2\r\nX-Session-ID: sess-1\r\n" +
		"Accept: text/event-stream\r\nAuthorization: Bearer k\r\nContent-Type: application/json\r\n\r\n"
	srv.mu.Lock()
	head := srv.heads[0]
	srv.mu.Unlock()
	if head != want {
		t.Fatalf("head:\n%q\nwant\n%q", head, want)
	}
	s.Begin(context.Background())
	_, err := s.RoundTrip(context.Background(), p.Target(srv.url), time.Now().Add(10*time.Second), []byte("{}"), "a\r\nX-Evil: 1")
	s.End()
	if err == nil || !strings.Contains(err.Error(), "contains a line break") {
		t.Fatalf("session id with CRLF: %v", err)
	}
	if n := srv.reqs.Load(); n != 1 {
		t.Fatalf("%d requests reached the server, want 1 (the bad one never leaves)", n)
	}
}

// TestOversizeHeaders 检查超过 MaxHeaderBytes 的响应头给出 ErrHeadersTooLarge（不无限缓冲、不重发），
// 上限以内的大头部照常读完，读缓冲区之后回到常规大小。
func TestOversizeHeaders(t *testing.T) {
	for _, size := range []int{MaxHeaderBytes - 4096, MaxHeaderBytes + 1} {
		srv := startRaw(t, func(_ int, c net.Conn) bool {
			writeParts(c, "HTTP/1.1 200 OK\r\nX-Big: "+strings.Repeat("a", size)+"\r\nContent-Length: 2\r\n\r\nok")
			return true
		})
		p := NewPool([]string{srv.url}, "", true, false, 4)
		s := &Session{Pool: p}
		s.Begin(context.Background())
		c, err := s.RoundTrip(context.Background(), p.Target(srv.url), time.Now().Add(10*time.Second), nil, "")
		if size > MaxHeaderBytes {
			if !errors.Is(err, ErrHeadersTooLarge) {
				t.Fatalf("size %d: %v, want ErrHeadersTooLarge", size, err)
			}
		} else {
			if err != nil {
				t.Fatalf("size %d: %v", size, err)
			}
			if b, _ := io.ReadAll(c); string(b) != "ok" || len(c.buf) != h1BufSize {
				t.Fatalf("body %q, buffer %d bytes", b, len(c.buf))
			}
		}
		s.End()
		s.Release()
		p.Close()
		if r := srv.reqs.Load(); r != 1 {
			t.Fatalf("size %d: %d requests, want 1 (never retried)", size, r)
		}
	}
}

// TestStaleConnectionRetriedOnce 检查复用的连接在收到任何响应字节之前被服务端关掉时，请求在新
// 连接上重发一次并成功；新拨的连接同样失败时不重发。
func TestStaleConnectionRetriedOnce(t *testing.T) {
	srv := startRaw(t, func(n int, c net.Conn) bool {
		if n == 1 {
			return false
		}
		writeParts(c, sseHead+chunked(sseBody, 1<<20)+"0\r\n\r\n")
		return true
	})
	for i, o := range viaH1(t, srv.url, 3) {
		if o.err != "" || o.body != sseBody {
			t.Fatalf("request %d: %+v", i, o)
		}
	}
	if a, r := srv.accepts.Load(), srv.reqs.Load(); a != 2 || r != 4 {
		t.Fatalf("accepts=%d requests=%d, want 2 connections and 4 requests (one retried)", a, r)
	}
}

// TestIdleConnectionChecks 检查连接空闲期间服务端关掉了它，或又发来不请自来的字节时，这条连接
// 不被复用（存活检查），下一个请求在新连接上成功，服务端在旧连接上再也没收到请求。
func TestIdleConnectionChecks(t *testing.T) {
	for _, after := range []func(c net.Conn){
		func(c net.Conn) { c.Close() },
		func(c net.Conn) { _, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\n") },
	} {
		idle := make(chan struct{})
		srv := startRaw(t, func(n int, c net.Conn) bool {
			writeParts(c, sseHead+chunked(sseBody, 1<<20)+"0\r\n\r\n")
			if n == 0 {
				after(c)
				close(idle)
				return false
			}
			return true
		})
		p := NewPool([]string{srv.url}, "", true, false, 4)
		s := &Session{Pool: p}
		for i := range 2 {
			if i == 1 {
				<-idle
			}
			s.Begin(context.Background())
			c, err := s.RoundTrip(context.Background(), p.Target(srv.url), time.Now().Add(10*time.Second), nil, "")
			if err != nil {
				t.Fatal(err)
			}
			if b, err := readSource(c); err != nil || string(b) != sseBody {
				t.Fatalf("body %q err %v", b, err)
			}
			s.End()
		}
		s.Release()
		p.Close()
		if a, r := srv.accepts.Load(), srv.reqs.Load(); a != 2 || r != 2 {
			t.Fatalf("accepts=%d requests=%d, want 2 and 2", a, r)
		}
	}
}

// TestAbortAndCancel 检查 Abort 的原因成为阻塞读写的错误、被中止的连接不放回池中，以及运行
// ctx 取消时在途的请求与之后的请求都以 context.Canceled 结束、不再拨号。
func TestAbortAndCancel(t *testing.T) {
	stall := func(first string) func(int, net.Conn) bool {
		return func(_ int, c net.Conn) bool {
			writeParts(c, first)
			_, _ = c.Read(make([]byte, 1)) // 卡住，直到客户端关闭连接
			return false
		}
	}
	errIdle := errors.New("stream idle")
	for _, first := range []string{"", sseHead} {
		srv := startRaw(t, stall(first))
		p := NewPool([]string{srv.url}, "", true, false, 4)
		s := &Session{Pool: p}
		for range 2 {
			s.Begin(context.Background())
			timer := time.AfterFunc(100*time.Millisecond, func() { s.Abort(errIdle) })
			c, err := s.RoundTrip(context.Background(), p.Target(srv.url), time.Now().Add(10*time.Second), nil, "")
			if err == nil {
				_, err = readSource(c)
			}
			timer.Stop()
			if !errors.Is(err, errIdle) {
				t.Fatalf("first %q: %v, want the abort cause", first, err)
			}
			if cause, on := s.Cause(); cause != errIdle || !on {
				t.Fatalf("Cause() = %v, %v", cause, on)
			}
			s.End()
			if _, on := s.Cause(); on {
				t.Fatal("still active after End")
			}
		}
		s.Release()
		p.Close()
		if a := srv.accepts.Load(); a != 2 {
			t.Fatalf("%d connections, want 2 (an aborted connection is never reused)", a)
		}
	}
	srv := startRaw(t, stall(sseHead))
	p := NewPool([]string{srv.url}, "", true, false, 4)
	defer p.Close()
	s := &Session{Pool: p}
	defer s.Release()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	s.Begin(ctx)
	c, err := s.RoundTrip(ctx, p.Target(srv.url), time.Now().Add(10*time.Second), nil, "")
	if err == nil {
		_, err = readSource(c)
	}
	s.End()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run cancelled: %v", err)
	}
	s.Begin(ctx)
	_, err = s.RoundTrip(ctx, p.Target(srv.url), time.Now().Add(10*time.Second), nil, "")
	s.End()
	if !errors.Is(err, context.Canceled) || srv.accepts.Load() != 1 {
		t.Fatalf("after cancel: %v, %d connections; want canceled without dialling", err, srv.accepts.Load())
	}
	s.Abort(errIdle) // 没有请求在进行：不记原因
	if cause, on := s.Cause(); cause != nil || on {
		t.Fatalf("abort outside a request: %v %v", cause, on)
	}
}

// TestDialFailure 检查拨号失败（没有人监听）与拨号超时给出的错误：前者是连接错误，后者是
// context.DeadlineExceeded（与 net/http 在请求总超时内拨不通时相同）。
func TestDialFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/v1/completions"
	ln.Close()
	p := NewPool([]string{dead}, "", false, false, 4)
	defer p.Close()
	s := &Session{Pool: p}
	defer s.Release()
	s.Begin(context.Background())
	_, err = s.RoundTrip(context.Background(), p.Target(dead), time.Now().Add(10*time.Second), nil, "")
	s.End()
	var ue *url.Error
	if !errors.As(err, &ue) || ue.Op != "Post" || ue.URL != dead {
		t.Fatalf("dial to a closed port: %v", err)
	}
	s.Begin(context.Background())
	_, err = s.RoundTrip(context.Background(), p.Target(dead), time.Now().Add(-time.Second), nil, "")
	s.End()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("dial past the deadline: %v", err)
	}
}

// TestPoolLimitsAndClose 检查每个地址最多保留 maxIdle 条空闲连接、Close 之后放回的连接被关闭，
// 以及 Target 只认 NewPool 的地址。
func TestPoolLimitsAndClose(t *testing.T) {
	p := NewPool([]string{"http://127.0.0.1:1/v1/completions"}, "", false, false, 1)
	if p.Target("http://127.0.0.1:2/v1/completions") != nil {
		t.Fatal("unknown url must have no target")
	}
	if NewPool([]string{"http://127.0.0.1:1/a", "https://127.0.0.1:1/b"}, "", false, false, 1) != nil {
		t.Fatal("one ineligible url must disable h1 for the run")
	}
	mk := func() (*Conn, net.Conn) {
		a, b := net.Pipe()
		return newConn(a, "x:1"), b
	}
	c1, o1 := mk()
	c2, o2 := mk()
	defer o1.Close()
	defer o2.Close()
	p.put(c1)
	p.put(c2) // 超过 maxIdle：关闭
	if _, err := o2.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("the surplus connection must be closed, read gave %v", err)
	}
	if p.get("x:1") != c1 || p.get("x:1") != nil {
		t.Fatal("pool get order")
	}
	p.put(c1)
	p.Close()
	if _, err := o1.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("Close must close idle connections, read gave %v", err)
	}
	c3, o3 := mk()
	defer o3.Close()
	p.put(c3)
	if _, err := o3.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("a connection returned after Close must be closed, read gave %v", err)
	}
}

// TestTargetForEligibility 检查 h1 传输只用于与 net/http 等价的地址。
func TestTargetForEligibility(t *testing.T) {
	for u, want := range map[string]bool{
		"http://127.0.0.1:8000/v1/chat/completions":      true,
		"http://localhost/v1/completions":                true,
		"http://[::1]:8000/v1/completions":               true,
		"https://127.0.0.1:8000/v1/chat/completions":     false,
		"http://user:pw@127.0.0.1:8000/v1/completions":   false,
		"http://[fe80::1%25eth0]:8000/v1/completions":    false,
		"http://xn--bcher-kva.example/v1/completions":    true,
		"http://b\u00fccher.example/v1/chat/completions": false,
	} {
		if got := TargetFor(u, "", true, http.ProxyFromEnvironment) != nil; got != want {
			t.Errorf("%s: eligible=%v, want %v", u, got, want)
		}
	}
	tgt := TargetFor("http://localhost/v1/completions?x=1", "k", false, http.ProxyFromEnvironment)
	if tgt.addr != "localhost:80" || string(tgt.head) != "POST /v1/completions?x=1 HTTP/1.1\r\nHost: localhost\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: " ||
		string(tgt.tail) != "\r\nAuthorization: Bearer k\r\nContent-Type: application/json\r\n\r\n" {
		t.Fatalf("target %+v", tgt)
	}
	viaProxy := func(*http.Request) (*url.URL, error) { return url.Parse("http://proxy.invalid:3128") }
	if TargetFor("http://10.1.2.3/v1/completions", "", true, viaProxy) != nil {
		t.Fatal("h1 used for a target the environment routes through a proxy")
	}
	proxyErr := func(*http.Request) (*url.URL, error) { return nil, errors.New("bad proxy env") }
	if TargetFor("http://10.1.2.3/v1/completions", "", true, proxyErr) != nil {
		t.Fatal("h1 used although the proxy environment is invalid")
	}
}

// TestParseHelpers 钉住分帧辅助函数的边界：块大小、Content-Length、Connection 令牌。
func TestParseHelpers(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1a": 26, "FF ; x=y": 255, "10\t": 16} {
		if got, err := parseChunkSize([]byte(in)); err != nil || got != want {
			t.Errorf("parseChunkSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", ";x", "g", "11111111111111111"} {
		if _, err := parseChunkSize([]byte(in)); err == nil {
			t.Errorf("parseChunkSize(%q) accepted", in)
		}
	}
	if v, ok := parseContentLength([]byte("9223372036854775807")); !ok || v != 1<<63-1 {
		t.Errorf("max int64 Content-Length: %d %v", v, ok)
	}
	for _, in := range []string{"9223372036854775808", "-1", "+1", "1 2"} {
		if _, ok := parseContentLength([]byte(in)); ok {
			t.Errorf("parseContentLength(%q) accepted", in)
		}
	}
	if !shouldClose(1, 1, []byte("keep-alive, Close")) || shouldClose(1, 1, nil) || !shouldClose(1, 0, nil) ||
		shouldClose(1, 0, []byte("Keep-Alive")) || !shouldClose(0, 9, nil) {
		t.Error("shouldClose does not match net/http")
	}
	if errors.Is(ErrHeadersTooLarge, io.EOF) {
		t.Error("unexpected error identity")
	}
}
