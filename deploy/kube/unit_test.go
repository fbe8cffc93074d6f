package kube

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/vllm-cibench/cibench/deploy"
)

// obj 把 YAML 文本变成 unstructured 对象，方便书写表驱动用例。
func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	js, err := sigsyaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestParseManifestsErrors 验证解析错误指出文件与文档序号，注释文档被跳过。
func TestParseManifestsErrors(t *testing.T) {
	fsys := fstest.MapFS{
		"bad.yaml":       {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: broken\n  data: [\n")},
		"noname.yaml":    {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n")},
		"nokind.yaml":    {Data: []byte("---\n---\napiVersion: v1\nmetadata: {name: x}\n")},
		"list.yaml":      {Data: []byte("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- {apiVersion: v1, kind: Secret, metadata: {name: b}}\n")},
		"svc.yaml":       {Data: []byte("apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{name: http, port: 1}]}\n")},
		"crd.yaml":       {Data: []byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: c}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ns1}\n")},
		"emptyfile.yaml": {Data: []byte("# nothing\n")},
	}
	cases := []struct {
		file  string
		index int
	}{{"bad.yaml", 2}, {"noname.yaml", 0}, {"nokind.yaml", 1}}
	for _, c := range cases {
		_, err := New(Config{Manifests: []string{c.file}, NodePort: 30000}, WithFS(fsys))
		var me *ManifestError
		if !errors.As(err, &me) {
			t.Fatalf("%s: err = %v, want *ManifestError", c.file, err)
		}
		if me.File != c.file || me.Index != c.index {
			t.Fatalf("%s: got file=%s index=%d, want index %d (%v)", c.file, me.File, me.Index, c.index, err)
		}
		if !strings.Contains(err.Error(), c.file) {
			t.Fatalf("error text lacks file name: %v", err)
		}
	}
	d, err := New(Config{Manifests: []string{"svc.yaml", "list.yaml", "crd.yaml"}, ServiceName: "s"}, WithFS(fsys))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range d.objects {
		got = append(got, o.String())
	}
	if want := "CustomResourceDefinition/c Namespace/ns1 Service/s ConfigMap/a Secret/b"; strings.Join(got, " ") != want {
		t.Fatalf("order = %v, want %s", got, want)
	}
	if _, err := New(Config{Manifests: []string{"emptyfile.yaml"}, NodePort: 1}, WithFS(fsys)); !errors.Is(err, deploy.ErrConfig) {
		t.Fatalf("empty manifests: %v", err)
	}
	if _, err := New(Config{Manifests: []string{"missing.yaml"}, NodePort: 1}, WithFS(fsys)); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := New(Config{Manifests: []string{"testdata/bad-doc2.yaml"}, NodePort: 1}); err == nil || !strings.Contains(err.Error(), "document 2") {
		t.Fatalf("os file: %v", err)
	}
}

// TestConfigValidation 覆盖每条配置校验及其指出的字段。
func TestConfigValidation(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{}, "manifests or roles"},
		{Config{Manifests: []string{"a"}}, "service_name or node_port"},
		{Config{Manifests: []string{"a"}, NodePort: 70000}, "node_port 70000"},
		{Config{Manifests: []string{"a"}, NodePort: 1, StartupTimeout: -1}, "negative"},
		{Config{Manifests: []string{"a"}, NodePort: 1, PodSelector: "a in (("}, "pod_selector"},
		{Config{Roles: []Role{{Manifests: []string{"a"}}}, NodePort: 1}, "roles[0].name"},
		{Config{Roles: []Role{{Name: "p", Manifests: []string{"a"}}, {Name: "p", Manifests: []string{"b"}}}, NodePort: 1}, `roles[1].name "p" is duplicated`},
		{Config{Roles: []Role{{Name: "p"}}, NodePort: 1}, "roles[0] (p).manifests"},
		{Config{Roles: []Role{{Name: "p", Manifests: []string{"a"}, PodSelector: "=="}}, NodePort: 1}, "roles[0].pod_selector"},
	}
	for _, c := range cases {
		_, err := New(c.cfg)
		if !errors.Is(err, deploy.ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want ErrConfig mentioning %q", c.cfg, err, c.want)
		}
	}
	c, err := withDefaults(Config{Manifests: []string{"a"}, ServiceName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Namespace != "default" || c.PortName != "http" || c.HealthPath != "/health" || c.StartupTimeout != 20*time.Minute || c.DeleteTimeout != DefaultDeleteTimeout || c.FieldManager != "cibench" {
		t.Fatalf("defaults = %+v", c)
	}
}

// TestObjectReadiness 用真实形状的状态检查各类型的就绪与失败判断。
func TestObjectReadiness(t *testing.T) {
	cases := []struct {
		name                   string
		y                      string
		tracked, ready, failed bool
	}{
		{"deploy-ready", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 2}, spec: {replicas: 2}, status: {observedGeneration: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2}}`, true, true, false},
		{"deploy-stale-generation", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 3}, spec: {replicas: 2}, status: {observedGeneration: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2}}`, true, false, false},
		{"deploy-partial", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: 2}, status: {updatedReplicas: 2, readyReplicas: 1, availableReplicas: 1}}`, true, false, false},
		{"deploy-default-replicas", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, status: {updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1}}`, true, true, false},
		{"deploy-deadline", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, status: {conditions: [{type: Progressing, status: "False", reason: ProgressDeadlineExceeded}]}}`, true, false, true},
		{"deploy-replica-failure", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, status: {conditions: [{type: ReplicaFailure, status: "True", reason: FailedCreate, message: quota}]}}`, true, false, true},
		{"sts-ready", `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s}, spec: {replicas: 3}, status: {readyReplicas: 3, availableReplicas: 3}}`, true, true, false},
		{"sts-not-available", `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s}, spec: {replicas: 3}, status: {readyReplicas: 3, availableReplicas: 2}}`, true, false, false},
		{"ds-ready", `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: s}, status: {desiredNumberScheduled: 2, numberReady: 2}}`, true, true, false},
		{"ds-zero", `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: s}, status: {}}`, true, false, false},
		{"lws-ready", `{apiVersion: leaderworkerset.x-k8s.io/v1, kind: LeaderWorkerSet, metadata: {name: l}, spec: {replicas: 2}, status: {readyReplicas: 2, conditions: [{type: Available, status: "True"}]}}`, true, true, false},
		// 通用状态库会把“Available=True 但 readyReplicas 不足”判为就绪；我们不会。
		{"lws-available-but-short", `{apiVersion: leaderworkerset.x-k8s.io/v1, kind: LeaderWorkerSet, metadata: {name: l}, spec: {replicas: 2}, status: {readyReplicas: 1, conditions: [{type: Available, status: "True"}]}}`, true, false, false},
		{"lws-no-condition", `{apiVersion: leaderworkerset.x-k8s.io/v1, kind: LeaderWorkerSet, metadata: {name: l}, spec: {replicas: 1}, status: {readyReplicas: 1}}`, true, false, false},
		{"volcano-running", `{apiVersion: batch.volcano.sh/v1alpha1, kind: Job, metadata: {name: v}, spec: {minAvailable: 2}, status: {running: 2, state: {phase: Running}}}`, true, true, false},
		{"volcano-pending", `{apiVersion: batch.volcano.sh/v1alpha1, kind: Job, metadata: {name: v}, spec: {minAvailable: 2}, status: {running: 1, state: {phase: Pending}}}`, true, false, false},
		{"volcano-failed", `{apiVersion: batch.volcano.sh/v1alpha1, kind: Job, metadata: {name: v}, status: {state: {phase: Failed, message: boom}}}`, true, false, true},
		{"pod-ready", `{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Running, conditions: [{type: Ready, status: "True"}]}}`, true, true, false},
		{"pod-failed", `{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Failed}}`, true, false, true},
		{"service", `{apiVersion: v1, kind: Service, metadata: {name: s}}`, false, false, false},
		{"batch-job-untracked", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}}`, false, false, false},
	}
	for _, c := range cases {
		r := objectReadiness(obj(t, c.y))
		if r.tracked != c.tracked || r.ready != c.ready || (r.failed != "") != c.failed {
			t.Errorf("%s: got %+v", c.name, r)
		}
	}
}

// TestPodsReadiness 检查选择器就绪：数量下限、删除中的 Pod 与等待原因。
func TestPodsReadiness(t *testing.T) {
	ready := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	crash := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "vllm", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}}}
	now := metav1.Now()
	dying := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c", DeletionTimestamp: &now}}
	if r := podsReadiness(nil, 0); r.ready {
		t.Fatal("no pods must not be ready")
	}
	if r := podsReadiness([]corev1.Pod{ready, dying}, 1); !r.ready {
		t.Fatalf("ready+dying: %+v", r)
	}
	if r := podsReadiness([]corev1.Pod{ready}, 2); r.ready {
		t.Fatalf("min 2: %+v", r)
	}
	r := podsReadiness([]corev1.Pod{ready, crash}, 1)
	if r.ready || !strings.Contains(r.detail, "b/vllm: CrashLoopBackOff") {
		t.Fatalf("crash: %+v", r)
	}
}

// TestPodSelectorFor 检查归档时用来找 Pod 的选择器。
func TestPodSelectorFor(t *testing.T) {
	cases := map[string]string{
		`{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {selector: {matchLabels: {b: "2", a: "1"}}}}`: "a=1,b=2",
		`{apiVersion: leaderworkerset.x-k8s.io/v1, kind: LeaderWorkerSet, metadata: {name: l}}`:                           "leaderworkerset.sigs.k8s.io/name=l",
		`{apiVersion: batch.volcano.sh/v1alpha1, kind: Job, metadata: {name: v}}`:                                         "volcano.sh/job-name=v",
		`{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {selector: {a: "1"}}}`:                                "",
	}
	for y, want := range cases {
		if got := podSelectorFor(obj(t, y)); got != want {
			t.Errorf("%s: got %q want %q", y, got, want)
		}
	}
}

// TestServicePortAndNodeAddress 检查端口名匹配、错误信息与节点地址选择规则。
func TestServicePortAndNodeAddress(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "metrics", NodePort: 31000}, {Name: "http", NodePort: 30123}}}}
	if p, err := servicePort(svc, "http"); err != nil || p != 30123 {
		t.Fatalf("http: %d %v", p, err)
	}
	_, err := servicePort(svc, "grpc")
	if !errors.Is(err, ErrPortNotFound) || !strings.Contains(err.Error(), `"metrics", "http"`) {
		t.Fatalf("grpc: %v", err)
	}
	node := func(name string, ready bool, addrs ...corev1.NodeAddress) corev1.Node {
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Addresses: addrs, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}}}
	}
	in := func(a string) corev1.NodeAddress { return corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a} }
	ex := func(a string) corev1.NodeAddress { return corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: a} }
	host := corev1.NodeAddress{Type: corev1.NodeHostName, Address: "h"}
	cases := []struct {
		nodes []corev1.Node
		want  string
	}{
		{[]corev1.Node{node("b", true, in("10.0.0.2")), node("a", true, ex("1.2.3.4"), in("10.0.0.1"))}, "10.0.0.1"},
		{[]corev1.Node{node("a", false, in("10.0.0.1")), node("b", true, ex("1.2.3.4"))}, "1.2.3.4"},
		{[]corev1.Node{node("a", false, in("10.0.0.9"))}, "10.0.0.9"},
	}
	for i, c := range cases {
		if got, err := pickNodeAddress(c.nodes); err != nil || got != c.want {
			t.Errorf("case %d: %q %v want %q", i, got, err, c.want)
		}
	}
	if _, err := pickNodeAddress([]corev1.Node{node("a", true, host)}); !errors.Is(err, ErrNoNodeAddress) {
		t.Fatalf("no address: %v", err)
	}
	if _, err := pickNodeAddress(nil); !errors.Is(err, ErrNoNodeAddress) {
		t.Fatalf("no nodes: %v", err)
	}
}

// TestErrorsText 确认错误类型的文本与 Unwrap 行为。
func TestErrorsText(t *testing.T) {
	te := &TeardownError{Remaining: []string{"Deployment/default/x: still present"}}
	if !errors.Is(te, ErrLeftovers) || !strings.Contains(te.Error(), "Deployment/default/x") {
		t.Fatalf("%v", te)
	}
	me := &ManifestError{File: "f.yaml", Index: 3, Err: errors.New("bad")}
	if me.Error() != "kube: manifest f.yaml: document 3: bad" || errors.Unwrap(me).Error() != "bad" {
		t.Fatalf("%v", me)
	}
	if roleSuffix("") != "" || roleSuffix("prefill") != " (role prefill)" || orNone("") != "<none>" {
		t.Fatal("helpers")
	}
}
