package driver

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/report"
)

// PerfRun 描述一次性能档位运行，交给 PerfExporter 创建该档位的观察者。
type PerfRun struct {
	// Scenario 与 Profile 是场景名与档位名。
	Scenario, Profile string
	// Create 在该档位的产物目录（<scenario>/perf/<profile>/）中创建文件：经 report 脱敏、
	// 原子落盘、进入 manifest.json 与 HTML 报告的场景文件列表，和内置 CSV 一样。
	Create func(name string) (io.WriteCloser, error)
}

// PerfExporter 为一次性能档位运行创建一个额外的观察者（导出器），与内置的 CSV 与
// 样本采集并列收到全部事件（逐请求记录、组开始/结束、进度、时间线）。返回的 Close
// 在档位结束后调用（可以为 nil），用于刷出文件；返回错误记为该场景的 perf 阶段错误。
// 容量扫描档位不经过导出器（扫描结论由 report 记录）。
type PerfExporter func(run PerfRun) (loadgen.RecordSink, func() error, error)

// GateRun 是交给团队门禁的输入：完整的运行结果与运行目录中的产物。
type GateRun struct {
	// Result 是将写进 summary.json 的结果（功能报告、性能行、精度结果、阶段错误）。
	Result report.Result
	// Files 是运行目录（只读）：导出器写出的文件在 <scenario>/perf/<档位>/ 下。门禁读文件
	// 而不是与导出器共享内存，按阶段拆分的 CI（-stages 各跑一个 job、-summarize 汇总）
	// 里也能工作：汇总 job 没有运行导出器，但合并进来的产物里有它们的输出。
	Files fs.FS
}

// GateFunc 是团队的门禁：在内置门禁之后、写出报告之前调用，返回要加进结论的门禁。
// 它们与内置门禁一样写进 summary.json、JUnit 的 gates testsuite 与 HTML，任何一项
// fail 让退出码为 ExitGateFailed。返回错误只记日志，已返回的门禁照常计入。
type GateFunc func(ctx context.Context, run GateRun) ([]gate.Gate, error)

// tee 把 loadgen 的事件同时交给内置接收方与团队的导出器。loadgen.Run 串行调用接收方，
// 所以 tee 不加锁。
type tee struct {
	next  loadgen.RecordSink
	extra []loadgen.RecordSink
}

var (
	_ loadgen.RecordSink   = (*tee)(nil)
	_ loadgen.GroupSink    = (*tee)(nil)
	_ loadgen.ProgressSink = (*tee)(nil)
	_ loadgen.TimelineSink = (*tee)(nil)
)

// all 返回内置接收方与全部导出器，内置的在前。
func (t *tee) all() []loadgen.RecordSink { return append([]loadgen.RecordSink{t.next}, t.extra...) }

// WriteRecord 依次转发逐请求记录；第一个错误终止本次运行（与单个接收方相同）。
func (t *tee) WriteRecord(r *loadgen.Record) error {
	for _, s := range t.all() {
		if err := s.WriteRecord(r); err != nil {
			return err
		}
	}
	return nil
}

// BeginGroup 转发给支持 GroupSink 的接收方。
func (t *tee) BeginGroup(g loadgen.Group) error {
	for _, s := range t.all() {
		if gs, ok := s.(loadgen.GroupSink); ok {
			if err := gs.BeginGroup(g); err != nil {
				return err
			}
		}
	}
	return nil
}

// EndGroup 转发给支持 GroupSink 的接收方。
func (t *tee) EndGroup(sum loadgen.Summary) error {
	for _, s := range t.all() {
		if gs, ok := s.(loadgen.GroupSink); ok {
			if err := gs.EndGroup(sum); err != nil {
				return err
			}
		}
	}
	return nil
}

// Progress 转发给支持 ProgressSink 的接收方。
func (t *tee) Progress(p loadgen.Progress) {
	for _, s := range t.all() {
		if ps, ok := s.(loadgen.ProgressSink); ok {
			ps.Progress(p)
		}
	}
}

// WriteTimeline 转发给支持 TimelineSink 的接收方。
func (t *tee) WriteTimeline(tl loadgen.Timeline) error {
	for _, s := range t.all() {
		if ts, ok := s.(loadgen.TimelineSink); ok {
			if err := ts.WriteTimeline(tl); err != nil {
				return err
			}
		}
	}
	return nil
}

// exporters 为一个档位创建团队的导出器；返回观察者与需要在档位结束后调用的关闭函数。
func (d *driver) exporters(scenario, profile string, create func(string) (io.WriteCloser, error)) ([]loadgen.RecordSink, []func() error, error) {
	var sinks []loadgen.RecordSink
	var closers []func() error
	for i, mk := range d.o.PerfExporters {
		s, closeFn, err := mk(PerfRun{Scenario: scenario, Profile: profile, Create: create})
		if err != nil {
			return sinks, closers, fmt.Errorf("perf exporter %d: %w", i, err)
		}
		if s != nil {
			sinks = append(sinks, s)
		}
		if closeFn != nil {
			closers = append(closers, closeFn)
		}
	}
	return sinks, closers, nil
}

// extraGates 运行团队的门禁并返回它们的结论；门禁缺名字时补上 "team/gate<i>"，
// 以免一条匿名的门禁在报告里无从查找。
func (d *driver) extraGates(ctx context.Context, res report.Result) []gate.Gate {
	var out []gate.Gate
	for i, g := range d.o.Gates {
		gs, err := g(ctx, GateRun{Result: res, Files: os.DirFS(d.run.Dir())})
		if err != nil {
			d.log.Warn("team gate failed to evaluate", "gate", i, "err", d.red.Redact(err.Error()))
		}
		for _, x := range gs {
			if x.Name == "" {
				x.Name = fmt.Sprintf("team/gate%d", i)
			}
			out = append(out, x)
		}
	}
	return out
}
