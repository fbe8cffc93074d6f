package h1

import (
	"bytes"
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
	"syscall"
	"time"

	"github.com/vllm-cibench/cibench/internal/rxstamp"
)

// 本文件是 loadgen 生成请求热路径上专用的 HTTP/1.1 客户端（下称 h1 传输）。
//
// 为什么不用 net/http：每个请求 net/http 要经过 readLoop / writeLoop 两个 goroutine 的交接、
// 逐请求的头部 map、chunked 读取器与 bufio 的多层拷贝；在 c=256、每个流 32 个 chunk 的零时延
// 压测里，这些占到客户端 CPU 的三成以上（issue 13 的 0.10 ms/请求目标）。h1 传输让 worker
// goroutine 自己在自己取到的 keep-alive 连接上一次 write 发出请求头与请求体，自己解析状态行、
// 头部与 chunked 分帧（分帧在连接的读缓冲区里就地解析，SSE 读取器经 Peek/Discard 直接在这个缓冲区里
// 找行，不再经 bufio 拷贝一次），不再有后台
// goroutine 与头部 map。
//
// 只在与 net/http 完全等价的情况下使用（见 NewPool、TargetFor）：全部实例地址都是明文 http://、
// 环境变量不要求代理（http.ProxyFromEnvironment）、调用方没有提供 loadgen.Target.HTTPClient、
// 地址里没有用户信息。其余情况（https、代理、自定义客户端）仍走 net/http。/tokenize、/metrics
// 与探测请求不在热路径上，始终走 net/http。
//
// 与 net/http 相同的行为：请求头的内容与顺序（Host、User-Agent、Content-Length、Accept、
// Authorization、Content-Type）；响应按 RFC 9112 分帧（chunked、Content-Length、读到关闭），
// HTTP/1.0 响应（没有 keep-alive 时用完即关），跳过 1xx 中间响应（与 net/http 一样按头部字节数
// 而不是个数设限）；只有响应体被完整、干净地读完、服务端没有说 Connection: close、请求没有被
// 中止时连接才放回池中复用，复用前用非阻塞的 MSG_PEEK 确认服务端没有关闭它或发来多余的字节；
// 复用的连接在收到任何响应字节之前就失败时，在新拨的连接上重发一次（见 Session.RoundTrip）。错误的
// 说明沿用 net/http 的形式（Post "url": …），所以记录里的 Error 与类别和走 net/http 时一致。
//
// 截止时刻与取消：不建逐请求的 ctx。总超时与静默超时由调用方（loadgen 的 exchange）复用的
// 定时器负责，运行取消由每个 Session 登记一次的 context.AfterFunc 负责；两者都经 Session.Abort
// 记下原因（context.DeadlineExceeded、调用方的静默超时错误、context.Canceled）并把连接的读写
// 截止时刻设到过去，阻塞中的读写立即返回、错误换成这个原因（与 net/http 在 ctx 结束时给出的
// 相同），由调用方分类；被中止的连接不再复用。

// MaxHeaderBytes 是响应头（状态行 + 头部，以及 chunked 的 trailer）的字节上限。真实的 vLLM
// 响应头不到 1 KiB；超过上限的响应得到 ErrHeadersTooLarge（loadgen 记为 too_large），不会无限制
// 地缓冲。loadgen 的 net/http 那一路用同一个上限（Transport.MaxResponseHeaderBytes）。
const MaxHeaderBytes = 1 << 20

// maxChunkLine 是 chunked 分帧中一行（块大小与扩展）的字节上限，与 net/http 相同。
const maxChunkLine = 4096

// h1BufSize 是每条连接的读缓冲区大小（与 net/http 的 ReadBufferSize 相同）。
const h1BufSize = 16 << 10

// ErrHeadersTooLarge 表示响应头超过 MaxHeaderBytes。调用方用 errors.Is 把它归为超限。
var ErrHeadersTooLarge = fmt.Errorf("h1: response headers exceed %d bytes", MaxHeaderBytes)

// errMalformedChunk 表示 chunked 分帧不合法（说明与 net/http 相同）。
var errMalformedChunk = errors.New("malformed chunked encoding")

// Target 是一个实例地址的预计算结果：拨号地址与请求头前缀。由 TargetFor 或 Pool.Target 得到，
// 创建后只读。
type Target struct {
	url  string // 完整 URL，用于错误说明
	addr string // 拨号地址 host:port
	// head 是从请求行到 "Content-Length: " 为止的请求头；tail 是 Content-Length 之后的其余头部
	// 与空行。请求体长度夹在中间。
	head, tail []byte
}

// Pool 是一次运行中 h1 传输的空闲连接池（按拨号地址分组，后进先出）与各实例的预计算请求头。
// worker 之间共享（并发安全），因此开环不限并发（每个到达一个 Session）时连接同样被复用，与
// net/http 的连接池一致。用完由创建者调用 Close。
type Pool struct {
	targets map[string]*Target
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	maxIdle int // 每个地址最多保留的空闲连接数
	mu      sync.Mutex
	idle    map[string][]*Conn
	closed  bool
}

// NewPool 在 h1 传输对全部 urls 都与 net/http 等价时返回连接池，否则返回 nil（调用方走
// net/http）。urls 是每个实例的完整请求地址；apiKey 与 stream 决定固定的请求头。kernel 为 true
// 时连接带内核接收时间戳（与 loadgen 的 net/http 客户端相同的拨号方式）；maxIdle 是每个地址最多
// 保留的空闲连接数。代理按运行时的环境变量判断（http.ProxyFromEnvironment）。
func NewPool(urls []string, apiKey string, stream, kernel bool, maxIdle int) *Pool {
	p := &Pool{targets: map[string]*Target{}, maxIdle: maxIdle, idle: map[string][]*Conn{}}
	for _, raw := range urls {
		t := TargetFor(raw, apiKey, stream, http.ProxyFromEnvironment)
		if t == nil {
			return nil
		}
		p.targets[raw] = t
	}
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	p.dial = d.DialContext
	if kernel {
		p.dial = rxstamp.DialContext(d)
	}
	return p
}

// TargetFor 返回 raw 的预计算请求头；h1 传输不能与 net/http 等价地处理它时返回 nil：
// 不是 http://、带用户信息（net/http 会据此加 Basic 认证）、主机名含非 ASCII 或 IPv6 zone
// （net/http 会改写 Host 头）、proxy（运行时为 http.ProxyFromEnvironment）要求经代理访问它。
func TargetFor(raw, apiKey string, stream bool, proxy func(*http.Request) (*url.URL, error)) *Target {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.User != nil || u.Opaque != "" || u.Host == "" || u.Fragment != "" {
		return nil
	}
	for _, c := range []byte(u.Host) {
		if c <= ' ' || c >= 0x7f || c == '%' {
			return nil
		}
	}
	if pu, err := proxy(&http.Request{URL: u}); err != nil || pu != nil {
		return nil
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "80"
	}
	var h bytes.Buffer
	fmt.Fprintf(&h, "POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: ", u.RequestURI(), u.Host)
	var tl bytes.Buffer
	tl.WriteString("\r\n")
	if stream {
		tl.WriteString("Accept: text/event-stream\r\n")
	}
	if apiKey != "" {
		tl.WriteString("Authorization: Bearer " + apiKey + "\r\n")
	}
	tl.WriteString("Content-Type: application/json\r\n\r\n")
	return &Target{url: raw, addr: net.JoinHostPort(host, port), head: h.Bytes(), tail: tl.Bytes()}
}

// Target 返回 url（NewPool 的 urls 之一）的预计算请求头；不在其中时返回 nil（调用方走 net/http）。
func (p *Pool) Target(url string) *Target { return p.targets[url] }

// get 取一条空闲连接；没有时返回 nil。
func (p *Pool) get(addr string) *Conn {
	p.mu.Lock()
	l := p.idle[addr]
	if len(l) == 0 {
		p.mu.Unlock()
		return nil
	}
	c := l[len(l)-1]
	l[len(l)-1] = nil
	p.idle[addr] = l[:len(l)-1]
	p.mu.Unlock()
	return c
}

// put 把干净的连接放回池中；池已关闭或已满时关闭它。
func (p *Pool) put(c *Conn) {
	p.mu.Lock()
	if p.closed || len(p.idle[c.addr]) >= p.maxIdle {
		p.mu.Unlock()
		c.close()
		return
	}
	p.idle[c.addr] = append(p.idle[c.addr], c)
	p.mu.Unlock()
}

// Close 关闭全部空闲连接；之后放回的连接直接关闭。loadgen 的 Run 返回前调用。
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = map[string][]*Conn{}
	p.mu.Unlock()
	for _, l := range idle {
		for _, c := range l {
			c.close()
		}
	}
}

// 响应体的分帧方式。
const (
	bodyNone    = iota // 没有响应体（204、304）
	bodyLength         // Content-Length
	bodyChunked        // Transfer-Encoding: chunked
	bodyClose          // 读到连接关闭
)

// chunked 解析状态。
const (
	csSize    = iota // 等待块大小行
	csData           // 块数据中
	csDataEnd        // 等待块数据之后的 CRLF
	csTrailer        // 最后一块之后的 trailer 行
	csEOF            // 响应体已干净结束
)

// Conn 是 h1 传输的一条连接及其当前响应的读取状态。一个请求期间只由一个 goroutine 使用
// （abort 除外，它只设置截止时刻）。它实现 io.Reader：读的是当前响应的响应体；chunked 响应体
// 还可经 Peek/Discard（sse.Source）就地读取。
type Conn struct {
	nc    net.Conn
	st    rxstamp.Stamper
	addr  string
	buf   []byte // 读缓冲区，buf[r:w] 是已读未用的数据
	r, w  int
	owner *Session // 当前请求所属的 Session（取中止原因用）
	// 复用前存活检查（alive_unix.go）的状态：底层套接字、预先绑定的回调与结果
	raw     syscall.RawConn
	peekFn  func(fd uintptr) bool
	peekOK  bool
	peekBuf [1]byte

	// 当前响应
	status     int
	ctype      string
	mode       int
	remain     int64 // bodyLength：剩余字节；bodyChunked：当前块剩余字节
	cstate     int
	trailer    int  // 已读的 trailer 字节数
	closeAfter bool // 服务端要求关闭，或响应体读到关闭为止
	got        int  // 本次请求收到的字节数（重发判断用）
	berr       error
}

// newConn 包装一条新拨通的连接。
func newConn(nc net.Conn, addr string) *Conn {
	return &Conn{nc: nc, st: rxstamp.Of(nc), addr: addr, buf: make([]byte, h1BufSize)}
}

// Status 返回当前响应的状态码（RoundTrip 返回之后有效）。
func (c *Conn) Status() int { return c.status }

// ContentType 返回当前响应的 Content-Type（原文，常见取值不分配）。
func (c *Conn) ContentType() string { return c.ctype }

// Chunked 报告当前响应体是否为 chunked 分帧；只有这时 Peek/Discard 可用。
func (c *Conn) Chunked() bool { return c.mode == bodyChunked }

// Stamper 返回连接的接收时间戳来源（没有内核时间戳时为 nil，见 rxstamp.Of）。
func (c *Conn) Stamper() rxstamp.Stamper { return c.st }

// abort 在请求被中止时（另一个 goroutine 中）让阻塞的读写立即返回。
func (c *Conn) abort() { _ = c.nc.SetDeadline(time.Unix(1, 0)) }

// close 关闭连接。
func (c *Conn) close() { _ = c.nc.Close() }

// ioErr 把读写错误换成请求被中止的原因（已中止时），与 net/http 在 ctx 结束时给出的错误一致。
func (c *Conn) ioErr(err error) error {
	if c.owner != nil {
		c.owner.mu.Lock()
		cause := c.owner.cause
		c.owner.mu.Unlock()
		if cause != nil {
			return cause
		}
	}
	return err
}

// fill 从连接读入更多数据到 buf[w:]（缓冲区满时先把未用的数据移到开头；仍满且 grow 为 true
// 时扩大缓冲区，最多到 limit）。
func (c *Conn) fill(grow bool, limit int) error {
	if c.r > 0 && c.r == c.w {
		c.r, c.w = 0, 0
	}
	if c.w == len(c.buf) {
		switch {
		case c.r > 0:
			c.w = copy(c.buf, c.buf[c.r:c.w])
			c.r = 0
		case grow && len(c.buf) < limit:
			nb := make([]byte, min(2*len(c.buf), limit))
			copy(nb, c.buf[:c.w])
			c.buf = nb
		default:
			return ErrHeadersTooLarge
		}
	}
	n, err := c.nc.Read(c.buf[c.w:])
	c.w += n
	c.got += n
	if n > 0 {
		return nil
	}
	if err == nil {
		return io.ErrNoProgress
	}
	return c.ioErr(err)
}

// line 返回 buf[r:] 中的下一整行（不含行尾的 \n 与 \r）并前移 r；还没有完整的行时 ok 为 false。
func (c *Conn) line() (line []byte, ok bool) {
	i := bytes.IndexByte(c.buf[c.r:c.w], '\n')
	if i < 0 {
		return nil, false
	}
	line = c.buf[c.r : c.r+i]
	c.r += i + 1
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, true
}

// readHead 读取并解析响应头（跳过 1xx 中间响应），确定响应体的分帧方式。与 net/http 相同，
// 1xx 的个数不限，但它们与最终响应的头部合计不超过 MaxHeaderBytes。
func (c *Conn) readHead() error {
	budget := MaxHeaderBytes
	for {
		n, err := c.readOneHead(budget)
		if err != nil {
			return err
		}
		if c.status < 100 || c.status > 199 || c.status == 101 {
			return nil
		}
		budget -= n
	}
}

// readOneHead 读取一个响应的状态行与头部（不超过 budget 字节），返回头部的字节数。解析规则与
// net/http 的 ReadResponse / readTransfer 相同（见文件头）；只保留用到的头部，不建 map。
// 步骤：把整个头部读进缓冲区（bufferHead）→ 状态行（parseStatus）→ 头部（parseHeaders）→
// 分帧（setFraming）→ 必要时把长大的缓冲区换回常规大小。
func (c *Conn) readOneHead(budget int) (int, error) {
	headLen, err := c.bufferHead(budget)
	if err != nil {
		return 0, err
	}
	n, major, minor, err := c.parseStatus()
	if err != nil {
		return 0, err
	}
	c.status = n
	c.ctype = ""
	h, err := c.parseHeaders()
	if err != nil {
		return 0, err
	}
	if err := c.setFraming(n, major, minor, &h); err != nil {
		return 0, err
	}
	if len(c.buf) > h1BufSize && c.w-c.r <= h1BufSize {
		// 超大的响应头让缓冲区长大过：换回常规大小，不让它在连接的余生里占着内存。
		nb := make([]byte, h1BufSize)
		c.w = copy(nb, c.buf[c.r:c.w])
		c.r, c.buf = 0, nb
	}
	return headLen, nil
}

// bufferHead 确保一个完整的响应头（到第一个不在开头的空行为止）都在缓冲区里，返回它的字节数；
// 超过 budget 是 ErrHeadersTooLarge，头部没读完就 EOF 是 io.ErrUnexpectedEOF。
func (c *Conn) bufferHead(budget int) (int, error) {
	// 未用的数据移到缓冲区开头，此后 fill 只在末尾追加（必要时扩大缓冲区），下标保持有效。
	if c.r > 0 {
		c.w = copy(c.buf, c.buf[c.r:c.w])
		c.r = 0
	}
	scan := 0
	for {
		end := false
		for !end {
			i := bytes.IndexByte(c.buf[scan:c.w], '\n')
			if i < 0 {
				break
			}
			ln := c.buf[scan : scan+i]
			scan += i + 1
			end = scan > i+1 && (len(ln) == 0 || (len(ln) == 1 && ln[0] == '\r'))
		}
		if end {
			break
		}
		if c.w > budget {
			return 0, ErrHeadersTooLarge
		}
		if err := c.fill(true, MaxHeaderBytes+maxChunkLine); err != nil {
			if err == io.EOF && c.w > 0 {
				return 0, io.ErrUnexpectedEOF
			}
			return 0, err
		}
	}
	if scan > budget {
		return 0, ErrHeadersTooLarge
	}
	return scan, nil
}

// parseStatus 读出状态行，返回状态码与 HTTP 版本；错误文字与 net/http 相同。
func (c *Conn) parseStatus() (code, major, minor int, err error) {
	status, _ := c.line()
	if len(status) == 0 {
		// 空的状态行（服务端先发了空行）：net/http 把它当作畸形响应。
		return 0, 0, 0, fmt.Errorf("malformed HTTP response %q", "")
	}
	proto, rest, ok := bytes.Cut(status, []byte(" "))
	if !ok {
		return 0, 0, 0, fmt.Errorf("malformed HTTP response %q", status)
	}
	rest = bytes.TrimLeft(rest, " ")
	cb, _, _ := bytes.Cut(rest, []byte(" "))
	if len(cb) != 3 {
		return 0, 0, 0, fmt.Errorf("malformed HTTP status code %q", cb)
	}
	code, err = strconv.Atoi(string(cb))
	if err != nil || code < 0 {
		return 0, 0, 0, fmt.Errorf("malformed HTTP status code %q", cb)
	}
	major, minor, ok = http.ParseHTTPVersion(string(proto))
	if !ok {
		return 0, 0, 0, fmt.Errorf("malformed HTTP version %q", proto)
	}
	return code, major, minor, nil
}

// headFields 是分帧要用的头部：Content-Length、Transfer-Encoding 与 Connection 的值（切片指向
// 缓冲区，折叠续行与多个 Connection 时是副本）和前两者出现的次数。
type headFields struct {
	cl, te, conn []byte
	ncl, nte     int
}

// parseHeaders 逐行解析头部直到空行：记下 Content-Type（c.ctype）与分帧要用的头部，接受已废弃的
// 折叠续行，拒绝畸形的行与互相矛盾的多个 Content-Length。
func (c *Conn) parseHeaders() (headFields, error) {
	var h headFields
	var last *[]byte
	first := true
	for {
		ln, _ := c.line()
		if len(ln) == 0 {
			return h, nil
		}
		if ln[0] == ' ' || ln[0] == '\t' { // 续行（已废弃的折叠）：接到上一个头部后面
			if first {
				return h, fmt.Errorf("malformed MIME header initial line: %q", ln)
			}
			if last != nil {
				*last = append(append(bytes.Clone(*last), ' '), bytes.TrimSpace(ln)...)
			}
			continue
		}
		first = false
		k, v, ok := bytes.Cut(ln, []byte(":"))
		if !ok || len(k) == 0 || !validHeaderKey(k) {
			return h, fmt.Errorf("malformed MIME header line: %q", ln)
		}
		v = bytes.TrimSpace(v)
		last = nil
		switch {
		case asciiEqualFold(k, "content-type"):
			if c.ctype == "" {
				c.ctype = internCT(v)
			}
		case asciiEqualFold(k, "content-length"):
			h.ncl++
			if h.ncl > 1 && !bytes.Equal(h.cl, v) {
				return h, fmt.Errorf("http: message cannot contain multiple Content-Length headers; got %q", [][]byte{h.cl, v})
			}
			h.cl = v
		case asciiEqualFold(k, "transfer-encoding"):
			h.nte++
			h.te = v
			last = &h.te
		case asciiEqualFold(k, "connection"):
			if h.conn == nil {
				h.conn = v
			} else {
				h.conn = append(append(bytes.Clone(h.conn), ','), v...)
			}
			last = &h.conn
		}
	}
}

// setFraming 按 net/http 的 readTransfer 定下响应体的分帧方式（无响应体、chunked、定长或读到
// 连接关闭）与连接能否复用。
func (c *Conn) setFraming(n, major, minor int, h *headFields) error {
	c.closeAfter = shouldClose(major, minor, h.conn)
	chunked := false
	if h.nte > 0 && (major > 1 || (major == 1 && minor >= 1)) {
		if h.nte > 1 {
			return fmt.Errorf("too many transfer encodings: %q", h.te)
		}
		if !asciiEqualFold(h.te, "chunked") {
			return fmt.Errorf("unsupported transfer encoding: %q", h.te)
		}
		chunked = true
	}
	// Content-Length 无论分帧方式都要合法（net/http 的 fixLength 先校验它）。
	clv := int64(-1)
	if h.ncl > 0 {
		if len(h.cl) == 0 {
			return fmt.Errorf("invalid empty Content-Length %q", h.cl)
		}
		v, ok := parseContentLength(h.cl)
		if !ok {
			return fmt.Errorf("bad Content-Length %q", h.cl)
		}
		clv = v
	}
	c.remain, c.cstate, c.trailer, c.berr = 0, csSize, 0, nil
	switch {
	case n/100 == 1 || n == 204 || n == 304:
		// 没有响应体。101（协议升级）之后的字节不再是 HTTP：连接不复用。
		c.mode, c.cstate = bodyNone, csEOF
		if n == 101 {
			c.closeAfter = true
		}
	case chunked:
		c.mode = bodyChunked
	case clv >= 0:
		c.mode, c.remain = bodyLength, clv
		if clv == 0 {
			c.cstate = csEOF
		}
	default:
		c.mode, c.closeAfter = bodyClose, true
	}
	return nil
}

// parseContentLength 解析 Content-Length（只允许十进制数字，不溢出 int64）。
func parseContentLength(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var v int64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		if v > (1<<63-1-int64(ch-'0'))/10 {
			return 0, false
		}
		v = v*10 + int64(ch-'0')
	}
	return v, true
}

// shouldClose 与 net/http 的 shouldClose 相同：HTTP/1.0 没有 keep-alive 时关闭，
// Connection 里有 close 时关闭。
func shouldClose(major, minor int, conn []byte) bool {
	if major < 1 {
		return true
	}
	hasClose := headerHasToken(conn, "close")
	if major == 1 && minor == 0 {
		return hasClose || !headerHasToken(conn, "keep-alive")
	}
	return hasClose
}

// headerHasToken 报告逗号分隔的头部值里是否有 token（不区分大小写）。
func headerHasToken(v []byte, token string) bool {
	for len(v) > 0 {
		var part []byte
		part, v, _ = bytes.Cut(v, []byte(","))
		if asciiEqualFold(bytes.TrimSpace(part), token) {
			return true
		}
	}
	return false
}

// asciiEqualFold 报告 b 与小写的 s 是否在 ASCII 大小写折叠下相等。
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		ch := b[i]
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		if ch != s[i] {
			return false
		}
	}
	return true
}

// validHeaderKey 报告 k 是否是合法的头部名（RFC 7230 的 token）。
func validHeaderKey(k []byte) bool {
	for _, ch := range k {
		if ch <= ' ' || ch >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, ch) >= 0 {
			return false
		}
	}
	return true
}

// internCT 返回 Content-Type 的独立副本（缓冲区会被后续读取覆盖）；常见取值不分配。
func internCT(v []byte) string {
	switch string(v) {
	case "text/event-stream; charset=utf-8":
		return "text/event-stream; charset=utf-8"
	case "text/event-stream":
		return "text/event-stream"
	case "application/json":
		return "application/json"
	}
	return string(v)
}

// Read 读当前响应的响应体（io.Reader）。chunked 分帧在连接的读缓冲区里就地解析，一次调用
// 交出缓冲区里所有块的载荷，只在一个字节都交不出时才读连接。
func (c *Conn) Read(p []byte) (int, error) {
	if c.berr != nil {
		return 0, c.berr
	}
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var err error
	switch c.mode {
	case bodyNone:
		c.cstate = csEOF
		return 0, io.EOF
	case bodyLength:
		n, err = c.readLength(p)
	case bodyClose:
		n, err = c.readClose(p)
	default:
		n, err = c.readChunked(p)
	}
	if err != nil {
		c.berr = err
	}
	return n, err
}

// readLength 读 Content-Length 分帧的响应体；提前结束为 io.ErrUnexpectedEOF（与 net/http 相同）。
func (c *Conn) readLength(p []byte) (int, error) {
	if c.remain == 0 {
		c.cstate = csEOF
		return 0, io.EOF
	}
	if int64(len(p)) > c.remain {
		p = p[:c.remain]
	}
	if c.r == c.w {
		c.r, c.w = 0, 0
		// 缓冲区空：直接读进调用方的缓冲区，省一次拷贝。
		n, err := c.nc.Read(p)
		c.got += n
		c.remain -= int64(n)
		if n > 0 {
			if c.remain == 0 {
				c.cstate = csEOF
			}
			return n, nil
		}
		if err == io.EOF || err == nil {
			return 0, io.ErrUnexpectedEOF
		}
		return 0, c.ioErr(err)
	}
	n := copy(p, c.buf[c.r:c.w])
	c.r += n
	c.remain -= int64(n)
	if c.remain == 0 {
		c.cstate = csEOF
	}
	return n, nil
}

// readClose 读"读到关闭为止"的响应体。
func (c *Conn) readClose(p []byte) (int, error) {
	if c.r < c.w {
		n := copy(p, c.buf[c.r:c.w])
		c.r += n
		return n, nil
	}
	n, err := c.nc.Read(p)
	c.got += n
	if n > 0 {
		return n, nil
	}
	if err == io.EOF || err == nil {
		c.cstate = csEOF
		return 0, io.EOF
	}
	return 0, c.ioErr(err)
}

// readChunked 解析 chunked 分帧（规则见 frame），交出缓冲区里所有块的载荷；只在一个字节
// 都还没交出时才读连接。
func (c *Conn) readChunked(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if err := c.frame(n == 0); err != nil {
			if err == errWouldRead || (err == io.EOF && n > 0) {
				return n, nil
			}
			return n, err
		}
		k := copy(p[n:], c.payload())
		c.Discard(k)
		n += k
	}
	return n, nil
}

// errWouldRead 是 frame 在不允许读连接（canRead 为 false）而又需要更多数据时的内部信号。
var errWouldRead = errors.New("h1: would read")

// frame 推进 chunked 分帧，直到缓冲区里有当前块的载荷可交出（返回 nil，见 payload），或
// 响应体已干净结束（io.EOF）。规则与 net/http 的 chunkedReader 相同：块大小行不超过 4096
// 字节、允许扩展、块数据后必须是 CRLF、最后一块之后读完 trailer。需要更多数据时：canRead
// 为 true 则读连接，否则返回 errWouldRead。
func (c *Conn) frame(canRead bool) error {
	for {
		switch c.cstate {
		case csSize:
			ln, ok := c.line()
			if !ok {
				if c.w-c.r >= maxChunkLine {
					return errors.New("header line too long")
				}
				if err := c.more(canRead); err != nil {
					return err
				}
				continue
			}
			if len(ln) >= maxChunkLine {
				return errors.New("header line too long")
			}
			size, err := parseChunkSize(ln)
			if err != nil {
				return err
			}
			if size == 0 {
				c.cstate = csTrailer
			} else {
				c.remain, c.cstate = size, csData
			}
		case csData:
			if c.r < c.w {
				return nil
			}
			if err := c.more(canRead); err != nil {
				return err
			}
		case csDataEnd:
			if c.w-c.r < 2 {
				if err := c.more(canRead); err != nil {
					return err
				}
				continue
			}
			if c.buf[c.r] != '\r' || c.buf[c.r+1] != '\n' {
				return errMalformedChunk
			}
			c.r += 2
			c.cstate = csSize
		case csTrailer:
			before := c.r
			ln, ok := c.line()
			if !ok {
				if c.trailer+c.w-c.r > MaxHeaderBytes {
					return ErrHeadersTooLarge
				}
				if err := c.more(canRead); err != nil {
					return err
				}
				continue
			}
			c.trailer += c.r - before
			if c.trailer > MaxHeaderBytes {
				return ErrHeadersTooLarge
			}
			if len(ln) == 0 {
				c.cstate = csEOF
			}
		default: // csEOF
			return io.EOF
		}
	}
}

// more 为 frame 读入更多数据（canRead 为 false 时返回 errWouldRead）。
func (c *Conn) more(canRead bool) error {
	if !canRead {
		return errWouldRead
	}
	return c.fillBody()
}

// payload 返回缓冲区里当前块的载荷（frame 返回 nil 之后调用）。
func (c *Conn) payload() []byte {
	return c.buf[c.r : c.r+int(min(int64(c.w-c.r), c.remain))]
}

// Peek 实现 sse.Source（只用于 chunked 响应体，见 Chunked）：返回读缓冲区里当前块的载荷，
// 不拷贝；没有时按 frame 的规则读连接。错误与 Read 相同，并同样被记下。
func (c *Conn) Peek() ([]byte, error) {
	if c.berr != nil {
		return nil, c.berr
	}
	if err := c.frame(true); err != nil {
		c.berr = err
		return nil, err
	}
	return c.payload(), nil
}

// Discard 实现 sse.Source：消费当前块载荷的前 n 个字节。
func (c *Conn) Discard(n int) {
	c.r += n
	c.remain -= int64(n)
	if c.remain == 0 {
		c.cstate = csDataEnd
	}
}

// fillBody 为响应体读入更多数据；连接在响应体中途结束时返回 io.ErrUnexpectedEOF（与 net/http 相同）。
func (c *Conn) fillBody() error {
	err := c.fill(false, 0)
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseChunkSize 解析块大小行：去掉行尾空白与 ";" 之后的扩展，余下必须是十六进制数。
func parseChunkSize(ln []byte) (int64, error) {
	ln = bytes.TrimRight(ln, " \t")
	if i := bytes.IndexByte(ln, ';'); i >= 0 {
		ln = bytes.TrimRight(ln[:i], " \t")
	}
	if len(ln) == 0 {
		return 0, errors.New("empty hex number for chunk length")
	}
	var v int64
	for i, ch := range ln {
		switch {
		case '0' <= ch && ch <= '9':
			ch -= '0'
		case 'a' <= ch && ch <= 'f':
			ch = ch - 'a' + 10
		case 'A' <= ch && ch <= 'F':
			ch = ch - 'A' + 10
		default:
			return 0, errors.New("invalid byte in chunk length")
		}
		if i == 16 {
			return 0, errors.New("http chunk length too large")
		}
		v = v<<4 | int64(ch)
	}
	if v < 0 {
		return 0, errors.New("http chunk length too large")
	}
	return v, nil
}

// reusable 报告响应体是否已被完整、干净地读完，连接可以放回池中：分帧正常结束、服务端没有
// 要求关闭、缓冲区里没有多出的字节（多出的字节在 net/http 里是"空闲连接上的不请自来的响应"，
// 它会关闭连接）。
func (c *Conn) reusable() bool {
	return c.cstate == csEOF && !c.closeAfter && c.r == c.w && (c.berr == nil || c.berr == io.EOF)
}

// Session 是一个 worker 的 h1 请求状态：所用的连接池、当前请求的中止状态与复用的请求缓冲。
// 一个 worker 一个，同一时刻只有一个请求；Abort 可在别的 goroutine（超时定时器、运行取消）中
// 调用，其余方法只在 worker 自己的 goroutine 中调用。零值加上 Pool 即可使用；worker 退出时调用
// Release。
type Session struct {
	// Pool 是生成请求所用的连接池；nil 表示本 worker 不走 h1 传输。
	Pool *Pool
	// mu 保护 cause（当前请求被中止的原因）与 cur（当前请求使用的连接）；on 表示有请求在进行。
	mu    sync.Mutex
	cause error
	cur   *Conn
	on    bool
	// runCtx 是已登记 context.AfterFunc 的运行 ctx，stopRun 注销它（见 Begin、Release）
	runCtx  context.Context
	stopRun func() bool
	// wbuf 是复用的请求缓冲（请求头 + 请求体）
	wbuf []byte
}

// Begin 开始一个请求：清除上一个请求的中止原因。运行 ctx 的取消每个 Session 只登记一次
// （context.AfterFunc，ctx 变化时换登记），而不是每个请求建两层 ctx；总超时与静默超时由调用方
// 的定时器在到点时调用 Abort。
func (s *Session) Begin(ctx context.Context) {
	if s.runCtx != ctx {
		if s.stopRun != nil {
			s.stopRun()
		}
		s.runCtx = ctx
		s.stopRun = context.AfterFunc(ctx, s.runCanceled)
	}
	s.mu.Lock()
	s.cause, s.on = nil, true
	s.mu.Unlock()
}

// runCanceled 是运行 ctx 取消时的回调：中止在途的请求。
func (s *Session) runCanceled() { s.Abort(context.Canceled) }

// Abort 以 cause 中止当前请求（可在任何 goroutine 中调用）：记下第一个原因，让当前连接上阻塞的
// 读写立即返回，错误换成 cause。没有请求在进行时不做任何事。连接此后不再复用（见 End）。
func (s *Session) Abort(cause error) {
	s.mu.Lock()
	if s.cause == nil && s.on {
		s.cause = cause
	}
	if s.cur != nil {
		s.cur.abort()
	}
	s.mu.Unlock()
}

// Cause 返回当前请求被中止的原因（没有时为 nil）；active 报告是否有请求在进行（Begin 之后、
// End 之前）。
func (s *Session) Cause() (cause error, active bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cause, s.on
}

// attach 把 c 登记为当前请求的连接（c 为 nil 时解除登记），返回此时的中止原因。
// 在锁内交接，Abort 不会在连接放回池中之后才去中止它。
func (s *Session) attach(c *Conn) error {
	s.mu.Lock()
	s.cur = c
	cause := s.cause
	s.mu.Unlock()
	return cause
}

// End 结束当前请求：解除连接登记；响应被干净读完且请求没有被中止时把连接放回池中，否则关闭它。
// 调用方应先停止自己的超时定时器，再调用 End。
func (s *Session) End() {
	s.mu.Lock()
	c, aborted := s.cur, s.cause != nil
	s.cur, s.on = nil, false
	s.mu.Unlock()
	if c == nil {
		return
	}
	if !aborted && c.reusable() {
		s.Pool.put(c)
		return
	}
	c.close()
}

// Release 注销本 Session 在运行 ctx 上的登记；worker 退出时调用。
func (s *Session) Release() {
	if s.stopRun != nil {
		s.stopRun()
		s.stopRun, s.runCtx = nil, nil
	}
}

// RoundTrip 在池中的连接（没有时新拨，拨号受 deadline 约束）上发出 body（sessionID 非空时带
// X-Session-ID 请求头）并读完响应头，返回位于响应体开头、已登记为当前连接的连接。请求头与请求体
// 由一次 write 发出。必须在 Begin 与 End 之间调用。错误的形式与 net/http 的 Client.Do 相同
// （*url.Error）；中止时错误是中止原因（见 Abort）。
//
// 复用的连接在收到任何响应字节之前就失败（写失败、读到 EOF 或 RST）时，在新连接上重发一次：
// 这几乎总是服务端在连接空闲时按 keep-alive 超时关闭了它（uvicorn 默认 5 秒），请求根本没有被
// 处理；客户端这边一个响应字节也没收到，测量里没有任何东西需要撤销。net/http 靠后台读循环在
// 空闲时发现关闭并丢弃连接，达到同样效果。新拨的连接失败不重发。
func (s *Session) RoundTrip(ctx context.Context, t *Target, deadline time.Time, body []byte, sessionID string) (*Conn, error) {
	p := s.Pool
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, &url.Error{Op: "Post", URL: t.url, Err: err}
		}
		var c *Conn
		if attempt == 0 {
			c = p.get(t.addr) // 重发总是用新拨的连接
		}
		reused := c != nil
		if reused && !c.alive() {
			c.close()
			c, reused = nil, false
		}
		if c == nil {
			dctx, cancel := context.WithDeadline(ctx, deadline)
			nc, err := p.dial(dctx, "tcp", t.addr)
			derr := dctx.Err()
			cancel()
			if err != nil {
				if derr == context.DeadlineExceeded && ctx.Err() == nil {
					s.Abort(context.DeadlineExceeded)
				}
				if cause := s.attach(nil); cause != nil {
					err = cause
				}
				return nil, &url.Error{Op: "Post", URL: t.url, Err: err}
			}
			c = newConn(nc, t.addr)
		}
		c.owner, c.got, c.berr = s, 0, nil
		if cause := s.attach(c); cause != nil {
			s.attach(nil)
			c.close()
			return nil, &url.Error{Op: "Post", URL: t.url, Err: cause}
		}
		err := c.writeRequest(s, t, body, sessionID)
		if err == nil {
			err = c.readHead()
		}
		if err == nil {
			return c, nil
		}
		cause := s.attach(nil)
		c.close()
		if cause != nil || !reused || attempt > 0 || c.got > 0 || errors.Is(err, ErrHeadersTooLarge) {
			return nil, &url.Error{Op: "Post", URL: t.url, Err: err}
		}
	}
}

// writeRequest 一次 write 发出请求头与请求体（缓冲复用 s.wbuf）。
func (c *Conn) writeRequest(s *Session, t *Target, body []byte, sessionID string) error {
	b := append(s.wbuf[:0], t.head...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	if sessionID != "" {
		// 会话 id 来自轨迹文件或本进程生成；不含 CR/LF 才写进请求头（否则拆开了请求）。
		if strings.ContainsAny(sessionID, "\r\n") {
			return &url.Error{Op: "Post", URL: t.url, Err: fmt.Errorf("session id %q contains a line break", sessionID)}
		}
		b = append(b, "\r\nX-Session-ID: "...)
		b = append(b, sessionID...)
	}
	b = append(b, t.tail...)
	b = append(b, body...)
	s.wbuf = b
	if _, err := c.nc.Write(b); err != nil {
		return c.ioErr(err)
	}
	return nil
}
