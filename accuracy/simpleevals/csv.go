package simpleevals

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"github.com/vllm-cibench/cibench/accuracy"
	"io"
)

// pandasNA 是 pandas.read_csv 默认识别为缺失值的字符串。参考实现用 pandas
// 读取 CSV，缺失值经 str.format 变成 "nan"，这里按同样规则替换。
var pandasNA = map[string]bool{
	"": true, "#N/A": true, "#N/A N/A": true, "#NA": true, "-1.#IND": true, "-1.#QNAN": true,
	"-NaN": true, "-nan": true, "1.#IND": true, "1.#QNAN": true, "<NA>": true, "N/A": true,
	"NA": true, "NULL": true, "NaN": true, "None": true, "n/a": true, "nan": true, "null": true,
}

// csvRow 是按列名访问的一行。
type csvRow map[string]string

// readCSV 读取带表头的 CSV，返回包含 cols 各列的行；缺列报错并指出文件与列名。
// 空行被跳过（pandas 的 skip_blank_lines），短行缺失的字段与 NA 字符串都记为 "nan"。
func readCSV(ctx context.Context, src accuracy.Source, name string, cols []string) ([]csvRow, error) {
	rc, err := src.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	r := csv.NewReader(rc)
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("simpleevals: %s: read header: %w", name, err)
	}
	idx := map[string]int{}
	for i, h := range header {
		if _, dup := idx[h]; !dup {
			idx[h] = i
		}
	}
	for _, c := range cols {
		if _, ok := idx[c]; !ok {
			return nil, fmt.Errorf("simpleevals: %s: missing column %q (have %q)", name, c, header)
		}
	}
	var rows []csvRow
	for line := 2; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("simpleevals: %s: %w", name, err)
		}
		if len(rec) == 1 && rec[0] == "" {
			continue
		}
		row := csvRow{}
		for _, c := range cols {
			v := "nan"
			if i := idx[c]; i < len(rec) && !pandasNA[rec[i]] {
				v = rec[i]
			}
			row[c] = v
		}
		rows = append(rows, row)
	}
	return rows, nil
}
