package accuracy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/internal/pycompat"
)

// FileStem 返回结果文件名的主干 "{dataset}_{model}_{ts}"，ts 为 UTC 的
// 20060102_150405。模型名中的路径分隔符等字符替换为 "_"，避免生成子目录。
func FileStem(dataset, model string, ts time.Time) string {
	clean := strings.Map(func(r rune) rune {
		switch r {
		case '/', '\\', ':', '*', '?', '"', '<', '>', '|', ' ':
			return '_'
		}
		return r
	}, model)
	return dataset + "_" + clean + "_" + ts.UTC().Format("20060102_150405")
}

// WriteJSON 写出与 simple-evals 逐字节相同的结果 JSON：
// json.dumps(metrics | {"score": score}, indent=2)，键顺序与 Python 的插入顺序一致，
// 浮点按 Python repr 输出，末尾没有换行（Python 用 f.write 写入）。
func WriteJSON(w io.Writer, r EvalResult) error {
	items := make([]pycompat.Item, 0, len(r.MetricOrder)+1)
	order := r.MetricOrder
	if len(order) == 0 {
		order = append(sortedKeys(r.Metrics), "score")
	}
	for _, k := range order {
		if k == "score" {
			continue
		}
		items = append(items, pycompat.Item{Key: k, Value: r.Metrics[k]})
	}
	s := pycompat.DumpsFloatDict(items, 2)
	score := pycompat.JSONFloat(r.Score)
	if r.Examples == 0 {
		score = "null" // Python: aggregate_results 在没有样本时 score 为 None
	}
	if len(items) == 0 {
		s = "{\n  \"score\": " + score + "\n}"
	} else {
		s = strings.TrimSuffix(s, "\n}") + ",\n  \"score\": " + score + "\n}"
	}
	if _, err := io.WriteString(w, s); err != nil {
		return fmt.Errorf("accuracy: write json: %w", err)
	}
	return nil
}

// sortedKeys 返回 map 的键（字典序），仅在缺少 MetricOrder 时作为兜底顺序。
func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// WriteJSONL 每行写出一个 SingleResult（含提示、原始回复、抽取答案、正确答案与分数），
// 供审计与 Rescore 离线重评分。
func WriteJSONL(w io.Writer, singles []SingleResult) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for _, s := range singles {
		if err := enc.Encode(s); err != nil {
			return fmt.Errorf("accuracy: write jsonl: example %d: %w", s.Index, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("accuracy: write jsonl: %w", err)
	}
	return nil
}

// ReadJSONL 读取 WriteJSONL 的输出。
func ReadJSONL(r io.Reader) ([]SingleResult, error) {
	dec := json.NewDecoder(r)
	var out []SingleResult
	for line := 1; ; line++ {
		var s SingleResult
		err := dec.Decode(&s)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("accuracy: read jsonl: record %d: %w", line, err)
		}
		out = append(out, s)
	}
}

// Rescore 用记录下来的原始回复重新评分并聚合（不访问模型），用于离线复核或
// 在评分逻辑修正后重算历史运行。记录按 Index 对应到 e.Examples 的样本。
func Rescore(ctx context.Context, e Eval, records []SingleResult, model string) (EvalResult, error) {
	exs, err := e.Examples(ctx)
	if err != nil {
		return EvalResult{}, fmt.Errorf("accuracy: rescore %s: %w", e.Name(), err)
	}
	res := EvalResult{Dataset: e.Name(), Model: model, Planned: len(exs)}
	for _, rec := range records {
		if rec.Index < 0 || rec.Index >= len(exs) {
			return res, fmt.Errorf("accuracy: rescore %s: record index %d out of range [0,%d)", e.Name(), rec.Index, len(exs))
		}
		sr, err := e.Score(ctx, exs[rec.Index], rec.Responses)
		if err != nil {
			return res, fmt.Errorf("accuracy: rescore %s: example %d: %w", e.Name(), rec.Index, err)
		}
		sr.Error = rec.Error
		res.Singles = append(res.Singles, sr)
		if sr.Error != "" {
			res.Errors++
		}
	}
	res.Examples = len(res.Singles)
	res.Partial = res.Examples < res.Planned
	res.Score, res.Metrics, res.MetricOrder = aggregate(res.Singles)
	return res, nil
}

// htmlReport 是 HTML 报告模板，结构仿照 simple-evals 的 make_report：
// 先是指标表，再是每个样本的提示、回复与评分。
var htmlReport = template.Must(template.New("report").Funcs(template.FuncMap{
	"pyfloat": pycompat.FloatRepr,
	"round3":  func(f float64) string { return pycompat.FloatRepr(pycompat.RoundPython(f, 3)) },
	"none": func(s string) string {
		if s == "" {
			return "None"
		}
		return s
	},
}).Parse(`<!DOCTYPE html>
<html>
    <head>
        <meta charset="utf-8">
        <title>{{.R.Dataset}} {{.R.Model}}</title>
        <style>
            .message { padding: 8px 16px; margin-bottom: 8px; border-radius: 4px; }
            .message.user { background-color: #B2DFDB; color: #00695C; }
            .message.assistant { background-color: #B39DDB; color: #4527A0; }
            .role { font-weight: bold; margin-bottom: 4px; }
            table, th, td { border: 1px solid black; }
            pre { white-space: pre-wrap; }
        </style>
    </head>
    <body>
    <h1>Metrics</h1>
    <table>
    <tr><th>Metric</th><th>Value</th></tr>
    <tr><td><b>Score</b></td><td>{{round3 .R.Score}}</td></tr>
    {{range .Rows}}<tr><td>{{.Key}}</td><td>{{pyfloat .Value}}</td></tr>
    {{end}}</table>
    {{if .R.Partial}}<p><b>Partial run:</b> {{.R.Examples}} of {{.R.Planned}} examples completed.</p>{{end}}
    <h1>Examples</h1>
    {{range .R.Singles}}
    <h3>Prompt conversation</h3>
    <div class="message user"><div class="role">user</div><div class="content"><pre>{{.Prompt}}</pre></div></div>
    <h3>Sampled message</h3>
    <div class="message assistant"><div class="role">assistant</div><div class="content"><pre>{{.Response}}</pre></div></div>
    <h3>Results</h3>
    <p>Correct Answer: {{.CorrectAnswer}}</p>
    <p>Extracted Answer: {{none .ExtractedAnswer}}</p>
    <p>Score: {{pyfloat .Score}}</p>
    {{if .Error}}<p>Error: {{.Error}}</p>{{end}}
    <hr>
    {{end}}
    </body>
</html>
`))

// WriteHTML 写出人工审阅用的 HTML 报告（所有文本都经过 HTML 转义）。
func WriteHTML(w io.Writer, r EvalResult) error {
	var rows []pycompat.Item
	for _, k := range r.MetricOrder {
		if k != "score" {
			rows = append(rows, pycompat.Item{Key: k, Value: r.Metrics[k]})
		}
	}
	if len(r.MetricOrder) == 0 {
		for _, k := range sortedKeys(r.Metrics) {
			rows = append(rows, pycompat.Item{Key: k, Value: r.Metrics[k]})
		}
	}
	score := r.Score
	if math.IsNaN(score) {
		score = 0
	}
	view := struct {
		R    EvalResult
		Rows []pycompat.Item
	}{r, rows}
	view.R.Score = score
	if err := htmlReport.Execute(w, view); err != nil {
		return fmt.Errorf("accuracy: write html: %w", err)
	}
	return nil
}
