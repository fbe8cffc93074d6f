package metrics

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
)

// ArtifactNames 决定 acs-bench 产物文件名（acs-bench 选项（docs/requirements.md 附录 A.6））中的各个字段。
type ArtifactNames struct {
	Provider           string                // {provider}
	DatasetType        loadgen.DatasetType   // {dataset_type}，默认 "random"
	ControlMethod      loadgen.ControlMethod // {control_method}，默认 "normal"
	ConcurrencyBackend string                // {concurrency_backend}，默认 "threading-pool"
	Time               time.Time             // {time}，按 ArtifactTimeLayout 格式化
}

// withDefaults 填充空字段。
func (n ArtifactNames) withDefaults() ArtifactNames {
	if n.DatasetType == "" {
		n.DatasetType = loadgen.DatasetRandom
	}
	if n.ControlMethod == "" {
		n.ControlMethod = loadgen.ControlNormal
	}
	if n.ConcurrencyBackend == "" {
		n.ConcurrencyBackend = loadgen.ConcurrencyBackend
	}
	return n
}

// safeName 去掉文件名中不安全的字符（provider id 来自用户配置）。
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' || r == ':' || r < 0x20 {
			return '-'
		}
		return r
	}, s)
}

// RequestsFile 返回逐请求文件名：
// requests_{provider}_{dataset_type}_{control_method}_concurrency{N}_{concurrency_backend}_input{L}_output{M}_{time}.csv
func (n ArtifactNames) RequestsFile(concurrency, input, output int) string {
	n = n.withDefaults()
	return fmt.Sprintf("requests_%s_%s_%s_concurrency%d_%s_input%d_output%d_%s.csv",
		safeName(n.Provider), n.DatasetType, n.ControlMethod, concurrency, n.ConcurrencyBackend, input, output, n.Time.Format(ArtifactTimeLayout))
}

// SummaryFile 返回汇总文件名：summary_{provider}_{control_method}_{concurrency_backend}_{time}.csv
func (n ArtifactNames) SummaryFile() string {
	n = n.withDefaults()
	return fmt.Sprintf("summary_%s_%s_%s_%s.csv", safeName(n.Provider), n.ControlMethod, n.ConcurrencyBackend, n.Time.Format(ArtifactTimeLayout))
}

// TimelineFile 返回时间线文件名，与汇总文件同一命名规则（每次运行一个文件，各分组的行
// 以 Input_Length/Output_Length/Concurrency/Round 列区分）：
// timeline_{provider}_{control_method}_{concurrency_backend}_{time}.csv
func (n ArtifactNames) TimelineFile() string {
	n = n.withDefaults()
	return fmt.Sprintf("timeline_%s_%s_%s_%s.csv", safeName(n.Provider), n.ControlMethod, n.ConcurrencyBackend, n.Time.Format(ArtifactTimeLayout))
}

// CreateFunc 按名字创建一个输出流（例如在 --benchmark-save-path 目录下创建文件）。
type CreateFunc func(name string) (io.WriteCloser, error)

// ArtifactSink 按 acs-bench 的产物规则写 CSV：每个（并发, 输入, 输出）组合一个逐请求文件
// （同组合的多轮写入同一文件），每组结束立即向汇总文件追加一行。
// Observer 给出它的全部钩子，可直接交给 loadgen.Run（或与别的出口一起交给 loadgen.Tee）。
//
// 它不是并发安全的：依赖 loadgen 串行调用钩子的约定；Close 须在 Run 返回后调用。
type ArtifactSink struct {
	names   ArtifactNames
	create  CreateFunc
	opts    []RecordOption
	key     [3]int
	cur     io.WriteCloser
	rec     *RecordWriter
	sumFile io.WriteCloser
	sum     *SummaryWriter
	tlFile  io.WriteCloser
	tl      *TimelineWriter
	files   []string
}

// Observer 返回把逐请求记录、分组开始/结束与时间线行写进 CSV 的 loadgen.Observer。
// 进度与扫描结论不在 acs-bench 的产物里，对应的钩子为 nil。
func (a *ArtifactSink) Observer() *loadgen.Observer {
	return &loadgen.Observer{OnRecord: a.WriteRecord, OnGroupStart: a.BeginGroup, OnGroupEnd: a.EndGroup, OnTimeline: a.WriteTimeline}
}

// NewArtifactSink 返回按 names 命名、经 create 创建文件的接收器。
func NewArtifactSink(names ArtifactNames, create CreateFunc, opts ...RecordOption) (*ArtifactSink, error) {
	if create == nil {
		return nil, errors.New("metrics: artifact sink: nil create func")
	}
	if names.Time.IsZero() {
		return nil, errors.New("metrics: artifact sink: names.Time is zero")
	}
	return &ArtifactSink{names: names.withDefaults(), create: create, opts: opts, key: [3]int{-1, -1, -1}}, nil
}

// Files 返回已创建的文件名（按创建顺序）。
func (a *ArtifactSink) Files() []string { return append([]string(nil), a.files...) }

// BeginGroup 在组合变化时关闭上一个逐请求文件并创建新的。
func (a *ArtifactSink) BeginGroup(g loadgen.Group) error {
	key := [3]int{g.Concurrency, g.InputLength, g.OutputLength}
	if a.cur != nil && key == a.key {
		return nil
	}
	if err := a.closeRequests(); err != nil {
		return err
	}
	name := a.names.RequestsFile(g.Concurrency, g.InputLength, g.OutputLength)
	f, err := a.create(name)
	if err != nil {
		return fmt.Errorf("metrics: create %s: %w", name, err)
	}
	a.files = append(a.files, name)
	a.key, a.cur, a.rec = key, f, NewRecordWriter(f, a.opts...)
	return nil
}

// WriteRecord 把记录写入当前逐请求文件（未调用 BeginGroup 时报错）。
func (a *ArtifactSink) WriteRecord(r *loadgen.Record) error {
	if a.rec == nil {
		return errors.New("metrics: artifact sink: record before BeginGroup")
	}
	return a.rec.WriteRecord(r)
}

// EndGroup 向汇总文件追加一行（首次调用时创建汇总文件）。
func (a *ArtifactSink) EndGroup(s loadgen.Summary) error {
	if a.sum == nil {
		name := a.names.SummaryFile()
		f, err := a.create(name)
		if err != nil {
			return fmt.Errorf("metrics: create %s: %w", name, err)
		}
		a.files = append(a.files, name)
		a.sumFile, a.sum = f, NewSummaryWriter(f)
	}
	return a.sum.Write(s)
}

// WriteTimeline 向时间线文件追加一行（首行到来时才创建文件：未开 --bucket-interval 的
// 运行不会多出空文件）。
func (a *ArtifactSink) WriteTimeline(t loadgen.Timeline) error {
	if a.tl == nil {
		name := a.names.TimelineFile()
		f, err := a.create(name)
		if err != nil {
			return fmt.Errorf("metrics: create %s: %w", name, err)
		}
		a.files = append(a.files, name)
		a.tlFile, a.tl = f, NewTimelineWriter(f)
	}
	return a.tl.WriteTimeline(t)
}

// closeRequests 关闭当前逐请求文件。
func (a *ArtifactSink) closeRequests() error {
	if a.cur == nil {
		return nil
	}
	err := a.cur.Close()
	a.cur, a.rec = nil, nil
	if err != nil {
		return fmt.Errorf("metrics: close requests file: %w", err)
	}
	return nil
}

// Close 关闭全部文件；可重复调用。
func (a *ArtifactSink) Close() error {
	err := a.closeRequests()
	if a.sumFile != nil {
		if e := a.sumFile.Close(); e != nil && err == nil {
			err = fmt.Errorf("metrics: close summary file: %w", e)
		}
		a.sumFile, a.sum = nil, nil
	}
	if a.tlFile != nil {
		if e := a.tlFile.Close(); e != nil && err == nil {
			err = fmt.Errorf("metrics: close timeline file: %w", e)
		}
		a.tlFile, a.tl = nil, nil
	}
	return err
}
