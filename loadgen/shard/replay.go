package shard

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
)

// Records 是一个分片的逐请求记录流（RecordWriter 写的 JSON Lines）与它的名字（用于错误信息）。
type Records struct {
	Name string
	R    io.Reader
}

// Replay 把分片运行的结果按单进程运行的事件顺序交给调用方的 Observer，让只在父进程里的导出器
// （逐请求 CSV、会话 CSV、团队的 Prometheus 导出器……）在分片运行里收到与单进程相同种类的事件：
// 对 groups 的每一组依次调用 OnGroupStart（分组键取自该组的记录，没有记录时取自合并后的汇总行，
// Start 是合并后的开始时刻）、该组全部记录的 OnRecord（各分片的记录按发送时刻排序，没有发送时刻的
// 失败请求按意图时刻，同一时刻按分片顺序）、OnGroupEnd（合并后的汇总行）；最后对 timeline 的每一行
// 调用 OnTimeline。OnProgress 从不被调用（合并时没有"进度"）。
//
// 与单进程的差别写在这里，调用方据此理解数据：记录在合并时到达，而不是在请求完成的当下；同一组的
// 记录按发送时刻而不是完成时刻排列。缺失的分片（被杀、Pod 丢失、没有记录流）的记录就是没有——
// 该组的 OnGroupEnd 收到的汇总行 Incomplete 为真并点名缺失的分片，OnRecord 的条数因此少于
// NumPrompts；被杀的分片可能留下写了一半的最后一行，读到坏行时该分片的记录流停在那里（前面的记录
// 照常交出），错误点名流与行号。
//
// 每个记录流按分组顺序写成（一个分片依次执行各组），所以 Replay 一次只在内存里保留一组的记录。
// 不属于 groups 中任何一组的记录（例如所有分片都没交回结果的那一组）在最后按分组序号交出，
// 前面同样有一次 OnGroupStart，但没有 OnGroupEnd（没有汇总行）。钩子的错误终止重放并以
// "shard: observer:" 开头返回；坏行的错误不终止重放，与钩子错误一起用 errors.Join 返回。
// obs 为 nil 时只检查记录流。
func Replay(obs *loadgen.Observer, groups []MergedGroup, timeline []loadgen.Timeline, records ...Records) error {
	o := loadgen.Observer{}
	if obs != nil {
		o = *obs
	}
	streams := make([]*stream, len(records))
	for i, r := range records {
		streams[i] = &stream{rr: NewRecordReader(r.R, r.Name)}
	}
	next := func(gi int) []*loadgen.Record {
		var out []*loadgen.Record
		for _, s := range streams {
			out = append(out, s.take(gi)...)
		}
		slices.SortStableFunc(out, func(a, b *loadgen.Record) int { return sendTime(a).Compare(sendTime(b)) })
		return out
	}
	deliver := func(g loadgen.Group, recs []*loadgen.Record, sum *loadgen.Summary) error {
		if len(recs) > 0 {
			g = recs[0].Group
			if sum != nil {
				g.Start = sum.ExecutionTime
			}
		}
		if o.OnGroupStart != nil {
			if err := o.OnGroupStart(g); err != nil {
				return fmt.Errorf("shard: observer: group start: %w", err)
			}
		}
		if o.OnRecord != nil {
			for _, r := range recs {
				if err := o.OnRecord(r); err != nil {
					return fmt.Errorf("shard: observer: record: %w", err)
				}
			}
		}
		if sum != nil && o.OnGroupEnd != nil {
			if err := o.OnGroupEnd(*sum); err != nil {
				return fmt.Errorf("shard: observer: group end: %w", err)
			}
		}
		return nil
	}
	for gi := range groups {
		s := groups[gi].Summary
		g := loadgen.Group{Index: gi, InputLength: s.InputLength, OutputLength: s.OutputLength, Concurrency: s.Concurrency,
			Round: s.Round, Start: s.ExecutionTime}
		if err := deliver(g, next(gi), &s); err != nil {
			return errors.Join(append(streamErrs(streams), err)...)
		}
	}
	// 剩下的记录属于没有汇总行的分组：按分组序号依次交出。
	for {
		gi := -1
		for _, s := range streams {
			if r := s.peek(); r != nil && (gi < 0 || r.Group.Index < gi) {
				gi = r.Group.Index
			}
		}
		if gi < 0 {
			break
		}
		recs := next(gi)
		if err := deliver(recs[0].Group, recs, nil); err != nil {
			return errors.Join(append(streamErrs(streams), err)...)
		}
	}
	if o.OnTimeline != nil {
		for _, t := range timeline {
			if err := o.OnTimeline(t); err != nil {
				return errors.Join(append(streamErrs(streams), fmt.Errorf("shard: observer: timeline: %w", err))...)
			}
		}
	}
	return errors.Join(streamErrs(streams)...)
}

// sendTime 是记录的排序键：发送时刻，没有发出的请求（Sent 为零）取意图时刻。
func sendTime(r *loadgen.Record) time.Time {
	if r.Sent.IsZero() {
		return r.Intended
	}
	return r.Sent
}

// stream 是一个分片记录流的读取状态：预读的一条记录与读到的错误。
type stream struct {
	rr   *RecordReader
	head *loadgen.Record
	done bool
	err  error
}

// peek 返回下一条记录而不取走它；流结束或出错时为 nil。
func (s *stream) peek() *loadgen.Record {
	if s.head == nil && !s.done {
		r, err := s.rr.Next()
		if err != nil {
			s.done = true
			if !errors.Is(err, io.EOF) {
				s.err = err
			}
			return nil
		}
		s.head = r
	}
	return s.head
}

// take 取走开头属于第 gi 组的全部记录。分片按分组顺序执行，所以它的流里第 gi 组的记录是连续的；
// 序号更小的记录（上一组的残留，正常情况下不会有）一并取走，不丢失。
func (s *stream) take(gi int) []*loadgen.Record {
	var out []*loadgen.Record
	for r := s.peek(); r != nil && r.Group.Index <= gi; r = s.peek() {
		out = append(out, r)
		s.head = nil
	}
	return out
}

// streamErrs 收集各流的读错误。
func streamErrs(streams []*stream) []error {
	var errs []error
	for _, s := range streams {
		if s.err != nil {
			errs = append(errs, s.err)
		}
	}
	return errs
}
