package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/vllm-cibench/cibench/deploy"
)

// Option 调整 Deployer 的依赖。
type Option func(*Deployer)

// WithRESTConfig 直接给出 API Server 连接配置，此时忽略 Kubeconfig/Context。
func WithRESTConfig(rc *rest.Config) Option {
	return func(d *Deployer) { d.rest = rest.CopyConfig(rc) }
}

// WithFS 指定读取清单文件的文件系统（如 os.DirFS(configDir) 或 fstest.MapFS）；
// 未指定时按路径直接读取本地文件。
func WithFS(fsys fs.FS) Option {
	return func(d *Deployer) { d.fsys = fsys }
}

// WithLogger 设置进度日志；nil 表示丢弃。
func WithLogger(l *slog.Logger) Option {
	return func(d *Deployer) { d.log = l }
}

// Deployer 把用户提供的 YAML 部署到 Kubernetes（混合或 PD 分离），等待就绪，
// 通过 NodePort 访问 /health，返回 Deployment。实现 deploy.Deployer。
type Deployer struct {
	cfg     Config
	rest    *rest.Config
	fsys    fs.FS
	log     *slog.Logger
	objects []object // 已解析、排好序的对象
}

var (
	_ deploy.Deployer   = (*Deployer)(nil)
	_ deploy.Deployment = (*Deployment)(nil)
)

// New 校验配置并在构造时解析全部清单（写错的 YAML 立即报错，指出文件与文档序号）。
// 不连接 API Server；连接在 Deploy 时发生。
func New(cfg Config, opts ...Option) (*Deployer, error) {
	cfg, err := withDefaults(cfg)
	if err != nil {
		return nil, err
	}
	d := &Deployer{cfg: cfg}
	for _, o := range opts {
		o(d)
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	load := func(role string, files []string) error {
		for _, f := range files {
			objs, err := d.readManifest(f)
			if err != nil {
				return err
			}
			for i := range objs {
				objs[i].role = role
			}
			d.objects = append(d.objects, objs...)
		}
		return nil
	}
	if err := load("", cfg.Manifests); err != nil {
		return nil, err
	}
	for _, r := range cfg.Roles {
		if err := load(r.Name, r.Manifests); err != nil {
			return nil, err
		}
	}
	if len(d.objects) == 0 {
		return nil, fmt.Errorf("%w: manifests contain no objects", ErrConfig)
	}
	// CRD 与命名空间先于其他对象，以便后续对象能被映射与创建；其余保持书写顺序。
	sort.SliceStable(d.objects, func(i, j int) bool { return applyRank(d.objects[i]) < applyRank(d.objects[j]) })
	return d, nil
}

// applyRank 给出 apply 顺序：CRD 0，Namespace 1，其余 2。
func applyRank(o object) int {
	switch o.obj.GroupVersionKind().GroupKind() {
	case schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:
		return 0
	case schema.GroupKind{Kind: "Namespace"}:
		return 1
	}
	return 2
}

// readManifest 读取并解析一个清单文件。
func (d *Deployer) readManifest(name string) ([]object, error) {
	var (
		f   io.ReadCloser
		err error
	)
	if d.fsys != nil {
		f, err = d.fsys.Open(name)
	} else {
		f, err = os.Open(name)
	}
	if err != nil {
		return nil, fmt.Errorf("kube: manifest %s: %w", name, err)
	}
	defer f.Close()
	return parseManifests(name, f)
}

// restConfig 返回连接配置：优先 WithRESTConfig，否则按 kubeconfig/context 加载。
func (d *Deployer) restConfig() (*rest.Config, error) {
	if d.rest != nil {
		return d.rest, nil
	}
	return RESTConfig(d.cfg.Kubeconfig, d.cfg.Context)
}

// RESTConfig 按 client-go 的默认规则（KUBECONFIG、~/.kube/config）读取 kubeconfig；kubeconfig
// 非空时只读这个文件，kubeContext 非空时用这个上下文。错误包装 ErrConfig，不含文件内容。
// 团队自己基于 Kubernetes 的部署方式与分片 Job（loadgen/shard/kubejob）用它连接同一个集群。
func RESTConfig(kubeconfig, kubeContext string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("%w: kubeconfig %q context %q: %v", ErrConfig, kubeconfig, kubeContext, err)
	}
	return rc, nil
}

// Deploy 连接集群、按序 server-side apply 全部对象、等待各角色就绪、解析
// NodePort 并等待 /health。任何一步失败都会先执行完整的 Teardown（归档 + 删除），
// 再返回错误，调用方无需再清理。
func (d *Deployer) Deploy(ctx context.Context) (deploy.Deployment, error) {
	rc, err := d.restConfig()
	if err != nil {
		return nil, err
	}
	rc = rest.CopyConfig(rc)
	if rc.Timeout == 0 {
		rc.Timeout = 30 * time.Second
	}
	// client-go 默认 5 QPS；就绪与删除轮询会被限流器拖慢甚至在截止前报错。
	if rc.QPS == 0 {
		rc.QPS, rc.Burst = 50, 100
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kube: clientset: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kube: dynamic client: %w", err)
	}
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnreachable, rc.Host, err)
	}
	dep := &Deployment{
		cfg:    d.cfg,
		cs:     cs,
		dyn:    dyn,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery())),
		log:    d.log,
	}
	ctx2, cancel := context.WithTimeout(ctx, d.cfg.StartupTimeout)
	defer cancel()
	if err := dep.bringUp(ctx2, d.objects); err != nil {
		if ctx2.Err() != nil && !errors.Is(err, deploy.ErrNotReady) {
			err = fmt.Errorf("%w: %w", deploy.ErrNotReady, err)
		}
		if terr := dep.Teardown(context.WithoutCancel(ctx)); terr != nil {
			err = fmt.Errorf("%w; cleanup after failure: %w", err, terr)
		}
		return nil, err
	}
	return dep, nil
}

// applied 记录一个已 apply 的对象，供就绪判断、归档与逆序删除使用。
type applied struct {
	object
	gvr        schema.GroupVersionResource
	namespaced bool
}

// Deployment 是一个已就绪的 Kubernetes 部署。方法可并发调用。
type Deployment struct {
	cfg    Config
	cs     kubernetes.Interface
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	log    *slog.Logger
	ep     deploy.Endpoint

	mu       sync.Mutex
	applied  []applied
	tornDown bool
	// archivedTo 是最近一次成功 ArchiveLogs 的目录；等于 LogDir 时 Teardown 不再重复归档。
	archivedTo string
}

// bringUp 完成 apply → 就绪 → NodePort → /health 的全过程。
func (x *Deployment) bringUp(ctx context.Context, objs []object) error {
	for _, o := range objs {
		if err := x.apply(ctx, o); err != nil {
			return err
		}
	}
	if err := x.waitReady(ctx); err != nil {
		return err
	}
	host, port, err := x.resolveNodePort(ctx)
	if err != nil {
		return err
	}
	base := "http://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/v1"
	x.log.Info("kube: waiting for health", "url", deploy.HealthURL(base, x.cfg.HealthPath))
	timeout := x.cfg.StartupTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	if err := deploy.WaitHealthy(ctx, deploy.HealthURL(base, x.cfg.HealthPath), deploy.HealthOptions{Client: x.cfg.HTTPClient, Timeout: timeout}); err != nil {
		return fmt.Errorf("kube: %w", err)
	}
	x.ep = deploy.Endpoint{BaseURLs: []string{base}, Model: x.cfg.Model, APIKey: x.cfg.APIKey}
	return nil
}

// mapping 找到对象的 REST 映射；找不到时重置发现缓存并轮询，
// 因为刚创建的 CRD 需要一点时间才出现在发现信息中。
func (x *Deployment) mapping(ctx context.Context, o object) (*meta.RESTMapping, error) {
	gvk := o.obj.GroupVersionKind()
	var m *meta.RESTMapping
	err := Poll(ctx, x.cfg.PollInterval/4, fmt.Sprintf("%s (%s document %d): kind %s served by the API server", o, o.file, o.index, gvk), func() (bool, string, error) {
		var err error
		m, err = x.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err == nil {
			return true, "", nil
		}
		if !meta.IsNoMatchError(err) {
			return false, "", fmt.Errorf("kube: %s (%s document %d): mapping: %w", o, o.file, o.index, err)
		}
		x.mapper.Reset()
		return false, err.Error(), nil
	})
	return m, err
}

// apply 以服务端 apply（Force）提交一个对象；命名空间级对象没写 namespace 时
// 使用配置的命名空间。CRD 提交后等待 Established 再重置映射。
func (x *Deployment) apply(ctx context.Context, o object) error {
	m, err := x.mapping(ctx, o)
	if err != nil {
		return err
	}
	obj := o.obj.DeepCopy()
	namespaced := m.Scope.Name() == meta.RESTScopeNameNamespace
	var ri dynamic.ResourceInterface
	if namespaced {
		if obj.GetNamespace() == "" {
			obj.SetNamespace(x.cfg.Namespace)
		}
		ri = x.dyn.Resource(m.Resource).Namespace(obj.GetNamespace())
	} else {
		obj.SetNamespace("")
		ri = x.dyn.Resource(m.Resource)
	}
	out, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: x.cfg.FieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("kube: apply %s (%s document %d): %w", object{obj: obj}, o.file, o.index, err)
	}
	a := applied{object: o, gvr: m.Resource, namespaced: namespaced}
	a.obj = out
	x.mu.Lock()
	x.applied = append(x.applied, a)
	x.mu.Unlock()
	x.log.Info("kube: applied", "object", a.String(), "role", o.role)
	if m.GroupVersionKind.Kind == "CustomResourceDefinition" {
		if err := x.waitEstablished(ctx, a); err != nil {
			return err
		}
		x.mapper.Reset()
	}
	return nil
}

// waitEstablished 等待 CRD 的 Established 条件为 True。
func (x *Deployment) waitEstablished(ctx context.Context, a applied) error {
	return Poll(ctx, x.cfg.PollInterval/4, "CRD "+a.obj.GetName()+" established", func() (bool, string, error) {
		u, err := x.dyn.Resource(a.gvr).Get(ctx, a.obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		s, reason, msg, _ := condition(u, "Established")
		return s == "True", "Established=" + orNone(s) + " " + reason + " " + msg, nil
	})
}

// WaitError 表示一次等待（就绪、CRD 建立、对象消失、分片 Job 结束）在 ctx 结束前没有等到。
// 它带着截止之前最后一次完整观察到的状态：部署等了 20 分钟超时，用户要看到的是
// "groups want=2 ready=1 Available=True"，而不是截止时刚好在路上的那次 GET 自己的
// "context deadline exceeded"。
type WaitError struct {
	// What 说明在等什么（如 "waiting for (role prefill)"、"CRD x established"）。
	What string
	// Last 是截止之前最后一次观察到的状态；一次也没观察到时说明原因。
	Last string
	// Err 是 ctx.Err()：context.DeadlineExceeded 或 context.Canceled。
	Err error
}

// Error 实现 error：等什么、为什么停、最后看到了什么。
func (e *WaitError) Error() string {
	return fmt.Sprintf("kube: %v: %s: %v (last: %s)", deploy.ErrNotReady, e.What, e.Err, e.Last)
}

// Unwrap 让 errors.Is(err, deploy.ErrNotReady) 与 errors.Is(err, context.DeadlineExceeded/Canceled)
// 都成立，调用方可以区分超时与取消。
func (e *WaitError) Unwrap() []error { return []error{deploy.ErrNotReady, e.Err} }

// Poll 以固定间隔调用 f，直到它报告完成（nil）或返回错误（原样返回），或 ctx 结束（返回 *WaitError，
// 带着 what 与最后一次有信息量的状态）。interval <= 0 时取 DefaultPollInterval。本包的就绪与删除
// 等待、分片 Job（loadgen/shard/kubejob）与团队自己的 Kubernetes 部署方式都用它等待对象。
//
// f 每次返回它看到的状态 state（对象的进度、或一次失败请求的错误）。ctx 结束的那一刻往往有一个
// 请求正在路上，它失败于 ctx 自己的截止时间，带回的状态没有信息量；所以 f 返回时若 ctx 已经
// 结束或截止在即（deadlineHit）、且之前已有观察，就保留之前的那次。没有任何观察时（第一次请求
// 就撞上截止）才用它。
func Poll(ctx context.Context, interval time.Duration, what string, f func() (done bool, state string, err error)) error {
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	last := "nothing observed yet"
	observed := false
	for {
		done, state, err := f()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if !deadlineHit(ctx) || !observed {
			last, observed = state, true
		}
		select {
		case <-ctx.Done():
			return &WaitError{What: what, Last: last, Err: ctx.Err()}
		case <-t.C:
		}
	}
}

// deadlineGuard 见 deadlineHit。
const deadlineGuard = time.Second

// deadlineHit 报告刚完成的一次观察是否可能是被截止时间打断的：ctx 已结束，或离截止不到
// deadlineGuard。只看 ctx.Err() 不够：负载高时截止时刻已过而 ctx 的定时器还没触发，client-go 的
// 限流器此时立即报 "rate: Wait(n=1) would exceed context deadline"（TestKubeIntegration/lws 在两个
// 忙循环旁这样失败过一次），它同样没有信息量。代价是最后一秒里的一次真实观察让位于前一次。
func deadlineHit(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && time.Until(dl) < deadlineGuard
}

// waitReady 按角色顺序等待：先等可判断的工作负载，再等配置的 Pod 选择器。
func (x *Deployment) waitReady(ctx context.Context) error {
	type group struct {
		name     string
		selector string
		min      int
	}
	groups := []group{{name: "", selector: x.cfg.PodSelector, min: x.cfg.MinReady}}
	for _, r := range x.cfg.Roles {
		groups = append(groups, group{name: r.Name, selector: r.PodSelector, min: r.MinReady})
	}
	for _, g := range groups {
		err := Poll(ctx, x.cfg.PollInterval, "workloads ready"+roleSuffix(g.name), func() (bool, string, error) {
			for _, a := range x.snapshot() {
				if a.role != g.name {
					continue
				}
				u, err := x.get(ctx, a)
				if err != nil {
					return false, fmt.Sprintf("%s: %v", a, err), nil
				}
				r := objectReadiness(u)
				if r.failed != "" {
					return false, "", fmt.Errorf("%w: %s%s: %s", ErrWorkloadFailed, a, roleSuffix(g.name), r.failed)
				}
				if r.tracked && !r.ready {
					return false, fmt.Sprintf("%s: %s", a, r.detail), nil
				}
			}
			if g.selector != "" {
				pods, err := x.cs.CoreV1().Pods(x.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: g.selector})
				if err != nil {
					return false, fmt.Sprintf("pods %q: %v", g.selector, err), nil
				}
				if r := podsReadiness(pods.Items, g.min); !r.ready {
					return false, fmt.Sprintf("pods %q: %s", g.selector, r.detail), nil
				}
			}
			return true, "", nil
		})
		if err != nil {
			return err
		}
		x.log.Info("kube: ready", "role", g.name)
	}
	return nil
}

// roleSuffix 在错误信息里标出角色名。
func roleSuffix(role string) string {
	if role == "" {
		return ""
	}
	return " (role " + role + ")"
}

// snapshot 复制已 apply 列表，避免持锁做网络请求。
func (x *Deployment) snapshot() []applied {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]applied(nil), x.applied...)
}

// get 读取对象的当前状态。
func (x *Deployment) get(ctx context.Context, a applied) (*unstructured.Unstructured, error) {
	if a.namespaced {
		return x.dyn.Resource(a.gvr).Namespace(a.obj.GetNamespace()).Get(ctx, a.obj.GetName(), metav1.GetOptions{})
	}
	return x.dyn.Resource(a.gvr).Get(ctx, a.obj.GetName(), metav1.GetOptions{})
}

// resolveNodePort 解析入口地址：Service 的命名端口 → NodePort（缺失时用
// node_port 兜底），节点地址优先取承载入口 Pod 的节点，否则取第一个 Ready 节点。
func (x *Deployment) resolveNodePort(ctx context.Context) (string, int, error) {
	port := x.cfg.NodePort
	var svc *corev1.Service
	if x.cfg.ServiceName != "" {
		s, err := x.cs.CoreV1().Services(x.cfg.Namespace).Get(ctx, x.cfg.ServiceName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return "", 0, fmt.Errorf("%w: %s/%s", ErrServiceNotFound, x.cfg.Namespace, x.cfg.ServiceName)
		}
		if err != nil {
			return "", 0, fmt.Errorf("kube: get service %s/%s: %w", x.cfg.Namespace, x.cfg.ServiceName, err)
		}
		svc = s
		np, err := servicePort(s, x.cfg.PortName)
		if err != nil {
			return "", 0, err
		}
		if np != 0 {
			port = int(np)
		}
	}
	if port == 0 {
		return "", 0, fmt.Errorf("%w: service %s/%s port %q has no nodePort (type %s) and node_port is not configured",
			ErrNoNodePort, x.cfg.Namespace, x.cfg.ServiceName, x.cfg.PortName, svc.Spec.Type)
	}
	if x.cfg.NodeIP != "" {
		return x.cfg.NodeIP, port, nil
	}
	host, err := x.nodeAddress(ctx, svc)
	return host, port, err
}

// servicePort 在 Service 中按名字找端口，返回其 NodePort（可能为 0）。
func servicePort(s *corev1.Service, name string) (int32, error) {
	names := make([]string, 0, len(s.Spec.Ports))
	for _, p := range s.Spec.Ports {
		if p.Name == name {
			return p.NodePort, nil
		}
		names = append(names, strconv.Quote(p.Name))
	}
	return 0, fmt.Errorf("%w: service %s/%s has no port named %q (ports: %s)", ErrPortNotFound, s.Namespace, s.Name, name, strings.Join(names, ", "))
}

// nodeAddress 选择访问用的节点地址。
func (x *Deployment) nodeAddress(ctx context.Context, svc *corev1.Service) (string, error) {
	nodes, err := x.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("kube: list nodes: %w", err)
	}
	byName := map[string]*corev1.Node{}
	for i := range nodes.Items {
		byName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	var preferred []string
	if svc != nil && len(svc.Spec.Selector) > 0 {
		sel := metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector})
		if pods, err := x.cs.CoreV1().Pods(x.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel}); err == nil {
			for i := range pods.Items {
				if p := &pods.Items[i]; p.Spec.NodeName != "" && podIsReady(p) {
					preferred = append(preferred, p.Spec.NodeName)
				}
			}
		}
	}
	sort.Strings(preferred)
	for _, n := range preferred {
		if node := byName[n]; node != nil {
			if a := nodeIP(node); a != "" {
				return a, nil
			}
		}
	}
	return pickNodeAddress(nodes.Items)
}

// pickNodeAddress 在节点中按名字排序，优先 Ready 节点，返回第一个可用地址。
func pickNodeAddress(nodes []corev1.Node) (string, error) {
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for _, wantReady := range []bool{true, false} {
		for i := range nodes {
			if nodeReady(&nodes[i]) != wantReady {
				continue
			}
			if a := nodeIP(&nodes[i]); a != "" {
				return a, nil
			}
		}
	}
	return "", fmt.Errorf("%w: %d nodes, none has an InternalIP or ExternalIP", ErrNoNodeAddress, len(nodes))
}

// nodeIP 返回节点的 InternalIP，没有则 ExternalIP。
func nodeIP(n *corev1.Node) string {
	for _, typ := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP} {
		for _, a := range n.Status.Addresses {
			if a.Type == typ && a.Address != "" {
				return a.Address
			}
		}
	}
	return ""
}

// nodeReady 报告节点 Ready 条件是否为 True。
func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Endpoint 返回 http://<NodeIP>:<NodePort>/v1。
func (x *Deployment) Endpoint() deploy.Endpoint { return x.ep }

// sortStrings 是 sort.Strings 的别名，供 ready.go 使用而不必各自导入。
func sortStrings(s []string) { sort.Strings(s) }
