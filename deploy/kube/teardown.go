package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// TeardownError 列出在 DeleteTimeout 内未能删除的对象。
type TeardownError struct {
	// Remaining 是仍存在的对象（Kind/namespace/name）及原因。
	Remaining []string
}

// Error 实现 error。
func (e *TeardownError) Error() string {
	return fmt.Sprintf("%v: %s", ErrLeftovers, strings.Join(e.Remaining, "; "))
}

// Unwrap 让 errors.Is(err, ErrLeftovers) 成立。
func (e *TeardownError) Unwrap() error { return ErrLeftovers }

// 归档的上限。归档发生在部署失败、超时或被取消之后——正是用户最需要 Pod 日志的时候——
// 但它不能让清理无限拖延，也不能把一个刷屏的容器日志整个搬进产物。
const (
	// ArchiveTimeout 是 Teardown 里归档（列 Pod、取日志、取事件）的总时限；归档用自己的
	// ctx，不占删除的 DeleteTimeout，调用方的 ctx 已取消时也照样归档。
	ArchiveTimeout = 2 * time.Minute
	// MaxLogBytes 是每个容器（每次运行）归档的日志上限，取日志尾部之前的部分由 API Server 截断。
	MaxLogBytes = 64 << 20
)

// ArchiveLogs 把本部署所有 Pod 的日志（每个容器，含上一次重启前的日志，各至多 MaxLogBytes）、
// Pod 状态摘要（pods.txt）、每个 Pod 的完整描述（pods/<pod>.yaml：spec、status、条件，
// 字面写在清单里的密钥类环境变量与 API 密钥被替换为 ***）与命名空间事件（events.txt）写入 dir。
// 单个日志取不到不会中断归档，原因写进 dir/archive-errors.txt；只有目录不可写等问题才返回错误。
//
// 归档到 Config.LogDir 之后，Teardown 不再重复归档同一目录。
func (x *Deployment) ArchiveLogs(ctx context.Context, dir string) error {
	if dir == "" {
		return fmt.Errorf("%w: archive dir is empty", ErrConfig)
	}
	err := x.archive(ctx, dir)
	if err == nil {
		x.mu.Lock()
		x.archivedTo = dir
		x.mu.Unlock()
	}
	return err
}

// archive 完成 ArchiveLogs 的工作（见其文档）。
func (x *Deployment) archive(ctx context.Context, dir string) error {
	podDir := filepath.Join(dir, "pods")
	if err := os.MkdirAll(podDir, 0o755); err != nil {
		return fmt.Errorf("kube: archive logs: %w", err)
	}
	var notes []string
	pods, err := x.pods(ctx)
	if err != nil {
		notes = append(notes, "list pods: "+err.Error())
	}
	var summary strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&summary, "%s\tphase=%s\tnode=%s\tready=%v\n", p.Name, p.Status.Phase, p.Spec.NodeName, podIsReady(&p))
		if err := x.describe(&p, filepath.Join(podDir, p.Name+".yaml")); err != nil {
			notes = append(notes, fmt.Sprintf("describe %s: %v", p.Name, err))
		}
		statuses := map[string]int32{}
		for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			statuses[cs.Name] = cs.RestartCount
			fmt.Fprintf(&summary, "  container %s restarts=%d %s\n", cs.Name, cs.RestartCount, containerState(cs))
		}
		containers := append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...)
		for _, c := range containers {
			for _, previous := range []bool{false, true} {
				if previous && statuses[c.Name] == 0 {
					continue // 从未重启：没有上一次的日志
				}
				name := p.Name + "." + c.Name + ".log"
				if previous {
					name = p.Name + "." + c.Name + ".previous.log"
				}
				if err := x.saveLog(ctx, p.Name, c.Name, previous, filepath.Join(podDir, name)); err != nil {
					notes = append(notes, fmt.Sprintf("log %s/%s previous=%v: %v", p.Name, c.Name, previous, err))
				}
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "pods.txt"), []byte(summary.String()), 0o644); err != nil {
		return fmt.Errorf("kube: archive logs: %w", err)
	}
	events, err := x.events(ctx)
	if err != nil {
		notes = append(notes, "list events: "+err.Error())
	}
	if err := os.WriteFile(filepath.Join(dir, "events.txt"), []byte(events), 0o644); err != nil {
		return fmt.Errorf("kube: archive logs: %w", err)
	}
	if len(notes) > 0 {
		if err := os.WriteFile(filepath.Join(dir, "archive-errors.txt"), []byte(strings.Join(notes, "\n")+"\n"), 0o644); err != nil {
			return fmt.Errorf("kube: archive logs: %w", err)
		}
	}
	return nil
}

// containerState 把容器状态压成一行，便于在 pods.txt 里一眼看出 CrashLoopBackOff 等。
func containerState(cs corev1.ContainerStatus) string {
	switch {
	case cs.State.Waiting != nil:
		return "waiting:" + cs.State.Waiting.Reason
	case cs.State.Terminated != nil:
		return fmt.Sprintf("terminated:%s exit=%d", cs.State.Terminated.Reason, cs.State.Terminated.ExitCode)
	case cs.State.Running != nil:
		return "running"
	}
	return "unknown"
}

// secretEnvName 匹配看起来装着密钥的环境变量名。
var secretEnvName = regexp.MustCompile(`(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)`)

// describe 把 Pod 的完整对象（去掉 managedFields）写成 YAML，相当于 kubectl get -o yaml：
// 部署没就绪时，调度、镜像、探针、条件与容器状态都在这里。清单里字面写出的密钥类环境变量
// 的值与配置的 API 密钥被替换为 ***，产物里不出现密钥（valueFrom 引用的 Secret 本来就不展开）。
func (x *Deployment) describe(p *corev1.Pod, path string) error {
	p = p.DeepCopy()
	p.ManagedFields = nil
	// mask 在序列化之前替换（之后替换会破坏 YAML 的引号与转义）。
	mask := func(v string) string {
		if x.cfg.APIKey == "" {
			return v
		}
		return strings.ReplaceAll(v, x.cfg.APIKey, "***")
	}
	for k, v := range p.Annotations {
		p.Annotations[k] = mask(v)
	}
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			c := &cs[i]
			for j := range c.Command {
				c.Command[j] = mask(c.Command[j])
			}
			for j := range c.Args {
				c.Args[j] = mask(c.Args[j])
			}
			for j := range c.Env {
				if e := &c.Env[j]; e.Value != "" && secretEnvName.MatchString(e.Name) {
					e.Value = "***"
				} else {
					e.Value = mask(e.Value)
				}
			}
		}
	}
	b, err := yaml.Marshal(p)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// saveLog 流式地把一个容器的日志（至多 MaxLogBytes）写入文件，避免大日志占内存。
func (x *Deployment) saveLog(ctx context.Context, pod, container string, previous bool, path string) error {
	limit := int64(MaxLogBytes)
	rc, err := x.cs.CoreV1().Pods(x.cfg.Namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, Previous: previous, LimitBytes: &limit}).Stream(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, io.LimitReader(rc, limit)); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// pods 返回本部署相关的 Pod：工作负载选择器、配置的 Pod 选择器与直接 apply 的 Pod 的并集。
func (x *Deployment) pods(ctx context.Context) ([]corev1.Pod, error) {
	selectors := map[string]bool{}
	names := map[string]bool{}
	for _, a := range x.snapshot() {
		if !a.namespaced || a.obj.GetNamespace() != x.cfg.Namespace {
			continue
		}
		if a.obj.GetKind() == "Pod" && a.gvr.Group == "" {
			names[a.obj.GetName()] = true
		}
		if s := podSelectorFor(a.obj); s != "" {
			selectors[s] = true
		}
	}
	if x.cfg.PodSelector != "" {
		selectors[x.cfg.PodSelector] = true
	}
	for _, r := range x.cfg.Roles {
		if r.PodSelector != "" {
			selectors[r.PodSelector] = true
		}
	}
	seen := map[string]corev1.Pod{}
	var errs []error
	for s := range selectors {
		list, err := x.cs.CoreV1().Pods(x.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: s})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, p := range list.Items {
			seen[p.Name] = p
		}
	}
	for n := range names {
		p, err := x.cs.CoreV1().Pods(x.cfg.Namespace).Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
			continue
		}
		seen[p.Name] = *p
	}
	out := make([]corev1.Pod, 0, len(seen))
	for _, p := range seen {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errors.Join(errs...)
}

// events 以时间顺序渲染命名空间内的全部事件（一行一个）。
func (x *Deployment) events(ctx context.Context) (string, error) {
	list, err := x.cs.CoreV1().Events(x.cfg.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	items := list.Items
	ts := func(e *corev1.Event) time.Time {
		switch {
		case !e.LastTimestamp.IsZero():
			return e.LastTimestamp.Time
		case !e.EventTime.IsZero():
			return e.EventTime.Time
		}
		return e.CreationTimestamp.Time
	}
	sort.SliceStable(items, func(i, j int) bool { return ts(&items[i]).Before(ts(&items[j])) })
	var b strings.Builder
	for i := range items {
		e := &items[i]
		fmt.Fprintf(&b, "%s\t%s\t%s/%s\t%s\tx%d\t%s\n", ts(e).UTC().Format(time.RFC3339), e.Type,
			e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, max(e.Count, 1), strings.ReplaceAll(e.Message, "\n", " "))
	}
	return b.String(), nil
}

// Teardown 先归档（配置了 LogDir、且还没有 ArchiveLogs 到那里时），再按 apply 的逆序以
// 前台级联方式删除全部对象（默认保留 CRD），并在 DeleteTimeout 内等待它们真正消失。
// 幂等：第二次调用直接返回 nil。即使 ctx 已取消也会用独立的限时 ctx 完成清理：
// 归档用自己的 ArchiveTimeout，删除用 DeleteTimeout，一个拖延不吃掉另一个的时间。
// Deploy 失败（超时、被取消、工作负载失败、/health 不通）后的清理走的也是这里，所以
// 失败的部署同样留下 Pod 日志、描述与事件。
func (x *Deployment) Teardown(ctx context.Context) error {
	x.mu.Lock()
	if x.tornDown {
		x.mu.Unlock()
		return nil
	}
	x.tornDown = true
	archived := x.archivedTo != "" && x.archivedTo == x.cfg.LogDir
	x.mu.Unlock()

	var errs []error
	if x.cfg.LogDir != "" && !archived {
		actx, acancel := context.WithTimeout(context.WithoutCancel(ctx), ArchiveTimeout)
		if err := x.archive(actx, x.cfg.LogDir); err != nil {
			errs = append(errs, err)
		}
		acancel()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), x.cfg.DeleteTimeout)
	defer cancel()
	items := x.snapshot()
	var targets []applied
	for i := len(items) - 1; i >= 0; i-- {
		a := items[i]
		if applyRank(a.object) == 0 && !x.cfg.DeleteCRDs {
			continue
		}
		targets = append(targets, a)
	}
	fg := metav1.DeletePropagationForeground
	failed := map[int]string{}
	for i, a := range targets {
		err := x.resource(a).Delete(ctx, a.obj.GetName(), metav1.DeleteOptions{PropagationPolicy: &fg})
		if err != nil && !apierrors.IsNotFound(err) {
			failed[i] = err.Error()
		}
		x.log.Info("kube: delete", "object", a.String(), "err", err)
	}
	// 逐个等待对象消失（前台删除时对象在其从属对象删完之前一直存在）。
	var remaining []string
	for i, a := range targets {
		if msg, bad := failed[i]; bad {
			remaining = append(remaining, a.String()+": "+msg)
			continue
		}
		err := Poll(ctx, x.cfg.PollInterval/4, a.String()+" deleted", func() (bool, string, error) {
			cur, err := x.resource(a).Get(ctx, a.obj.GetName(), metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				return true, "", nil
			case err != nil:
				return false, "get: " + err.Error(), nil
			}
			return false, fmt.Sprintf("deletionTimestamp %v, finalizers %v", cur.GetDeletionTimestamp(), cur.GetFinalizers()), nil
		})
		var we *WaitError
		if errors.As(err, &we) {
			remaining = append(remaining, a.String()+": still present after "+x.cfg.DeleteTimeout.String()+" ("+we.Last+")")
		} else if err != nil {
			remaining = append(remaining, a.String()+": "+err.Error())
		}
	}
	if len(remaining) > 0 {
		errs = append(errs, &TeardownError{Remaining: remaining})
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kube: teardown: %w", err)
	}
	return nil
}

// resource 返回对象所在的动态资源接口。
func (x *Deployment) resource(a applied) dynamic.ResourceInterface {
	if a.namespaced {
		return x.dyn.Resource(a.gvr).Namespace(a.obj.GetNamespace())
	}
	return x.dyn.Resource(a.gvr)
}
