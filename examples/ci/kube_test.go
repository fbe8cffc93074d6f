package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/deploy/kube"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/internal/kubetest"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/matrix"
	"github.com/vllm-cibench/cibench/pipeline"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/functionalreport"
	"github.com/vllm-cibench/cibench/report/perfreport"
	"github.com/vllm-cibench/cibench/runtype"
)

// 这些测试原在 pipeline 包里；Kubernetes 方式有了自己的模块之后，根模块的测试不再导入
// Kubernetes，于是它们搬到了注册 kube.Modes() 的参考驱动这里，用与 run 相同的登记表运行。

// realDataAcc 返回精度配置中指向仓库自带 GPQA 样例数据的部分（只报告，不设门禁）。
func realDataAcc(t *testing.T) string {
	t.Helper()
	data, err := filepath.Abs("../../accuracy/simpleevals/sampledata")
	if err != nil {
		t.Fatal(err)
	}
	return "dataset_path: " + data + "\ndatasets: [{name: gpqa, report_only: true}]\n"
}

// treeAcc 返回只有档位与精度配置的配置树（场景与矩阵由调用方加上）；acc 是精度配置的数据部分。
func treeAcc(acc string) fstest.MapFS {
	return fstest.MapFS{
		"tests/perf/profiles/pr.yaml":    {Data: []byte("concurrency: [1, 2]\ninput_length: [16]\noutput_length: [8]\nrequests_per_concurrency: 4\nwarmup: 0\nbucket_interval: 20ms\n")},
		"tests/perf/profiles/daily.yaml": {Data: []byte("concurrency: [1, 2]\ninput_length: [16]\noutput_length: [8]\nrequests_per_concurrency: 4\nwarmup: 0\n")},
		"tests/accuracy/pr.yaml":         {Data: []byte("debug: true\nmax_tokens: 16\nnum_threads: 4\n" + acc)},
		"tests/accuracy/daily.yaml":      {Data: []byte("debug: true\nmax_tokens: 16\nnum_threads: 4\n" + acc)},
	}
}

// outBuffer 收集驱动的标准输出，失败时打印。
type outBuffer struct{ bytes.Buffer }

// options 返回与参考驱动相同登记表（DefaultModes 加 kube.Modes()）的运行参数，产物写到 root。
func options(t *testing.T, fsys fs.FS, rt matrix.RunType, root string) pipeline.Options {
	t.Helper()
	modes := pipeline.DefaultModes()
	if err := modes.Register(kube.Modes()...); err != nil {
		t.Fatal(err)
	}
	return pipeline.Options{
		Selection:   pipeline.Selection{Config: fsys, ConfigRoot: "configs", RunType: rt},
		Outputs:     pipeline.Outputs{Artifacts: root, Out: &outBuffer{}},
		Extensions:  pipeline.Extensions{Modes: modes},
		Environment: pipeline.Environment{Getenv: func(string) string { return "" }},
	}
}

// summary 读取运行目录的 summary.json。
func summary(t *testing.T, dir string) report.Result {
	t.Helper()
	res, err := report.Load(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// kubeScenario 是一个场景在 summary.json 中的功能报告与性能行。
type kubeScenario struct {
	Functional *functional.Report
	Perf       []loadgen.Summary
}

// scenario 取出名为 name 的场景的功能与性能结果。
func scenario(t *testing.T, r report.Result, name string) kubeScenario {
	t.Helper()
	for _, s := range r.Scenarios {
		if s.Name == name {
			f, err := functionalreport.Report(s)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := perfreport.Rows(s)
			if err != nil {
				t.Fatal(err)
			}
			return kubeScenario{Functional: f, Perf: rows}
		}
	}
	t.Fatalf("scenario %s not in result", name)
	return kubeScenario{}
}

// shipped 读取仓库 configs/ 下的文件，把 old 依次替换为 new。
func shipped(t *testing.T, rel string, replace ...string) *fstest.MapFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "configs", rel))
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
	o := options(t, fsys, runtype.PR, root)
	o.RunID = "kube"
	out, err := pipeline.Run(context.Background(), o)
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

// checkFailureArchive 检查失败或被取消的 k8s 部署在场景的 logs 目录里留下了排障产物：
// 两个副本各自的容器日志（kwok 经 API Server 的 pods/log 提供的真实内容）、Pod 的完整描述
// 与 Deployment 控制器的事件。
func checkFailureArchive(t *testing.T, dir string) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(dir, "pods", "qwen3-32b-*.vllm.log"))
	descs, _ := filepath.Glob(filepath.Join(dir, "pods", "qwen3-32b-*.yaml"))
	if len(logs) != 2 || len(descs) != 2 {
		errs, _ := os.ReadFile(filepath.Join(dir, "archive-errors.txt"))
		t.Fatalf("archive under %s: logs %v, descriptions %v (archive errors: %s)", dir, logs, descs, errs)
	}
	for _, l := range logs {
		if b, _ := os.ReadFile(l); string(b) != kubetest.PodLog {
			t.Errorf("%s = %q, want the container log", l, b)
		}
	}
	for _, p := range descs {
		b, _ := os.ReadFile(p)
		if !strings.Contains(string(b), "nodeName: "+kubetest.NodeName) || !strings.Contains(string(b), "phase: Running") {
			t.Errorf("%s is not the pod's description:\n%s", p, b)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "events.txt")); !strings.Contains(string(b), "Deployment/qwen3-32b\tScalingReplicaSet") {
		t.Errorf("events.txt lacks the deployment controller's event:\n%s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "pods.txt")); strings.Count(string(b), "phase=Running") != 2 {
		t.Errorf("pods.txt:\n%s", b)
	}
}

// TestKubeFailedDeployArchives 复现 issue 23：k8s-hybrid 场景的服务永远不健康（NodePort 上
// 没有服务），或在等待 /health 时被取消，对象被正确删除，但产物里只有 driver.log——没有
// Pod 日志、描述与 events.txt。现在两条路径都在删除之前归档到场景的 logs 目录。
func TestKubeFailedDeployArchives(t *testing.T) {
	c := kubetest.Start(t)
	hybrid := "k8s_hybrid_qwen3-32b_tp2_w4a8"
	setup := func(t *testing.T, healthTimeout string) (fstest.MapFS, string) {
		port := kubetest.FreeNodePort(t) // 没有模拟器监听：/health 永远连不上
		kubeconf := "  kubeconfig: " + strconv.Quote(c.Kubeconfig) + "\n  context: cibench\n  poll_interval: 200ms\n"
		fsys := treeAcc(realDataAcc(t))
		fsys["scenarios/"+hybrid+".yaml"] = shipped(t, "scenarios/"+hybrid+".yaml", "\nk8s:\n", "\nk8s:\n"+kubeconf,
			"node_port: 30090", "node_port: "+strconv.Itoa(port), "timeout: 20m", "timeout: "+healthTimeout)
		fsys["k8s/qwen3-32b-hybrid.yaml"] = shipped(t, "k8s/qwen3-32b-hybrid.yaml", "nodePort: 30090", "nodePort: "+strconv.Itoa(port))
		fsys["matrix.yaml"] = &fstest.MapFile{Data: []byte("scenarios:\n  " + hybrid + ":\n    pr: {functional: {suites: [chat_core]}}\n")}
		return fsys, t.TempDir()
	}
	noPodsLeft := func(t *testing.T) {
		t.Helper()
		pods, err := c.Client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=qwen3-32b"})
		if err != nil || len(pods.Items) != 0 {
			t.Fatalf("pods left after the failed deploy: %d, %v", len(pods.Items), err)
		}
	}

	t.Run("never-healthy", func(t *testing.T) {
		// 部署超时 20 秒，要落在等 /health 的阶段（两个副本已 Running，归档里才有它们的日志与描述）。
		// etcd 3.6 上两个副本约 1 秒 Ready；曾用 Debian 的 etcd 3.4 时 kwok 的反射器退避重列，负载高时
		// Ready 就用去 30 秒以上，那时这里是 60 秒。
		fsys, root := setup(t, "20s")
		o := options(t, fsys, runtype.PR, root)
		out, err := pipeline.Run(context.Background(), o)
		if err != nil || out.ExitCode != gate.ExitGateFailed {
			t.Fatalf("exit %d err %v, want exit 1: %s", out.ExitCode, err, o.Out)
		}
		checkFailureArchive(t, filepath.Join(out.Dir, hybrid, "logs"))
		noPodsLeft(t)
	})

	t.Run("cancelled", func(t *testing.T) {
		fsys, root := setup(t, "5m")
		o := options(t, fsys, runtype.PR, root)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// 两个副本都 Running 之后（部署此时在等 /health）取消，像 Ctrl-C 一样。
		go func() {
			for ctx.Err() == nil {
				pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=qwen3-32b"})
				running := 0
				if err == nil {
					for _, p := range pods.Items {
						if p.Status.Phase == "Running" {
							running++
						}
					}
				}
				if running == 2 {
					cancel()
					return
				}
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
		out, err := pipeline.Run(ctx, o)
		if err != nil || out.ExitCode != gate.ExitInterrupted || !out.Interrupted {
			t.Fatalf("exit %d interrupted %v err %v, want exit 130: %s", out.ExitCode, out.Interrupted, err, o.Out)
		}
		checkFailureArchive(t, filepath.Join(out.Dir, hybrid, "logs"))
		noPodsLeft(t)
	})
}
