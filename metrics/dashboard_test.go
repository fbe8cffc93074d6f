package metrics_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/vllm-cibench/cibench/metrics"
)

// strictCheck 用 Grafana 官方模型（grafana-foundation-sdk）严格解析看板：
// 未知字段、类型不符、缺必填字段都会失败；面板 options 与 Prometheus 查询按各自插件的
// 模型解析。SDK 对面板 fieldConfig 只做宽松解析，所以这里再对每个面板的 fieldConfig
// 单独严格解析一次。__inputs/__requires 是导入包装字段，Grafana 导入时剥离，这里同样先剥离。
func strictCheck(raw []byte) (dashboard.Dashboard, error) {
	plugins.RegisterDefaultPlugins()
	var d dashboard.Dashboard
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return d, err
	}
	for k := range top {
		if strings.HasPrefix(k, "__") {
			delete(top, k)
		}
	}
	inner, err := json.Marshal(top)
	if err != nil {
		return d, err
	}
	if err := d.UnmarshalJSONStrict(inner); err != nil {
		return d, err
	}
	var panels []map[string]json.RawMessage
	if err := json.Unmarshal(top["panels"], &panels); err != nil {
		return d, err
	}
	for i, p := range panels {
		if fc, ok := p["fieldConfig"]; ok {
			var src dashboard.FieldConfigSource
			if err := src.UnmarshalJSONStrict(fc); err != nil {
				return d, fmt.Errorf("panels[%d].fieldConfig: %w", i, err)
			}
		}
	}
	return d, d.Validate()
}

// strictDashboard 是 strictCheck 的测试包装：不合 Grafana 模型即失败。
func strictDashboard(t *testing.T, raw []byte) dashboard.Dashboard {
	t.Helper()
	d, err := strictCheck(raw)
	if err != nil {
		t.Fatalf("grafana model rejects the dashboard: %v", err)
	}
	return d
}

// TestDashboardMatchesGrafanaModel 看板通过 Grafana 官方模型严格解析，并含需求要求的标题、时间范围、变量与面板。
func TestDashboardMatchesGrafanaModel(t *testing.T) {
	d, err := metrics.NewDashboard(metrics.DashboardOptions{Prefix: "cibench"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := d.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	golden(t, "dashboard.json", buf.Bytes())
	gd := strictDashboard(t, buf.Bytes())

	if gd.Title == nil || *gd.Title != "vLLM CI Bench" {
		t.Errorf("title %v", gd.Title)
	}
	if gd.Time == nil || gd.Time.From != "now-7d" || gd.Time.To != "now" {
		t.Errorf("time %+v, want now-7d..now", gd.Time)
	}
	vars := map[string]dashboard.VariableModel{}
	for _, v := range gd.Templating.List {
		vars[v.Name] = v
	}
	for _, name := range []string{"model", "quant", "scenario", "dataset", "concurrency", "input_len", "output_len", "backend", "quantile", "metric_prefix"} {
		if _, ok := vars[name]; !ok {
			t.Errorf("variable %s missing", name)
		}
	}
	if v := vars["metric_prefix"]; v.Type != dashboard.VariableTypeTextbox || v.Query == nil || v.Query.String == nil || *v.Query.String != "cibench_" {
		t.Errorf("metric_prefix = %+v, want textbox defaulting to cibench_", v)
	}
	if v := vars["quantile"]; v.Query == nil || v.Query.String == nil || *v.Query.String != "0.75,0.9,0.95,0.99" {
		t.Errorf("quantile variable %+v", v.Query)
	}

	// 每个面板查询只看每日运行，且都通过 metric_prefix 变量取名。
	titles := map[string]bool{}
	for _, p := range gd.Panels {
		if p.Panel == nil {
			continue
		}
		titles[*p.Panel.Title] = true
		if len(p.Panel.Targets) == 0 {
			t.Errorf("panel %q has no queries", *p.Panel.Title)
		}
	}
	for _, q := range d.Queries() {
		if !strings.Contains(q.Expr, `run_type="daily"`) {
			t.Errorf("%s %s: query does not pin run_type=\"daily\": %s", q.Panel, q.RefID, q.Expr)
		}
		if !strings.Contains(q.Expr, "${metric_prefix}") {
			t.Errorf("%s %s: query ignores metric_prefix: %s", q.Panel, q.RefID, q.Expr)
		}
	}
	for _, want := range []string{"TTFT P$quantile", "E2E latency P$quantile", "Output token throughput", "QPS",
		"Accuracy score trend", "Functional suite summary", "Functional cases (1 = PASS green, 0 = FAIL red)"} {
		if !titles[want] {
			t.Errorf("panel %q missing", want)
		}
	}
}

// TestDashboardComparisonsAndImport 性能面板都有 Today/-1d/-7d 三条曲线；__inputs 与数据源引用可导入。
func TestDashboardComparisonsAndImport(t *testing.T) {
	d, err := metrics.NewDashboard(metrics.DashboardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	offsets := map[string]map[string]bool{}
	re := regexp.MustCompile(` offset (\d+d)\)?$`)
	for _, q := range d.Queries() {
		if strings.HasPrefix(q.Panel, "variable:") {
			continue
		}
		if offsets[q.Panel] == nil {
			offsets[q.Panel] = map[string]bool{}
		}
		offsets[q.Panel][q.Offset] = true
		if m := re.FindStringSubmatch(q.Expr); (m == nil) != (q.Offset == "") || (m != nil && m[1] != q.Offset) {
			t.Errorf("%s %s: Offset %q does not match expression %s", q.Panel, q.RefID, q.Offset, q.Expr)
		}
	}
	for _, p := range []string{"TTFT P$quantile", "E2E latency P$quantile", "QPS", "Output token throughput"} {
		if got := offsets[p]; !got[""] || !got["1d"] || !got["7d"] {
			t.Errorf("%s: comparisons %v, want Today, 1d and 7d", p, got)
		}
	}
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var imp struct {
		Inputs []struct{ Name, Type, PluginID string } `json:"__inputs"`
		Panels []struct {
			Datasource struct{ UID string } `json:"datasource"`
			Type       string               `json:"type"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &imp); err != nil {
		t.Fatal(err)
	}
	if len(imp.Inputs) != 1 || imp.Inputs[0].Name != "DS_PROMETHEUS" || imp.Inputs[0].PluginID != "prometheus" {
		t.Errorf("__inputs = %+v", imp.Inputs)
	}
	for _, p := range imp.Panels {
		if p.Type != "row" && p.Datasource.UID != "${DS_PROMETHEUS}" {
			t.Errorf("panel datasource %q, want ${DS_PROMETHEUS}", p.Datasource.UID)
		}
	}
	// 空前缀：metric_prefix 默认为空串。
	if !bytes.Contains(raw, []byte(`"name":"metric_prefix","label":"metric prefix"`)) || !bytes.Contains(raw, []byte(`"query":"","current":{"selected":false,"text":"","value":""}`)) {
		t.Errorf("empty prefix not the metric_prefix default")
	}
}

// TestNewDashboardValidates 非法前缀与 UID 在构造时被拒绝。
func TestNewDashboardValidates(t *testing.T) {
	for _, o := range []metrics.DashboardOptions{{Prefix: "Bad-Prefix"}, {UID: "a/b"}, {UID: strings.Repeat("x", 41)}} {
		if _, err := metrics.NewDashboard(o); !errors.Is(err, metrics.ErrInvalid) {
			t.Errorf("%+v: err = %v, want ErrInvalid", o, err)
		}
	}
}

// TestStrictModelCatchesMistakes 证明上面的校验不是摆设：在面板、面板 options、
// 查询与 fieldConfig 中各注入一个 Grafana 模型里没有的字段，严格解析都必须失败。
func TestStrictModelCatchesMistakes(t *testing.T) {
	d, err := metrics.NewDashboard(metrics.DashboardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(d)
	for i, inject := range []func(p map[string]any){
		func(p map[string]any) { p["bogus"] = 1 },
		func(p map[string]any) { p["options"].(map[string]any)["legendd"] = 1 },
		func(p map[string]any) { p["targets"].([]any)[0].(map[string]any)["exprr"] = "up" },
		func(p map[string]any) { p["fieldConfig"].(map[string]any)["defaults"].(map[string]any)["unitt"] = "s" },
	} {
		var top map[string]any
		if err := json.Unmarshal(raw, &top); err != nil {
			t.Fatal(err)
		}
		delete(top, "__inputs")
		delete(top, "__requires")
		for _, p := range top["panels"].([]any) { // 注入到第一个时序面板（TTFT）
			if pm := p.(map[string]any); pm["type"] == "timeseries" {
				inject(pm)
				break
			}
		}
		bad, _ := json.Marshal(top)
		if _, err := strictCheck(bad); err == nil {
			t.Errorf("injection %d: strict unmarshal accepted an unknown field", i)
		}
	}
}
