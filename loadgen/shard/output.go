package shard

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/vllm-cibench/cibench/loadgen"
)

// recordPrefix 是 RecordWriter 写的记录行的开头：loadgen.Record 没有 JSON 标签，第一个字段是 Group。
var recordPrefix = []byte(`{"Group":{`)

// RecordGap 说明一个分片某一组交回的逐请求记录与它的结果行不符：Want 是结果行说本分片在该组测量的
// 请求数（loadgen.GroupStats.Requests），Have 是记录流里该组的（非取消的）记录条数。Kubernetes 分片的
// 记录经 Pod 日志交回，kubelet 轮转日志时较早的记录被丢掉（只有当前的日志文件可读）；读取上限截断、
// 写了一半的行也会让 Have 少于 Want。有 RecordGap 时逐请求 CSV 已知不完整——汇总行不受影响
// （它来自结果行，不来自记录）。
type RecordGap struct {
	Shard int `json:"shard"`
	Group int `json:"group"`
	Want  int `json:"want"`
	Have  int `json:"have"`
	// Detail 补充原因：坏行（不是完整 JSON 的记录行）与超长行的条数，或读取被截断。
	Detail string `json:"detail,omitempty"`
}

// String 写成 "shard 1 group 0: 4 of 10 per-request records (…)"。
func (g RecordGap) String() string {
	s := fmt.Sprintf("shard %d group %d: %d of %d per-request records", g.Shard, g.Group, g.Have, g.Want)
	if g.Detail != "" {
		s += " (" + g.Detail + ")"
	}
	return s
}

// Source 说明 ReadOutput 读的是哪个分片的输出：Index 与 Count 是它的序号与分片数（记录按
// Record.Index mod Count == Index 认领，与 loadgen.Shard 的划分规则相同；Count ≤ 0 时不按序号筛选），
// Groups 非 nil 时只取 only 字段恰为 Groups 的结果行与这些分组的记录（每组一个 Job）。
// 一个 Pod 的日志只有它自己的输出，筛选是防御：共享的日志（测试里 kwok 给每个容器同一个文件）或
// 混进来的别的输出不会被当成本分片的记录。
type Source struct {
	Index, Count int
	Groups       []int
}

// Output 是 ReadOutput 从一个分片进程的输出里读出的东西。
type Output struct {
	Result *Result
	// Records 是写进 records 的本分片记录条数（含运行被取消时在途请求的记录）。
	Records int
	// Gaps 按分组顺序列出记录与结果行不符的分组；为空表示本分片的记录完整。
	Gaps []RecordGap
}

// ReadOutput 读一个分片进程的完整输出（Kubernetes 分片的 Pod 日志：RecordWriter 写的逐请求记录行，
// 最后是 WriteResult 的结果行，中间可能夹着别的日志行）：本分片的记录行原样写进 records（可为 nil，
// 只计数），取本分片的最后一个结果行，再逐组核对记录条数与结果行测量的请求数，不符的分组写进
// Output.Gaps（点名分片、分组、条数与原因）——记录缺失从不被悄悄当作完整。
//
// 一行最长 MaxResultBytes；超长的记录行与不是完整 JSON 的记录行（写了一半、被日志系统截断）被跳过并
// 计入 Gaps 的 Detail，不中断读取，结果行照样能读到。r 的总字节数由调用方限定（Pod 日志的
// LimitBytes）。没有结果行时返回 loadgen.ErrBadShardResult，此时 Output 仍报告写出的记录条数，
// 调用方应当丢弃这些记录（该分片缺失）。写 records 出错时立即返回该错误。
func ReadOutput(r io.Reader, src Source, records io.Writer) (*Output, error) {
	sc, err := scanOutput(r, src, records)
	out := &Output{Records: sc.records}
	if err != nil {
		return out, err
	}
	res, err := decodeResult(sc.last, src.Index, src.Groups, src.Groups != nil)
	if err != nil {
		return out, err
	}
	out.Result, out.Gaps = res, sc.gaps(res)
	return out, nil
}

// CheckRecords 逐组核对一个分片单独交回的记录流（RecordWriter 写的 JSON Lines，例如 --shard-records
// 的文件）与它的结果行：返回记录条数与结果行测量的请求数不符的分组（与 ReadOutput 的 Gaps 相同）。
// 分片进程写记录失败（磁盘满）只在它自己的 stderr 上留一句，结果行照样交回——没有这个核对，
// 逐请求 CSV 会悄悄少行。读错误（不是坏行）原样返回。
func CheckRecords(r io.Reader, res *Result) ([]RecordGap, error) {
	sc, err := scanOutput(r, Source{Index: res.Index, Count: res.Count}, nil)
	if err != nil {
		return nil, err
	}
	return sc.gaps(res), nil
}

// scanned 是 scanOutput 读出的东西：本片每组的（非取消）记录条数、写出的记录条数、坏行与超长行的
// 条数、最后一个符合条件的结果行。
type scanned struct {
	have      map[int]int
	records   int
	bad, long int
	last      []byte
}

// scanOutput 逐行读 r：本片的记录行写进 records（可为 nil）并计数，符合 src 的结果行留下最后一个，
// 其余行跳过（见 ReadOutput）。
func scanOutput(r io.Reader, src Source, records io.Writer) (*scanned, error) {
	byGroups := src.Groups != nil
	match := resultMatcher(src.Index, src.Groups, byGroups)
	br := bufio.NewReaderSize(r, 64<<10)
	sc := &scanned{have: map[int]int{}}
	var buf []byte
	for {
		line, tooLong, err := readLine(br, &buf, MaxResultBytes)
		if len(line) > 0 || tooLong {
			switch t := bytes.TrimRight(line, "\r"); {
			case tooLong:
				if bytes.HasPrefix(line, recordPrefix) {
					sc.long++
				}
			case isResultLine(t):
				if match(t) {
					sc.last = append(sc.last[:0], t...)
				}
			case bytes.HasPrefix(t, recordPrefix):
				if !gjson.ValidBytes(t) {
					sc.bad++
					break
				}
				f := gjson.GetManyBytes(t, "Group.Index", "Index", "ErrorClass")
				g, idx := int(f[0].Int()), int(f[1].Int())
				if (src.Count > 0 && idx%src.Count != src.Index) || (byGroups && !slices.Contains(src.Groups, g)) {
					break // 别的分片（或别的分组）的记录
				}
				if records != nil {
					if _, werr := records.Write(append(t, '\n')); werr != nil {
						return sc, fmt.Errorf("shard: write records: %w", werr)
					}
				}
				sc.records++
				if f[2].String() != loadgen.ErrClassCanceled {
					sc.have[g]++
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return sc, nil
		}
		if err != nil {
			return sc, fmt.Errorf("%w: read: %v", loadgen.ErrBadShardResult, err)
		}
	}
}

// gaps 逐组比较记录条数与结果行测量的请求数，不符的分组连同坏行、超长行的条数写成 RecordGap。
func (sc *scanned) gaps(res *Result) []RecordGap {
	var why []string
	if sc.bad > 0 {
		why = append(why, fmt.Sprintf("%d torn record lines", sc.bad))
	}
	if sc.long > 0 {
		why = append(why, fmt.Sprintf("%d record lines over %d bytes", sc.long, MaxResultBytes))
	}
	var out []RecordGap
	for _, g := range res.Groups {
		if want := g.Stats.Requests(); sc.have[g.Group] != want {
			out = append(out, RecordGap{Shard: res.Index, Group: g.Group, Want: want, Have: sc.have[g.Group], Detail: strings.Join(why, ", ")})
		}
	}
	return out
}

// readLine 读一行（不含换行）到 *buf：超过 max 字节的行读完丢弃，tooLong 为真、line 为它的开头
// （用来认出是不是记录行）。最后一行没有换行时照样返回，err 为 io.EOF。
func readLine(br *bufio.Reader, buf *[]byte, max int) (line []byte, tooLong bool, err error) {
	*buf = (*buf)[:0]
	for {
		frag, ferr := br.ReadSlice('\n')
		if !tooLong {
			if len(*buf)+len(frag) > max+1 { // +1：换行本身不算
				tooLong = true
				keep := min(len(frag), 64)
				if len(*buf) == 0 {
					*buf = append(*buf, frag[:keep]...)
				}
			} else {
				*buf = append(*buf, frag...)
			}
		}
		if errors.Is(ferr, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(*buf, []byte("\n")), tooLong, ferr
	}
}
