// Package kubetest 在回环地址上启动一个真实的 Kubernetes 控制面，供
// deploy/kube 的集成测试使用：etcd + kube-apiserver + kube-controller-manager
// + kwok（无需 kubelet 即可让节点与 Pod 变为 Running/Ready），外加一个
// 极小的“调度器”（把未调度的 Pod 绑定到唯一的假节点，省去构建 kube-scheduler）。
//
// 二进制按以下顺序查找：环境变量 CIBENCH_KUBE_BIN_DIR 指定的目录、PATH、
// ${CIBENCH_CACHE:-$HOME/.cache/cibench}/bin（scripts/setup.d/30-kube.sh 的产物）。
// 缺少任何一个时测试被跳过；若设置了 CIBENCH_REQUIRE_INTEGRATION=1 则判为失败，
// 保证 CI 不会悄悄跳过。
//
// 环境变量 CIBENCH_KUBE_BUILD_STATUS 指向一个状态文件时，控制面正在后台构建（scripts/test.sh 冷启动时
// 把 30-kube.sh 放在后台，并与它同时开始这些模块的测试）：Start 先等这个文件写成 "ok"（构建完成）再找
// 二进制，写成别的内容（构建失败的原因）时测试失败；不需要控制面的测试照常立即运行。
//
// 它只服务于测试，因此（与库代码不同）读取环境变量并接收 testing.TB。
package kubetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	_ "embed"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/internal/procgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

//go:embed kwok-stages.yaml
var kwokStages []byte

// NodeName 是 kwok 管理的唯一假节点名；其 InternalIP 为 127.0.0.1。
const NodeName = "kwok-node-0"

// PodLog 是 kwok 为每个容器提供的日志内容（经 API Server 的 pods/log 读取），
// 让日志归档能被真实地验证。
const PodLog = "INFO: Started server process (kwok fake container log)\nINFO: Application startup complete.\n"

// Cluster 是一个运行中的控制面。
type Cluster struct {
	// RESTConfig 以 system:masters 客户端证书连接 API Server。
	RESTConfig *rest.Config
	// Kubeconfig 是写好的 kubeconfig 文件路径（上下文名 cibench）。
	Kubeconfig string
	// Client 是 typed 客户端。
	Client kubernetes.Interface
	// Dir 是证书、数据与组件日志所在的临时目录。
	Dir string
	// LogFile 是 kwok 为每个容器的 pods/log 作答的文件（CRI 日志格式，内容为 PodLog），
	// 见 SetPodLog。
	LogFile string
}

// binaries 是需要的外部程序。
var binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kwok"}

// findBinary 按包文档中的顺序查找程序。
func findBinary(name string) string {
	if d := os.Getenv("CIBENCH_KUBE_BIN_DIR"); d != "" {
		if p := filepath.Join(d, name); isExec(p) {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	cache := os.Getenv("CIBENCH_CACHE")
	if cache == "" {
		if h, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(h, ".cache", "cibench")
		}
	}
	if p := filepath.Join(cache, "bin", name); isExec(p) {
		return p
	}
	return ""
}

// isExec 报告路径是否为可执行文件。
func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// Start 启动控制面并在 t.Cleanup 中停止它。缺二进制时按包文档跳过或失败。
// 顺序：etcd → kube-apiserver（等 /readyz）→ kube-controller-manager → kwok → 假节点（等 Ready）
// → 代替调度器的绑定循环；任何一步失败都打印各组件日志的末尾再结束测试。
func Start(t testing.TB) *Cluster {
	t.Helper()
	paths := requireBinaries(t)
	dir, err := os.MkdirTemp("", "cibench-kube-*")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Dir: dir}
	ctx, cancel := context.WithCancel(context.Background())
	b := &bringUp{t: t, dir: dir, paths: paths}
	t.Cleanup(func() {
		cancel()
		for i := len(b.procs) - 1; i >= 0; i-- {
			b.procs[i].stop()
		}
		if t.Failed() {
			b.logTails(30)
		}
		_ = os.RemoveAll(dir)
	})
	if b.pki, err = writePKI(dir); err != nil {
		t.Fatal(err)
	}
	ports := freePorts(t, 4)
	etcdPort, etcdPeer, apiPort, kcmPort := ports[0], ports[1], ports[2], ports[3]
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	b.start("etcd", etcdArgs(dir, etcdURL, "http://127.0.0.1:"+strconv.Itoa(etcdPeer))...)
	b.start("kube-apiserver", apiServerArgs(dir, etcdURL, apiPort, b.pki)...)
	c.RESTConfig = &rest.Config{
		Host:    "https://127.0.0.1:" + strconv.Itoa(apiPort),
		QPS:     200,
		Burst:   400,
		Timeout: 30 * time.Second,
		TLSClientConfig: rest.TLSClientConfig{
			CAFile: b.pki.caCert, CertFile: b.pki.clientCert, KeyFile: b.pki.clientKey,
		},
	}
	if c.Client, err = kubernetes.NewForConfig(c.RESTConfig); err != nil {
		t.Fatal(err)
	}
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, c.RESTConfig.Host, b.pki); err != nil {
		t.Fatal(err)
	}
	// API Server 冷启动（含 etcd 连接与 post-start hooks）在 2 核上需要十几秒。
	readyCtx, readyCancel := context.WithTimeout(ctx, 3*time.Minute)
	defer readyCancel()
	b.waitAPIServer(readyCtx, c.Client)
	b.start("kube-controller-manager", kcmArgs(c.Kubeconfig, kcmPort, b.pki)...)
	logFile, kwokCfg, err := writeKwokConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	c.LogFile = logFile
	kwokPort := freePort(t)
	b.start("kwok", "--kubeconfig="+c.Kubeconfig, "--config="+kwokCfg,
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--node-ip=127.0.0.1", "--cidr=10.244.0.0/24",
		"--server-address=127.0.0.1:"+strconv.Itoa(kwokPort), "--node-port="+strconv.Itoa(kwokPort),
		"--tls-cert-file="+b.pki.servingCert, "--tls-private-key-file="+b.pki.servingKey)
	b.addNode(ctx, readyCtx, c.Client)
	// 默认 ServiceAccount 由 kcm 创建；我们关闭了 ServiceAccount 准入，所以不必等它。
	go bindLoop(ctx, c.Client)
	return c
}

// requireBinaries 找到全部外部程序并返回 名字 → 路径；缺任何一个、或 etcd 太旧时按包文档跳过
// （CIBENCH_REQUIRE_INTEGRATION=1 时失败），消息写明缺哪些、怎样安装（见 checkBinaries）。
func requireBinaries(t testing.TB) map[string]string {
	t.Helper()
	if status := os.Getenv("CIBENCH_KUBE_BUILD_STATUS"); status != "" {
		start := time.Now()
		if err := waitBuild(status, buildWait, time.Second); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited > time.Second {
			t.Logf("kubetest: waited %s for the background control-plane build (%s)", waited.Round(time.Second), status)
		}
	}
	paths, msg := checkBinaries()
	if msg != "" {
		if os.Getenv("CIBENCH_REQUIRE_INTEGRATION") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return paths
}

// buildWait 是等后台构建的上限：冷启动的构建在 2 核机器上约 20 分钟（见 scripts/test.sh），
// go test 的 -timeout 30m 在它之后才到，超时时错误写明在等什么，而不是整个测试二进制被杀掉。
const buildWait = 25 * time.Minute

// waitBuild 每隔 poll 读一次状态文件 path，直到它写成 "ok"（返回 nil）、写成别的内容（构建失败：返回
// 带着那段内容的错误），或过了 limit（返回超时错误）。文件还不存在表示构建仍在进行。写状态的一方
// 先写临时文件再改名，所以读到的不会是写了一半的内容。
func waitBuild(path string, limit, poll time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		b, err := os.ReadFile(path)
		switch {
		case err == nil && strings.TrimSpace(string(b)) == "ok":
			return nil
		case err == nil && strings.TrimSpace(string(b)) == "":
			// 文件已创建、内容还没写进来（写的一方不是先写临时文件再改名时）：还不是结论，接着等。
		case err == nil:
			return fmt.Errorf("kubetest: the background control-plane build failed (%s): %s", path, strings.TrimSpace(string(b)))
		case !os.IsNotExist(err):
			return fmt.Errorf("kubetest: reading the control-plane build status: %w", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kubetest: the background control-plane build did not finish within %s (no status in %s)", limit, path)
		}
		time.Sleep(poll)
	}
}

// checkBinaries 查找全部外部程序，返回 名字 → 路径，以及不能启动控制面时的原因（能启动时为空）：
// 缺哪些程序，或 etcd 不支持 RequestWatchProgress（见 watchProgressEtcd）。
func checkBinaries() (map[string]string, string) {
	paths := map[string]string{}
	var missing []string
	for _, b := range binaries {
		if p := findBinary(b); p != "" {
			paths[b] = p
		} else {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return paths, fmt.Sprintf("kubetest: missing %s (run scripts/setup.d/30-kube.sh or set CIBENCH_KUBE_BIN_DIR)", strings.Join(missing, ", "))
	}
	out, err := exec.Command(paths["etcd"], "--version").Output()
	if err != nil {
		return paths, fmt.Sprintf("kubetest: %s --version: %v", paths["etcd"], err)
	}
	if v, ok := watchProgressEtcd(string(out)); !ok {
		return paths, fmt.Sprintf("kubetest: etcd %s at %s lacks RequestWatchProgress (needs 3.4.31+ or 3.5.13+): kube-apiserver then refuses client-go's "+
			"watch-list streams and kwok's informers back off for up to a minute per pod step; run scripts/setup.d/30-kube.sh (it builds etcd 3.6) "+
			"or set CIBENCH_KUBE_BIN_DIR", v, paths["etcd"])
	}
	return paths, ""
}

// watchProgressEtcd 从 `etcd --version` 的输出里取版本（"etcd Version: 3.6.8"），报告它是否支持
// RequestWatchProgress：3.4 线从 3.4.31、3.5 线从 3.5.13 起支持，3.6 及以后都支持。取不到版本时
// 返回 ("unknown", false)。
//
// 为什么要查：Debian 12 的 etcd-server 是 3.4.23。kube-apiserver 1.36 在这样的 etcd 上拒绝 client-go
// 默认开启的"流式 watch list"，kwok 的反射器每次失败后指数退避再重列，Pod 的每一步状态变化要等
// 1 到 60 秒——测试不会错，只是慢且抖，所以在启动任何组件之前就说清楚。
func watchProgressEtcd(versionOutput string) (string, bool) {
	_, rest, ok := strings.Cut(versionOutput, "etcd Version:")
	if !ok {
		return "unknown", false
	}
	v := strings.TrimSpace(strings.SplitN(strings.TrimSpace(rest), "\n", 2)[0])
	parts := strings.SplitN(v, ".", 3)
	if len(parts) != 3 {
		return v, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	digits := parts[2] // "0-alpha.0" 之类的预发布版本只看开头的数字
	if k := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); k >= 0 {
		digits = digits[:k]
	}
	patch, err3 := strconv.Atoi(digits)
	if err1 != nil || err2 != nil || err3 != nil {
		return v, false
	}
	switch {
	case major != 3:
		return v, major > 3
	case minor == 4:
		return v, patch >= 31
	case minor == 5:
		return v, patch >= 13
	default:
		return v, minor > 5
	}
}

// bringUp 是 Start 拉起控制面的过程状态：已启动的组件（按启动顺序，清理时逆序停止）、
// 证书与程序路径。
type bringUp struct {
	t     testing.TB
	dir   string
	paths map[string]string
	pki   pkiFiles
	procs []*proc
}

// start 启动组件 name（路径取自 paths），失败时结束测试。
func (b *bringUp) start(name string, args ...string) {
	b.t.Helper()
	p, err := startProc(b.dir, name, b.paths[name], args...)
	if err != nil {
		b.t.Fatal(err)
	}
	b.procs = append(b.procs, p)
}

// logTails 把每个已启动组件日志的最后 n 行写进测试日志。
func (b *bringUp) logTails(n int) {
	for _, p := range b.procs {
		b.t.Logf("kubetest: %s log tail:\n%s", p.name, tail(p.log, n))
	}
}

// fail 先打印各组件日志的末尾，再以 format 结束测试。
func (b *bringUp) fail(format string, args ...any) {
	b.t.Helper()
	b.logTails(40)
	b.t.Fatalf(format, args...)
}

// waitAPIServer 等 kube-apiserver 的 /readyz 回答 ok；etcd 或 API Server 提前退出、或 ctx
// 到期时结束测试。
func (b *bringUp) waitAPIServer(ctx context.Context, cs kubernetes.Interface) {
	b.t.Helper()
	etcd, api := b.procs[0], b.procs[1]
	if err := waitFor(ctx, 200*time.Millisecond, func() (bool, string) {
		if etcd.exited() || api.exited() {
			return true, ""
		}
		out, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return false, fmt.Sprintf("/readyz: %v %s", err, out)
		}
		return string(out) == "ok", "/readyz: " + string(out)
	}); err != nil || etcd.exited() || api.exited() {
		b.fail("kubetest: kube-apiserver not ready: %v", err)
	}
}

// addNode 创建由 kwok 管理的假节点并等到它 Ready（readyCtx 限定等待时间）。
func (b *bringUp) addNode(ctx, readyCtx context.Context, cs kubernetes.Interface) {
	b.t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        NodeName,
		Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": NodeName},
	}}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		b.fail("kubetest: create node: %v", err)
	}
	if err := waitFor(readyCtx, 100*time.Millisecond, func() (bool, string) {
		n, err := cs.CoreV1().Nodes().Get(readyCtx, NodeName, metav1.GetOptions{})
		if err != nil {
			return false, "get node: " + err.Error()
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, fmt.Sprintf("Ready=%s %s", cond.Status, cond.Reason)
			}
		}
		return false, "no Ready condition yet"
	}); err != nil {
		b.fail("kubetest: kwok node not ready: %v", err)
	}
}

// etcdArgs 返回单成员 etcd 的参数（数据在 dir/etcd，只监听回环）。
func etcdArgs(dir, clientURL, peerURL string) []string {
	return []string{"--name=kubetest", "--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=" + clientURL, "--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=kubetest=" + peerURL, "--log-level=warn"}
}

// apiServerArgs 返回 kube-apiserver 的参数：只绑定回环、客户端证书认证、RBAC、
// 关闭 ServiceAccount 准入与优先级公平（测试里没有调度压力），kubelet 连接用客户端证书。
func apiServerArgs(dir, etcdURL string, port int, pki pkiFiles) []string {
	return []string{"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(dir, "apiserver-certs"),
		"--tls-cert-file=" + pki.servingCert, "--tls-private-key-file=" + pki.servingKey,
		"--client-ca-file=" + pki.caCert,
		"--service-account-key-file=" + pki.saPub, "--service-account-signing-key-file=" + pki.saKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.96.0.0/16",
		"--service-node-port-range=30000-32767",
		"--authorization-mode=RBAC",
		"--disable-admission-plugins=ServiceAccount",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--kubelet-client-certificate=" + pki.clientCert, "--kubelet-client-key=" + pki.clientKey,
		"--kubelet-preferred-address-types=InternalIP",
		"--v=1"}
}

// kcmArgs 返回 kube-controller-manager 的参数：只开测试用到的控制器，不选主。
func kcmArgs(kubeconfig string, port int, pki pkiFiles) []string {
	return []string{"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--controllers=deployment-controller,replicaset-controller,statefulset-controller,daemonset-controller,job-controller,garbage-collector-controller,namespace-controller,serviceaccount-controller",
		"--root-ca-file=" + pki.caCert,
		"--use-service-account-credentials=false",
		"--v=1"}
}

// writeKwokConfig 写出 kwok 的配置（阶段定义加 ClusterLogs）与它作答 pods/log 的日志文件，
// 返回两者的路径。kwok 同时充当“kubelet”服务端：API Server 读取 pods/log 时连到节点的
// InternalIP:kubeletEndpoint.Port，kwok 用 ClusterLogs 配置的文件作答；文件按 CRI 日志格式
// （时间 流 标记 内容）写，与真实 kubelet 一致。
func writeKwokConfig(dir string) (logFile, cfgFile string, err error) {
	var cri strings.Builder
	for _, line := range strings.SplitAfter(PodLog, "\n") {
		if line != "" {
			cri.WriteString("2026-01-01T00:00:00.000000000Z stdout F " + line)
		}
	}
	logFile = filepath.Join(dir, "container.log")
	if err := os.WriteFile(logFile, []byte(cri.String()), 0o644); err != nil {
		return "", "", err
	}
	cfg := string(kwokStages) + fmt.Sprintf(`---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: all-pods
spec:
  logs:
  - logsFile: %q
    previousLogsFile: %q
`, logFile, logFile)
	cfgFile = filepath.Join(dir, "kwok.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		return "", "", err
	}
	return logFile, cfgFile, nil
}

// bindLoop 代替 kube-scheduler：把所有未调度、未在删除中的 Pod 绑定到假节点。
// 它随 ctx 结束而退出，ctx 由 Start 注册的 Cleanup 取消。
func bindLoop(ctx context.Context, cs kubernetes.Interface) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName="})
		if err == nil {
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil {
					continue
				}
				b := &corev1.Binding{
					ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
					Target:     corev1.ObjectReference{Kind: "Node", Name: NodeName},
				}
				_ = cs.CoreV1().Pods(p.Namespace).Bind(ctx, b, metav1.CreateOptions{})
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// waitFor 以间隔轮询 f 直到为真或 ctx 结束。超时错误带着截止之前最后一次观察到的状态
// （截止时在途的那次请求只会报 "context deadline exceeded"，截止前一秒内的请求可能被限流器以
// "would exceed context deadline" 提前拒绝，都没有信息量，所以之前已有观察时不用它们），并包装 ctx.Err()。
func waitFor(ctx context.Context, every time.Duration, f func() (bool, string)) error {
	t := time.NewTicker(every)
	defer t.Stop()
	last := "nothing observed yet"
	observed := false
	for {
		ok, state := f()
		if ok {
			return nil
		}
		if dl, ok := ctx.Deadline(); (ctx.Err() == nil && (!ok || time.Until(dl) >= time.Second)) || !observed {
			last, observed = state, true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %s)", ctx.Err(), last)
		case <-t.C:
		}
	}
}

// freePorts 返回 n 个互不相同的空闲端口：全部监听之后才一起关闭。逐个"监听、关闭"时内核可以把
// 刚关闭的端口再分出去——kube-controller-manager 因此曾拿到与 kube-apiserver 相同的端口、
// 以 "bind: address already in use" 退出，之后 Job 永远不完成，分片 Job 测试卡到超时。
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	out := make([]int, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	return out
}

// freePort 向内核要一个空闲端口（立即释放；组件启动前被抢占的概率可忽略）。
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// FreeNodePort 返回 30000-32767 中当前可在 127.0.0.1 上监听的端口，
// 供测试把模拟器放在 Service 的 NodePort 上。
func FreeNodePort(t testing.TB) int {
	t.Helper()
	start := 30000 + int(time.Now().UnixNano()%2700)
	for i := 0; i < 2768; i++ {
		port := 30000 + (start-30000+i)%2768
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			_ = ln.Close()
			return port
		}
	}
	t.Fatal("kubetest: no free port in the NodePort range")
	return 0
}

// proc 是一个被启动的组件进程。
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// startProc 以独立进程组启动组件，stdout/stderr 写入 dir/<name>.log。
func startProc(dir, name, bin string, args ...string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	procgroup.Setup(cmd)
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("kubetest: start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

// exited 报告进程是否已退出。
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop 先 SIGTERM 整个进程组，10 秒后 SIGKILL。
func (p *proc) stop() {
	_ = procgroup.Terminate(p.cmd.Process.Pid)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
	_ = procgroup.Kill(p.cmd.Process.Pid)
	<-p.done
}

// tail 返回文件最后 n 行。
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// pkiFiles 是生成的证书与密钥文件路径。
type pkiFiles struct {
	caCert, servingCert, servingKey, clientCert, clientKey, saKey, saPub string
}

// writePKI 生成自签 CA、API Server 服务证书（127.0.0.1/localhost/服务 IP）、
// system:masters 组的管理员客户端证书，以及 ServiceAccount 签名密钥。
func writePKI(dir string) (pkiFiles, error) {
	f := pkiFiles{
		caCert: filepath.Join(dir, "ca.crt"), servingCert: filepath.Join(dir, "apiserver.crt"),
		servingKey: filepath.Join(dir, "apiserver.key"), clientCert: filepath.Join(dir, "admin.crt"),
		clientKey: filepath.Join(dir, "admin.key"), saKey: filepath.Join(dir, "sa.key"), saPub: filepath.Join(dir, "sa.pub"),
	}
	now := time.Now().Add(-time.Hour)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return f, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cibench-kubetest-ca"},
		NotBefore: now, NotAfter: now.Add(48 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return f, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	if err := writePEM(f.caCert, "CERTIFICATE", caDER); err != nil {
		return f, err
	}
	issue := func(serial int64, cn string, org []string, server bool, certPath, keyPath string) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn, Organization: org},
			NotBefore: now, NotAfter: now.Add(48 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		}
		if server {
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
			tmpl.DNSNames = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"}
			tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")}
		} else {
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		kb, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return err
		}
		if err := writePEM(certPath, "CERTIFICATE", der); err != nil {
			return err
		}
		return writePEM(keyPath, "EC PRIVATE KEY", kb)
	}
	if err := issue(2, "kube-apiserver", nil, true, f.servingCert, f.servingKey); err != nil {
		return f, err
	}
	if err := issue(3, "cibench-admin", []string{"system:masters"}, false, f.clientCert, f.clientKey); err != nil {
		return f, err
	}
	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return f, err
	}
	if err := writePEM(f.saKey, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(sa)); err != nil {
		return f, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	if err != nil {
		return f, err
	}
	return f, writePEM(f.saPub, "PUBLIC KEY", pub)
}

// writePEM 以 0600 写出一个 PEM 块。
func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// writeKubeconfig 写出引用证书文件的 kubeconfig，上下文名为 cibench。
func writeKubeconfig(path, host string, p pkiFiles) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubetest"] = &clientcmdapi.Cluster{Server: host, CertificateAuthority: p.caCert}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificate: p.clientCert, ClientKey: p.clientKey}
	cfg.Contexts["cibench"] = &clientcmdapi.Context{Cluster: "kubetest", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "cibench"
	return clientcmd.WriteToFile(*cfg, path)
}

// Pods 返回命名空间 ns 中匹配标签选择器 sel 的 Pod（列举失败即终止测试）。
func (c *Cluster) Pods(t testing.TB, ns, sel string) []corev1.Pod {
	t.Helper()
	l, err := c.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// SetPodLog 把 kwok 为每个容器提供的日志换成 text（按 CRI 日志格式写入 LogFile），
// 测试结束时恢复为 PodLog。kwok 在每次读取日志时读这个文件，所以改动立即生效。
func (c *Cluster) SetPodLog(t testing.TB, text string) {
	t.Helper()
	write := func(s string) error {
		var cri strings.Builder
		for _, line := range strings.SplitAfter(s, "\n") {
			if line != "" {
				cri.WriteString("2026-01-01T00:00:00.000000000Z stdout F " + line)
			}
		}
		return os.WriteFile(c.LogFile, []byte(cri.String()), 0o644)
	}
	if err := write(text); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = write(PodLog) })
}
