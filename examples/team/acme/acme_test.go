package acme_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"example.com/team/acme"
	"github.com/vllm-cibench/cibench/functional"
	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/pipeline"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/accuracyreport"
	"github.com/vllm-cibench/cibench/report/functionalreport"
	"github.com/vllm-cibench/cibench/report/perfreport"
)

// tree 把团队的配置树（../configs）读进内存，edit 按文件名替换内容，使每个故事可以
// 改一处配置而不碰磁盘上的文件。
func tree(t *testing.T, edit map[string]string) fstest.MapFS {
	t.Helper()
	out := fstest.MapFS{}
	root := os.DirFS("../configs")
	err := fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(root, p)
		out[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for p, s := range edit {
		if _, ok := out[p]; !ok {
			t.Fatalf("no %s in the team config tree", p)
		}
		out[p] = &fstest.MapFile{Data: []byte(s)}
	}
	return out
}

// run 是团队 main.go 所做的事：pipeline.Options 加上 acme.Apply，再 pipeline.Run。
// 返回结果与运行目录下 summary.json（解码）、junit.xml 与 report.html 的内容。
type run struct {
	out     pipeline.Outcome
	summary report.Result
	junit   string
	html    string
}

// runTeam 以 s 运行团队流水线；stages 非空时只运行这些阶段。
func runTeam(t *testing.T, cfg fs.FS, s acme.Settings, stages ...report.Stage) run {
	t.Helper()
	o := pipeline.Options{
		Selection:   pipeline.Selection{Config: cfg, ConfigRoot: "configs", Stages: stages},
		Outputs:     pipeline.Outputs{Artifacts: t.TempDir(), Retention: -1},
		Environment: pipeline.Environment{AccuracyCacheDir: t.TempDir()},
	}
	if err := acme.Apply(&o, s); err != nil {
		t.Fatal(err)
	}
	out, err := pipeline.Run(context.Background(), o)
	if err != nil {
		t.Fatalf("pipeline.Run: %v", err)
	}
	r := run{out: out}
	b, err := os.ReadFile(filepath.Join(out.Dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r.summary); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	for name, dst := range map[string]*string{"junit.xml": &r.junit, "report.html": &r.html} {
		b, err := os.ReadFile(filepath.Join(out.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		*dst = string(b)
	}
	return r
}

// gate 返回 summary.json 中场景 acme 的名为 name 的门禁。
func (r run) gate(t *testing.T, name string) gate.Gate {
	t.Helper()
	for _, g := range r.summary.Gates {
		if g.Scenario == "acme" && g.Name == name {
			return g
		}
	}
	t.Fatalf("no gate %s in summary.json: %+v", name, r.summary.Gates)
	return gate.Gate{}
}

// caseResult 返回 summary.json 中用例 id 的结果。
func (r run) caseResult(t *testing.T, id string) functional.Result {
	t.Helper()
	for _, sc := range r.summary.Scenarios {
		rep, err := functionalreport.Report(sc)
		if err != nil {
			t.Fatal(err)
		}
		if rep == nil {
			continue
		}
		for _, c := range rep.Results {
			if c.CaseID == id {
				return c
			}
		}
	}
	t.Fatalf("no case %s in summary.json", id)
	return functional.Result{}
}

// contains 断言 doc 含有全部 want。
func contains(t *testing.T, what, doc string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(doc, w) {
			t.Errorf("%s does not contain %q", what, w)
		}
	}
}

// TestTeamPipeline 是四个故事的正路：团队的用例（依赖厂商能力 acme_lora）、导出器、评测与门禁
// 在参考流水线里运行，并与内置的一样出现在 summary.json、JUnit 与 HTML 中，全部通过。
func TestTeamPipeline(t *testing.T) {
	r := runTeam(t, tree(t, nil), acme.DefaultSettings())
	if r.out.ExitCode != gate.ExitOK {
		t.Fatalf("exit code %d, gates %+v", r.out.ExitCode, r.summary.Gates)
	}
	// 用例：执行并通过（场景声明了 acme_lora），与内置 chat_core 一起进入功能门禁。
	if c := r.caseResult(t, "acme/short_answer"); c.Status != functional.StatusPass {
		t.Fatalf("acme/short_answer = %s %q", c.Status, c.Reason)
	}
	if g := r.gate(t, "functional"); g.Verdict != gate.VerdictPass || g.Current != 0 {
		t.Fatalf("functional gate = %+v", g)
	}
	// 评测：结果、阈值与门禁都在。
	var acc *accuracyreport.Result
	accs, err := accuracyreport.Results(r.summary.Scenarios[0])
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range accs {
		if a.Result.Dataset == acme.EvalName {
			acc = &accs[i]
		}
	}
	if acc == nil || acc.Result.Score != 1 || acc.Result.Examples != 3 || acc.Threshold == nil || *acc.Threshold != 0.5 {
		t.Fatalf("acme-words accuracy in summary.json: %+v", acc)
	}
	if g := r.gate(t, "accuracy/"+acme.EvalName); g.Verdict != gate.VerdictPass || g.Current != 1 {
		t.Fatalf("accuracy gate = %+v", g)
	}
	// 导出器：每个档位一份 acme_requests.json，计数等于档位的请求数（2 并发 × 8 + 1 预热不计：16）；
	// 它的门禁读同一份计数。
	b, err := os.ReadFile(filepath.Join(r.out.Dir, "acme", "perf", "pr", "acme_requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exp struct{ Requests, Failed int }
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	rows, err := perfreport.Rows(r.summary.Scenarios[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || exp.Requests != rows[0].NumPrompts || exp.Requests == 0 || exp.Failed != 0 {
		t.Fatalf("exporter counted %+v, perf rows %+v", exp, rows)
	}
	g := r.gate(t, "acme/failed_requests")
	if g.Verdict != gate.VerdictPass || g.Current != 0 || !strings.Contains(g.Reason, "saw 16 requests in 1 profile(s), 0 failed") {
		t.Fatalf("team gate = %+v", g)
	}
	contains(t, "junit.xml", r.junit, `name="acme/short_answer"`, `classname="acme.functional.acme"`, `name="accuracy/acme-words"`, `name="acme/failed_requests"`)
	contains(t, "report.html", r.html, "acme/short_answer", "acme-words", "acme/failed_requests", "acme_requests.json")
}

// TestTeamFailuresTurnGatesRed 证明团队的东西“像内置的一样设门禁”：团队用例失败让功能门禁
// 变红，团队评测低于阈值让精度门禁变红，导出器看到失败让团队门禁变红；退出码都是
// ExitGateFailed，失败原因写进 summary.json 与 JUnit。
func TestTeamFailuresTurnGatesRed(t *testing.T) {
	t.Run("case", func(t *testing.T) {
		r := runTeam(t, tree(t, nil), acme.Settings{CaseTokenLimit: 1}, report.StageFunctional)
		c := r.caseResult(t, "acme/short_answer")
		if c.Status != functional.StatusFail || !strings.Contains(c.Reason, "want 1..1") {
			t.Fatalf("acme/short_answer = %s %q", c.Status, c.Reason)
		}
		if g := r.gate(t, "functional"); g.Verdict != gate.VerdictFail || r.out.ExitCode != gate.ExitGateFailed {
			t.Fatalf("functional gate %+v, exit %d", g, r.out.ExitCode)
		}
		contains(t, "junit.xml", r.junit, "want 1..1")
	})
	t.Run("eval", func(t *testing.T) {
		r := runTeam(t, tree(t, nil), acme.Settings{EvalMinWords: 10000}, report.StageAccuracy)
		if g := r.gate(t, "accuracy/"+acme.EvalName); g.Verdict != gate.VerdictFail || g.Current != 0 || r.out.ExitCode != gate.ExitGateFailed {
			t.Fatalf("accuracy gate %+v, exit %d", g, r.out.ExitCode)
		}
	})
	t.Run("exporter", func(t *testing.T) {
		// 模拟器对每个请求注入故障：导出器数到的失败让团队门禁变红。
		scen := "mode: emulator\nserved_model_name: acme-model\nfeatures: [acme_lora]\nemulator: {ttft: 1ms, itl: 1ms, failure_rate: 1}\n"
		r := runTeam(t, tree(t, map[string]string{"scenarios/acme.yaml": scen}), acme.DefaultSettings(), report.StagePerf)
		g := r.gate(t, "acme/failed_requests")
		if g.Verdict != gate.VerdictFail || g.Current == 0 || r.out.ExitCode != gate.ExitGateFailed {
			t.Fatalf("team gate %+v, exit %d", g, r.out.ExitCode)
		}
		contains(t, "junit.xml", r.junit, `name="acme/failed_requests"`, "<failure")
	})
}

// TestVendorFeatureOff 证明厂商能力像内置能力一样决定用例是否运行：场景不声明 acme_lora 时
// 团队用例被跳过，原因点名该能力（写进 summary.json 与 JUnit 的 skipped）。
func TestVendorFeatureOff(t *testing.T) {
	scen := "mode: emulator\nserved_model_name: acme-model\nemulator: {ttft: 1ms, itl: 1ms}\n"
	r := runTeam(t, tree(t, map[string]string{"scenarios/acme.yaml": scen}), acme.DefaultSettings(), report.StageFunctional)
	c := r.caseResult(t, "acme/short_answer")
	if c.Status != functional.StatusSkip || !strings.Contains(c.Reason, `"acme_lora"`) {
		t.Fatalf("acme/short_answer = %s %q", c.Status, c.Reason)
	}
	contains(t, "junit.xml", r.junit, "acme_lora")
}

// TestUnregisteredNamesRejected 证明 YAML 仍拒绝没人登记的名字：不调用 acme.Apply 时，
// 同一棵配置树在任何部署之前就是配置错误，错误点名厂商能力、评测与团队套件。
func TestUnregisteredNamesRejected(t *testing.T) {
	_, err := pipeline.Run(context.Background(), pipeline.Options{Selection: pipeline.Selection{Config: tree(t, nil), ConfigRoot: "configs"}, Outputs: pipeline.Outputs{Artifacts: t.TempDir()}})
	if !errors.Is(err, pipeline.ErrConfig) {
		t.Fatalf("err = %v, want ErrConfig", err)
	}
	contains(t, "error", err.Error(), `unknown feature "acme_lora"`, `(got "acme-words")`, `(got "acme")`, `"acme-fleet"`)
	// 同一个名字登记两次（Apply 两次）是登记错误，不是静默合并。
	var o pipeline.Options
	if err := acme.Apply(&o, acme.DefaultSettings()); err != nil {
		t.Fatal(err)
	}
	if err := acme.Apply(&o, acme.DefaultSettings()); !errors.Is(err, functional.ErrDuplicateFeature) {
		t.Fatalf("second Apply = %v, want ErrDuplicateFeature", err)
	}
}

// TestTeamGateInSummarizeJob 证明团队门禁在按阶段拆分的 CI 里也成立：perf job 运行导出器，
// 之后的 -summarize job 不运行任何阶段，只从产物里读到导出器的文件并给出同样的结论。
func TestTeamGateInSummarizeJob(t *testing.T) {
	root := t.TempDir()
	cfg := tree(t, nil)
	for _, summarize := range []bool{false, true} {
		o := pipeline.Options{
			Selection: pipeline.Selection{Config: cfg, ConfigRoot: "configs", RunID: "split", Summarize: summarize},
			Outputs:   pipeline.Outputs{Artifacts: root, Retention: -1},
		}
		if !summarize {
			o.Stages = []report.Stage{report.StagePerf}
		}
		if err := acme.Apply(&o, acme.DefaultSettings()); err != nil {
			t.Fatal(err)
		}
		out, err := pipeline.Run(context.Background(), o)
		if err != nil || out.ExitCode != gate.ExitOK {
			t.Fatalf("summarize=%v: exit %d err %v", summarize, out.ExitCode, err)
		}
		var g *gate.Gate
		for i, x := range out.Result.Gates {
			if x.Name == "acme/failed_requests" && x.Scenario == "acme" {
				g = &out.Result.Gates[i]
			}
		}
		if g == nil || g.Verdict != gate.VerdictPass || !strings.Contains(g.Reason, "saw 16 requests in 1 profile(s), 0 failed") {
			t.Fatalf("summarize=%v: team gate %+v", summarize, g)
		}
	}
}

// TestTeamStageReachesReport 是"新阶段不改 report 就进入报告"的接缝：团队阶段 acme-models 经
// pipeline.Options.TeamStages 运行，把结果记成分节 acme_models；它出现在 summary.json（场景对象上
// 与内置分节并列的键、stages 里的阶段状态）、<scenario>/acme/models.json、JUnit（团队渲染器的
// 用例）与 HTML（总览表的列与片段），门禁 acme/model_listed 读同一个分节。期望的模型不在列时
// JUnit 用例失败、门禁变红、退出码为 ExitGateFailed。
func TestTeamStageReachesReport(t *testing.T) {
	for _, tc := range []struct {
		name  string
		probe string
		found bool
	}{{"listed", "", true}, {"missing", "acme-other-model", false}} {
		t.Run(tc.name, func(t *testing.T) {
			r := runTeam(t, tree(t, nil), acme.Settings{ProbeModel: tc.probe}, acme.StageName)
			sc := r.summary.Scenarios[0]
			m, err := acme.ModelsOf(sc)
			if err != nil || m == nil {
				t.Fatalf("acme_models section in summary.json: %+v, %v", m, err)
			}
			want := tc.probe
			if want == "" {
				want = "acme-model"
			}
			if m.Want != want || m.Found != tc.found || !slices.Equal(m.Listed, []string{"acme-model"}) {
				t.Fatalf("acme_models = %+v", m)
			}
			var st *report.StageResult
			for i := range sc.Stages {
				if sc.Stages[i].Stage == acme.StageName {
					st = &sc.Stages[i]
				}
			}
			if st == nil || st.Status != report.StageOK {
				t.Fatalf("stage status %+v in %+v", st, sc.Stages)
			}
			// 分节也单独落盘，Load 能在不知道其类型的情况下读回。
			b, err := os.ReadFile(filepath.Join(r.out.Dir, "acme", "acme", "models.json"))
			if err != nil {
				t.Fatal(err)
			}
			var onDisk acme.Models
			if err := json.Unmarshal(b, &onDisk); err != nil || onDisk.Want != want || onDisk.Found != tc.found {
				t.Fatalf("models.json = %s (%v)", b, err)
			}
			loaded, err := report.Load(os.DirFS(r.out.Dir))
			if err != nil {
				t.Fatal(err)
			}
			if lm, err := acme.ModelsOf(loaded.Scenarios[0]); err != nil || lm == nil || lm.Want != want {
				t.Fatalf("Load: acme_models = %+v, %v", lm, err)
			}
			g := r.gate(t, "acme/model_listed")
			contains(t, "junit.xml", r.junit, `name="acme/acme/models"`, `name="acme/model_listed"`, `classname="acme.acme.models"`)
			contains(t, "report.html", r.html, "<th>acme models</th>", "1 listed", "<h3>ACME models</h3>", `<td>`+want+`</td>`, "acme/acme/models.json")
			if tc.found {
				if g.Verdict != gate.VerdictPass || r.out.ExitCode != gate.ExitOK || strings.Contains(r.junit, "acme_model_missing") {
					t.Fatalf("gate %+v exit %d", g, r.out.ExitCode)
				}
				return
			}
			if g.Verdict != gate.VerdictFail || g.Current != 1 || r.out.ExitCode != gate.ExitGateFailed {
				t.Fatalf("gate %+v exit %d", g, r.out.ExitCode)
			}
			contains(t, "junit.xml", r.junit, `type="acme_model_missing"`, "listed: acme-model")
			contains(t, "report.html", r.html, `<tr class="row-fail"><td>acme-other-model</td>`)
		})
	}
}
