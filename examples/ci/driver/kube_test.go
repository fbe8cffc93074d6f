package driver_test

import (
	"context"
	"github.com/vllm-cibench/cibench/gate"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/examples/ci/driver"
	"github.com/vllm-cibench/cibench/internal/kubetest"
	"github.com/vllm-cibench/cibench/matrix"
)

// shipped 读取仓库 configs/ 下的文件，把 old 依次替换为 new。
func shipped(t *testing.T, rel string, replace ...string) *fstest.MapFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "configs", rel))
	if err != nil {
		t.Fatal(err)
	}
	return &fstest.MapFile{Data: []byte(strings.NewReplacer(replace...).Replace(string(b)))}
}

// TestKubeScenariosEndToEnd 在真实控制面（etcd + kube-apiserver + kube-controller-manager
// + kwok）上，让驱动按仓库自带的 k8s-hybrid（Qwen3-32B）与 k8s-pd（DeepSeek-R1 2P1D）
// 场景与清单完整运行：apply、就绪、NodePort 解析、/health、功能/性能/精度阶段、
// Pod 日志归档、前台删除。模拟器监听各场景 Service 的 NodePort，代替 vLLM Pod。
func TestKubeScenariosEndToEnd(t *testing.T) {
	c := kubetest.Start(t)
	hybridPort, pdPort := kubetest.FreeNodePort(t), kubetest.FreeNodePort(t)
	for model, port := range map[string]int{"qwen3-32b": hybridPort, "deepseek-r1": pdPort} {
		emulator.Start(t, emulator.Config{Model: model, Addr: "127.0.0.1:" + strconv.Itoa(port)})
	}
	kubeconf := "  kubeconfig: " + strconv.Quote(c.Kubeconfig) + "\n  context: cibench\n  poll_interval: 200ms\n"
	hybrid, pd := "k8s_hybrid_qwen3-32b_tp2_w4a8", "k8s_pd_deepseek-r1_2p1d_reasoning_w8a8"
	fsys := treeAcc(realDataAcc(t))
	fsys["scenarios/"+hybrid+".yaml"] = shipped(t, "scenarios/"+hybrid+".yaml", "\nk8s:\n", "\nk8s:\n"+kubeconf, "node_port: 30090", "node_port: "+strconv.Itoa(hybridPort))
	fsys["scenarios/"+pd+".yaml"] = shipped(t, "scenarios/"+pd+".yaml", "\nk8s:\n", "\nk8s:\n"+kubeconf, "node_port: 30080", "node_port: "+strconv.Itoa(pdPort))
	fsys["k8s/qwen3-32b-hybrid.yaml"] = shipped(t, "k8s/qwen3-32b-hybrid.yaml", "nodePort: 30090", "nodePort: "+strconv.Itoa(hybridPort))
	for _, f := range []string{"scheduler", "prefill", "decode"} {
		fsys["k8s/deepseek-r1-pd/"+f+".yaml"] = shipped(t, "k8s/deepseek-r1-pd/"+f+".yaml", "nodePort: 30080", "nodePort: "+strconv.Itoa(pdPort))
	}
	fsys["matrix.yaml"] = &fstest.MapFile{Data: []byte("scenarios:\n  " + hybrid + ":\n    pr: {functional: {suites: [chat_core]}}\n  " + pd + ":\n    pr: {functional: {suites: [chat_core]}}\n")}

	root := t.TempDir()
	o := options(t, fsys, matrix.RunPR, root)
	o.RunID = "kube"
	out, err := driver.Run(context.Background(), o)
	if err != nil || out.ExitCode != gate.ExitOK {
		t.Fatalf("exit %d err %v: %s", out.ExitCode, err, o.Out)
	}
	res := summary(t, out.Dir)
	for _, name := range []string{hybrid, pd} {
		sc := scenario(t, res, name)
		if sc.Functional == nil || sc.Functional.Suites[0].Passed == 0 || sc.Functional.Suites[0].Failed != 0 || len(sc.Perf) == 0 {
			t.Errorf("%s: functional %+v perf rows %d", name, sc.Functional, len(sc.Perf))
		}
		var podLogs int
		_ = filepath.WalkDir(filepath.Join(out.Dir, name, "logs"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".log") {
				podLogs++
			}
			return nil
		})
		if podLogs == 0 {
			t.Errorf("%s: no pod logs archived under %s/logs", name, name)
		}
	}
	// 拆除是前台删除：运行结束后命名空间里不再有这两个场景的 Pod。
	pods, err := c.Client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("%d pods left after teardown", len(pods.Items))
	}
}
