package kubejob

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/vllm-cibench/cibench/deploy/kube"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/loadgen/shard"
)

// 分片 Job 的环境变量：每个 Pod 由它们得知自己是哪一片（JOB_COMPLETION_INDEX 由
// Kubernetes 为 Indexed Job 注入）、共几片、约定的开始时刻。examples/bench --shard-index 等
// 参数读取的就是它们。
const (
	EnvShardIndex = "JOB_COMPLETION_INDEX"
	EnvShardCount = "CIBENCH_SHARD_COUNT"
	EnvShardStart = "CIBENCH_SHARD_START" // RFC 3339（纳秒）
	// EnvShardGroup 只在每组一个 Job（ShardJob.Groups > 1）时设置：该 Job 的 Pod 只跑这一组
	// （loadgen.Shard.Groups）。
	EnvShardGroup = "CIBENCH_SHARD_GROUP"
)

// ShardContainer 是分片 Pod 里运行压测的容器名；结果从它的日志的最后一个结果行读取。
const ShardContainer = "shard"

// 随运行创建的 Secret（ShardJob.Secret）与 ConfigMap（ShardJob.Data）在分片容器里的挂载点：
// 键 k 的内容在 <挂载点>/k。
const (
	SecretMountPath = "/etc/cibench/secret"
	DataMountPath   = "/etc/cibench/data"
	// MaxShardFilesBytes 是 Secret 与 ConfigMap 各自内容的总字节上限：API Server 拒绝超过约 1 MiB
	// 的对象（etcd 的请求上限），超过时在创建任何对象之前报错。
	MaxShardFilesBytes = 1000 << 10
)

// DefaultShardLogBytes 是 ShardJob.LogBytes 的默认值 1 GiB。kubelet 只经 pods/log 交出容器当前的
// 日志文件（轮转走的旧文件读不到），它的大小受 kubelet 的 containerLogMaxSize 约束（默认 10 MiB）；
// 1 GiB 覆盖把 containerLogMaxSize 调大到 1 GiB 的节点，同时让一个失控的 Pod 日志不能无限地读下去。
// 读取按行流式进行：内存里最多是一行（shard.MaxResultBytes），记录写进 RecordsDir 的文件。
const DefaultShardLogBytes int64 = 1 << 30

// DefaultShardLogTimeout 是 ShardJob.LogTimeout 的默认值：1 GiB 经 API Server 以 10 MB/s 读也只要
// 两分钟左右，5 分钟留出余量。
const DefaultShardLogTimeout = 5 * time.Minute

// ErrShardJob 表示分片 Job 没有完整地跑完：有分片失败、没有结果或超时。
var ErrShardJob = errors.New("kube: shard job incomplete")

// ShardJob 描述一个在集群里跑压测分片的 Indexed Job（completions = parallelism = Shards，
// 序号 i 的 Pod 跑第 i 片）。
type ShardJob struct {
	// Kubeconfig、Context 同 Config；RESTConfig 非 nil 时优先。
	Kubeconfig, Context string
	RESTConfig          *rest.Config
	// Namespace 默认 default；Name 是 Job 名（DNS-1123 标签，默认 cibench-shards）。
	Namespace, Name string
	// Image 是压测镜像（必须含 bench 程序）；Command/Args 是分片进程的命令行，分片序号、
	// 分片数与开始时刻经环境变量 EnvShardIndex/EnvShardCount/EnvShardStart 传入。
	Image         string
	Command, Args []string
	Env           map[string]string
	// Secret 是随每个 Job 创建的 Secret（名为 <Job 名>-secret）的内容，键 → 字节：通常是含 API key 的
	// providers.yaml。它以只读卷（文件权限 0400）挂载到每个分片容器的 SecretMountPath/<键>，
	// 密钥因此不出现在 Job 或 Pod 的定义里，也不必烤进镜像。Job 删除时一并删除。
	Secret map[string][]byte
	// Data 是随每个 Job 创建的 ConfigMap（<Job 名>-data）的内容，键 → 字节：数据集文件（-i）。
	// 挂载到 DataMountPath/<键>，Job 删除时一并删除。Secret 与 Data 各自不超过 MaxShardFilesBytes。
	Data map[string][]byte
	// Shards 是分片数（1..loadgen.MaxShards）。
	Shards int
	// Groups 是 Profile 的分组数（loadgen.GroupCount）。大于 1 时 RunShards 按组依次运行 Groups 个
	// Indexed Job（名为 Name-g<k>，Pod 经 EnvShardGroup 只跑第 k 组）：Pod 与集群外的协调者之间没有
	// 通道，一个 Job 跑多组时后面的分组无法在各 Pod 间对齐；每组一个 Job 时每组都对齐到自己 Job 的
	// 开始时刻，代价是每组多一次调度与 StartDelay。0 或 1 表示一个 Job 跑全部分组（只有一组时正确）。
	Groups int
	// StartDelay 是从创建 Job 到约定开始时刻的提前量（默认 60s）：要覆盖拉镜像、调度与预热。
	StartDelay time.Duration
	// CPU、Memory 是每个 Pod 的资源请求（同时作为上限），如 "2"、"4Gi"；空表示不设。
	CPU, Memory string
	// NodeSelector 限定节点；Affinity 原样放进 Pod；SpreadShards 为真时加上按 Job 名的
	// required Pod 反亲和（每个节点最多一个分片，单机网卡不成为瓶颈）。
	NodeSelector map[string]string
	Affinity     *corev1.Affinity
	SpreadShards bool
	// Timeout 是（每个）Job 从创建到全部分片结束的上限（默认 StartupTimeout 的默认值 20 分钟加上 StartDelay）；
	// DeleteTimeout 是前台删除 Job 的等待上限（默认 5 分钟）；PollInterval 默认 1 秒。
	Timeout, DeleteTimeout, PollInterval time.Duration
	// Log 记录进度；nil 表示丢弃。
	Log *slog.Logger
	// RecordsDir 非空时（一个已存在的目录），收集方把每个分片 Pod 日志里的逐请求记录行（分片进程以
	// shard.RecordWriter 写在结果行之前的 JSON Lines）写进 RecordsDir/shard-<i>.jsonl（每个分片一个文件，
	// RunShards 开始时创建或清空；每组一个 Job 时各组依次追加），ShardRun.Records 列出这些文件，交给
	// shard.Replay；并逐组核对记录条数与结果行测量的请求数，不符的写进 ShardRun.RecordGaps。
	// 为空时只读结果行，记录行被跳过。
	RecordsDir string
	// LogBytes 是读一个分片 Pod 日志的字节上限（PodLogOptions.LimitBytes，默认 DefaultShardLogBytes）。
	// LimitBytes 保留日志的开头，所以超过上限的日志连结果行（最后一行）一起被截掉：该分片以
	// no_result 报告并点明上限，而不是悄悄少了记录。
	LogBytes int64
	// LogTimeout 是读一个 Pod 日志（建立流并读完）的时限（默认 5 分钟）；超时的分片以 no_result 报告。
	LogTimeout time.Duration

	group int // 本 Job 只跑的分组（每组一个 Job 时），-1 表示全部
}

// jobName 返回第 k 组的 Job 名：只有一个 Job 时就是 Name。
func (j ShardJob) jobName(k int) string {
	if j.Groups <= 1 {
		return j.Name
	}
	return fmt.Sprintf("%s-g%d", j.Name, k)
}

// ShardJobError 逐个点名没有交回结果的分片；errors.Is(err, ErrShardJob) 成立。
type ShardJobError struct {
	Job    string // Job 名（每组一个 Job 时点明是哪一组的 Job）
	Shards int
	Failed map[int]string // 分片序号 → 原因（Pod 失败、没有 Pod、日志里没有结果行……）
	// Reasons 是 Failed 的类别（loadgen.Loss* 常量：oom_killed、killed、cancelled、no_result……），
	// 没有的序号按 loadgen.LossFailed。ShardLosses 据此交给 shard.MergeOptions.Lost。
	Reasons map[int]string
}

// ShardLosses 从 RunShards 的错误里取出每个没有交回结果的分片与原因（按分片序号升序；同一分片
// 在多个 Job 里失败时取第一个），供 shard.MergeOptions.Lost 使用，合并结果因此写明"分片 2 被
// OOMKilled"而不只是"缺了分片 2"。
func ShardLosses(err error) []loadgen.ShardLoss {
	byIdx := map[int]loadgen.ShardLoss{}
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		var je *ShardJobError
		if !errors.As(e, &je) {
			return
		}
		for i, why := range je.Failed {
			if _, seen := byIdx[i]; seen {
				continue
			}
			r := je.Reasons[i]
			if r == "" {
				r = loadgen.LossFailed
			}
			byIdx[i] = loadgen.ShardLoss{Shard: i, Reason: r, Detail: je.Job + ": " + why}
		}
	}
	walk(err)
	out := make([]loadgen.ShardLoss, 0, len(byIdx))
	for _, i := range slices.Sorted(maps.Keys(byIdx)) {
		out = append(out, byIdx[i])
	}
	return out
}

// podLoss 归类一个没有成功结束的分片 Pod：容器因内存超限被杀为 oom_killed，被信号杀死（退出码
// 128+n，或被驱逐）为 killed，仍在等待或运行（协调者超时或被取消后放弃了它）为 cancelled，其余为 failed。
func podLoss(p *corev1.Pod) string {
	if p.Status.Phase != corev1.PodFailed {
		return loadgen.LossCancelled
	}
	if p.Status.Reason == "Evicted" {
		return loadgen.LossKilled
	}
	for _, cs := range p.Status.ContainerStatuses {
		t := cs.State.Terminated
		switch {
		case t == nil:
		case t.Reason == "OOMKilled":
			return loadgen.LossOOMKilled
		case t.Signal != 0 || t.ExitCode > 128:
			return loadgen.LossKilled
		}
	}
	return loadgen.LossFailed
}

// Error 按分片序号列出原因。
func (e *ShardJobError) Error() string {
	idx := make([]int, 0, len(e.Failed))
	for i := range e.Failed {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	parts := make([]string, len(idx))
	for k, i := range idx {
		parts[k] = fmt.Sprintf("shard %d: %s", i, e.Failed[i])
	}
	return fmt.Sprintf("%v: job %s: %d of %d shards without a result: %s", ErrShardJob, e.Job, len(idx), e.Shards, strings.Join(parts, "; "))
}

// Unwrap 让 errors.Is(err, ErrShardJob) 成立。
func (e *ShardJobError) Unwrap() error { return ErrShardJob }

// withDefaults 校验并填默认值；错误点名字段与取值。
func (j ShardJob) withDefaults() (ShardJob, error) {
	if j.Namespace == "" {
		j.Namespace = kube.DefaultNamespace
	}
	if j.Name == "" {
		j.Name = "cibench-shards"
	}
	if j.StartDelay == 0 {
		j.StartDelay = time.Minute
	}
	if j.Timeout == 0 {
		j.Timeout = 20*time.Minute + j.StartDelay
	}
	if j.DeleteTimeout == 0 {
		j.DeleteTimeout = kube.DefaultDeleteTimeout
	}
	if j.PollInterval == 0 {
		j.PollInterval = kube.DefaultPollInterval
	}
	if j.Log == nil {
		j.Log = slog.New(slog.DiscardHandler)
	}
	if j.LogBytes == 0 {
		j.LogBytes = DefaultShardLogBytes
	}
	if j.LogTimeout == 0 {
		j.LogTimeout = DefaultShardLogTimeout
	}
	j.group = -1 // RunShards 为每组的 Job 单独设置
	bad := func(field string, v any, why string) error {
		return fmt.Errorf("%w: shard job %s=%v: %s", kube.ErrConfig, field, v, why)
	}
	switch {
	case j.Image == "":
		return j, bad("image", `""`, "an image with the bench program is required")
	case j.Shards < 1 || j.Shards > loadgen.MaxShards:
		return j, bad("shards", j.Shards, fmt.Sprintf("must be in [1, %d]", loadgen.MaxShards))
	case len(validation.IsDNS1123Label(j.Namespace)) > 0:
		return j, bad("namespace", j.Namespace, strings.Join(validation.IsDNS1123Label(j.Namespace), "; "))
	case j.Groups < 0 || j.Groups > loadgen.MaxEpochs*loadgen.MaxConcurrency:
		return j, bad("groups", j.Groups, "must not be negative")
	case len(j.jobName(max(j.Groups-1, 0))) > 52 || len(validation.IsDNS1123Label(j.Name)) > 0:
		return j, bad("name", j.Name, "must be a DNS-1123 label of at most 52 characters including the -g<group> suffix of per-group jobs (pod names add a suffix)")
	case j.StartDelay < 0 || j.Timeout < 0 || j.DeleteTimeout < 0 || j.PollInterval < 0 || j.LogTimeout < 0:
		return j, bad("start_delay/timeout/delete_timeout/poll_interval/log_timeout", fmt.Sprintf("%s/%s/%s/%s/%s", j.StartDelay, j.Timeout, j.DeleteTimeout, j.PollInterval, j.LogTimeout), "must not be negative")
	case j.LogBytes < 0:
		return j, bad("log_bytes", j.LogBytes, "must not be negative")
	}
	if j.RecordsDir != "" {
		if st, err := os.Stat(j.RecordsDir); err != nil || !st.IsDir() {
			return j, bad("records_dir", j.RecordsDir, "must be an existing directory")
		}
	}
	for field, files := range map[string]map[string][]byte{"secret": j.Secret, "data": j.Data} {
		total := 0
		for k, v := range files {
			if errs := validation.IsConfigMapKey(k); len(errs) > 0 {
				return j, bad(field+" key", strconv.Quote(k), strings.Join(errs, "; "))
			}
			total += len(v)
		}
		if total > MaxShardFilesBytes {
			return j, bad(field, fmt.Sprintf("%d bytes", total), fmt.Sprintf("larger than the %d bytes a Secret or ConfigMap can hold (bake larger files into the image instead)", MaxShardFilesBytes))
		}
	}
	for field, v := range map[string]string{"cpu": j.CPU, "memory": j.Memory} {
		if v == "" {
			continue
		}
		if _, err := resource.ParseQuantity(v); err != nil {
			return j, bad(field, v, err.Error())
		}
	}
	return j, nil
}

// manifest 构造 Indexed Job：每个序号不重试（backoffLimitPerIndex 0，重试的 Pod 会错过约定的开始时刻；一片失败不牵连其他分片），
// Pod 失败即该分片失败。
func (j ShardJob) manifest(startAt time.Time) *batchv1.Job {
	n := int32(j.Shards)
	zero := int32(0)
	mode := batchv1.IndexedCompletion
	labels := map[string]string{"app.kubernetes.io/name": "cibench-shard", "app.kubernetes.io/instance": j.Name}
	env := []corev1.EnvVar{{Name: EnvShardCount, Value: strconv.Itoa(j.Shards)}, {Name: EnvShardStart, Value: startAt.UTC().Format(time.RFC3339Nano)}}
	if j.group >= 0 {
		env = append(env, corev1.EnvVar{Name: EnvShardGroup, Value: strconv.Itoa(j.group)})
	}
	keys := make([]string, 0, len(j.Env))
	for k := range j.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, corev1.EnvVar{Name: k, Value: j.Env[k]})
	}
	c := corev1.Container{Name: ShardContainer, Image: j.Image, Command: j.Command, Args: j.Args, Env: env}
	var vols []corev1.Volume
	if len(j.Secret) > 0 {
		mode := int32(0o400)
		vols = append(vols, corev1.Volume{Name: "cibench-secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: j.secretName(), DefaultMode: &mode}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "cibench-secret", MountPath: SecretMountPath, ReadOnly: true})
	}
	if len(j.Data) > 0 {
		vols = append(vols, corev1.Volume{Name: "cibench-data", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: j.dataName()}}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "cibench-data", MountPath: DataMountPath, ReadOnly: true})
	}
	if j.CPU != "" || j.Memory != "" {
		rl := corev1.ResourceList{}
		if j.CPU != "" {
			rl[corev1.ResourceCPU] = resource.MustParse(j.CPU)
		}
		if j.Memory != "" {
			rl[corev1.ResourceMemory] = resource.MustParse(j.Memory)
		}
		c.Resources = corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}
	}
	aff := j.Affinity.DeepCopy()
	if j.SpreadShards {
		if aff == nil {
			aff = &corev1.Affinity{}
		}
		if aff.PodAntiAffinity == nil {
			aff.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
			corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname",
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/instance": j.Name}}})
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: j.Name, Namespace: j.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			// 每个序号各自不重试（backoffLimitPerIndex: 0）：一片失败只让这一片缺失，其他分片照常跑完、
			// 交回结果。全局 backoffLimit: 0 会在第一片失败时把整个 Job 判为失败并终止其余仍在运行的
			// 分片，一个坏节点就让整组的健康分片一起丢失。
			Completions: &n, Parallelism: &n, CompletionMode: &mode, BackoffLimitPerIndex: &zero,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{c},
					NodeSelector: j.NodeSelector, Affinity: aff, Volumes: vols},
			},
		},
	}
}

// clientset 按 RESTConfig 或 kubeconfig 建立客户端。
func (j ShardJob) clientset() (kubernetes.Interface, error) {
	rc := j.RESTConfig
	if rc == nil {
		var err error
		if rc, err = kube.RESTConfig(j.Kubeconfig, j.Context); err != nil {
			return nil, err
		}
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", kube.ErrConfig, err)
	}
	return cs, nil
}

// ShardRun 是 RunShards 的结果。
type ShardRun struct {
	// Results 是读到的分片结果（按分片序号，缺的分片没有）。
	Results []*shard.Result
	// Records 是 ShardJob.RecordsDir 下各分片的逐请求记录文件（下标即分片序号，JSON Lines，
	// shard.Replay 的输入）；RecordsDir 为空时为 nil。没有交回结果的分片的记录被丢弃（它的文件里
	// 没有那个 Job 的记录）：缺失的分片在合并时被点名，它的记录就是没有。
	Records []string
	// RecordGaps 逐分片、逐组列出 Pod 日志里的记录少于（或多于）结果行测量的请求数的地方：kubelet
	// 轮转日志（只有当前的日志文件可读，较早的记录被丢掉）、读取上限、写了一半的行。非空时逐请求
	// CSV 已知不完整（汇总行不受影响）。RecordsDir 为空时不核对。
	RecordGaps []shard.RecordGap
}

// RunShards 创建分片 Job、等待全部分片结束、从每个 Pod 的日志读出分片结果（RecordsDir 非空时连同
// 结果行之前的逐请求记录），最后总是以前台删除清理 Job（成功、失败、超时、ctx 取消——例如
// SIGTERM——都一样；删除用不随 ctx 取消的上下文，受 DeleteTimeout 约束）。
//
// 返回读到的结果（按分片序号，缺的位置没有）；有分片没有交回结果时错误是 *ShardJobError，
// 调用方照样把结果交给 shard.MergeGroups，后者把缺分片的分组标为不完整。记录不全不是错误
// （结果行完整，汇总照常正确），而是写在 ShardRun.RecordGaps 里，由调用方报告。
//
// Groups > 1 时按组依次运行 Groups 个 Job：第 k 个 Job 在第 k−1 个 Job（连同它的 Pod）删除之后才创建，
// 它的 Pod 只跑第 k 组，对齐到它自己的开始时刻。每个分片在各 Job 里的结果被接成一个结果
// （各组的 Skew 相对各自 Job 的开始时刻），所以 MergeGroups 照常逐组合并、逐组点名缺失的分片；
// 每个分片的记录按组的顺序追加到同一个文件。某个 Job 只是有分片失败时继续下一组；超时、取消、
// 创建或删除失败时停下（后面的组不再运行，错误说明停在哪一组）。
//
// 配置无效（含 RecordsDir 不是已存在的目录）时返回 nil 与 kube.ErrConfig，集群里什么也不创建。
func RunShards(ctx context.Context, job ShardJob) (*ShardRun, error) {
	job, err := job.withDefaults()
	if err != nil {
		return nil, err
	}
	cs, err := job.clientset()
	if err != nil {
		return nil, err
	}
	run := &ShardRun{}
	if job.RecordsDir != "" {
		for i := range job.Shards {
			// 0600：记录里没有密钥（Record.Error 已脱敏），但它们是压测的原始数据，与 bench 的其他临时文件一样收紧。
			path := job.recordsFile(i)
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				return nil, fmt.Errorf("%w: shard job records_dir: %v", kube.ErrConfig, err)
			}
			run.Records = append(run.Records, path)
		}
	}
	if job.Groups <= 1 {
		job.group = -1
		results, gaps, _, err := job.runOne(ctx, cs)
		run.Results, run.RecordGaps = results, gaps
		return run, err
	}
	perJob := make([][]*shard.Result, 0, job.Groups)
	var first time.Time
	var errs []error
	for k := range job.Groups {
		jk := job
		jk.Name, jk.group = job.jobName(k), k
		results, gaps, startAt, err := jk.runOne(ctx, cs)
		if k == 0 {
			first = startAt
		}
		perJob = append(perJob, results)
		run.RecordGaps = append(run.RecordGaps, gaps...)
		if err != nil {
			errs = append(errs, fmt.Errorf("kube: group %d of %d: %w", k, job.Groups, err))
			if !onlyShardFailures(err) || ctx.Err() != nil {
				if k+1 < job.Groups {
					errs = append(errs, fmt.Errorf("%w: groups %d..%d not run (stopped after group %d)", ErrShardJob, k+1, job.Groups-1, k))
				}
				break
			}
		}
	}
	joined, jerr := joinShardResults(job.Shards, first, perJob)
	run.Results = joined
	return run, errors.Join(append(errs, jerr)...)
}

// recordsFile 是第 i 片的逐请求记录文件。
func (j ShardJob) recordsFile(i int) string {
	return filepath.Join(j.RecordsDir, fmt.Sprintf("shard-%d.jsonl", i))
}

// onlyShardFailures 报告 err 是否只由 *ShardJobError 组成（有分片失败，但 Job 本身正常结束并已删除）。
func onlyShardFailures(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !onlyShardFailures(e) {
				return false
			}
		}
		return true
	}
	var je *ShardJobError
	return errors.As(err, &je)
}

// joinShardResults 把每组一个 Job 得到的结果按分片序号接起来：同一分片在各 Job 里的分组、时间线与
// 错误拼成一个结果，StartAt 统一取第一个 Job 的（MergeGroups 据它认出同一次压测）。某分片在所有 Job
// 里都没有结果时不出现（合并时按缺失处理）；同一分片的各部分属于不同的 Profile 时报 ErrShardJob。
func joinShardResults(shards int, startAt time.Time, perJob [][]*shard.Result) ([]*shard.Result, error) {
	byIdx := make([]*shard.Result, shards)
	var errs []error
	for k, results := range perJob {
		for _, r := range results {
			if r.Index < 0 || r.Index >= shards {
				continue // collect 已核对序号
			}
			cur := byIdx[r.Index]
			if cur == nil {
				cp := *r
				cp.StartAt, cp.Groups, cp.Timeline, cp.Only, cp.Error, cp.Reason = startAt.UTC(), slices.Clone(r.Groups), slices.Clone(r.Timeline), slices.Clone(r.Only), "", ""
				cur = &cp
				byIdx[r.Index] = cur
			} else if r.Profile != cur.Profile || r.Count != cur.Count {
				errs = append(errs, fmt.Errorf("%w: shard %d ran profile %s/%d shards in group %d's job but %s/%d before", ErrShardJob, r.Index, r.Profile, r.Count, k, cur.Profile, cur.Count))
				continue
			} else {
				cur.Groups = append(cur.Groups, r.Groups...)
				cur.Timeline = append(cur.Timeline, r.Timeline...)
				cur.Only = append(cur.Only, r.Only...)
			}
			if r.Error != "" {
				cur.Error = strings.TrimPrefix(cur.Error+"; group "+strconv.Itoa(k)+": "+r.Error, "; ")
				if cur.Reason == "" {
					cur.Reason = r.Reason
				}
			}
		}
	}
	var out []*shard.Result
	for _, r := range byIdx {
		if r != nil {
			out = append(out, r)
		}
	}
	return out, errors.Join(errs...)
}

// runOne 运行一个 Job（Name、group 已定）并总是删除它，返回结果、记录的缺口与约定的开始时刻。
func (job ShardJob) runOne(ctx context.Context, cs kubernetes.Interface) ([]*shard.Result, []shard.RecordGap, time.Time, error) {
	startAt := time.Now().Add(job.StartDelay)
	obj := job.manifest(startAt)
	runID := newRunID()
	obj.Annotations = map[string]string{AnnotationShardRun: runID}
	jobs := cs.BatchV1().Jobs(job.Namespace)
	// Secret 与 ConfigMap 先于 Job 创建：Pod 一建出来就要挂载它们。
	if err := job.createFiles(ctx, cs, runID); err != nil {
		return nil, nil, startAt, errors.Join(err, job.deleteFiles(ctx, cs, runID))
	}
	created, err := jobs.Create(ctx, obj, metav1.CreateOptions{FieldManager: kube.DefaultFieldManager})
	if err != nil {
		ferr := job.deleteFiles(ctx, cs, runID)
		if apierrors.IsAlreadyExists(err) {
			return nil, nil, startAt, errors.Join(fmt.Errorf("%w: job %s/%s already exists (a previous run left it, or another run is active)", kube.ErrConfig, job.Namespace, job.Name), ferr)
		}
		// 创建请求可能已被服务端执行、只是响应没有回来（ctx 恰在途中被取消——SIGTERM——或响应超时）：
		// Job 带着本次的运行标识存在时照样删除它，否则它会留在集群里、下次运行以 "already exists" 失败。
		cerr := fmt.Errorf("%w: create job %s/%s: %w", kube.ErrUnreachable, job.Namespace, job.Name, err)
		if derr := job.deleteOrphan(ctx, cs, runID); derr != nil {
			cerr = errors.Join(cerr, derr)
		}
		return nil, nil, startAt, errors.Join(cerr, ferr)
	}
	job.adoptFiles(ctx, cs, created)
	job.Log.Info("kube: shard job created", "job", job.Namespace+"/"+job.Name, "uid", created.UID, "shards", job.Shards, "group", job.group, "start_at", startAt)
	results, gaps, runErr := job.await(ctx, cs)
	job.Log.Info("kube: shard job finished", "job", job.Namespace+"/"+job.Name, "results", len(results), "after", time.Since(startAt.Add(-job.StartDelay)).Round(time.Millisecond), "err", runErr)
	if delErr := job.delete(ctx, cs, created.UID); delErr != nil {
		runErr = errors.Join(runErr, delErr)
	}
	if ferr := job.deleteFiles(ctx, cs, runID); ferr != nil {
		runErr = errors.Join(runErr, ferr)
	}
	return results, gaps, startAt, runErr
}

// secretName 与 dataName 是随 Job 创建的 Secret 与 ConfigMap 的名字。
func (j ShardJob) secretName() string { return j.Name + "-secret" }

// dataName 见 secretName。
func (j ShardJob) dataName() string { return j.Name + "-data" }

// fileMeta 是 Secret 与 ConfigMap 的元数据：与 Job 同样的标签，外加本次的运行标识（删除时据此
// 只删本次创建的对象，不碰同名的别人的对象）。
func (j ShardJob) fileMeta(name, runID string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: j.Namespace,
		Labels:      map[string]string{"app.kubernetes.io/name": "cibench-shard", "app.kubernetes.io/instance": j.Name},
		Annotations: map[string]string{AnnotationShardRun: runID}}
}

// createFiles 创建本次运行的 Secret（Secret 非空时）与 ConfigMap（Data 非空时）。同名对象已存在时
// 报 kube.ErrConfig（上次运行留下的，或另一次运行正在用）。
func (j ShardJob) createFiles(ctx context.Context, cs kubernetes.Interface, runID string) error {
	opts := metav1.CreateOptions{FieldManager: kube.DefaultFieldManager}
	wrap := func(kind, name string, err error) error {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%w: %s %s/%s already exists (a previous run left it, or another run is active)", kube.ErrConfig, kind, j.Namespace, name)
		}
		return fmt.Errorf("%w: create %s %s/%s: %w", kube.ErrUnreachable, kind, j.Namespace, name, err)
	}
	if len(j.Secret) > 0 {
		sec := &corev1.Secret{ObjectMeta: j.fileMeta(j.secretName(), runID), Type: corev1.SecretTypeOpaque, Data: j.Secret}
		if _, err := cs.CoreV1().Secrets(j.Namespace).Create(ctx, sec, opts); err != nil {
			return wrap("secret", j.secretName(), err)
		}
	}
	if len(j.Data) > 0 {
		cm := &corev1.ConfigMap{ObjectMeta: j.fileMeta(j.dataName(), runID), BinaryData: j.Data}
		if _, err := cs.CoreV1().ConfigMaps(j.Namespace).Create(ctx, cm, opts); err != nil {
			return wrap("configmap", j.dataName(), err)
		}
	}
	return nil
}

// adoptFiles 把 Secret 与 ConfigMap 的属主设为刚创建的 Job：协调者自己中途消失（kill -9）时，
// 垃圾回收器随 Job 一起删掉它们。尽力而为——正常路径上 deleteFiles 总会显式删除它们。
func (j ShardJob) adoptFiles(ctx context.Context, cs kubernetes.Interface, job *batchv1.Job) {
	ref := []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID}}
	opts := metav1.UpdateOptions{FieldManager: kube.DefaultFieldManager}
	if len(j.Secret) > 0 {
		if sec, err := cs.CoreV1().Secrets(j.Namespace).Get(ctx, j.secretName(), metav1.GetOptions{}); err == nil {
			sec.OwnerReferences = ref
			_, _ = cs.CoreV1().Secrets(j.Namespace).Update(ctx, sec, opts)
		}
	}
	if len(j.Data) > 0 {
		if cm, err := cs.CoreV1().ConfigMaps(j.Namespace).Get(ctx, j.dataName(), metav1.GetOptions{}); err == nil {
			cm.OwnerReferences = ref
			_, _ = cs.CoreV1().ConfigMaps(j.Namespace).Update(ctx, cm, opts)
		}
	}
}

// deleteFiles 删除本次运行（运行标识 runID）创建的 Secret 与 ConfigMap；已经不存在（垃圾回收器随 Job
// 删掉了）不算错，同名却属于别的运行的对象不碰。不随 ctx 取消，受 DeleteTimeout 约束。
func (j ShardJob) deleteFiles(ctx context.Context, cs kubernetes.Interface, runID string) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), j.DeleteTimeout)
	defer cancel()
	var left []string
	if len(j.Secret) > 0 {
		sec, err := cs.CoreV1().Secrets(j.Namespace).Get(dctx, j.secretName(), metav1.GetOptions{})
		if err == nil && sec.Annotations[AnnotationShardRun] == runID {
			uid := sec.UID
			err = cs.CoreV1().Secrets(j.Namespace).Delete(dctx, sec.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		}
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			left = append(left, "secret "+j.Namespace+"/"+j.secretName()+": "+err.Error())
		}
	}
	if len(j.Data) > 0 {
		cm, err := cs.CoreV1().ConfigMaps(j.Namespace).Get(dctx, j.dataName(), metav1.GetOptions{})
		if err == nil && cm.Annotations[AnnotationShardRun] == runID {
			uid := cm.UID
			err = cs.CoreV1().ConfigMaps(j.Namespace).Delete(dctx, cm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		}
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			left = append(left, "configmap "+j.Namespace+"/"+j.dataName()+": "+err.Error())
		}
	}
	if len(left) > 0 {
		return &kube.TeardownError{Remaining: left}
	}
	return nil
}

// AnnotationShardRun 是分片 Job 上的本次运行标识：创建请求的响应丢失时，据此认出集群里的
// Job 是不是本次创建的（同名的 Job 可能属于另一次运行，不能删）。
const AnnotationShardRun = "cibench.io/shard-run"

// newRunID 返回一个随机的运行标识。
func newRunID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read 不会失败
	return hex.EncodeToString(b[:])
}

// deleteOrphan 在创建请求的结果不明时查找同名 Job：它带着本次的运行标识时按 UID 删除（连同 Pod），
// 不存在或属于别的运行时什么也不做。查询与删除都不随 ctx 取消，受 DeleteTimeout 约束。
func (j ShardJob) deleteOrphan(ctx context.Context, cs kubernetes.Interface, runID string) error {
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), j.DeleteTimeout)
	defer cancel()
	cur, err := cs.BatchV1().Jobs(j.Namespace).Get(gctx, j.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return &kube.TeardownError{Remaining: []string{"job " + j.Namespace + "/" + j.Name + ": create failed and its state is unknown: " + err.Error()}}
	case cur.Annotations[AnnotationShardRun] != runID:
		return nil
	}
	j.Log.Info("kube: shard job was created although the create call failed; deleting it", "job", j.Namespace+"/"+j.Name, "uid", cur.UID)
	return j.delete(ctx, cs, cur.UID)
}

// await 等待 Job 结束（或超时、ctx 取消），然后逐片收集结果。
func (j ShardJob) await(ctx context.Context, cs kubernetes.Interface) ([]*shard.Result, []shard.RecordGap, error) {
	wctx, cancel := context.WithTimeout(ctx, j.Timeout)
	defer cancel()
	waitErr := kube.Poll(wctx, j.PollInterval, "shard job "+j.Name+" finished", func() (bool, string, error) {
		cur, err := cs.BatchV1().Jobs(j.Namespace).Get(wctx, j.Name, metav1.GetOptions{})
		if err != nil {
			return false, "get job: " + err.Error(), nil // 暂时的 API 错误：继续等到超时
		}
		state := fmt.Sprintf("job %s: %d succeeded, %d failed, %d active of %d", j.Name, cur.Status.Succeeded, cur.Status.Failed, cur.Status.Active, j.Shards)
		for _, c := range cur.Status.Conditions {
			if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
				return true, state, nil
			}
		}
		if int(cur.Status.Succeeded+cur.Status.Failed) >= j.Shards {
			return true, state, nil
		}
		return j.allIndexesTerminal(wctx, cs), state, nil
	})
	// 超时或取消后仍收集已经结束的分片（用新的上下文，受 DeleteTimeout 约束）。
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), j.DeleteTimeout)
	defer ccancel()
	results, gaps, failed, reasons := j.collect(cctx, cs)
	var errs []error
	if waitErr != nil {
		errs = append(errs, fmt.Errorf("kube: shard job %s/%s: %w", j.Namespace, j.Name, waitErr))
	}
	if len(failed) > 0 {
		errs = append(errs, &ShardJobError{Job: j.Namespace + "/" + j.Name, Shards: j.Shards, Failed: failed, Reasons: reasons})
	}
	return results, gaps, errors.Join(errs...)
}

// allIndexesTerminal 报告是否每个完成序号都已有一个结束了的 Pod（Succeeded 或 Failed）。
// 每个序号不重试（backoffLimitPerIndex: 0），结束的 Pod 就是该片的最终结局，结果此时已经可以
// 收集；不必再等 job-controller 把它们计入 Job 的状态——控制器在状态更新冲突后会退避重排，
// 测试控制面上曾让一个早已全部结束的 Job 晚 50 秒以上才标为完成。列 Pod 出错时返回 false，
// 继续按 Job 状态等。
func (j ShardJob) allIndexesTerminal(ctx context.Context, cs kubernetes.Interface) bool {
	byIdx, err := j.shardPods(ctx, cs)
	if err != nil {
		return false
	}
	for i := range j.Shards {
		if p, ok := byIdx[i]; !ok || phaseRank(p.Status.Phase) == 0 {
			return false
		}
	}
	return true
}

// shardPods 列出本 Job 的 Pod，按完成序号（注解）归组，每个序号取一个：成功的优先，其次失败的，
// 最后仍在运行或等待的。缺注解或注解不是数字的 Pod 不计。等待（allIndexesTerminal）与收集
// （collect）共用它，两者对"哪个 Pod 代表这一片"的判断因此一致。
func (j ShardJob) shardPods(ctx context.Context, cs kubernetes.Interface) (map[int]*corev1.Pod, error) {
	pods, err := cs.CoreV1().Pods(j.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + j.Name})
	if err != nil {
		return nil, err
	}
	byIdx := map[int]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		idx, err := strconv.Atoi(p.Annotations[batchv1.JobCompletionIndexAnnotation])
		if err != nil {
			continue
		}
		// 同一序号的多个 Pod（不应出现，backoffLimitPerIndex 为 0）取结局最好的那个。
		if prev, ok := byIdx[idx]; !ok || phaseRank(p.Status.Phase) > phaseRank(prev.Status.Phase) {
			byIdx[idx] = p
		}
	}
	return byIdx, nil
}

// phaseRank 给 Pod 阶段排序：Succeeded 2、Failed 1、其余（尚未结束）0。
func phaseRank(ph corev1.PodPhase) int {
	switch ph {
	case corev1.PodSucceeded:
		return 2
	case corev1.PodFailed:
		return 1
	}
	return 0
}

// collect 按完成序号找到每片的 Pod：成功结束的读日志里最后一个结果行并核对序号（RecordsDir 非空时
// 连同本片的逐请求记录，记录不全的分组记入返回的缺口），其余（失败、仍在运行、没有 Pod、没有结果行）
// 记入 failed，原因的类别（loadgen.Loss*）记入 reasons。每个日志读取有自己的时限（LogTimeout），
// 不随 ctx 取消——取消之后仍要收集已经结束的分片。
func (j ShardJob) collect(ctx context.Context, cs kubernetes.Interface) ([]*shard.Result, []shard.RecordGap, map[int]string, map[int]string) {
	failed, reasons := map[int]string{}, map[int]string{}
	byIdx, err := j.shardPods(ctx, cs)
	var out []*shard.Result
	var gaps []shard.RecordGap
	for i := range j.Shards {
		p, ok := byIdx[i]
		switch {
		case err != nil:
			failed[i], reasons[i] = "list pods: "+err.Error(), loadgen.LossNoResult
			continue
		case !ok:
			failed[i], reasons[i] = "no pod", loadgen.LossNoResult
			continue
		case p.Status.Phase != corev1.PodSucceeded:
			failed[i], reasons[i] = fmt.Sprintf("pod %s is %s%s", p.Name, p.Status.Phase, podReason(p)), podLoss(p)
			continue
		}
		res, g, rerr := j.readOutput(ctx, cs, p, i)
		if rerr != nil {
			reason := loadgen.LossNoResult
			if errors.Is(rerr, errWrongShard) {
				reason = loadgen.LossFailed
			}
			failed[i], reasons[i] = fmt.Sprintf("pod %s: %v", p.Name, rerr), reason
			continue
		}
		for _, x := range g {
			j.Log.Warn("kube: shard pod log holds fewer per-request records than the shard measured", "job", j.Namespace+"/"+j.Name, "pod", p.Name, "gap", x.String())
		}
		gaps = append(gaps, g...)
		if res.Error != "" {
			failed[i], reasons[i] = fmt.Sprintf("pod %s: shard run failed: %s", p.Name, res.Error), res.Reason
		}
		out = append(out, res) // 带错误的部分结果也交给合并方，它据此把分组标为不完整
	}
	return out, gaps, failed, reasons
}

// errWrongShard 表示 Pod 交回的结果行属于别的分片数（镜像或参数不对）：该分片按 failed 报告。
var errWrongShard = errors.New("kube: pod reported another shard")

// countingReader 数读过的字节，用来认出读取是不是停在了 LogBytes 上限。
type countingReader struct {
	r io.Reader
	n int64
}

// Read 转发并计数。
func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// podReason 给出 Pod 失败的原因（容器退出码与原因），便于在报告里定位。
func podReason(p *corev1.Pod) string {
	var parts []string
	if p.Status.Reason != "" {
		parts = append(parts, p.Status.Reason)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			parts = append(parts, fmt.Sprintf("%s exit %d %s", cs.Name, t.ExitCode, t.Reason))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// readOutput 经 API Server 读取第 idx 片的 Pod 的分片容器日志（至多 LogBytes 字节，整个读取受
// LogTimeout 约束），用 shard.ReadOutput 分出本片的结果行与（RecordsDir 非空时）逐请求记录：记录追加
// 到本片的记录文件，读取失败或结果不属于本次的分片数时截回读之前的长度（这个 Pod 的记录不算数，
// 它的分片被报告为缺失）。返回的缺口只在 RecordsDir 非空时有。
//
// 错误点明原因：日志达到 LogBytes（LimitBytes 保留开头，最后的结果行因此被截掉）、读取超时、
// 没有结果行。
func (j ShardJob) readOutput(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod, idx int) (*shard.Result, []shard.RecordGap, error) {
	timeout, limit := j.LogTimeout, j.LogBytes
	if timeout <= 0 || limit <= 0 { // withDefaults 总会填好；直接构造的 ShardJob（包内测试）取默认值
		timeout, limit = DefaultShardLogTimeout, DefaultShardLogBytes
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rc, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: ShardContainer, LimitBytes: &limit}).Stream(rctx)
	if err != nil {
		return nil, nil, fmt.Errorf("logs: %w", err)
	}
	defer rc.Close()
	src := shard.Source{Index: idx, Count: j.Shards}
	if j.group >= 0 {
		src.Groups = []int{j.group}
	}
	var w *bufio.Writer
	var f *os.File
	var start int64
	if j.RecordsDir != "" {
		if f, err = os.OpenFile(j.recordsFile(idx), os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
			return nil, nil, fmt.Errorf("records: %w", err)
		}
		defer f.Close()
		if start, err = f.Seek(0, io.SeekEnd); err != nil {
			return nil, nil, fmt.Errorf("records: %w", err)
		}
		w = bufio.NewWriterSize(f, 256<<10)
	}
	cr := &countingReader{r: rc}
	var out *shard.Output
	if w != nil {
		out, err = shard.ReadOutput(cr, src, w)
		if err == nil {
			err = w.Flush()
		}
	} else {
		out, err = shard.ReadOutput(cr, src, nil)
	}
	if err == nil && out.Result.Count != j.Shards {
		err = fmt.Errorf("%w: reported shard %d/%d, want %d/%d", errWrongShard, out.Result.Index, out.Result.Count, idx, j.Shards)
	}
	if err != nil {
		if f != nil {
			err = errors.Join(err, f.Truncate(start))
		}
		switch {
		case cr.n >= limit:
			err = fmt.Errorf("%w (the pod log reached the %d-byte read bound ShardJob.LogBytes, which keeps the start of the log and cut off its last line, the result)", err, limit)
		case rctx.Err() != nil && ctx.Err() == nil:
			err = fmt.Errorf("%w (reading the pod log took longer than ShardJob.LogTimeout %s)", err, timeout)
		}
		return nil, nil, err
	}
	if j.RecordsDir == "" {
		return out.Result, nil, nil
	}
	return out.Result, out.Gaps, nil
}

// delete 以前台传播删除 UID 为 uid 的 Job，等它消失，再等它的 Pod 消失；不随调用方的 ctx 取消。
//
// 只等 Job 不够：Job 刚创建就被删除时（创建后立即收到 SIGTERM），job-controller 可能还在按旧的
// 缓存建 Pod，而垃圾回收器此时还没看见这些 Pod，于是前台删除没有可等的依赖、Job 立即消失，
// 随后建出的 Pod 成了孤儿（属主 UID 已不存在），要等垃圾回收器下一轮才删。这里按标签与属主 UID
// 找出剩下的 Pod，自己删掉并等它们消失，返回时集群里没有本次运行的任何对象。
func (j ShardJob) delete(ctx context.Context, cs kubernetes.Interface, uid types.UID) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), j.DeleteTimeout)
	defer cancel()
	name := "job " + j.Namespace + "/" + j.Name
	fg := metav1.DeletePropagationForeground
	err := cs.BatchV1().Jobs(j.Namespace).Delete(dctx, j.Name, metav1.DeleteOptions{PropagationPolicy: &fg, Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) { // Conflict：同名的已是另一个 Job，本次的已经没了
		return &kube.TeardownError{Remaining: []string{name + ": " + err.Error()}}
	}
	interval := max(j.PollInterval/4, 10*time.Millisecond)
	// lastOf 取出等待超时时最后一次观察到的状态（截止前的那次，见 poll）。
	lastOf := func(err error) string {
		var we *kube.WaitError
		if errors.As(err, &we) {
			return we.Last
		}
		return err.Error()
	}
	err = kube.Poll(dctx, interval, name+" deleted", func() (bool, string, error) {
		j.releaseTracking(dctx, cs, uid)
		cur, err := cs.BatchV1().Jobs(j.Namespace).Get(dctx, j.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) || (err == nil && cur.UID != uid):
			return true, "", nil
		case err != nil:
			return false, "get: " + err.Error(), nil
		}
		return false, fmt.Sprintf("deletionTimestamp %v, finalizers %v, %d active", cur.DeletionTimestamp, cur.Finalizers, cur.Status.Active), nil
	})
	if err != nil {
		pods := j.podStates(context.WithoutCancel(ctx), cs, uid)
		j.Log.Info("kube: shard job not deleted", "job", j.Namespace+"/"+j.Name, "err", err, "pods", pods)
		return &kube.TeardownError{Remaining: []string{fmt.Sprintf("%s: still present after %s (%s; its pods: %s)", name, j.DeleteTimeout, lastOf(err), pods)}}
	}
	err = kube.Poll(dctx, interval, name+": pods deleted", func() (bool, string, error) {
		pods, err := cs.CoreV1().Pods(j.Namespace).List(dctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + j.Name})
		if err != nil {
			return false, "list pods: " + err.Error(), nil
		}
		var left []string
		var state string
		j.releaseTracking(dctx, cs, uid)
		for i := range pods.Items {
			p := &pods.Items[i]
			if !ownedBy(p, uid) {
				continue
			}
			left = append(left, p.Name)
			if p.DeletionTimestamp == nil {
				pu := p.UID
				if derr := cs.CoreV1().Pods(j.Namespace).Delete(dctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pu}}); derr != nil && !apierrors.IsNotFound(derr) && !apierrors.IsConflict(derr) {
					state = "delete pod " + p.Name + ": " + derr.Error() + "; "
				}
			}
		}
		return len(left) == 0, state + fmt.Sprintf("pods %v", left), nil
	})
	j.Log.Info("kube: shard job deleted", "job", j.Namespace+"/"+j.Name, "err", err)
	if err != nil {
		return &kube.TeardownError{Remaining: []string{fmt.Sprintf("%s: %s after %s", name, lastOf(err), j.DeleteTimeout)}}
	}
	return nil
}

// jobTrackingFinalizer 是 job-controller 给它建的 Pod 加的终结器：Pod 计入 Job 状态之后才由它移除。
const jobTrackingFinalizer = "batch.kubernetes.io/job-tracking"

// releaseTracking 移除本 Job 的、已在删除中的 Pod 上的 job-tracking 终结器。前台删除要等这些 Pod
// 真正消失，而终结器要等 job-controller 把它们计入 Job 状态——Job 刚创建就被删除时，job-controller
// 更新状态与垃圾回收器的删除冲突（"the object has been modified"），按退避重试，曾让删除超过 90 秒
// （上游同类问题：kubernetes#109429、#108645）。Job 正在被删除，它的计数已无意义，所以这里替
// job-controller 放手；失败（冲突、已消失）留给下一轮轮询。
func (j ShardJob) releaseTracking(ctx context.Context, cs kubernetes.Interface, uid types.UID) {
	pods, err := cs.CoreV1().Pods(j.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + j.Name})
	if err != nil {
		return
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if !ownedBy(p, uid) || p.DeletionTimestamp == nil || !slices.Contains(p.Finalizers, jobTrackingFinalizer) {
			continue
		}
		p.Finalizers = slices.DeleteFunc(p.Finalizers, func(f string) bool { return f == jobTrackingFinalizer })
		if _, err := cs.CoreV1().Pods(j.Namespace).Update(ctx, p, metav1.UpdateOptions{FieldManager: kube.DefaultFieldManager}); err == nil {
			j.Log.Info("kube: released the job-tracking finalizer of a deleted shard pod", "pod", p.Namespace+"/"+p.Name)
		}
	}
}

// podStates 描述属于 UID 为 uid 的 Job 的 Pod（阶段、删除时刻、终结器），删除超时时放进错误，
// 以便区分"垃圾回收器没有动"与"Pod 卡在终结器上"。
func (j ShardJob) podStates(ctx context.Context, cs kubernetes.Interface, uid types.UID) string {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	pods, err := cs.CoreV1().Pods(j.Namespace).List(lctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + j.Name})
	if err != nil {
		return "list pods: " + err.Error()
	}
	var parts []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if ownedBy(p, uid) {
			parts = append(parts, fmt.Sprintf("%s %s deletionTimestamp=%v finalizers=%v", p.Name, p.Status.Phase, p.DeletionTimestamp, p.Finalizers))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// ownedBy 报告 Pod 是否属于 UID 为 uid 的 Job。
func ownedBy(p *corev1.Pod, uid types.UID) bool {
	for _, o := range p.OwnerReferences {
		if o.UID == uid {
			return true
		}
	}
	return false
}
