package loadgen_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/loadgen"
)

// TestTeeForwardsEveryHook 用反射遍历 Observer 的每个字段（以后新增的钩子也在内）：
// 两个观察者都设了该钩子时，Tee 的结果调用它时两者各被调用一次、参数原样；第一个返回错误时
// 第二个照样被调用，错误被带回；只有一个设了时原样使用；都没设时结果为 nil。
// 新增一种事件而忘了在 Tee 里转发，这个测试就会失败。
func TestTeeForwardsEveryHook(t *testing.T) {
	typ := reflect.TypeOf(loadgen.Observer{})
	errType := reflect.TypeOf((*error)(nil)).Elem()
	boom := errors.New("boom")
	for i := range typ.NumField() {
		f := typ.Field(i)
		ft := f.Type
		if ft.Kind() != reflect.Func || ft.NumIn() != 1 {
			t.Fatalf("Observer.%s is %v, want a one-argument hook", f.Name, ft)
		}
		hasErr := ft.NumOut() == 1 && ft.Out(0) == errType
		arg := reflect.New(ft.In(0)).Elem()
		calls := make([]int, 2)
		mk := func(k int, fail bool) reflect.Value {
			return reflect.MakeFunc(ft, func(in []reflect.Value) []reflect.Value {
				if !reflect.DeepEqual(in[0].Interface(), arg.Interface()) {
					t.Errorf("%s: argument changed", f.Name)
				}
				calls[k]++
				if !hasErr {
					return nil
				}
				if fail {
					return []reflect.Value{reflect.ValueOf(&boom).Elem()}
				}
				return []reflect.Value{reflect.Zero(errType)}
			})
		}
		var a, b loadgen.Observer
		reflect.ValueOf(&a).Elem().Field(i).Set(mk(0, true))
		reflect.ValueOf(&b).Elem().Field(i).Set(mk(1, false))
		tee := loadgen.Tee(&a, nil, &b)
		hook := reflect.ValueOf(tee).Elem().Field(i)
		if hook.IsNil() {
			t.Fatalf("Tee dropped Observer.%s", f.Name)
		}
		out := hook.Call([]reflect.Value{arg})
		if calls[0] != 1 || calls[1] != 1 {
			t.Fatalf("Observer.%s: calls %v, want each observer once", f.Name, calls)
		}
		if hasErr && !errors.Is(out[0].Interface().(error), boom) {
			t.Fatalf("Observer.%s: error %v, want boom", f.Name, out[0].Interface())
		}
		// 只有一个观察者设了该钩子：原样使用（不多一层）。
		one := reflect.ValueOf(loadgen.Tee(&loadgen.Observer{}, &b)).Elem().Field(i)
		one.Call([]reflect.Value{arg})
		if calls[1] != 2 {
			t.Fatalf("Observer.%s: single hook not called", f.Name)
		}
		if !reflect.ValueOf(loadgen.Tee(&loadgen.Observer{}, nil)).Elem().Field(i).IsNil() {
			t.Fatalf("Observer.%s: Tee of empty observers should leave the hook nil", f.Name)
		}
	}
}

// counts 数一个观察者收到的每种事件。它不加锁：钩子由 Run 串行调用（Observer 的并发约定），
// -race 会抓住违反。
type counts struct {
	records, starts, ends, timeline, progress int
	sweeps                                    int
	ids                                       map[[2]int]bool // (分组, 组内序号)，查重
}

// observer 返回接上全部钩子的 Observer。
func (c *counts) observer() *loadgen.Observer {
	c.ids = map[[2]int]bool{}
	return &loadgen.Observer{
		OnRecord: func(r *loadgen.Record) error {
			if !r.Warmup {
				c.ids[[2]int{r.Group.Index, r.Index}] = true
			}
			c.records++
			return nil
		},
		OnGroupStart: func(loadgen.Group) error { c.starts++; return nil },
		OnGroupEnd:   func(loadgen.Summary) error { c.ends++; return nil },
		OnTimeline:   func(loadgen.Timeline) error { c.timeline++; return nil },
		OnProgress:   func(loadgen.Progress) { c.progress++ },
		OnSweepEnd:   func(loadgen.SweepResult) error { c.sweeps++; return nil },
	}
}

// TestTeeRunDeliversEveryEventKind 对真实的 Run 与 RunSweep（进程内模拟器）验证：Tee 的两个观察者
// 收到每一种事件、次数相同，且与汇总对得上（记录数 = 正式请求数（预热不交出），分组开始 = 结束 = 组数，时间线与进度
// 非零，扫描结论 = 组合数）。第二个观察者是一个包装器：复制 b 的钩子、只换掉 OnRecord——
// 它没写的钩子原样保留，不丢任何事件（以前一个忘了实现 TimelineSink 的包装器会静默丢掉时间线）。
func TestTeeRunDeliversEveryEventKind(t *testing.T) {
	_, tgt := startEmulator(t, emulator.Config{Model: "m", ITL: 2 * time.Millisecond})
	var a, b counts
	wrapped := 0
	inner := b.observer()
	w := *inner
	w.OnRecord = func(r *loadgen.Record) error { wrapped++; return inner.OnRecord(r) }
	obs := loadgen.Tee(a.observer(), &w)

	p := loadgen.Profile{Concurrency: []int{2, 4}, InputLength: []int{8}, OutputLength: []int{20}, NumRequests: []int{12, 16},
		Warmup: 1, BucketInterval: 20 * time.Millisecond}
	sums, err := loadgen.Run(context.Background(), tgt, p, obs)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*counts{&a, &b} {
		if c.records != 12+16 || len(c.ids) != 28 || c.starts != 2 || c.ends != 2 || c.timeline == 0 || c.progress == 0 || c.sweeps != 0 {
			t.Fatalf("observer got records %d (%d distinct), starts %d, ends %d, timeline %d, progress %d; summaries %d",
				c.records, len(c.ids), c.starts, c.ends, c.timeline, c.progress, len(sums))
		}
	}
	if a.timeline != b.timeline || a.progress != b.progress || wrapped != b.records {
		t.Fatalf("observers differ: timeline %d/%d progress %d/%d wrapped %d of %d", a.timeline, b.timeline, a.progress, b.progress, wrapped, b.records)
	}

	sp := loadgen.Profile{ControlMethod: loadgen.ControlSweep, InputLength: []int{8}, OutputLength: []int{2}, Goodput: []string{"e2e:60000"},
		Sweep: loadgen.SweepConfig{StartRate: 20, MaxRate: 40, StepDuration: 200 * time.Millisecond, MinRequests: 4, Budget: 20 * time.Second}}
	res, err := loadgen.RunSweep(context.Background(), tgt, sp, obs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || a.sweeps != 1 || b.sweeps != 1 {
		t.Fatalf("sweep results %d, observers got %d and %d", len(res), a.sweeps, b.sweeps)
	}
}

// TestObserverErrorNamesHook 验证钩子的错误终止运行，返回的错误用 %w 包住它并点名钩子。
func TestObserverErrorNamesHook(t *testing.T) {
	_, tgt := startEmulator(t, emulator.Config{Model: "m"})
	boom := errors.New("disk full")
	p := loadgen.Profile{InputLength: []int{8}, OutputLength: []int{2}, NumRequests: []int{4}}
	for name, o := range map[string]*loadgen.Observer{
		"loadgen: observer: group start: disk full": {OnGroupStart: func(loadgen.Group) error { return boom }},
		"loadgen: observer: group end: disk full":   {OnGroupEnd: func(loadgen.Summary) error { return boom }},
		"loadgen: observer: record: disk full":      {OnRecord: func(*loadgen.Record) error { return boom }},
	} {
		_, err := loadgen.Run(context.Background(), tgt, p, o)
		if !errors.Is(err, boom) || err.Error() != name {
			t.Errorf("got %v, want %q wrapping boom", err, name)
		}
	}
}
