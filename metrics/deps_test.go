package metrics_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLoadgenExportLinksNoOtherStage 是 issue 24 的验收测试：一个只做压测并导出到 Prometheus 的程序
// （导入 loadgen、metrics 与 client_golang 的 push）链接的包里没有 functional、accuracy 或 openai-go。
// 以前 metrics.Results 持有 *functional.Report 与 []accuracy.EvalResult，这样的程序要链接 347 个包，
// 其中就有这三者；现在功能与精度的导出在 metrics/functionalmetrics 与 metrics/accuracymetrics 里。
// go list -deps 对这几个包的并集就是这样一个 main 包链接的全部包（main 自己除外）。
func TestLoadgenExportLinksNoOtherStage(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the program's packages: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-deps",
		"github.com/vllm-cibench/cibench/loadgen",
		"github.com/vllm-cibench/cibench/metrics",
		"github.com/prometheus/client_golang/prometheus/push")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 50 {
		t.Fatalf("go list -deps printed %d packages; the toolchain call did not list the program", len(pkgs))
	}
	var linked []string
	for _, p := range pkgs {
		switch {
		case p == "github.com/vllm-cibench/cibench/functional", strings.HasPrefix(p, "github.com/vllm-cibench/cibench/functional/"),
			p == "github.com/vllm-cibench/cibench/accuracy", strings.HasPrefix(p, "github.com/vllm-cibench/cibench/accuracy/"),
			strings.HasPrefix(p, "github.com/openai/openai-go"),
			strings.HasPrefix(p, "github.com/vllm-cibench/cibench/metrics/"):
			linked = append(linked, p)
		}
	}
	if len(linked) > 0 {
		t.Fatalf("a loadgen + Prometheus program links %v (%d packages in all)", linked, len(pkgs))
	}
	t.Logf("a loadgen + Prometheus program links %d packages", len(pkgs))
}
