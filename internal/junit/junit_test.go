package junit

import (
	"encoding/xml"
	"errors"
	"strings"
	"testing"
)

// TestWriteRoundTrip 检查合计、属性与结构：写出后能按同样的类型读回，且声明、缩进、
// 结尾换行都在。
func TestWriteRoundTrip(t *testing.T) {
	s := Suite{Name: "s1", Time: Seconds(1.5), Timestamp: "2026-11-22T07:00:00"}
	s.Add(Case{Name: "ok", Classname: "c", Time: Seconds(0.5), SystemOut: "fine"})
	s.Add(Case{Name: "bad", Classname: "c", Time: Seconds(1), Failure: &Message{Message: "boom", Type: "fail", Body: "details <&>"}})
	s.Add(Case{Name: "skip", Classname: "c", Time: Seconds(0), Skipped: &Message{Message: "no tools"}})
	var root Suites
	root.Name, root.Time = "run", Seconds(1.5)
	root.Add(s)
	root.Add(Suite{Name: "empty", Time: Seconds(0)})
	var b strings.Builder
	if err := Write(&b, root); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.HasPrefix(out, xml.Header) || !strings.HasSuffix(out, "</testsuites>\n") || !strings.Contains(out, "\n  <testsuite ") {
		t.Fatalf("layout:\n%s", out)
	}
	if !strings.Contains(out, `<testsuites name="run" tests="3" failures="1" errors="0" skipped="1" time="1.500">`) ||
		!strings.Contains(out, `<testsuite name="s1" tests="3" failures="1" errors="0" skipped="1" time="1.500" timestamp="2026-11-22T07:00:00">`) || !strings.Contains(out, "details &lt;&amp;&gt;") {
		t.Fatalf("attributes or escaping:\n%s", out)
	}
	var back Suites
	if err := xml.Unmarshal([]byte(out), &back); err != nil {
		t.Fatal(err)
	}
	if back.Tests != 3 || back.Failures != 1 || back.Skipped != 1 || len(back.Suites) != 2 ||
		back.Suites[0].Cases[1].Failure.Message != "boom" || back.Suites[0].Cases[2].Skipped == nil {
		t.Fatalf("round trip: %+v", back)
	}
}

// failWriter 在第 n 次写入时失败。
type failWriter struct{ n int }

// Write 实现 io.Writer。
func (f *failWriter) Write(p []byte) (int, error) {
	f.n--
	if f.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

// TestWriteErrors 检查每一步的写错误都被返回。
func TestWriteErrors(t *testing.T) {
	for n := range 3 {
		if err := Write(&failWriter{n: n}, Suites{Name: "x"}); err == nil {
			t.Errorf("write failing at step %d: no error", n)
		}
	}
}
