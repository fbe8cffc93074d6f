package kubetest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// TestWritePKI 验证生成的服务证书与客户端证书都能被 CA 验证，且用途与身份正确。
func TestWritePKI(t *testing.T) {
	dir := t.TempDir()
	p, err := writePKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(p.caCert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("bad CA PEM")
	}
	server, err := tls.LoadX509KeyPair(p.servingCert, p.servingKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(server.Certificate[0])
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
		t.Fatalf("serving cert: %v", err)
	}
	client, err := tls.LoadX509KeyPair(p.clientCert, p.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	cl, _ := x509.ParseCertificate(client.Certificate[0])
	if _, err := cl.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("client cert: %v", err)
	}
	if len(cl.Subject.Organization) != 1 || cl.Subject.Organization[0] != "system:masters" {
		t.Fatalf("client org = %v", cl.Subject.Organization)
	}
	if err := writeKubeconfig(filepath.Join(dir, "kc"), "https://127.0.0.1:6443", p); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(filepath.Join(dir, "kc"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != "cibench" || cfg.Clusters["kubetest"].Server != "https://127.0.0.1:6443" {
		t.Fatalf("kubeconfig = %+v", cfg)
	}
}

// TestFindBinaryAndPorts 验证二进制查找顺序（显式目录优先）与 NodePort 范围。
func TestFindBinaryAndPorts(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "kube-apiserver")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CIBENCH_KUBE_BIN_DIR", dir)
	if got := findBinary("kube-apiserver"); got != bin {
		t.Fatalf("findBinary = %q, want %q", got, bin)
	}
	t.Setenv("PATH", "")
	t.Setenv("CIBENCH_CACHE", t.TempDir())
	if got := findBinary("definitely-not-here"); got != "" {
		t.Fatalf("missing binary found at %q", got)
	}
	if p := FreeNodePort(t); p < 30000 || p > 32767 {
		t.Fatalf("node port %d out of range", p)
	}
	if tail(filepath.Join(dir, "nope"), 3) == "" {
		t.Fatal("tail of a missing file must describe the error")
	}
}

// TestStart 启动真实控制面，检查假节点地址与“调度 + kwok”让 Pod 进入 Running 并能读到日志。
func TestStart(t *testing.T) {
	c := Start(t)
	ctx := context.Background()
	n, err := c.Client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ip string
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			ip = a.Address
		}
	}
	if ip != "127.0.0.1" {
		t.Fatalf("node addresses = %v", n.Status.Addresses)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
	}
	if _, err := c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = waitFor(wctx, 100*time.Millisecond, func() (bool, string) {
		p, err := c.Client.CoreV1().Pods("default").Get(wctx, "p", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Spec.NodeName == NodeName && p.Status.Phase == corev1.PodRunning, "node=" + p.Spec.NodeName + " phase=" + string(p.Status.Phase)
	})
	if err != nil {
		t.Fatalf("pod not running: %v", err)
	}
	b, err := c.Client.CoreV1().Pods("default").GetLogs("p", &corev1.PodLogOptions{Container: "c"}).DoRaw(ctx)
	if err != nil || string(b) != PodLog {
		t.Fatalf("logs = %q, %v", b, err)
	}
}

// TestWaitForKeepsLastState：超时错误带着截止前最后一次观察，截止时刻那次（ctx 已结束）的
// 观察不覆盖它；错误包装 context.DeadlineExceeded。
func TestWaitForKeepsLastState(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	n := 0
	err := waitFor(ctx, time.Millisecond, func() (bool, string) {
		n++
		if n == 1 {
			return false, "Ready=False KubeletNotReady"
		}
		<-ctx.Done() // 第二次观察撞上截止时间
		return false, "get node: context deadline exceeded"
	})
	if !errors.Is(err, context.DeadlineExceeded) || err.Error() != "context deadline exceeded (last: Ready=False KubeletNotReady)" {
		t.Fatalf("err = %v", err)
	}
}

// TestWatchProgressEtcd 核对 etcd 版本门槛：Debian 12 的 3.4.23 不够，3.4.31、3.5.13、3.6.x 够；
// 读不出版本的输出不算够。
func TestWatchProgressEtcd(t *testing.T) {
	for _, tc := range []struct {
		out  string
		v    string
		want bool
	}{
		{"etcd Version: 3.4.23\nGit SHA: Not provided\n", "3.4.23", false},
		{"etcd Version: 3.4.31\n", "3.4.31", true},
		{"etcd Version: 3.5.12\n", "3.5.12", false},
		{"etcd Version: 3.5.13\n", "3.5.13", true},
		{"etcd Version: 3.6.8\nGit SHA: Not provided (use ./build instead of go build)\nGo Version: go1.26.8\n", "3.6.8", true},
		{"etcd Version: 3.7.0-alpha.0\n", "3.7.0-alpha.0", true},
		{"etcd Version: 4.0.0\n", "4.0.0", true},
		{"etcd Version: 2.3.8\n", "2.3.8", false},
		{"etcd Version: 3.6\n", "3.6", false},
		{"etcd Version: x.y.z\n", "x.y.z", false},
		{"something else\n", "unknown", false},
	} {
		v, ok := watchProgressEtcd(tc.out)
		if v != tc.v || ok != tc.want {
			t.Errorf("watchProgressEtcd(%q) = %q, %v; want %q, %v", tc.out, v, ok, tc.v, tc.want)
		}
	}
}

// TestCheckBinariesRejectsOldEtcd：找到的 etcd 是 3.4.23（Debian 12 的版本）时，checkBinaries 在启动
// 任何组件之前给出点名版本与路径的原因；换成报告 3.6.8 的 etcd 则没有原因。
func TestCheckBinariesRejectsOldEtcd(t *testing.T) {
	dir := t.TempDir()
	write := func(name, script string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range binaries {
		write(name, "#!/bin/sh\nexit 0\n")
	}
	write("etcd", "#!/bin/sh\necho 'etcd Version: 3.4.23'\necho 'Git SHA: Not provided'\n")
	t.Setenv("CIBENCH_KUBE_BIN_DIR", dir)
	paths, msg := checkBinaries()
	if len(paths) != len(binaries) || !strings.Contains(msg, "etcd 3.4.23 at "+filepath.Join(dir, "etcd")+" lacks RequestWatchProgress") {
		t.Fatalf("checkBinaries = %v, %q; want every path and a reason naming etcd 3.4.23 and its path", paths, msg)
	}
	write("etcd", "#!/bin/sh\necho 'etcd Version: 3.6.8'\n")
	if _, msg := checkBinaries(); msg != "" {
		t.Fatalf("etcd 3.6.8: %q, want no reason", msg)
	}
	write("etcd", "#!/bin/sh\nexit 3\n")
	if _, msg := checkBinaries(); !strings.Contains(msg, "--version: exit status 3") {
		t.Fatalf("a failing etcd: %q, want its --version error", msg)
	}
}

// TestWaitBuild 覆盖等后台构建的三种结局：状态文件晚到且写着 ok（返回 nil）、写着失败原因（错误里有原因）、
// 一直没有（超时错误写明等的是哪个文件）。
func TestWaitBuild(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok")
	done := make(chan error, 1)
	go func() { done <- waitBuild(ok, time.Minute, time.Millisecond) }()
	select {
	case err := <-done:
		t.Fatalf("waitBuild returned %v before the status file existed", err)
	case <-time.After(20 * time.Millisecond):
	}
	// 先出现一个空文件（写的一方刚创建、还没写内容）：不是结论，接着等；以前它被当成失败，
	// 原因为空（忙机器上这个测试因此失败过）。
	if err := os.WriteFile(ok, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("waitBuild returned %v on an empty status file", err)
	case <-time.After(20 * time.Millisecond):
	}
	if err := os.WriteFile(ok, []byte("ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("status ok: %v", err)
	}

	failed := filepath.Join(dir, "failed")
	if err := os.WriteFile(failed, []byte("30-kube.sh exited with status 1; log /tmp/kube-setup.log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := waitBuild(failed, time.Minute, time.Millisecond); err == nil || !strings.Contains(err.Error(), "status 1; log /tmp/kube-setup.log") {
		t.Errorf("failed build: %v, want the reason from the status file", err)
	}

	missing := filepath.Join(dir, "never")
	if err := waitBuild(missing, 5*time.Millisecond, time.Millisecond); err == nil || !strings.Contains(err.Error(), "did not finish within 5ms (no status in "+missing+")") {
		t.Errorf("no status: %v", err)
	}
	if err := waitBuild(dir, time.Minute, time.Millisecond); err == nil || !strings.Contains(err.Error(), "reading the control-plane build status") {
		t.Errorf("status path is a directory: %v", err)
	}
}

// TestSetupCheckReadsWholeVersionOutput 跑真实的 scripts/setup.d/30-kube.sh --check，四个程序换成假的：
// 各自先打印版本行、停一下、再打印其余几行（像 etcd --version 那样多行输出）。以前脚本用
// `"$BIN/x" --version | grep -qF WANT` 判断版本：grep -q 读到第一行就退出，程序随后写下一行时收到 SIGPIPE、
// 以 141 退出，pipefail 让整个判断为假——版本对的控制面被当成没装好（冷运行里刚构建好的二进制因此被判
// "do not report" 而失败，热运行里则白白重建）。现在版本对时 --check 必须成功、版本不对时必须失败。
func TestSetupCheckReadsWholeVersionOutput(t *testing.T) {
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "setup.d", "30-kube.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	bin := filepath.Join(cache, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// fake 写一个先打印 first、0.2 秒后再打印两行的程序（第二次写入时 grep -q 早已退出）。
	fake := func(name, first string) {
		body := "#!/bin/sh\necho '" + first + "'\nsleep 0.2\necho 'Go Version: go1.26'\necho 'Go OS/Arch: linux/amd64'\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	check := func() error {
		cmd := exec.Command("bash", script, "--check")
		cmd.Env = append(os.Environ(), "CIBENCH_CACHE="+cache,
			"CIBENCH_K8S_VERSION=v1.36.3", "CIBENCH_KWOK_VERSION=v0.8.0", "CIBENCH_ETCD_VERSION=v3.6.8")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	}
	fake("etcd", "etcd Version: 3.6.8")
	fake("kube-apiserver", "Kubernetes v1.36.3")
	fake("kube-controller-manager", "Kubernetes v1.36.3")
	fake("kwok", "kwok version v0.8.0 go1.26.8 (linux/amd64)")
	if err := check(); err != nil {
		t.Fatalf("30-kube.sh --check with every version right: %v, want success", err)
	}
	fake("etcd", "etcd Version: 3.4.23")
	if err := check(); err == nil {
		t.Fatal("30-kube.sh --check with etcd 3.4.23: success, want failure")
	}
}
