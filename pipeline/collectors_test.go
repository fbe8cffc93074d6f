package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/pipeline"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/functionalreport"
	"github.com/vllm-cibench/cibench/runtype"
)

// TestTeamCollectorsPushedWithBuiltins 检查 Options.Collectors：每日运行把团队的 collector 与内置指标
// 放进同一次 PUT（同一分组），值来自该场景的结果；collector 出错时该场景记一条 push 阶段错误且
// 不推送半组指标。
func TestTeamCollectorsPushedWithBuiltins(t *testing.T) {
	var (
		mu       sync.Mutex
		families []map[string]*dto.MetricFamily
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		dec := expfmt.NewDecoder(bytes.NewReader(b), expfmt.ResponseFormat(r.Header))
		got := map[string]*dto.MetricFamily{}
		for {
			var mf dto.MetricFamily
			if err := dec.Decode(&mf); err != nil {
				break
			}
			got[mf.GetName()] = &mf
		}
		mu.Lock()
		families = append(families, got)
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	o := options(t, tree("emu"), runtype.Daily, t.TempDir())
	o.PushURL = srv.URL
	o.Collectors = func(sc report.Scenario) ([]prometheus.Collector, error) {
		passed := 0.0
		rep, err := functionalreport.Report(sc)
		if err != nil {
			return nil, err
		}
		if rep != nil {
			passed = float64(rep.Count(functional.StatusPass))
		}
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "acme_functional_passed_cases", Help: "Cases ACME saw passing."})
		g.Set(passed)
		return []prometheus.Collector{g}, nil
	}
	out, err := pipeline.Run(context.Background(), o)
	if err != nil || out.ExitCode != gate.ExitOK {
		t.Fatalf("daily run: exit %d err %v", out.ExitCode, err)
	}
	mu.Lock()
	if len(families) != 1 {
		t.Fatalf("%d pushes, want 1", len(families))
	}
	got := families[0]
	mu.Unlock()
	mf := got["acme_functional_passed_cases"]
	want := float64(scenario(t, summary(t, out.Dir), "emu").Functional.Count(functional.StatusPass))
	if mf == nil || len(mf.Metric) != 1 || mf.Metric[0].GetGauge().GetValue() != want || want == 0 {
		t.Fatalf("team metric = %v, want %v", mf, want)
	}
	builtin := false
	for name := range got {
		builtin = builtin || strings.Contains(name, "functional_pass_ratio")
	}
	if !builtin {
		t.Fatalf("the team metric was not pushed together with the built-in ones: %v", got)
	}

	// collector 出错：该场景的 push 阶段失败，Pushgateway 一个请求也没收到。
	mu.Lock()
	families = nil
	mu.Unlock()
	o = options(t, tree("emu"), runtype.Daily, t.TempDir())
	o.PushURL = srv.URL
	o.Collectors = func(report.Scenario) ([]prometheus.Collector, error) {
		return nil, errors.New("acme metrics unavailable")
	}
	out, err = pipeline.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	sc := scenario(t, summary(t, out.Dir), "emu")
	found := false
	for _, e := range sc.Errors {
		found = found || (e.Stage == "push" && strings.Contains(e.Message, "acme metrics unavailable"))
	}
	mu.Lock()
	n := len(families)
	mu.Unlock()
	if !found || n != 0 || out.ExitCode != gate.ExitGateFailed {
		t.Fatalf("collector error: errors %+v, %d pushes, exit %d", sc.Errors, n, out.ExitCode)
	}
}
