package loadgen

import "errors"

// Observer 是一次压测运行的全部事件出口：一个由可选钩子组成的结构体（形状取自
// net/http/httptrace.ClientTrace）。每个字段都可以为 nil，表示不关心该事件；
// 交给 Run、RunSweep、RunShard、shard.RunLocal（loadgen/shard）的 *Observer 本身也可以为 nil。
//
// 为什么是一个结构体而不是几个可选接口：以前 Run 在 sink 上用类型断言找 GroupSink、
// TimelineSink、ProgressSink、SweepSink，包一层的包装器只要漏实现一个方法，那类事件就被
// 静默丢掉（report 的采样器就丢过 EndSweep），一个转发全部事件的 tee 要写 5 个接口 6 个方法。
// 现在事件种类全在这一个类型上、编译期可见；组合用 Tee，它按字段转发每一种事件，
// 包装器只需写自己关心的那一个钩子，其余原样保留（见 Tee 与 docs/loadgen.md "观察者"）。
//
// 并发约定（对 Run、RunSweep、RunShard 与 shard.RunLocal 都成立）：
//   - 一次运行中所有钩子都被串行调用——任意两个钩子调用之间有 happens-before 关系，
//     钩子内不需要加锁；但不同的运行（例如同一个 Observer 交给两个并发的 Run）之间不串行。
//   - OnGroupStart、OnGroupEnd、OnSweepEnd 在调用 Run 的 goroutine 上调用；OnRecord 与
//     OnProgress 在 Run 的 worker goroutine 上调用，OnTimeline 在 Run 的采样 goroutine 上
//     调用（shard.RunLocal 的 OnGroupEnd 与 OnTimeline 在全部分片结束后、调用方 goroutine 上）。
//   - 钩子在测量路径上执行：OnRecord 持有 Run 的记录锁期间其他 worker 无法交出记录，
//     闭环压测下会推迟它们的下一个请求。钩子应当很快返回（写缓冲文件、更新计数器），
//     不要做网络请求或等待别的 goroutine；慢的导出应先复制数据再异步处理。
//   - 带 error 返回值的钩子返回非 nil 错误即终止本次运行：OnRecord、OnTimeline 的错误取消
//     当前分组，OnGroupStart 的错误在分组开始前返回，OnGroupEnd 的错误使 Run 在交出
//     该组汇总后返回，OnSweepEnd 的错误结束扫描。Run 返回的错误以 "loadgen: observer:"
//     开头并用 %w 包住钩子的错误。OnProgress 只用于显示，没有错误。
//   - 钩子不得 panic，也不得调用同一次运行的 Run。
type Observer struct {
	// OnRecord 收到每个正式请求（含被取消的请求，不含预热）的完整记录。*Record 及其切片只在
	// 调用期间有效，需要保留时必须复制。
	OnRecord func(r *Record) error
	// OnGroupStart 在每组正式请求开始前调用（预热之后），用于按组切分逐请求文件。
	OnGroupStart func(g Group) error
	// OnGroupEnd 在每组结束时收到该组的汇总行（被中断的组 Incomplete 为真），用于立即追加
	// 一行汇总（崩溃不丢已测数据）。RunShard 交出的是本分片的局部汇总，shard.RunLocal
	// 交出的是合并后的汇总。
	OnGroupEnd func(s Summary) error
	// OnTimeline 在 Profile.BucketInterval > 0 时每个间隔收到一行实时时间线；
	// 为 nil 时 Run 不启动时间线采样。
	OnTimeline func(t Timeline) error
	// OnProgress 约每 250ms（以及每组最后一个请求完成时）收到一次进度快照，供示例程序
	// 打印进度行。分片运行（shard.RunLocal、shard.Replay）不交出进度（各分片的局部进度没有意义）。
	OnProgress func(p Progress)
	// OnSweepEnd 在容量扫描（control_method: sweep）的每个组合结束时收到结论。
	OnSweepEnd func(res SweepResult) error
}

// Tee 返回一个把每种事件依次转发给 observers 中每一个的 Observer（nil 元素被跳过），
// 用来在 CSV 写入器旁边再挂一个导出器，或包一层只改一个钩子的包装器：
//
//	obs := loadgen.Tee(csvObserver, &loadgen.Observer{OnGroupEnd: myExporter})
//
// 同一事件按参数顺序交给各个钩子；某个钩子返回错误时，其余钩子照样收到该事件
// （一个导出器出错不会让另一个少一行），返回值是全部错误的 errors.Join。
// 某个字段只有一个非 nil 钩子时直接用它，全部为 nil 时结果的该字段为 nil（Run 据此
// 跳过时间线采样等开销）。Tee 在调用时读取各钩子，之后对 observers 的修改不影响结果。
func Tee(observers ...*Observer) *Observer {
	return &Observer{
		OnRecord:     teeErr(observers, func(o *Observer) func(*Record) error { return o.OnRecord }),
		OnGroupStart: teeErr(observers, func(o *Observer) func(Group) error { return o.OnGroupStart }),
		OnGroupEnd:   teeErr(observers, func(o *Observer) func(Summary) error { return o.OnGroupEnd }),
		OnTimeline:   teeErr(observers, func(o *Observer) func(Timeline) error { return o.OnTimeline }),
		OnProgress:   teeVoid(observers, func(o *Observer) func(Progress) { return o.OnProgress }),
		OnSweepEnd:   teeErr(observers, func(o *Observer) func(SweepResult) error { return o.OnSweepEnd }),
	}
}

// hooks 取出 observers 中每个非 nil 的某个钩子。
func hooks[F any](observers []*Observer, get func(*Observer) F, isNil func(F) bool) []F {
	var fs []F
	for _, o := range observers {
		if o == nil {
			continue
		}
		if f := get(o); !isNil(f) {
			fs = append(fs, f)
		}
	}
	return fs
}

// teeErr 组合带错误返回值的钩子：依次调用全部钩子，错误合并返回。
func teeErr[E any](observers []*Observer, get func(*Observer) func(E) error) func(E) error {
	fs := hooks(observers, get, func(f func(E) error) bool { return f == nil })
	switch len(fs) {
	case 0:
		return nil
	case 1:
		return fs[0]
	}
	return func(e E) error {
		var errs []error
		for _, f := range fs {
			if err := f(e); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
}

// teeVoid 组合没有返回值的钩子。
func teeVoid[E any](observers []*Observer, get func(*Observer) func(E)) func(E) {
	fs := hooks(observers, get, func(f func(E)) bool { return f == nil })
	switch len(fs) {
	case 0:
		return nil
	case 1:
		return fs[0]
	}
	return func(e E) {
		for _, f := range fs {
			f(e)
		}
	}
}

// orZero 返回 o 的副本；o 为 nil 时返回没有任何钩子的 Observer。Run 持有副本，
// 运行期间调用方修改原值不会造成数据竞争。
func (o *Observer) orZero() Observer {
	if o == nil {
		return Observer{}
	}
	return *o
}
