package emulator_test

import (
	"bufio"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
)

// TestEmulatorCountsTTFTFromSocketArrival 检查模拟器从请求字节进入套接字的时刻起算
// TTFT，而不是从处理函数开始执行时。用 HTTP/1.1 流水线构造确定的调度延迟：请求 A、B
// 在同一次写入中到达，服务端处理完 A（TTFT 300ms）才会调用 B 的处理函数。从到达时刻
// 起算，B 的截止时刻与 A 相同、A 一结束 B 就立即返回；从处理函数起算则 B 还要再等
// 一个完整的 TTFT。判定用“B 比 A 晚多少”而不是绝对时刻，繁忙的机器上也不误判。
// 非 Linux 平台没有内核时间戳，只检查两个响应都正确。
func TestEmulatorCountsTTFTFromSocketArrival(t *testing.T) {
	const ttft = 300 * time.Millisecond
	_, ep := emulator.Start(t, emulator.Config{Model: "m", TTFT: ttft})
	u, err := url.Parse(ep.BaseURLs[0])
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"model":"m","prompt":"hi","max_tokens":1}`
	one := "POST /v1/completions HTTP/1.1\r\nHost: " + u.Host + "\r\nContent-Type: application/json\r\nContent-Length: " +
		itoa(len(body)) + "\r\n\r\n" + body
	start := time.Now()
	if _, err := conn.Write([]byte(one + one)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	var done [2]time.Duration
	for i := range done {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		var sb strings.Builder
		_, err = bufio.NewReader(resp.Body).WriteTo(&sb)
		resp.Body.Close()
		done[i] = time.Since(start)
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(sb.String(), `"text_completion"`) {
			t.Fatalf("response %d: %d %q %v", i, resp.StatusCode, sb.String(), err)
		}
	}
	if done[0] < ttft {
		t.Fatalf("first response after %v, before the injected TTFT %v", done[0], ttft)
	}
	if runtime.GOOS != "linux" {
		t.Skipf("no kernel receive timestamps on %s (responses at %v)", runtime.GOOS, done)
	}
	if gap := done[1] - done[0]; gap > ttft/2 {
		t.Fatalf("pipelined request answered %v after the first (at %v, %v): TTFT was counted from handler entry, not socket arrival", gap, done[0], done[1])
	}
}
