package pipeline_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/vllm-cibench/cibench/pipeline"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/runtype"
)

// TestPerfStageEndsWhenServerStopsAnswering 复现 issue 38 的性能阶段：外部服务回答了几个请求后不再回答。
// 以前每个分组的每个请求都等满超时，两个档位 × 三个分组约 40 秒（出厂 120 秒超时时是整个阶段的时限）。
// 现在第一个档位在接连三个请求没有回答后结束（行标为不完整，不会成为基线），第二个档位不再运行并写明原因，
// 阶段以错误结束、门禁变红。
func TestPerfStageEndsWhenServerStopsAnswering(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.HasSuffix(r.URL.Path, "/models") || strings.Contains(string(b), `"hi"`) || n.Add(1) <= 6 {
			if strings.HasSuffix(r.URL.Path, "/models") {
				_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model","max_model_len":4096}]}`)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n\n")
			return
		}
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	}))
	t.Cleanup(srv.Close)
	prof := "concurrency: [1, 2, 4]\ninput_length: [16]\noutput_length: [4]\nrequests_per_concurrency: 10\nwarmup: 0\ntimeout: 1s\nidle_timeout: 1s\n"
	fsys := fstest.MapFS{
		"tests/perf/profiles/pr.yaml":  {Data: []byte(prof)},
		"tests/perf/profiles/pr2.yaml": {Data: []byte(prof)},
		"scenarios/ext.yaml":           {Data: []byte("mode: external\nserved_model_name: m\nbase_url: " + srv.URL + "/v1\n")},
		"matrix.yaml":                  {Data: []byte("scenarios:\n  ext:\n    pr: {perf: {profiles: [pr, pr2]}, accuracy: {enabled: false}}\n")},
	}
	o := options(t, fsys, runtype.PR, t.TempDir())
	o.Stages = []report.Stage{report.StagePerf}
	start := time.Now()
	out, err := pipeline.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	sc := scenario(t, summary(t, out.Dir), "ext")
	var msg string
	for _, e := range sc.Scenario.Errors {
		msg += e.Message + "\n"
	}
	for _, want := range []string{"profile pr: loadgen: server unresponsive since request", "profile pr2 not run: the server stopped answering during profile pr"} {
		if !strings.Contains(msg, want) {
			t.Errorf("stage errors lack %q:\n%s", want, msg)
		}
	}
	if len(sc.Perf) != 1 || !sc.Perf[0].Incomplete || sc.Perf[0].FailureClasses["unresponsive"] == 0 {
		t.Errorf("perf rows %+v, want one incomplete row with unresponsive failures", sc.Perf)
	}
	if out.ExitCode != 1 {
		t.Errorf("exit %d, want 1", out.ExitCode)
	}
	if errors.Is(err, context.DeadlineExceeded) || el > 20*time.Second {
		t.Errorf("took %v (about 40 s before)", el)
	}
}
