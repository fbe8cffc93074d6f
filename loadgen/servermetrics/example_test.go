package servermetrics_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/vllm-cibench/cibench/loadgen/servermetrics"
)

// Example 在一段负载前后各抓取一次 /metrics，用 E2E 直方图的差值给出这段时间里服务端自己
// 量到的请求数与 P50（与 Grafana 上 histogram_quantile 对同一区间给出的值相同）。
func Example() {
	var served atomic.Int64 // 服务端累计完成的请求数，全部落在 (0, 0.5s] 桶里
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := served.Load()
		fmt.Fprintf(w, "# TYPE vllm:e2e_request_latency_seconds histogram\n"+
			"vllm:e2e_request_latency_seconds_bucket{le=\"0.5\"} %d\n"+
			"vllm:e2e_request_latency_seconds_bucket{le=\"+Inf\"} %d\n"+
			"vllm:e2e_request_latency_seconds_sum %g\n"+
			"vllm:e2e_request_latency_seconds_count %d\n", n, n, 0.2*float64(n), n)
	}))
	defer srv.Close()

	s := servermetrics.NewScraper(srv.Client(), []string{srv.URL + "/v1"}, 0, 0)
	ctx := context.Background()
	before := s.Scrape(ctx)
	served.Add(40) // 这段时间里服务端完成了 40 个请求
	after := s.Scrape(ctx)

	d := after.Hist[servermetrics.HistE2E].Delta(before.Hist[servermetrics.HistE2E])
	fmt.Printf("requests %.0f, P50 %.2fs, avg %.2fs\n", d.Count, d.Quantile(0.5), d.Sum/d.Count)
	// Output: requests 40, P50 0.25s, avg 0.20s
}
