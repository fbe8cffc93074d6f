package kube_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/vllm-cibench/cibench/deploy"
	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/deploy/kube"
	"github.com/vllm-cibench/cibench/internal/kubetest"
)

// manifestsFS 读取 configs/k8s 下的示例清单，把其中的 nodePort 换成测试挑选的空闲端口，
// 其余原样保留——测试 apply 的就是用户拿到的示例。
func manifestsFS(t *testing.T, nodePorts map[string]int, files ...string) fstest.MapFS {
	t.Helper()
	fsys := fstest.MapFS{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("..", "..", "configs", "k8s", f))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for old, port := range nodePorts {
			s = strings.ReplaceAll(s, "nodePort: "+old, "nodePort: "+strconv.Itoa(port))
		}
		fsys[f] = &fstest.MapFile{Data: []byte(s)}
	}
	return fsys
}

// startEmulator 让模拟器监听 127.0.0.1:<NodePort>，代替真实的 vLLM Pod 提供服务：
// kwok 节点的 InternalIP 是 127.0.0.1，所以 http://<NodeIP>:<NodePort> 正好落到它上面。
func startEmulator(t *testing.T, model string, port int) {
	t.Helper()
	emulator.Start(t, emulator.Config{Model: model, Addr: "127.0.0.1:" + strconv.Itoa(port)})
}

// chat 发起一次真实的非流式 chat 请求并返回回复文本。
func chat(t *testing.T, ep deploy.Endpoint) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"model":      ep.Model,
		"messages":   []map[string]string{{"role": "user", "content": "hello"}},
		"max_tokens": 8, "temperature": 0.6,
	})
	resp, err := http.Post(ep.BaseURL()+"/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chat status %d: %s", resp.StatusCode, raw)
	}
	var out struct {
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	if out.Model != ep.Model || len(out.Choices) != 1 || out.Choices[0].Message.Content == "" {
		t.Fatalf("chat reply = %s", raw)
	}
	return out.Choices[0].Message.Content
}

// baseConfig 返回测试通用的快速轮询配置。
func baseConfig(c *kubetest.Cluster, logDir string) kube.Config {
	return kube.Config{
		Kubeconfig:     c.Kubeconfig,
		Context:        "cibench",
		StartupTimeout: 2 * time.Minute,
		DeleteTimeout:  90 * time.Second,
		PollInterval:   200 * time.Millisecond,
		LogDir:         logDir,
	}
}

// TestKubeIntegration 在真实控制面上跑完整路径。所有子测试共用一个控制面，
// 因为冷启动 API Server 在 2 核上要十几秒。
func TestKubeIntegration(t *testing.T) {
	c := kubetest.Start(t)
	t.Run("hybrid", func(t *testing.T) { testHybrid(t, c) })
	t.Run("pd-2p1d", func(t *testing.T) { testPD(t, c) })
	t.Run("lws", func(t *testing.T) { testLWS(t, c) })
	t.Run("errors", func(t *testing.T) { testErrors(t, c) })
	t.Run("archive-on-failure", func(t *testing.T) { testArchiveOnFailure(t, c) })
}

// testArchiveOnFailure：Deployment 的两个副本都 Ready，但 NodePort 上没有服务，/health 永远
// 不通；这时取消 Deploy 的 ctx（像 Ctrl-C）。Deploy 返回 context.Canceled，并在删除之前把 Pod
// 日志、描述与事件归档到 LogDir（issue 23：失败或取消的部署以前什么也不留）。超时走的是同一条
// 清理路径，由驱动的 TestKubeFailedDeployArchives 覆盖（它要等满健康超时，这里不重复）。
func testArchiveOnFailure(t *testing.T, c *kubetest.Cluster) {
	port := kubetest.FreeNodePort(t) // 不启动模拟器
	logDir := filepath.Join(t.TempDir(), "failed")
	cfg := baseConfig(c, logDir)
	cfg.Manifests = []string{"qwen3-32b-hybrid.yaml"}
	cfg.ServiceName = "qwen3-32b"
	cfg.Model = "qwen3-32b"
	d, err := kube.New(cfg, kube.WithFS(manifestsFS(t, map[string]int{"30090": port}, "qwen3-32b-hybrid.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			ready := 0
			if l, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=qwen3-32b"}); err == nil {
				for _, p := range l.Items {
					for _, cond := range p.Status.Conditions {
						if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
							ready++
						}
					}
				}
			}
			if ready == 2 {
				cancel()
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	_, err = d.Deploy(ctx)
	if !errors.Is(err, deploy.ErrNotReady) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled deploy: err = %v", err)
	}
	logs, _ := filepath.Glob(filepath.Join(logDir, "pods", "qwen3-32b-*.vllm.log"))
	descs, _ := filepath.Glob(filepath.Join(logDir, "pods", "qwen3-32b-*.yaml"))
	if len(logs) != 2 || len(descs) != 2 {
		errs, _ := os.ReadFile(filepath.Join(logDir, "archive-errors.txt"))
		t.Fatalf("archive: logs %v descriptions %v (errors: %s)", logs, descs, errs)
	}
	for _, l := range logs {
		if b, _ := os.ReadFile(l); string(b) != kubetest.PodLog {
			t.Fatalf("%s = %q", l, b)
		}
	}
	for _, p := range descs {
		if b, _ := os.ReadFile(p); !strings.Contains(string(b), "nodeName: "+kubetest.NodeName) || !strings.Contains(string(b), "phase: Running") {
			t.Fatalf("description %s:\n%s", p, b)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(logDir, "events.txt")); !strings.Contains(string(b), "Deployment/qwen3-32b\tScalingReplicaSet") {
		t.Fatalf("events.txt:\n%s", b)
	}
	if n := len(c.Pods(t, "default", "app=qwen3-32b")); n != 0 {
		t.Fatalf("%d pods left after the cancelled deploy", n)
	}
}

// testHybrid：Qwen3-32B 混合部署示例 → apply、Deployment 就绪（kcm 建 RS 与 Pod，
// kwok 标 Ready）、NodePort 解析、/health、一次 chat、归档、前台删除。
func testHybrid(t *testing.T, c *kubetest.Cluster) {
	port := kubetest.FreeNodePort(t)
	startEmulator(t, "qwen3-32b", port)
	logDir := filepath.Join(t.TempDir(), "teardown")
	cfg := baseConfig(c, logDir)
	cfg.Manifests = []string{"qwen3-32b-hybrid.yaml"}
	cfg.ServiceName = "qwen3-32b"
	cfg.Model = "qwen3-32b"
	d, err := kube.New(cfg, kube.WithFS(manifestsFS(t, map[string]int{"30090": port}, "qwen3-32b-hybrid.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	dep, err := d.Deploy(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("hybrid ready in %v", time.Since(start).Round(time.Millisecond))
	defer dep.Teardown(context.Background())
	ep := dep.Endpoint()
	if want := fmt.Sprintf("http://127.0.0.1:%d/v1", port); ep.BaseURL() != want || ep.Model != "qwen3-32b" {
		t.Fatalf("endpoint = %v, want %s", ep, want)
	}
	if got := chat(t, ep); got == "" {
		t.Fatal("empty reply")
	}
	pods := c.Pods(t, "default", "app=qwen3-32b")
	if len(pods) != 2 {
		t.Fatalf("pods = %d, want 2 (replicas: 2)", len(pods))
	}
	for _, p := range pods {
		if p.Spec.NodeName != kubetest.NodeName || p.Status.Phase != corev1.PodRunning {
			t.Fatalf("pod %s node=%s phase=%s", p.Name, p.Spec.NodeName, p.Status.Phase)
		}
	}
	arch := filepath.Join(t.TempDir(), "archive")
	if err := dep.ArchiveLogs(context.Background(), arch); err != nil {
		t.Fatal(err)
	}
	summary, _ := os.ReadFile(filepath.Join(arch, "pods.txt"))
	for _, p := range pods {
		if !strings.Contains(string(summary), p.Name+"\tphase=Running\tnode="+kubetest.NodeName+"\tready=true") {
			t.Fatalf("pods.txt lacks %s:\n%s", p.Name, summary)
		}
	}
	for _, p := range pods {
		b, err := os.ReadFile(filepath.Join(arch, "pods", p.Name+".vllm.log"))
		if err != nil || string(b) != kubetest.PodLog {
			errs, _ := os.ReadFile(filepath.Join(arch, "archive-errors.txt"))
			t.Fatalf("pod log of %s = %q, %v (archive errors: %s)", p.Name, b, err, errs)
		}
	}
	events, _ := os.ReadFile(filepath.Join(arch, "events.txt"))
	if !strings.Contains(string(events), "Deployment/qwen3-32b\tScalingReplicaSet") {
		t.Fatalf("events.txt lacks the deployment controller's event:\n%s", events)
	}
	if err := dep.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := dep.Teardown(context.Background()); err != nil {
		t.Fatal("second teardown:", err)
	}
	if _, err := c.Client.AppsV1().Deployments("default").Get(context.Background(), "qwen3-32b", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("deployment after teardown: %v", err)
	}
	if _, err := c.Client.CoreV1().Services("default").Get(context.Background(), "qwen3-32b", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("service after teardown: %v", err)
	}
	if n := len(c.Pods(t, "default", "app=qwen3-32b")); n != 0 {
		t.Fatalf("%d pods left after foreground delete", n)
	}
	if rs, _ := c.Client.AppsV1().ReplicaSets("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=qwen3-32b"}); len(rs.Items) != 0 {
		t.Fatalf("%d replicasets left after foreground delete", len(rs.Items))
	}
	if _, err := os.Stat(filepath.Join(logDir, "events.txt")); err != nil {
		t.Fatalf("teardown did not archive to log_dir: %v", err)
	}
}

// testPD：DeepSeek-R1 2P1D 示例，三个角色各自 apply 与就绪，健康检查走 scheduler 的 NodePort。
func testPD(t *testing.T, c *kubetest.Cluster) {
	port := kubetest.FreeNodePort(t)
	startEmulator(t, "deepseek-r1", port)
	files := []string{"deepseek-r1-pd/scheduler.yaml", "deepseek-r1-pd/prefill.yaml", "deepseek-r1-pd/decode.yaml"}
	cfg := baseConfig(c, "")
	cfg.Roles = []kube.Role{
		{Name: "prefill", Manifests: files[1:2], PodSelector: "cibench.io/role=prefill", MinReady: 2},
		{Name: "decode", Manifests: files[2:3], PodSelector: "cibench.io/role=decode"},
		{Name: "scheduler", Manifests: files[0:1]},
	}
	cfg.ServiceName = "deepseek-r1"
	cfg.Model = "deepseek-r1"
	d, err := kube.New(cfg, kube.WithFS(manifestsFS(t, map[string]int{"30080": port}, files...)))
	if err != nil {
		t.Fatal(err)
	}
	dep, err := d.Deploy(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer dep.Teardown(context.Background())
	if want := fmt.Sprintf("http://127.0.0.1:%d/v1", port); dep.Endpoint().BaseURL() != want {
		t.Fatalf("endpoint = %v", dep.Endpoint())
	}
	chat(t, dep.Endpoint())
	for role, want := range map[string]int{"prefill": 2, "decode": 1, "scheduler": 1} {
		if n := len(c.Pods(t, "default", "cibench.io/role="+role)); n != want {
			t.Fatalf("%s pods = %d, want %d", role, n, want)
		}
	}
	arch := t.TempDir()
	if err := dep.ArchiveLogs(context.Background(), arch); err != nil {
		t.Fatal(err)
	}
	summary, _ := os.ReadFile(filepath.Join(arch, "pods.txt"))
	if n := strings.Count(string(summary), "ready=true"); n != 4 {
		t.Fatalf("pods.txt lists %d ready pods, want 4:\n%s", n, summary)
	}
	if err := dep.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(c.Pods(t, "default", "app=deepseek-r1")); n != 0 {
		t.Fatalf("%d PD pods left", n)
	}
}

// lwsGVR 是 LeaderWorkerSet 的资源。
var lwsGVR = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}

// fakeLWSController 代替 LWS 控制器：对象出现后把 status 写成给定值，直到 ctx 结束。
// 它证明就绪判断读的是真实 API Server 上的 status 子资源。
func fakeLWSController(ctx context.Context, rc *rest.Config, ns, name string, ready int64) {
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if u, err := dyn.Resource(lwsGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			cur, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
			if cur != ready {
				_ = unstructured.SetNestedField(u.Object, map[string]any{
					"replicas": int64(2), "readyReplicas": ready,
					"conditions": []any{map[string]any{
						"type": "Available", "status": "True", "reason": "AllGroupsReady",
						"message": "fake", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
					}},
				}, "status")
				_, _ = dyn.Resource(lwsGVR).Namespace(ns).UpdateStatus(ctx, u, metav1.UpdateOptions{})
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// testLWS：CRD 先于 CR apply（映射重置），LWS 在 Available=True 但 readyReplicas 不足时
// 不算就绪（超时并清理），补足后就绪。
func testLWS(t *testing.T, c *kubetest.Cluster) {
	files := []string{"qwen3-235b-hybrid-lws.yaml", "crds/leaderworkerset.yaml"}
	run := func(ready int64, timeout time.Duration, opts ...kube.Option) (deploy.Deployment, error) {
		port := kubetest.FreeNodePort(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go fakeLWSController(ctx, c.RESTConfig, "default", "qwen3-235b", ready)
		cfg := baseConfig(c, "")
		cfg.Manifests = files // CRD 写在后面，由 New 排到最前
		cfg.ServiceName = "qwen3-235b"
		cfg.Model = "qwen3-235b-a22b"
		cfg.StartupTimeout = timeout
		d, err := kube.New(cfg, append([]kube.Option{kube.WithFS(manifestsFS(t, map[string]int{"30091": port}, files...))}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		startEmulator(t, "qwen3-235b-a22b", port)
		return d.Deploy(context.Background())
	}
	// 先跑就绪路径：它同时让 CRD 进入 Established（CRD 默认保留），这样下面的
	// 短超时用例只在等待 LWS 本身时耗尽时间，不会因负载高时 CRD 建立慢而误报。
	dep, err := run(2, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	chat(t, dep.Endpoint())
	if err := dep.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	dyn, _ := dynamic.NewForConfig(c.RESTConfig)
	// CRD 默认保留（删除它会删掉集群中所有 LWS）。
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dyn.Resource(crds).Get(context.Background(), "leaderworkersets.leaderworkerset.x-k8s.io", metav1.GetOptions{}); err != nil {
		t.Fatalf("CRD should be kept: %v", err)
	}
	// 短超时：截止时间必定落在一次 GET 的途中（stallAfter 让看到 readyReplicas=1 之后的 LWS 请求
	// 一直挂到客户端放弃）。错误里必须是截止前最后看到的状态，而不是那次 GET 自己的
	// "context deadline exceeded"（issue 23：负载高时正是这样失败的）。
	rc := rest.CopyConfig(c.RESTConfig)
	rc.WrapTransport = stallAfter("/leaderworkersets/qwen3-235b", `"readyReplicas":1`)
	_, err = run(1, 40*time.Second, kube.WithRESTConfig(rc))
	var we *kube.WaitError
	if !errors.Is(err, deploy.ErrNotReady) || !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &we) ||
		!strings.HasPrefix(we.Last, "LeaderWorkerSet/default/qwen3-235b: groups want=2 ready=1 Available=True") {
		t.Fatalf("short LWS: err = %v", err)
	}
	if _, err := dyn.Resource(lwsGVR).Namespace("default").Get(context.Background(), "qwen3-235b", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("failed deploy did not clean up the LWS: %v", err)
	}
}

// stallAfter 包装 client-go 的传输层：路径以 suffix 结尾的 GET 一旦有一次响应体含 marker，
// 同一路径的下一个请求就一直挂着，直到请求的 ctx 结束。这样部署的截止时间确定地落在一次
// 在途的 GET 上，而 API Server 本身是真实的。只挂一次：之后的请求（失败后的清理）照常通过。
func stallAfter(suffix, marker string) func(http.RoundTripper) http.RoundTripper {
	var state atomic.Int32 // 0 未见 marker，1 下一个请求挂起，2 已挂过
	return func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet || !strings.HasSuffix(req.URL.Path, suffix) {
				return rt.RoundTrip(req)
			}
			if state.CompareAndSwap(1, 2) {
				<-req.Context().Done()
				return nil, req.Context().Err()
			}
			resp, err := rt.RoundTrip(req)
			if err != nil {
				return resp, err
			}
			b, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil {
				return nil, err
			}
			if bytes.Contains(b, []byte(marker)) {
				state.CompareAndSwap(0, 1)
			}
			resp.Body = io.NopCloser(bytes.NewReader(b))
			return resp, nil
		})
	}
}

// roundTripFunc 让函数实现 http.RoundTripper。
type roundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip 实现 http.RoundTripper。
func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// testErrors：真实 API Server 返回的各种配置错误都变成可判断的错误，且失败后资源被清理。
func testErrors(t *testing.T, c *kubetest.Cluster) {
	fsys := fstest.MapFS{
		"svc.yaml": {Data: []byte(`apiVersion: v1
kind: Service
metadata: {name: cip}
spec:
  selector: {app: none}
  ports: [{name: http, port: 80}]
`)},
		"bad-kind.yaml": {Data: []byte("apiVersion: example.com/v1\nkind: Nope\nmetadata: {name: x}\n")},
	}
	cases := []struct {
		name string
		mod  func(*kube.Config)
		want error
	}{
		{"missing service", func(c *kube.Config) { c.ServiceName = "nope" }, kube.ErrServiceNotFound},
		{"missing port name", func(c *kube.Config) { c.ServiceName = "cip"; c.PortName = "grpc" }, kube.ErrPortNotFound},
		{"no nodeport", func(c *kube.Config) { c.ServiceName = "cip" }, kube.ErrNoNodePort},
		{"unknown kind", func(c *kube.Config) { c.Manifests = []string{"bad-kind.yaml"}; c.StartupTimeout = time.Second }, deploy.ErrNotReady},
	}
	for _, tc := range cases {
		cfg := baseConfig(c, "")
		cfg.Manifests = []string{"svc.yaml"}
		cfg.NodePort = 0
		tc.mod(&cfg)
		if cfg.ServiceName == "" {
			cfg.NodePort = 30000
		}
		d, err := kube.New(cfg, kube.WithFS(fsys))
		if err != nil {
			t.Fatal(err)
		}
		_, err = d.Deploy(context.Background())
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
		if _, err := c.Client.CoreV1().Services("default").Get(context.Background(), "cip", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: service not cleaned up after failure: %v", tc.name, err)
		}
	}
	// ctx 取消：健康检查永远等不到（NodePort 上没有服务），取消后 Deploy 返回，
	// 并且仍然用独立的 ctx 完成清理。
	np := kubetest.FreeNodePort(t)
	fsys["np.yaml"] = &fstest.MapFile{Data: []byte(fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: np}
spec:
  type: NodePort
  selector: {app: none}
  ports: [{name: http, port: 80, nodePort: %d}]
`, np))}
	cfg := baseConfig(c, "")
	cfg.Manifests = []string{"np.yaml"}
	cfg.ServiceName = "np"
	d, err := kube.New(cfg, kube.WithFS(fsys))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// 等 Service 出现后再取消，确保取消发生在 apply 之后。
		for {
			if _, err := c.Client.CoreV1().Services("default").Get(ctx, "np", metav1.GetOptions{}); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		cancel()
	}()
	_, err = d.Deploy(ctx)
	cancel()
	if !errors.Is(err, context.Canceled) || !errors.Is(err, deploy.ErrNotReady) {
		t.Fatalf("cancel: err = %v", err)
	}
	if _, err := c.Client.CoreV1().Services("default").Get(context.Background(), "np", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("cancel: service not cleaned up: %v", err)
	}

	// 删不掉的对象（带无人处理的 finalizer）被报告出来，而不是静默遗留。
	fsys["blocked.yaml"] = &fstest.MapFile{Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: blocked
  finalizers: [cibench.io/test-block]
`)}
	cfg = baseConfig(c, "")
	cfg.Manifests = []string{"blocked.yaml"}
	cfg.ServiceName = "nope"
	cfg.DeleteTimeout = 2 * time.Second
	d, err = kube.New(cfg, kube.WithFS(fsys))
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Deploy(context.Background())
	var te *kube.TeardownError
	if !errors.Is(err, kube.ErrServiceNotFound) || !errors.As(err, &te) || len(te.Remaining) != 1 || !strings.HasPrefix(te.Remaining[0], "ConfigMap/default/blocked: still present") {
		t.Fatalf("leftovers: err = %v", err)
	}
	if _, err := c.Client.CoreV1().ConfigMaps("default").Patch(context.Background(), "blocked", "application/merge-patch+json",
		[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	// 无法连接的 API Server：用一个刚关闭的端口。
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	_ = ln.Close()
	d, err = kube.New(kube.Config{Manifests: []string{"svc.yaml"}, NodePort: 30000}, kube.WithFS(fsys),
		kube.WithRESTConfig(&rest.Config{Host: "https://" + addr, Timeout: 2 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Deploy(context.Background()); !errors.Is(err, kube.ErrUnreachable) {
		t.Fatalf("unreachable: %v", err)
	}
	// 不存在的 kubeconfig 上下文是配置错误。
	d, err = kube.New(kube.Config{Kubeconfig: c.Kubeconfig, Context: "nope", Manifests: []string{"svc.yaml"}, NodePort: 30000}, kube.WithFS(fsys))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Deploy(context.Background()); !errors.Is(err, deploy.ErrConfig) {
		t.Fatalf("bad context: %v", err)
	}
}
