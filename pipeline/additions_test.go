package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/pipeline"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/runtype"
)

// groupCounter 数团队导出器收到的每一种事件，证明驱动把 loadgen.Observer 的每个钩子都交给了它。
type groupCounter struct {
	records, begins, ends, timeline, progress int
	rowsTotal                                 int
}

// observer 返回挂上全部计数钩子的观察者。
func (g *groupCounter) observer() *loadgen.Observer {
	return &loadgen.Observer{
		OnRecord:     func(*loadgen.Record) error { g.records++; return nil },
		OnGroupStart: func(loadgen.Group) error { g.begins++; return nil },
		OnGroupEnd:   func(s loadgen.Summary) error { g.ends++; g.rowsTotal += s.NumPrompts; return nil },
		OnTimeline:   func(loadgen.Timeline) error { g.timeline++; return nil },
		OnProgress:   func(loadgen.Progress) { g.progress++ },
	}
}

// TestPerfExportersAndGates 检查驱动的两个扩展点：导出器收到全部事件种类、写的文件进入运行目录，
// 构造失败记为 perf 阶段错误；团队门禁拿到结果与运行目录，缺名字时补上，fail 让退出码变红。
func TestPerfExportersAndGates(t *testing.T) {
	o := options(t, tree("emu"), runtype.PR, t.TempDir())
	o.Stages = []report.Stage{report.StagePerf}
	gc := &groupCounter{}
	var profiles []string
	o.PerfExporters = []pipeline.PerfExporter{
		func(run pipeline.PerfRun) (*loadgen.Observer, func() error, error) {
			profiles = append(profiles, run.Scenario+"/"+run.Profile)
			w, err := run.Create("team.txt")
			if err != nil {
				return nil, nil, err
			}
			if _, err := w.Write([]byte("team exporter was here " + secret)); err != nil {
				return nil, nil, err
			}
			return gc.observer(), w.Close, nil
		},
		func(pipeline.PerfRun) (*loadgen.Observer, func() error, error) {
			return nil, nil, errors.New("exporter broke")
		},
	}
	var seen string
	o.Gates = []pipeline.GateFunc{func(_ context.Context, run pipeline.GateRun) ([]gate.Gate, error) {
		b, err := fs.ReadFile(run.Files, "emu/perf/pr/team.txt")
		seen = string(b)
		return []gate.Gate{{Kind: gate.KindPerformance, Scenario: "emu", Verdict: gate.VerdictFail, Reason: "team says no"}}, err
	}}
	out, err := pipeline.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	res := summary(t, out.Dir)
	sc := scenario(t, res, "emu")
	if strings.Join(profiles, ",") != "emu/pr" || len(sc.Perf) != 2 {
		t.Fatalf("exporters created for %v, perf rows %d", profiles, len(sc.Perf))
	}
	want := sc.Perf[0].NumPrompts + sc.Perf[1].NumPrompts
	if gc.records != want || gc.rowsTotal != want || gc.begins != 2 || gc.ends != 2 || gc.timeline == 0 || gc.progress == 0 {
		t.Fatalf("exporter saw %+v, want %d records in 2 groups with timeline rows", gc, want)
	}
	perfErr := ""
	for _, e := range sc.Errors {
		if e.Stage == report.StagePerf {
			perfErr += e.Message
		}
	}
	if !strings.Contains(perfErr, "perf exporter 1: exporter broke") {
		t.Fatalf("exporter construction error not recorded as a perf stage error: %+v", sc.Errors)
	}
	// 导出器的文件经 report 脱敏：门禁读到的是遮住密钥的内容。
	if !strings.HasPrefix(seen, "team exporter was here") || strings.Contains(seen, secret) {
		t.Fatalf("gate read %q", seen)
	}
	var g *gate.Gate
	for i := range res.Gates {
		if res.Gates[i].Name == "team/gate0" {
			g = &res.Gates[i]
		}
	}
	if g == nil || g.Verdict != gate.VerdictFail || out.ExitCode != gate.ExitGateFailed {
		t.Fatalf("team gate %+v, exit %d", g, out.ExitCode)
	}
}

// TestPerfExportersShardedPerf 检查 issue 24 的遗留点"分片运行里团队导出器收不到逐请求事件"在驱动
// 路径上：场景的 perf 设 shards: 2（loadgen/shard.RunLocal），团队导出器照样收到每个正式请求的
// OnRecord、每组一次 OnGroupStart 与合并后的 OnGroupEnd、合并的时间线；记录数等于汇总行的请求数之和，
// 每条记录字段完整（分组、发送时刻、token 数）。分片运行没有进度（OnProgress 不被调用）。
func TestPerfExportersShardedPerf(t *testing.T) {
	fsys := tree("emu")
	fsys["matrix.yaml"].Data = []byte("scenarios:\n  emu:\n    pr: {perf: {shards: 2}}\n")
	fsys["tests/perf/profiles/pr.yaml"].Data = []byte("concurrency: [2, 4]\ninput_length: [16]\noutput_length: [8]\nrequests_per_concurrency: 3\nwarmup: 0\nbucket_interval: 20ms\n")
	o := options(t, fsys, runtype.PR, t.TempDir())
	o.Stages = []report.Stage{report.StagePerf}
	gc := &groupCounter{}
	var bad []string
	o.PerfExporters = []pipeline.PerfExporter{func(pipeline.PerfRun) (*loadgen.Observer, func() error, error) {
		obs := gc.observer()
		count := obs.OnRecord
		obs.OnRecord = func(r *loadgen.Record) error {
			if r.Sent.IsZero() || r.PromptTokens <= 0 || r.Group.Concurrency == 0 || !r.OK {
				bad = append(bad, fmt.Sprintf("%+v", *r))
			}
			return count(r)
		}
		return obs, nil, nil
	}}
	out, err := pipeline.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	sc := scenario(t, summary(t, out.Dir), "emu")
	if len(sc.Perf) != 2 {
		t.Fatalf("perf rows %d, errors %+v", len(sc.Perf), sc.Errors)
	}
	want := sc.Perf[0].NumPrompts + sc.Perf[1].NumPrompts
	if want == 0 || gc.records != want || gc.rowsTotal != want || gc.begins != 2 || gc.ends != 2 || gc.timeline == 0 {
		t.Fatalf("sharded run: exporter saw %+v, want %d records in 2 groups with timeline rows", gc, want)
	}
	if len(bad) > 0 {
		t.Fatalf("incomplete records: %v", bad)
	}
}

// TestTeamStagesValidated 检查团队阶段在任何部署之前被校验：名字不安全、与内置阶段或彼此重名、
// 没有 Run、负的时限都是写明阶段的配置错误；-stages 接受团队阶段的名字、拒绝没人登记的名字。
func TestTeamStagesValidated(t *testing.T) {
	run := func(context.Context, pipeline.StageRun) error { return nil }
	for _, tc := range []struct {
		stages []pipeline.TeamStage
		want   string
	}{
		{[]pipeline.TeamStage{{Name: "../x", Run: run}}, `name "../x"`},
		{[]pipeline.TeamStage{{Name: report.StagePerf, Run: run}}, `name "perf" is already taken`},
		{[]pipeline.TeamStage{{Name: "probe", Run: run}, {Name: "probe", Run: run}}, `name "probe" is already taken`},
		{[]pipeline.TeamStage{{Name: "probe"}}, "team stage probe: no Run function"},
		{[]pipeline.TeamStage{{Name: "probe", Run: run, Timeout: -1}}, "negative timeout"},
	} {
		o := options(t, tree("emu"), runtype.PR, t.TempDir())
		o.TeamStages = tc.stages
		_, err := pipeline.Run(context.Background(), o)
		if !errors.Is(err, pipeline.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want ErrConfig with %q", tc.stages, err, tc.want)
		}
	}
	o := options(t, tree("emu"), runtype.PR, t.TempDir())
	o.Stages = []report.Stage{"probe"}
	if _, err := pipeline.Run(context.Background(), o); !errors.Is(err, pipeline.ErrConfig) || !strings.Contains(err.Error(), `unknown stage "probe"`) {
		t.Fatalf("-stages probe without a team stage: %v", err)
	}
}

// TestTeamStageRunsAfterBuiltins 运行一个只选团队阶段的流水线：阶段拿到部署好的端点与本次运行的
// 产物，记下的分节出现在 summary.json 与它的渲染器写的 HTML 片段里；阶段返回的错误是该阶段的失败
// （stage 门禁 fail，退出码 ExitGateFailed），不影响分节已记下的内容。
func TestTeamStageRunsAfterBuiltins(t *testing.T) {
	sec := report.Section{Key: "probe", File: "probe/result.json"}
	var sawModel string
	o := options(t, tree("emu"), runtype.PR, t.TempDir())
	o.Stages = []report.Stage{"probe"}
	o.TeamStages = []pipeline.TeamStage{{
		Name: "probe",
		Run: func(ctx context.Context, r pipeline.StageRun) error {
			sawModel = r.Endpoint.Model
			if err := r.Report.RecordSection(r.Scenario, sec, map[string]string{"model": r.Endpoint.Model}); err != nil {
				return err
			}
			return errors.New("probe found a problem")
		},
		Renderer: report.Renderer{Name: "probe", HTML: func(sc report.Scenario, _ []gate.Gate) (template.HTML, error) {
			var v map[string]string
			_, err := sc.Decode(sec.Key, &v)
			return template.HTML("<h3>Probe</h3><p id=probe-model>" + template.HTMLEscapeString(v["model"]) + "</p>"), err
		}},
	}}
	out, err := pipeline.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	sc := scenario(t, summary(t, out.Dir), "emu")
	var got map[string]string
	if ok, err := sc.Decode(sec.Key, &got); !ok || err != nil || got["model"] != "emu-model" || sawModel != "emu-model" {
		t.Fatalf("probe section %v (%v, %v), stage saw %q", got, ok, err, sawModel)
	}
	if !hasStageError(sc, "probe") || out.ExitCode != gate.ExitGateFailed {
		t.Fatalf("exit %d errors %+v", out.ExitCode, sc.Errors)
	}
	var st report.StageStatus
	for _, s := range sc.Stages {
		if s.Stage == "probe" {
			st = s.Status
		}
	}
	page, _ := os.ReadFile(filepath.Join(out.Dir, "report.html"))
	if st != report.StageFailed || !strings.Contains(string(page), "<p id=probe-model>emu-model</p>") {
		t.Fatalf("stage status %q; report.html has the probe fragment: %v", st, strings.Contains(string(page), "probe-model"))
	}
}

// TestPerfShapersReachTheReferencePipeline 证明团队的到达过程与请求来源能进入参考流水线：
// PerfShaper 给每个档位设上 Source（/v1/embeddings 的一次性 JSON 请求）与 Pacer，汇总行照常进入
// summary.json（请求全部成功、请求体真的发到了 embeddings 端点）；PerfShaper 返回错误时该档位
// 不运行，错误记为 perf 阶段错误。
func TestPerfShapersReachTheReferencePipeline(t *testing.T) {
	fsys := tree("emu")
	fsys["scenarios/emu.yaml"].Data = []byte("mode: emulator\nserved_model_name: emu-model\napi_key_env: TEST_KEY\nemulator: {ttft: 1ms, itl: 1ms, enable_embeddings: true}\n")
	fsys["matrix.yaml"].Data = []byte("scenarios:\n  emu:\n    pr: {perf: {override: {request_rate: 200}}, accuracy: {enabled: false}}\n")
	o := options(t, fsys, runtype.PR, t.TempDir())
	o.Stages = []report.Stage{report.StagePerf}
	var bodies, paced atomic.Int64
	o.PerfShapers = []pipeline.PerfShaper{func(run pipeline.PerfRun, p *loadgen.Profile) error {
		if run.Model != "emu-model" || run.Scenario != "emu" {
			return fmt.Errorf("PerfRun %+v: want the deployed endpoint's model emu-model", run)
		}
		p.Source = &loadgen.Source{Path: "/embeddings", Body: func(dst []byte, _ loadgen.Group, i int) ([]byte, int) {
			bodies.Add(1)
			return fmt.Appendf(dst, `{"model":%q,"input":"doc %d"}`, run.Model, i), 0
		}}
		p.Pacer = func(_ loadgen.Group, rate float64) loadgen.Pacer {
			paced.Add(1)
			return loadgen.ConstantPacer(rate)
		}
		return nil
	}}
	out, err := pipeline.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	sc := scenario(t, summary(t, out.Dir), "emu")
	if len(sc.Perf) == 0 || len(sc.Errors) != 0 {
		t.Fatalf("perf rows %d, errors %+v", len(sc.Perf), sc.Errors)
	}
	sent := 0
	for _, r := range sc.Perf {
		if r.Failed != 0 || r.Succeeded == 0 {
			t.Fatalf("row %+v", r)
		}
		sent += r.NumPrompts
	}
	if int(bodies.Load()) < sent || paced.Load() != int64(len(sc.Perf)) {
		t.Fatalf("bodies %d for %d requests, pacers %d for %d groups", bodies.Load(), sent, paced.Load(), len(sc.Perf))
	}

	o = options(t, fsys, runtype.PR, t.TempDir())
	o.Stages = []report.Stage{report.StagePerf}
	o.PerfShapers = []pipeline.PerfShaper{func(pipeline.PerfRun, *loadgen.Profile) error { return errors.New("no such endpoint") }}
	out, err = pipeline.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	sc = scenario(t, summary(t, out.Dir), "emu")
	if len(sc.Perf) != 0 || len(sc.Errors) == 0 || !strings.Contains(sc.Errors[0].Message, "perf shaper: no such endpoint") {
		t.Fatalf("perf rows %d, errors %+v", len(sc.Perf), sc.Errors)
	}
}
