package report_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// workflow 是 GitHub Actions 工作流中本测试关心的部分。
type workflow struct {
	Name string `yaml:"name"`
	On   struct {
		PullRequest *struct {
			Branches []string `yaml:"branches"`
		} `yaml:"pull_request"`
		Schedule []struct {
			Cron string `yaml:"cron"`
		} `yaml:"schedule"`
	} `yaml:"on"`
	Env  map[string]string `yaml:"env"`
	Jobs map[string]struct {
		Needs          yaml.Node `yaml:"needs"`
		If             string    `yaml:"if"`
		TimeoutMinutes int       `yaml:"timeout-minutes"`
		Steps          []struct {
			Name string            `yaml:"name"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			If   string            `yaml:"if"`
			Env  map[string]string `yaml:"env"`
			With map[string]string `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// loadWorkflow 解析仓库中的工作流文件（严格模式：未知键也能解析，但 YAML 必须合法）。
func loadWorkflow(t *testing.T, name string) workflow {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", ".github", "workflows", name))
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	if err := yaml.Unmarshal(b, &w); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return w
}

// needsOf 把 needs（字符串或列表）规范为列表。
func needsOf(n yaml.Node) []string {
	switch n.Kind {
	case yaml.ScalarNode:
		return []string{n.Value}
	case yaml.SequenceNode:
		var out []string
		for _, c := range n.Content {
			out = append(out, c.Value)
		}
		return out
	}
	return nil
}

// stageOrder 是需求 §8（docs/requirements.md）的阶段顺序。
var stageOrder = []string{"lint", "typecheck", "unit", "functional", "perf", "accuracy", "summary"}

// checkWorkflow 检查两个工作流共有的结构：阶段链、失败继续、驱动调用、产物保留期。
func checkWorkflow(t *testing.T, w workflow, runType string, retention string) {
	t.Helper()
	var jobs []string
	for j := range w.Jobs {
		jobs = append(jobs, j)
	}
	if len(jobs) != len(stageOrder) {
		t.Fatalf("jobs %v, want %v", jobs, stageOrder)
	}
	for i, j := range stageOrder {
		job, ok := w.Jobs[j]
		if !ok {
			t.Fatalf("missing job %q", j)
		}
		needs := needsOf(job.Needs)
		if i == 0 {
			if len(needs) != 0 {
				t.Errorf("%s needs %v", j, needs)
			}
			continue
		}
		if !reflect.DeepEqual(needs, []string{stageOrder[i-1]}) && !(j == "summary" && reflect.DeepEqual(needs, stageOrder[:i])) {
			t.Errorf("%s needs %v, want [%s]", j, needs, stageOrder[i-1])
		}
		if !strings.Contains(job.If, "!cancelled()") {
			t.Errorf("%s: if %q does not continue after a failed stage", j, job.If)
		}
	}
	if w.Env["RUN_TYPE"] != runType {
		t.Errorf("RUN_TYPE %q", w.Env["RUN_TYPE"])
	}
	for _, j := range []string{"functional", "perf", "accuracy", "summary"} {
		var cmds, uploads []string
		for _, s := range w.Jobs[j].Steps {
			if strings.Contains(s.Run, "go run ./examples/ci") {
				cmds = append(cmds, s.Run)
			}
			if strings.HasPrefix(s.Uses, "actions/upload-artifact@") {
				uploads = append(uploads, s.With["retention-days"])
				if s.If != "${{ always() }}" || s.With["path"] != "artifacts/" {
					t.Errorf("%s: upload if=%q path=%q", j, s.If, s.With["path"])
				}
			}
		}
		if len(cmds) != 1 || !strings.Contains(cmds[0], `-run-type "$RUN_TYPE"`) {
			t.Errorf("%s: driver calls %q", j, cmds)
			continue
		}
		want := "-stages " + j
		if j == "summary" {
			want = "-summarize"
		}
		if !strings.Contains(cmds[0], want) {
			t.Errorf("%s: %q lacks %q", j, cmds[0], want)
		}
		if !reflect.DeepEqual(uploads, []string{retention}) {
			t.Errorf("%s: retention-days %v, want [%s]", j, uploads, retention)
		}
	}
	for _, j := range []string{"lint", "typecheck", "unit"} {
		if len(w.Jobs[j].Steps) < 3 {
			t.Errorf("%s has %d steps", j, len(w.Jobs[j].Steps))
		}
	}
}

// TestPRWorkflow 检查 PR 工作流：目标分支 main、阶段顺序、14 天保留、不推送。
func TestPRWorkflow(t *testing.T) {
	w := loadWorkflow(t, "pr.yml")
	if w.On.PullRequest == nil || !reflect.DeepEqual(w.On.PullRequest.Branches, []string{"main"}) || len(w.On.Schedule) != 0 {
		t.Fatalf("triggers %+v", w.On)
	}
	checkWorkflow(t, w, "pr", "14")
	for name, job := range w.Jobs {
		for _, s := range job.Steps {
			if strings.Contains(s.Run, "-push") || s.Env["PROM_PUSHGATEWAY_URL"] != "" {
				t.Errorf("PR job %s pushes metrics", name)
			}
		}
	}
	if got := w.Jobs["functional"].TimeoutMinutes; got != 30 {
		t.Errorf("functional timeout %d", got)
	}
	if got := w.Jobs["perf"].TimeoutMinutes; got != 60 {
		t.Errorf("perf timeout %d", got)
	}
	if got := w.Jobs["accuracy"].TimeoutMinutes; got != 90 {
		t.Errorf("accuracy timeout %d", got)
	}
}

// TestDailyWorkflow 检查每日工作流：UTC 00:00 定时、30 天保留、推送地址来自 secrets。
func TestDailyWorkflow(t *testing.T) {
	w := loadWorkflow(t, "daily.yml")
	if w.On.PullRequest != nil || len(w.On.Schedule) != 1 || w.On.Schedule[0].Cron != "0 0 * * *" {
		t.Fatalf("triggers %+v", w.On)
	}
	checkWorkflow(t, w, "daily", "30")
	pushed := false
	for _, s := range w.Jobs["summary"].Steps {
		if strings.Contains(s.Run, "go run ./examples/ci") {
			pushed = strings.Contains(s.Run, "-push") && s.Env["PROM_PUSHGATEWAY_URL"] == "${{ secrets.PROM_PUSHGATEWAY_URL }}"
		}
	}
	if !pushed {
		t.Error("daily summary does not push with PROM_PUSHGATEWAY_URL from secrets")
	}
	total := 0
	for _, j := range w.Jobs {
		if j.TimeoutMinutes <= 0 {
			t.Error("job without timeout-minutes")
		}
		total = max(total, j.TimeoutMinutes)
	}
	if total > 360 {
		t.Errorf("a daily job exceeds 6 h: %d min", total)
	}
}
