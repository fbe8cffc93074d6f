package acme

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/pipeline"
	"github.com/vllm-cibench/cibench/report"
)

// StageName 是 ACME 团队阶段的名字（deployment.json、summary.json 的 stages、-stages 用它）。
const StageName report.Stage = "acme-models"

// ModelsSection 是 ACME 阶段的结果分节：summary.json 场景对象上的 "acme_models" 键与
// <scenario>/acme/models.json。report 不认识它：渲染它的是 modelsRenderer。
var ModelsSection = report.Section{Key: "acme_models", File: "acme/models.json"}

// Models 是 ACME 阶段的结果：服务 GET /v1/models 列出的模型，以及期望的模型是否在其中。
type Models struct {
	Want   string   `json:"want"`
	Listed []string `json:"listed"`
	Found  bool     `json:"found"`
}

// 模型列表请求的界限：单次请求的时限与响应体大小上限。
const (
	modelsTimeout  = 10 * time.Second
	modelsMaxBytes = 1 << 20
)

// stage 返回 ACME 的团队阶段：向服务要模型列表，记下 want（为空时取端点的 served-model-name）
// 是否在列。want 不在列不是阶段错误而是结论（由门禁 acme/model_listed 判定）；请求失败才是。
func stage(want string) pipeline.TeamStage {
	return pipeline.TeamStage{
		Name: StageName,
		Run: func(ctx context.Context, run pipeline.StageRun) error {
			w := want
			if w == "" {
				w = run.Endpoint.Model
			}
			listed, err := listModels(ctx, run.Endpoint.HTTPClient, run.Endpoint.BaseURL(), run.Endpoint.APIKey)
			if err != nil {
				return err
			}
			return run.Report.RecordSection(run.Scenario, ModelsSection, Models{Want: w, Listed: listed, Found: slices.Contains(listed, w)})
		},
		Renderer: modelsRenderer(),
	}
}

// listModels 请求 base/models（OpenAI 兼容的模型列表），返回模型 ID。有时限、响应有上限；
// 非 200 是带状态码的错误。
func listModels(ctx context.Context, client *http.Client, base, key string) ([]string, error) {
	if client == nil {
		client = &http.Client{Timeout: modelsTimeout}
	}
	ctx, cancel := context.WithTimeout(ctx, modelsTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/models", nil)
	if err != nil {
		return nil, fmt.Errorf("acme: models: %w", err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("acme: models: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, modelsMaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("acme: models: read: %w", err)
	}
	if len(body) > modelsMaxBytes {
		return nil, fmt.Errorf("acme: models: response larger than %d bytes", modelsMaxBytes)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("acme: models: HTTP %d", resp.StatusCode)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("acme: models: decode: %w", err)
	}
	out := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		out = append(out, m.ID)
	}
	return out, nil
}

// ModelsOf 读出场景中 ACME 阶段的结果；阶段没有运行时返回 (nil, nil)。
func ModelsOf(sc report.Scenario) (*Models, error) {
	var m Models
	ok, err := sc.Decode(ModelsSection.Key, &m)
	if !ok || err != nil {
		return nil, err
	}
	return &m, nil
}

// modelsRenderer 把 ACME 分节渲染进报告：总览表的 "acme models" 列、HTML 片段与一个 JUnit 用例。
func modelsRenderer() report.Renderer {
	return report.Renderer{
		Name:    string(StageName),
		Columns: []string{"acme models"},
		Cells: func(sc report.Scenario) ([]report.Cell, error) {
			m, err := ModelsOf(sc)
			if err != nil || m == nil {
				return nil, err
			}
			return []report.Cell{{Text: fmt.Sprintf("%d listed", len(m.Listed)), Num: true}}, nil
		},
		HTML: func(sc report.Scenario, _ []gate.Gate) (template.HTML, error) {
			m, err := ModelsOf(sc)
			if err != nil {
				return "", err
			}
			var b bytes.Buffer
			if err := modelsPage.Execute(&b, m); err != nil {
				return "", err
			}
			return template.HTML(b.String()), nil // html/template 已转义
		},
		JUnit: func(sc report.Scenario) ([]report.JUnitSuite, error) {
			m, err := ModelsOf(sc)
			if err != nil || m == nil {
				return nil, err
			}
			c := report.JUnitCase{Name: "acme/model_listed", Classname: sc.Name + ".acme.models"}
			if !m.Found {
				c.Failure = &report.JUnitMessage{Message: fmt.Sprintf("model %q not listed by /v1/models", m.Want), Type: "acme_model_missing",
					Body: "listed: " + strings.Join(m.Listed, ", ")}
			}
			return []report.JUnitSuite{{Name: sc.Name + "/acme/models", Cases: []report.JUnitCase{c}}}, nil
		},
	}
}

// modelsPage 是 ACME 片段的模板。
var modelsPage = template.Must(template.New("acme").Parse(`<h3>ACME models</h3>
{{if .}}<table class="acme-models"><tr><th>wanted</th><th>listed</th><th>found</th></tr>
<tr class="{{if .Found}}row-ok{{else}}row-fail{{end}}"><td>{{.Want}}</td><td>{{range $i, $m := .Listed}}{{if $i}}, {{end}}{{$m}}{{end}}</td><td>{{.Found}}</td></tr></table>
{{else}}<p class="note">ACME stage did not run.</p>{{end}}
`))

// modelListedGate 是 pipeline.GateFunc：每个跑过 ACME 阶段的场景一条门禁，期望的模型必须在列。
// 它读 summary.json 里的分节（ModelsOf），按阶段拆分的 CI 的汇总 job 里同样成立。
func modelListedGate(_ context.Context, run pipeline.GateRun) ([]gate.Gate, error) {
	var out []gate.Gate
	var errs []error
	for _, sc := range run.Result.Scenarios {
		m, err := ModelsOf(sc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if m == nil {
			continue
		}
		g := gate.Gate{Kind: gate.KindFunctional, Scenario: sc.Name, Name: "acme/model_listed", Metric: "acme_model_missing",
			Verdict: gate.VerdictPass, Reason: fmt.Sprintf("%q listed among %d model(s)", m.Want, len(m.Listed))}
		if !m.Found {
			g.Verdict, g.Current = gate.VerdictFail, 1
			g.Reason = fmt.Sprintf("%q not listed by /v1/models (listed: %s)", m.Want, strings.Join(m.Listed, ", "))
		}
		out = append(out, g)
	}
	return out, errors.Join(errs...)
}
