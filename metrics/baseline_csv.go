package metrics

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"github.com/vllm-cibench/cibench/gate"
	"io"
	"strconv"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
)

// csvExecutionTimeLayout 是 acs-bench Execution_Time 列的本地时间格式。
const csvExecutionTimeLayout = "2006-01-02 15:04:05"

// CSVError 指出汇总 CSV 中出错的行（1 起，含表头）、列与取值。
type CSVError struct {
	Line   int
	Column string
	Value  string
	Err    error
}

// Error 给出行号、列名与取值，方便直接打开文件定位。
func (e *CSVError) Error() string {
	return fmt.Sprintf("metrics: summary csv: line %d column %s=%q: %v", e.Line, e.Column, e.Value, e.Err)
}

// Unwrap 暴露底层解析错误。
func (e *CSVError) Unwrap() error { return e.Err }

// Is 让 errors.Is(err, ErrInvalid) 对 CSV 内容错误成立。
func (e *CSVError) Is(target error) bool { return target == ErrInvalid }

// csvSetter 把一个单元格写入汇总行；返回解析错误。
type csvSetter func(s *loadgen.Summary, cell string) error

// parseNum 解析数值单元格（空单元格视为 -1，即不可测）。
func parseNum(cell string) (float64, error) {
	if cell == "" {
		return -1, nil
	}
	return strconv.ParseFloat(cell, 64)
}

// csvColumns 返回列名到写入函数的映射，由 distSpecs/scalarSpecs 推导，
// 与导出共用同一张表，保证 CSV 基线与 Prometheus 基线口径一致。
func csvColumns(loc *time.Location) map[string]csvSetter {
	cols := map[string]csvSetter{
		"Execution_Time": func(s *loadgen.Summary, c string) error {
			if c == "" {
				return nil
			}
			t, err := time.ParseInLocation(csvExecutionTimeLayout, c, loc)
			s.ExecutionTime = t
			return err
		},
		"Backend":        func(s *loadgen.Summary, c string) error { s.Backend = c; return nil },
		"Control_Method": func(s *loadgen.Summary, c string) error { s.ControlMethod = c; return nil },
		"Provider":       func(s *loadgen.Summary, c string) error { s.Provider = c; return nil },
		"Temperature":    floatCol(func(s *loadgen.Summary) *float64 { return &s.Temperature }),
		"Top_P":          floatCol(func(s *loadgen.Summary) *float64 { return &s.TopP }),
		"Input_Length":   intCol(func(s *loadgen.Summary) *int { return &s.InputLength }),
		"Output_Length":  intCol(func(s *loadgen.Summary) *int { return &s.OutputLength }),
		"Concurrency":    intCol(func(s *loadgen.Summary) *int { return &s.Concurrency }),
		"Top_K":          intCol(func(s *loadgen.Summary) *int { return &s.TopK }),
		"Growth_Rate":    intCol(func(s *loadgen.Summary) *int { return &s.GrowthRate }),
		"Rounds":         intCol(func(s *loadgen.Summary) *int { return &s.Round }),
	}
	for _, sc := range scalarSpecs {
		if sc.csvCol == "" {
			continue
		}
		set := sc.set
		cols[sc.csvCol] = func(s *loadgen.Summary, c string) error {
			v, err := parseNum(c)
			if err == nil {
				set(s, v)
			}
			return err
		}
	}
	for _, d := range distSpecs {
		if d.csvStem == "" {
			continue
		}
		for st, pre := range csvStatPrefix {
			cols[pre+d.csvStem] = func(s *loadgen.Summary, c string) error {
				v, err := parseNum(c)
				if err != nil || v < 0 {
					return err
				}
				v *= d.csvUnit
				if d.lat != nil {
					setLatencyStat(d.lat(s), st, v)
					// CSV 没有样本数：任何一列可测即视为有样本，Count 稍后取 Num_Prompts。
					d.lat(s).Count = -1
				} else {
					*valuesStat(d.val(s), st) = v
				}
				return nil
			}
		}
	}
	return cols
}

// floatCol 生成浮点列的写入函数。
func floatCol(f func(*loadgen.Summary) *float64) csvSetter {
	return func(s *loadgen.Summary, c string) error {
		v, err := strconv.ParseFloat(c, 64)
		*f(s) = v
		return err
	}
}

// intCol 生成整数列的写入函数。
func intCol(f func(*loadgen.Summary) *int) csvSetter {
	return func(s *loadgen.Summary, c string) error {
		v, err := strconv.Atoi(c)
		*f(s) = v
		return err
	}
}

// ReadSummaryCSV 解析 acs-bench 汇总 CSV（表头见需求 §5（docs/requirements.md））为 loadgen.Summary，
// 用于没有 Prometheus 的团队以上一次运行的 CSV 作为基线。
//
// 列按名字识别、顺序无关，未知列忽略（向前兼容）；Input_Length、Output_Length、
// Concurrency 必须存在。-1 或空单元格表示不可测：时延列全部不可测时该分布 Count 为 0，
// 否则 Count 取 Num_Prompts（CSV 不含样本数）；ms 列换算为 time.Duration。
// Execution_Time 按 loc 解释（nil 为 time.Local，即写 CSV 的机器的本地时间）。
func ReadSummaryCSV(r io.Reader, loc *time.Location) ([]loadgen.Summary, error) {
	if loc == nil {
		loc = time.Local
	}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("metrics: summary csv: header: %w", err)
	}
	cols := csvColumns(loc)
	setters := make([]csvSetter, len(header))
	found := map[string]bool{}
	for i, h := range header {
		h = trimSpace(h)
		header[i] = h
		setters[i] = cols[h]
		found[h] = true
	}
	for _, req := range []string{"Input_Length", "Output_Length", "Concurrency"} {
		if !found[req] {
			return nil, &CSVError{Line: 1, Column: req, Err: errors.New("required column missing")}
		}
	}
	var out []loadgen.Summary
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("metrics: summary csv: line %d: %w", line, err)
		}
		if len(rec) != len(header) {
			return nil, &CSVError{Line: line, Column: "*", Value: strconv.Itoa(len(rec)),
				Err: fmt.Errorf("has %d fields, header has %d", len(rec), len(header))}
		}
		s := loadgen.Summary{Goodput: -1, CompletionTokens: loadgen.Unmeasured(), SpecAcceptRate: loadgen.Unmeasured()}
		for i, cell := range rec {
			if setters[i] == nil {
				continue
			}
			cell = trimSpace(cell)
			if err := setters[i](&s, cell); err != nil {
				return nil, &CSVError{Line: line, Column: header[i], Value: cell, Err: err}
			}
		}
		fillCounts(&s)
		out = append(out, s)
	}
	return out, nil
}

// fillCounts 把 CSV 读取时标记为"有样本"（Count=-1）的分布的 Count 设为 Num_Prompts
// （至少 1，使 Latency.Valid 为真）；数值分布任一字段可测时同样处理。
func fillCounts(s *loadgen.Summary) {
	n := int64(s.NumPrompts)
	if n < 1 {
		n = 1
	}
	for _, d := range distSpecs {
		if d.lat != nil {
			if l := d.lat(s); l.Count == -1 {
				l.Count = n
			}
			continue
		}
		v := d.val(s)
		for _, st := range []stat{statP75, statP90, statP95, statP99, statMin, statMax, statAvg} {
			if *valuesStat(v, st) >= 0 {
				v.Count = n
				break
			}
		}
	}
}

// CSVBaseline 以上一次运行的汇总 CSV 作为基线（没有 Prometheus 的团队使用）。
// CSV 本身不含模型与场景，调用方负责给出对应场景的文件。它实现 gate.Source。
type CSVBaseline struct {
	perf []loadgen.Summary
	src  gate.Source
}

var _ gate.Source = (*CSVBaseline)(nil)

// NewCSVBaseline 读取并解析整个 CSV；Execution_Time 按 loc 解释（nil 为 time.Local）。
func NewCSVBaseline(r io.Reader, loc *time.Location) (*CSVBaseline, error) {
	perf, err := ReadSummaryCSV(r, loc)
	if err != nil {
		return nil, err
	}
	sortSummaries(perf)
	b := &CSVBaseline{perf: perf}
	b.src = gate.PerScenario(dailyReader(b.ReadDaily))
	return b, nil
}

// ReadDaily 返回 CSV 中的全部行；返回的 RunInfo 即调用方给出的 info（CSV 不含 commit 等信息）。
// CSV 没有数据行时返回 ErrNoBaseline。
func (b *CSVBaseline) ReadDaily(ctx context.Context, info RunInfo) (RunInfo, []loadgen.Summary, error) {
	if err := ctx.Err(); err != nil {
		return info, nil, fmt.Errorf("metrics: baseline: %w", err)
	}
	if len(b.perf) == 0 {
		return info, nil, fmt.Errorf("%w: summary csv has no rows", ErrNoBaseline)
	}
	return info, append([]loadgen.Summary(nil), b.perf...), nil
}

// Lookup 实现 gate.Source：CSV 中与 key 同组合的各轮聚合成的基线（CSV 不区分场景，
// 任何场景都查这一份）。
func (b *CSVBaseline) Lookup(ctx context.Context, key gate.Key) (gate.Baseline, bool, error) {
	return b.src.Lookup(ctx, key)
}
