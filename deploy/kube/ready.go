package kube

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// readiness 是对一个对象就绪状态的判断结果。
type readiness struct {
	// tracked 为假表示该类型没有可判断的就绪状态（Service、ConfigMap……）。
	tracked bool
	ready   bool
	// failed 非空表示不可恢复的失败，继续等待没有意义。
	failed string
	// detail 是人可读的进度，超时时出现在错误里。
	detail string
}

// objectReadiness 按类型判断就绪。为什么不用通用的状态库：LeaderWorkerSet 的
// 就绪由 Available 条件和 readyReplicas 共同决定，通用库会误报；Volcano Job
// 的状态在 status.state.phase 中。未知类型返回 tracked=false，由 pod 选择器兜底。
func objectReadiness(u *unstructured.Unstructured) readiness {
	gk := u.GroupVersionKind().GroupKind()
	switch {
	case gk.Group == "apps" && gk.Kind == "Deployment":
		return deploymentReadiness(u)
	case gk.Group == "apps" && gk.Kind == "StatefulSet":
		return statefulSetReadiness(u)
	case gk.Group == "apps" && gk.Kind == "DaemonSet":
		return daemonSetReadiness(u)
	case gk.Group == "leaderworkerset.x-k8s.io" && gk.Kind == "LeaderWorkerSet":
		return lwsReadiness(u)
	case gk.Group == "batch.volcano.sh" && gk.Kind == "Job":
		return volcanoJobReadiness(u)
	case gk.Group == "" && gk.Kind == "Pod":
		return podReadiness(u)
	}
	return readiness{}
}

// nestedInt 读取整数字段，缺失时返回 def。
func nestedInt(u *unstructured.Unstructured, def int64, fields ...string) int64 {
	v, found, err := unstructured.NestedFieldNoCopy(u.Object, fields...)
	if !found || err != nil {
		return def
	}
	switch n := v.(type) {
	case int64:
		return n
	case int:
		return int64(n)
	case float64:
		return int64(n)
	}
	return def
}

// condition 返回 status.conditions 中某类型条件的 status 与 reason/message。
func condition(u *unstructured.Unstructured, typ string) (status, reason, message string, found bool) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != typ {
			continue
		}
		s, _ := m["status"].(string)
		r, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		return s, r, msg, true
	}
	return "", "", "", false
}

// observed 报告控制器是否已处理最新的 spec（observedGeneration >= generation）。
func observed(u *unstructured.Unstructured) bool {
	return nestedInt(u, 0, "status", "observedGeneration") >= u.GetGeneration()
}

// deploymentReadiness：最新 spec 已被观察，且更新、可用、就绪副本数都达到期望。
// Progressing=False（ProgressDeadlineExceeded）与 ReplicaFailure=True 视为失败。
func deploymentReadiness(u *unstructured.Unstructured) readiness {
	want := nestedInt(u, 1, "spec", "replicas")
	upd := nestedInt(u, 0, "status", "updatedReplicas")
	avail := nestedInt(u, 0, "status", "availableReplicas")
	ready := nestedInt(u, 0, "status", "readyReplicas")
	r := readiness{tracked: true, detail: fmt.Sprintf("replicas want=%d updated=%d ready=%d available=%d", want, upd, ready, avail)}
	if s, reason, msg, ok := condition(u, "Progressing"); ok && s == "False" && reason == "ProgressDeadlineExceeded" {
		r.failed = reason + ": " + msg
		return r
	}
	if s, reason, msg, ok := condition(u, "ReplicaFailure"); ok && s == "True" {
		r.failed = reason + ": " + msg
		return r
	}
	r.ready = observed(u) && upd >= want && avail >= want && ready >= want
	return r
}

// statefulSetReadiness：就绪副本与（存在时）可用副本达到期望，且已观察最新 spec。
func statefulSetReadiness(u *unstructured.Unstructured) readiness {
	want := nestedInt(u, 1, "spec", "replicas")
	ready := nestedInt(u, 0, "status", "readyReplicas")
	avail := nestedInt(u, ready, "status", "availableReplicas")
	return readiness{
		tracked: true,
		ready:   observed(u) && ready >= want && avail >= want,
		detail:  fmt.Sprintf("replicas want=%d ready=%d available=%d", want, ready, avail),
	}
}

// daemonSetReadiness：每个应调度的节点上都有就绪 Pod。
func daemonSetReadiness(u *unstructured.Unstructured) readiness {
	want := nestedInt(u, 0, "status", "desiredNumberScheduled")
	ready := nestedInt(u, 0, "status", "numberReady")
	return readiness{
		tracked: true,
		ready:   observed(u) && want > 0 && ready >= want,
		detail:  fmt.Sprintf("pods desired=%d ready=%d", want, ready),
	}
}

// lwsReadiness：LeaderWorkerSet 需要 Available=True 且 readyReplicas 达到期望组数。
func lwsReadiness(u *unstructured.Unstructured) readiness {
	want := nestedInt(u, 1, "spec", "replicas")
	ready := nestedInt(u, 0, "status", "readyReplicas")
	s, reason, _, _ := condition(u, "Available")
	r := readiness{tracked: true, detail: fmt.Sprintf("groups want=%d ready=%d Available=%s %s", want, ready, orNone(s), reason)}
	r.ready = s == "True" && ready >= want
	return r
}

// volcanoJobReadiness：phase 为 Running 且运行中的 Pod 数不少于 minAvailable；
// Failed/Aborted/Terminated 等终态为失败。
func volcanoJobReadiness(u *unstructured.Unstructured) readiness {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "state", "phase")
	running := nestedInt(u, 0, "status", "running")
	minAvail := nestedInt(u, 1, "spec", "minAvailable")
	r := readiness{tracked: true, detail: fmt.Sprintf("phase=%s running=%d minAvailable=%d", orNone(phase), running, minAvail)}
	switch phase {
	case "Failed", "Aborted", "Aborting", "Terminated", "Terminating", "Completed":
		msg, _, _ := unstructured.NestedString(u.Object, "status", "state", "message")
		r.failed = "phase " + phase + " " + msg
	case "Running":
		r.ready = running >= minAvail
	}
	return r
}

// podReadiness：单独声明的 Pod 需要 Ready=True；Failed/Succeeded 为失败（服务不应退出）。
func podReadiness(u *unstructured.Unstructured) readiness {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	s, _, _, _ := condition(u, "Ready")
	r := readiness{tracked: true, ready: s == "True", detail: "phase=" + orNone(phase)}
	if phase == string(corev1.PodFailed) || phase == string(corev1.PodSucceeded) {
		r.failed = "pod phase " + phase
	}
	return r
}

// orNone 让空值在错误信息里可见。
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// podsReadiness 判断选择器选中的 Pod：至少 minReady 个且全部 Ready。
// 处于 CrashLoopBackOff/ImagePullBackOff 的容器出现在 detail 里，便于超时排障。
func podsReadiness(pods []corev1.Pod, minReady int) readiness {
	if minReady <= 0 {
		minReady = 1
	}
	var ready int
	var waiting []string
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if podIsReady(&p) {
			ready++
		}
		for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
				waiting = append(waiting, p.Name+"/"+cs.Name+": "+w.Reason)
			}
		}
	}
	detail := fmt.Sprintf("pods=%d ready=%d min=%d", len(pods), ready, minReady)
	if len(waiting) > 0 {
		detail += " waiting: " + strings.Join(waiting, ", ")
	}
	return readiness{tracked: true, ready: ready >= minReady && ready == countLive(pods), detail: detail}
}

// countLive 统计未处于删除中的 Pod。
func countLive(pods []corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// podIsReady 报告 Pod 的 Ready 条件是否为 True。
func podIsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podSelectorFor 返回工作负载所管 Pod 的标签选择器，用于归档日志；
// 无法确定时返回空串。
func podSelectorFor(u *unstructured.Unstructured) string {
	gk := u.GroupVersionKind().GroupKind()
	switch {
	case gk.Group == "leaderworkerset.x-k8s.io" && gk.Kind == "LeaderWorkerSet":
		return "leaderworkerset.sigs.k8s.io/name=" + u.GetName()
	case gk.Group == "batch.volcano.sh" && gk.Kind == "Job":
		return "volcano.sh/job-name=" + u.GetName()
	}
	ml, found, _ := unstructured.NestedStringMap(u.Object, "spec", "selector", "matchLabels")
	if !found || len(ml) == 0 {
		return ""
	}
	keys := make([]string, 0, len(ml))
	for k := range ml {
		keys = append(keys, k)
	}
	sortStrings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + ml[k]
	}
	return strings.Join(parts, ",")
}
