package matrix_test

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/vllm-cibench/cibench/field"
	"github.com/vllm-cibench/cibench/runtype"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/matrix"
)

// validTree 返回一个最小但完整的合法配置树，各测试在其副本上制造错误。
func validTree() fstest.MapFS {
	return fstest.MapFS{
		"scenarios/emulator.yaml": {Data: []byte(`mode: emulator
served_model_name: emu
features: [reasoning]
reasoning:
  expect_reasoning: true
emulator:
  ttft: 5ms
`)},
		"scenarios/ext.yaml": {Data: []byte(`mode: external
served_model_name: qwen
quant: w8a8
base_url: http://127.0.0.1:9000/v1
api_key_env: MY_KEY
health: {path: /healthz, timeout: 30s}
`)},
		"scenarios/pd.yaml": {Data: []byte(`mode: k8s-pd
served_model_name: r1
quant: w4a8
pd: {prefill: 2, decode: 1}
k8s:
  namespace: default
  service_name: r1
  roles:
    - {name: prefill, manifests: [k8s/prefill.yaml]}
    - {name: decode, manifests: [k8s/decode.yaml]}
`)},
		"k8s/prefill.yaml":                {Data: []byte("kind: Deployment\n")},
		"k8s/decode.yaml":                 {Data: []byte("kind: Deployment\n")},
		"tests/functional/chat_core.yaml": {Data: []byte("chat_core: {max_tokens: 8}\n")},
		"tests/perf/profiles/pr.yaml":     {Data: []byte("concurrency: [1]\ninput_length: [16]\noutput_length: [8]\n")},
		"tests/perf/profiles/daily.yaml":  {Data: []byte("concurrency: [1, 2]\ninput_length: [16]\noutput_length: [8]\n")},
		"tests/perf/profiles/tiny.yaml":   {Data: []byte("concurrency: [1]\ninput_length: [4]\noutput_length: [2]\ntemperature: 0.5\n")},
		"tests/accuracy/pr.yaml":          {Data: []byte("debug: true\ndatasets: [{name: gpqa, threshold: 0.2}]\n")},
		"tests/accuracy/daily.yaml":       {Data: []byte("datasets: [{name: gpqa, threshold: 0.5}]\n")},
		"providers.yaml":                  {Data: []byte("providers:\n  - {id: p, name: p, api_key: EMPTY, base_url: 'http://127.0.0.1:1/v1', model_name: m, model_category: m}\n")},
		"matrix.yaml": {Data: []byte(`defaults:
  on_failure: next_scenario
  timeouts:
    pr: {functional: 5m}
scenarios:
  ext:
    pr:
      functional: {suites: [streaming], cases: ["chat_core/*"]}
      perf: {profiles: [tiny, pr], override: {output_length: [4], temperature: 0}}
      accuracy: {enabled: false}
  emulator:
    pr: {}
    daily: {perf: {timeout: 2h}}
  pd:
    default: false
    daily: {}
`)},
	}
}

// with 返回 validTree 的副本，并用 files 覆盖（值为空表示删除该文件）。
func with(files map[string]string) fstest.MapFS {
	t := validTree()
	for k, v := range files {
		if v == "" {
			delete(t, k)
			continue
		}
		t[k] = &fstest.MapFile{Data: []byte(v)}
	}
	return t
}

// TestLoadValidTree 加载一棵完整、合法的配置树，逐项核对解码出的场景、档位与矩阵取值。
func TestLoadValidTree(t *testing.T) {
	m, err := load(validTree(), matrix.WithRoot("configs"))
	if err != nil {
		t.Fatal(err)
	}
	ext := m.Scenarios["ext"]
	if ext.Name != "ext" || ext.Mode != "external" || ext.Quant != matrix.QuantW8A8 {
		t.Fatalf("ext = %+v", ext)
	}
	if ext.Health.Path != "/healthz" || ext.Health.Timeout != 30*time.Second || ext.Health.Interval != matrix.DefaultHealthInterval {
		t.Fatalf("ext.Health = %+v", ext.Health)
	}
	if ext.Model != "qwen" {
		t.Fatalf("model defaults to served name, got %q", ext.Model)
	}
	if ext.File != "configs/scenarios/ext.yaml" {
		t.Fatalf("File = %q", ext.File)
	}
	emu := m.Scenarios["emulator"]
	if emu.Quant != matrix.QuantNone || !emu.HasFeature(matrix.FeatureReasoning) || emu.HasFeature(matrix.FeatureRerank) {
		t.Fatalf("emu = %+v", emu)
	}
	if got := strings.Join(emu.Reasoning.Keys, ","); got != "reasoning_content,reasoning" {
		t.Fatalf("default reasoning keys = %q", got)
	}
	if ec := emu.Deploy.(*emulator.Plan).Config; ec.TTFT != 5*time.Millisecond || ec.Model != "emu" || !emu.Emulated {
		t.Fatalf("emulator config = %+v", ec)
	}
	// pd 的 k8s: 块由 deploy/kube 模块的 kube.Modes() 解码与校验（那个模块的 TestScenarioPlans 断言
	// 它的 Plan）；这里的替身只认名字，场景本身照样加载。
	if pd := m.Scenarios["pd"]; pd == nil || pd.Mode != "k8s-pd" || pd.Deploy == nil {
		t.Fatalf("pd scenario = %+v", pd)
	}
	if m.Defaults.OnFailure != matrix.OnFailureNextScenario {
		t.Fatalf("OnFailure = %q", m.Defaults.OnFailure)
	}
	pr := m.Timeouts(runtype.PR)
	want := matrix.Timeouts{Job: time.Hour, Functional: 5 * time.Minute, Perf: time.Hour, Accuracy: 90 * time.Minute}
	if pr != want {
		t.Fatalf("pr timeouts = %+v, want %+v", pr, want)
	}
	if d := m.Timeouts(runtype.Daily); d.Job != 6*time.Hour || d.Functional != 30*time.Minute {
		t.Fatalf("daily timeouts = %+v", d)
	}
	if len(m.Providers) != 1 || m.Providers[0].ID != "p" || m.Providers[0].BaseURLs[0] != "http://127.0.0.1:1/v1" {
		t.Fatalf("providers = %+v", m.Providers)
	}
	if m.Functional.ChatCore.MaxTokens != 8 || m.Functional.ChatCore.N < 2 {
		t.Fatalf("functional overlay lost defaults or override: %+v", m.Functional.ChatCore)
	}
	if m.Profiles["tiny"].InputLength[0] != 4 || *m.Profiles["tiny"].Temperature != 0.5 {
		t.Fatalf("tiny = %+v", m.Profiles["tiny"])
	}
}

// TestPlanDefaultPR 确认不指定场景的 PR 计划只含默认场景，阶段与用例子集取矩阵中的值（缺省为全部）。
func TestPlanDefaultPR(t *testing.T) {
	m, err := load(validTree())
	if err != nil {
		t.Fatal(err)
	}
	plans, err := m.Plan(runtype.PR)
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) != 2 || plans[0].Scenario.Name != "ext" || plans[1].Scenario.Name != "emulator" {
		t.Fatalf("plan order = %v", names(plans))
	}
	ext := plans[0]
	if ext.OnFailure != matrix.OnFailureNextScenario || ext.RunType != runtype.PR {
		t.Fatalf("ext plan = %+v", ext)
	}
	if !ext.Functional.Enabled || strings.Join(ext.Functional.Select, ",") != "streaming,chat_core/*" {
		t.Fatalf("functional = %+v", ext.Functional)
	}
	if ext.Functional.Timeout != 5*time.Minute || ext.Functional.Config.ChatCore.MaxTokens != 8 {
		t.Fatalf("functional = %+v", ext.Functional)
	}
	if got := profileNames(ext.Perf.Profiles); got != "tiny,pr" || ext.Perf.Timeout != time.Hour {
		t.Fatalf("perf = %s %v", got, ext.Perf.Timeout)
	}
	tiny, pr := ext.Perf.Profiles[0].Profile, ext.Perf.Profiles[1].Profile
	if tiny.OutputLength[0] != 4 || *tiny.Temperature != 0 || tiny.InputLength[0] != 4 || pr.OutputLength[0] != 4 || pr.InputLength[0] != 16 {
		t.Fatalf("override not applied per field: tiny=%+v pr=%+v", tiny, pr)
	}
	if *m.Profiles["tiny"].Temperature != 0.5 || m.Profiles["pr"].OutputLength[0] != 8 {
		t.Fatal("override leaked into the shared base profile")
	}
	if ext.Accuracy.Enabled || len(ext.Accuracy.Configs) != 0 {
		t.Fatalf("accuracy = %+v", ext.Accuracy)
	}
	emu := plans[1]
	if len(emu.Functional.Select) != 0 {
		t.Fatalf("default subset must be all, got %+v", emu.Functional.Select)
	}
	if profileNames(emu.Perf.Profiles) != "pr" || len(emu.Accuracy.Configs) != 1 || emu.Accuracy.Configs[0].Name != "pr" || !emu.Accuracy.Configs[0].Config.Debug {
		t.Fatalf("defaults: perf %s accuracy %+v", profileNames(emu.Perf.Profiles), emu.Accuracy.Configs)
	}
}

// TestPlanDailyAndSelection 确认每日计划使用 daily 档位，且显式选择场景时按选择生成计划。
func TestPlanDailyAndSelection(t *testing.T) {
	m, err := load(validTree())
	if err != nil {
		t.Fatal(err)
	}
	daily, err := m.Plan(runtype.Daily)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(daily); got != "emulator" {
		t.Fatalf("daily default plan = %s (pd is default: false)", got)
	}
	if daily[0].Perf.Timeout != 2*time.Hour || profileNames(daily[0].Perf.Profiles) != "daily" {
		t.Fatalf("daily emulator perf = %+v", daily[0].Perf)
	}
	sel, err := m.Plan(runtype.Daily, "pd", "emulator")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(sel); got != "pd,emulator" {
		t.Fatalf("selected = %s", got)
	}
	for _, tc := range []struct {
		rt   matrix.RunType
		only []string
		want string
	}{
		{runtype.PR, []string{"pd"}, `scenario "pd" has no pr entry`},
		{runtype.PR, []string{"nope"}, `unknown scenario "nope" (known: ext, emulator, pd)`},
		{runtype.PR, []string{"ext", "ext"}, `selected twice`},
		{"weekly", nil, `invalid run type`},
	} {
		_, err := m.Plan(tc.rt, tc.only...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Plan(%s, %v) error = %v, want %q", tc.rt, tc.only, err, tc.want)
		}
	}
}

// TestPlanScenarioNotInMatrix 确认显式选择一个已定义但未列入 matrix.yaml 的场景会报错并指出原因。
func TestPlanScenarioNotInMatrix(t *testing.T) {
	m, err := load(with(map[string]string{"scenarios/extra.yaml": "mode: emulator\nserved_model_name: x\n"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Plan(runtype.PR, "extra"); err == nil || !strings.Contains(err.Error(), `"extra" is not listed in matrix.yaml`) {
		t.Fatalf("err = %v", err)
	}
}

// TestParseRunType 确认运行类型只接受 pr 与 daily，错误信息带出非法值。
func TestParseRunType(t *testing.T) {
	if rt, err := matrix.ParseRunType("daily"); err != nil || rt != runtype.Daily {
		t.Fatalf("daily: %v %v", rt, err)
	}
	if _, err := matrix.ParseRunType("nightly"); err == nil || !strings.Contains(err.Error(), `"nightly"`) {
		t.Fatalf("nightly: %v", err)
	}
}

// TestBrokenTree 逐一制造错误，断言错误精确到文件、行、字段路径与取值。
func TestBrokenTree(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string // 每条都必须出现在错误文本中
	}{
		{"unknown field", map[string]string{"scenarios/ext.yaml": "mode: external\nserved_model_name: q\nbase_url: http://h/v1\nqaunt: w8a8\n"},
			[]string{`configs/scenarios/ext.yaml:4:1: qaunt: unknown field "qaunt"`, "quant"}},
		{"bad enum", map[string]string{"scenarios/ext.yaml": "mode: external\nserved_model_name: q\nbase_url: http://h/v1\nquant: W16A16\n"},
			[]string{`configs/scenarios/ext.yaml:4:8: quant: invalid quant: "W16A16": want a lower-case letter followed by [a-z0-9_.-] (got "W16A16")`}},
		{"bad mode", map[string]string{"scenarios/ext.yaml": "mode: docker\nserved_model_name: q\n"},
			[]string{`configs/scenarios/ext.yaml:1:7: mode: deploy: unknown mode "docker" (registered: external, local, emulator, k8s-hybrid, k8s-pd)`, `(got "docker")`}},
		{"wrong type", map[string]string{"scenarios/ext.yaml": "mode: external\nserved_model_name: q\nbase_url: http://h/v1\nfeatures: reasoning\n"},
			[]string{`configs/scenarios/ext.yaml:4:11: features: want a list, got a string (got "reasoning")`}},
		{"int for string", map[string]string{"scenarios/ext.yaml": "mode: external\nserved_model_name: 32\nbase_url: http://h/v1\n"},
			[]string{`ext.yaml:2:20: served_model_name: want a string, got an integer`}},
		{"bad duration", map[string]string{"scenarios/ext.yaml": "mode: external\nserved_model_name: q\nbase_url: http://h/v1\nhealth:\n  timeout: 20\n"},
			[]string{`ext.yaml:5:12: health.timeout: want a duration such as "30s" or "20m", got an integer (got "20")`}},
		{"unparsable duration", map[string]string{"scenarios/ext.yaml": "mode: external\nserved_model_name: q\nbase_url: http://h/v1\nhealth:\n  timeout: soon\n"},
			[]string{`health.timeout: invalid duration`, `(got "soon")`}},
		{"unknown feature", map[string]string{"scenarios/ext.yaml": "mode: external\nserved_model_name: q\nbase_url: http://h/v1\nfeatures: [guided, reasoning]\n"},
			[]string{`ext.yaml:4:12: features[0]: unknown feature`, `(got "guided")`}},
		{"duplicate key", map[string]string{"scenarios/ext.yaml": "mode: external\nserved_model_name: q\nserved_model_name: r\nbase_url: http://h/v1\n"},
			[]string{`ext.yaml:3:1: served_model_name: duplicate key`}},
		{"missing base_url", map[string]string{"scenarios/ext.yaml": "mode: external\nserved_model_name: q\n"},
			[]string{`ext.yaml`, `external: base_url is required for mode external`}},
		{"credentials in url", map[string]string{"scenarios/ext.yaml": "mode: external\nserved_model_name: q\nbase_url: http://user:sk-secret@h/v1\n"},
			[]string{`ext.yaml:3:11: base_url: base_url must not contain credentials`}},
		{"url without v1", map[string]string{"scenarios/ext.yaml": "mode: external\nserved_model_name: q\nbase_url: http://h:9000\n"},
			[]string{`base_url: base_url must end with /v1 (got "http://h:9000")`}},
		{"literal key in api_key_env", map[string]string{"scenarios/ext.yaml": "mode: external\nserved_model_name: q\nbase_url: http://h/v1\napi_key_env: sk-abc.def\n"},
			[]string{`api_key_env: api_key_env must be the NAME of an environment variable`}},
		{"block for other mode", map[string]string{"scenarios/ext.yaml": "mode: external\nserved_model_name: q\nbase_url: http://h/v1\nlocal: {command: vllm}\n"},
			[]string{`ext.yaml:4:1: local: local block is not allowed with mode "external"`}},
		{"literal key in local block", map[string]string{"scenarios/ext.yaml": "mode: local\nserved_model_name: q\nbase_url: http://h/v1\nlocal: {command: vllm, api_key: sk-123}\n"},
			[]string{`ext.yaml:4:33: local.api_key: API keys must not be written in YAML`}},
		{"local model mismatch", map[string]string{"scenarios/ext.yaml": "mode: local\nserved_model_name: q\nbase_url: http://h/v1\nlocal: {command: vllm, served_model_name: other}\n"},
			[]string{`local.served_model_name: must equal served_model_name "q" (or be omitted) (got "other")`}},
		{"local invalid", map[string]string{"scenarios/ext.yaml": "mode: local\nserved_model_name: q\nbase_url: http://h/v1\nlocal: {command: vllm, port: 70000}\n"},
			[]string{`ext.yaml:4:8: local: deploy: invalid config: local: instances[0].port 70000 out of range`}},
		{"emulator invalid", map[string]string{"scenarios/emulator.yaml": "mode: emulator\nserved_model_name: e\nemulator: {failure_rate: 2}\n"},
			[]string{`emulator.yaml:3:11: emulator: deploy: invalid emulator config: FailureRate=2`}},
		{"emulator unknown field", map[string]string{"scenarios/emulator.yaml": "mode: emulator\nserved_model_name: e\nemulator: {tftt: 5ms}\n"},
			[]string{`emulator.yaml:3:12: emulator.tftt: unknown field "tftt"`}},
		{"emulator addr", map[string]string{"scenarios/emulator.yaml": "mode: emulator\nserved_model_name: e\nemulator: {addr: \"127.0.0.1:8000\"}\n"},
			[]string{`emulator.addr: the emulator scenario always listens on 127.0.0.1:0`}},
		{"profile invalid", map[string]string{"tests/perf/profiles/tiny.yaml": "concurrency: [1]\ninput_length: [4]\noutput_length: [0]\n"},
			[]string{`configs/tests/perf/profiles/tiny.yaml:3:17: output_length[0]: must be`, `(got "0")`}},
		{"profile negative concurrency", map[string]string{"tests/perf/profiles/tiny.yaml": "concurrency:\n  - 1\n  - -3\ninput_length: [4]\noutput_length: [2]\n"},
			[]string{`configs/tests/perf/profiles/tiny.yaml:3:5: concurrency[1]: must be >= 1`, `(got "-3")`}},
		{"profile default out of range", map[string]string{"tests/perf/profiles/tiny.yaml": "concurrency: [1]\ninput_length: [4]\noutput_length: [2]\nrequests_per_concurrency: -1\n"},
			[]string{`configs/tests/perf/profiles/tiny.yaml:4:27: requests_per_concurrency: must be in [1, `, `(got "-1")`}},
		// 打错的数（多打了几个 0）在运行之前就报错，指明文件:行:列与取值，而不是跑到阶段超时。
		{"profile absurd request count", map[string]string{"tests/perf/profiles/tiny.yaml": "concurrency: [1]\ninput_length: [4]\noutput_length: [2]\nrequests_per_concurrency: 999999999999\n"},
			[]string{`configs/tests/perf/profiles/tiny.yaml:4:27: requests_per_concurrency: must be in [1, `, `(got "999999999999")`}},
		{"override absurd concurrency", map[string]string{"matrix.yaml": "scenarios:\n  emulator:\n    pr:\n      perf:\n        override: {concurrency: [1, 100000000]}\n"},
			[]string{`configs/matrix.yaml:5:37: scenarios.emulator.pr.perf.override.concurrency[1]: must be <= `, `(got "100000000")`}},
		{"profile wrong type", map[string]string{"tests/perf/profiles/tiny.yaml": "concurrency: [one]\ninput_length: [4]\noutput_length: [1]\n"},
			[]string{`configs/tests/perf/profiles/tiny.yaml:1:15: concurrency[0]: want an integer, got a string (got "one")`}},
		{"override invalid", map[string]string{"matrix.yaml": "scenarios:\n  emulator:\n    pr: {perf: {override: {warmup: -1}}}\n"},
			[]string{`configs/matrix.yaml:3:36: scenarios.emulator.pr.perf.override.warmup: must be in [0, `, `(got "-1")`}},
		// 负并发写在 override 里：错误指向 concurrency 列表中的那一项，而不是 override: 那一行。
		{"override negative concurrency", map[string]string{"matrix.yaml": "scenarios:\n  emulator:\n    pr:\n      perf:\n        override:\n          warmup: 0\n          concurrency: [1, -2]\n"},
			[]string{`configs/matrix.yaml:7:28: scenarios.emulator.pr.perf.override.concurrency[1]: must be >= 1`, `(got "-2")`}},
		// 叠加后才出错、出错字段写在档位文件里：指向档位文件中的那一行，并说明是与哪个 override 叠加。
		{"override makes base invalid", map[string]string{"tests/perf/profiles/pr.yaml": "concurrency: [1]\ninput_length: [16]\noutput_length: [8]\nprefix_length: 8\n",
			"matrix.yaml": "scenarios:\n  emulator:\n    pr: {perf: {override: {input_length: [4]}}}\n"},
			[]string{`configs/tests/perf/profiles/pr.yaml:4:16: prefix_length: profile "pr" with override (configs/matrix.yaml:3:27): must be < input_length 4 (got "8")`}},
		{"bad gate mode", map[string]string{"matrix.yaml": "defaults:\n  gates: {mode: strict}\nscenarios:\n  emulator:\n    pr: {}\n"},
			[]string{`configs/matrix.yaml:2:17: defaults.gates.mode: want "spec" or "significant" (got "strict")`}},
		{"bad on_insufficient", map[string]string{"matrix.yaml": "defaults:\n  gates: {per_gate: {qps: {on_insufficient: drop}}}\nscenarios:\n  emulator:\n    pr: {}\n"},
			[]string{`configs/matrix.yaml:2:45: defaults.gates.per_gate.qps.on_insufficient: want "spec", "fail", "warn", "lower_quantile" or "shift" (got "drop")`}},
		{"bad sweep", map[string]string{"tests/perf/profiles/tiny.yaml": "control_method: sweep\ninput_length: [4]\noutput_length: [2]\ngoodput: [\"e2e:100\"]\nsweep: {growth: 1}\n"},
			[]string{`configs/tests/perf/profiles/tiny.yaml:5:17: sweep.growth: must be > 1 (got "1")`}},
		{"override unknown field", map[string]string{"matrix.yaml": "scenarios:\n  emulator:\n    pr: {perf: {override: {concurency: [1]}}}\n"},
			[]string{`configs/matrix.yaml:3:28: scenarios.emulator.pr.perf.override.concurency: unknown field "concurency"`}},
		{"accuracy invalid", map[string]string{"tests/accuracy/daily.yaml": "datasets: [{name: gpqb}]\n"},
			[]string{`configs/tests/accuracy/daily.yaml:1:19: datasets[0].name: accuracy: unknown dataset (want one of gpqa, mmlu, mgsm, drop, humaneval) (got "gpqb")`}},
		{"accuracy threshold out of range", map[string]string{"tests/accuracy/daily.yaml": "debug: true\ndatasets:\n  - name: gpqa\n    threshold: 7.5\n"},
			[]string{`configs/tests/accuracy/daily.yaml:4:16: datasets[0].threshold: must be in (0, 1] (got "7.5")`}},
		{"accuracy threshold cannot fail", map[string]string{"tests/accuracy/daily.yaml": "datasets: [{name: gpqa, threshold: 0}]\n"},
			[]string{`configs/tests/accuracy/daily.yaml:1:36: datasets[0].threshold: 0 can never fail`}},
		{"accuracy threshold missing", map[string]string{"tests/accuracy/daily.yaml": "datasets:\n  - {name: mmlu}\n"},
			[]string{`configs/tests/accuracy/daily.yaml:2:5: datasets[0].threshold: missing: every gated dataset needs a threshold that can fail`}},
		{"accuracy num_threads", map[string]string{"tests/accuracy/daily.yaml": "num_threads: 100000000\ndatasets: [{name: gpqa, threshold: 0.5}]\n"},
			[]string{`configs/tests/accuracy/daily.yaml:1:14: num_threads: must be in [1, 1024] (0 = default 32) (got "100000000")`}},
		{"accuracy override invalid", map[string]string{"matrix.yaml": "scenarios:\n  emulator:\n    daily: {accuracy: {override: {temperature: 3}}}\n"},
			[]string{`configs/matrix.yaml:3:48: scenarios.emulator.daily.accuracy.override.temperature: must be in [0, 2] (got "3")`}},
		{"accuracy override builtin without threshold", map[string]string{"matrix.yaml": "scenarios:\n  emulator:\n    daily: {accuracy: {override: {datasets: [{name: mmlu}]}}}\n"},
			[]string{`configs/matrix.yaml:3:46: scenarios.emulator.daily.accuracy.override.datasets[0].threshold: missing`}},
		{"functional invalid", map[string]string{"tests/functional/chat_core.yaml": "chat_core: {n: 1}\n"},
			[]string{`configs/tests/functional/chat_core.yaml:1:16: chat_core.n: must be >= 2 (got "1")`}},
		{"functional request timeout", map[string]string{"tests/functional/request.yaml": "# bounds\nrequest:\n  timeout: 0s\n"},
			[]string{`configs/tests/functional/request.yaml:3:12: request.timeout: must be > 0 (a Go duration such as 120s) (got "0s")`}},
		{"functional request timeout negative", map[string]string{"tests/functional/request.yaml": "request:\n  timeout: -2s\n"},
			[]string{`configs/tests/functional/request.yaml:2:12: request.timeout: duration must not be negative (got "-2s")`}},
		{"functional request timeout not a duration", map[string]string{"tests/functional/request.yaml": "request:\n  timeout: 120\n"},
			[]string{`configs/tests/functional/request.yaml:2:12: request.timeout:`}},
		{"functional unknown suite key", map[string]string{"tests/functional/chat_core.yaml": "chat_cor: {n: 3}\n"},
			[]string{`configs/tests/functional/chat_core.yaml:1:1: chat_cor: unknown field "chat_cor"`}},
		{"unknown case pattern", map[string]string{"matrix.yaml": "scenarios:\n  emulator:\n    pr: {functional: {suites: [chat_core, chat_cor]}}\n"},
			[]string{`configs/matrix.yaml:3:43: scenarios.emulator.pr.functional.suites[1]: selects no functional case`, `(got "chat_cor")`}},
		// 用户写错的 providers.yaml 与其他配置文件读起来一样：文件:行:列、字段路径、原因。
		{"providers typo", map[string]string{"providers.yaml": "providers:\n  - id: p\n    name: p\n    bse_url: http://h/v1\n    model_name: m\n"},
			[]string{`matrix: invalid config: configs/providers.yaml:4:5: providers[0].bse_url: unknown field "bse_url"`}},
		{"providers wrong type", map[string]string{"providers.yaml": "providers:\n  - {id: [p], base_url: 'http://h/v1', model_name: m}\n"},
			[]string{`matrix: invalid config: configs/providers.yaml:2:10: providers[0].id: want a string, got a list`}},
		{"providers without base_url", map[string]string{"providers.yaml": "providers:\n  - {id: p, model_name: m}\n"},
			[]string{`matrix: invalid config: configs/providers.yaml:2:5: providers[0].base_url: is empty (provider p)`}},
		{"bad providers", map[string]string{"providers.yaml": "providers: []\n"},
			[]string{"matrix: invalid config: configs/providers.yaml: providers: no providers"}},
		{"name mismatch", map[string]string{"scenarios/ext.yaml": "name: other\nmode: external\nserved_model_name: q\nbase_url: http://h/v1\n"},
			[]string{`ext.yaml:1:7: name: name must match the file name "ext" (got "other")`}},
		{"capability unknown", map[string]string{"scenarios/emulator.yaml": "mode: emulator\nserved_model_name: e\ncapabilities:\n  top_kk: probe\n"},
			[]string{`emulator.yaml:4:3: capabilities.top_kk: unknown capability (want one of top_p, top_p_zero, top_k`}},
		{"capability bad declaration", map[string]string{"scenarios/emulator.yaml": "mode: emulator\nserved_model_name: e\ncapabilities:\n  top_k: maybe\n"},
			[]string{`emulator.yaml:4:3: capabilities.top_k: want supported, unsupported or probe (got "maybe")`}},
		{"expect reasoning without feature", map[string]string{"scenarios/emulator.yaml": "mode: emulator\nserved_model_name: e\nreasoning: {expect_reasoning: true}\n"},
			[]string{`emulator.yaml:3:31: reasoning.expect_reasoning: expect_reasoning needs the "reasoning" feature`}},
		{"syntax error", map[string]string{"scenarios/ext.yaml": "mode: [external\n"},
			[]string{`configs/scenarios/ext.yaml:`, `invalid YAML`}},
		{"two documents", map[string]string{"scenarios/ext.yaml": "mode: external\n---\nmode: local\n"},
			[]string{`ext.yaml:2:1: only one YAML document per file is allowed`}},
		{"empty scenario", map[string]string{"scenarios/ext.yaml": "# nothing\n"},
			[]string{`configs/scenarios/ext.yaml: file is empty`}},
		{"unknown scenario in matrix", map[string]string{"matrix.yaml": "scenarios:\n  emulator: {pr: {}}\n  emulater: {pr: {}}\n"},
			[]string{`configs/matrix.yaml:3:3: scenarios.emulater: unknown scenario (no configs/scenarios/emulater.yaml) (got "emulater")`}},
		{"unknown profile", map[string]string{"matrix.yaml": "scenarios:\n  emulator:\n    pr:\n      perf: {profiles: [pr, huge]}\n"},
			[]string{`configs/matrix.yaml:4:29: scenarios.emulator.pr.perf.profiles[1]: unknown name: no configs/tests/perf/profiles/huge.yaml (got "huge")`}},
		{"unknown accuracy config", map[string]string{"matrix.yaml": "scenarios:\n  emulator:\n    daily:\n      accuracy: {configs: [full]}\n"},
			[]string{`scenarios.emulator.daily.accuracy.configs[0]: unknown name: no configs/tests/accuracy/full.yaml`}},
		{"implicit profile missing", map[string]string{"tests/perf/profiles/daily.yaml": "", "matrix.yaml": "scenarios:\n  emulator:\n    daily: {}\n"},
			[]string{`configs/matrix.yaml:3:12: scenarios.emulator.daily.perf.profiles: no profiles listed and the default "daily" does not exist (configs/tests/perf/profiles/daily.yaml); stages are enabled by default: add the file, or set perf: {enabled: false}`}},
		{"entry never runs", map[string]string{"matrix.yaml": "scenarios:\n  emulator: {default: true}\n"},
			[]string{`scenarios.emulator: entry has neither pr nor daily`}},
		{"duplicate scenario in matrix", map[string]string{"matrix.yaml": "scenarios:\n  emulator: {pr: {}}\n  emulator: {daily: {}}\n"},
			[]string{`configs/matrix.yaml:3:3: scenarios.emulator: duplicate scenario`}},
		{"bad on_failure", map[string]string{"matrix.yaml": "defaults: {on_failure: stop}\nscenarios:\n  emulator: {pr: {}}\n"},
			[]string{`configs/matrix.yaml:1:24: defaults.on_failure: invalid on_failure`}},
		{"bool as string", map[string]string{"matrix.yaml": "scenarios:\n  emulator:\n    pr: {perf: {enabled: \"yes\"}}\n"},
			[]string{`scenarios.emulator.pr.perf.enabled: want a boolean (true/false), got a string (got "yes")`}},
		{"duplicate profile", map[string]string{"matrix.yaml": "scenarios:\n  emulator:\n    pr: {perf: {profiles: [pr, pr]}}\n"},
			[]string{`scenarios.emulator.pr.perf.profiles[1]: duplicate name (got "pr")`}},
		{"missing matrix", map[string]string{"matrix.yaml": ""},
			[]string{`configs/matrix.yaml: cannot read: file does not exist`}},
		{"no scenarios", map[string]string{"scenarios/ext.yaml": "", "scenarios/emulator.yaml": "", "scenarios/pd.yaml": ""},
			[]string{`configs/scenarios: no scenario files`}},
		{"empty profile file", map[string]string{"tests/perf/profiles/tiny.yaml": "# todo\n"},
			[]string{`configs/tests/perf/profiles/tiny.yaml: file is empty`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(with(tc.files), matrix.WithRoot("configs"))
			if err == nil {
				t.Fatal("Load succeeded on a broken tree")
			}
			var me *field.Error
			if !errors.As(err, &me) {
				t.Fatalf("error %v is not a *field.Error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error:\n%v\nwant substring:\n%s", err, w)
				}
			}
		})
	}
}

// TestAllErrorsReported 确认一次加载报告多个文件中的全部问题，且按文件与行排序。
func TestAllErrorsReported(t *testing.T) {
	_, err := load(with(map[string]string{
		"scenarios/ext.yaml": "mode: external\nserved_model_name: q\nbase_url: http://h/v1\nquant: Q4\nfoo: 1\n",
		"matrix.yaml":        "scenarios:\n  emulator: {pr: {perf: {profiles: [x]}}}\n",
	}))
	if err == nil {
		t.Fatal("want error")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 errors, got %d:\n%v", len(lines), err)
	}
	if !strings.HasPrefix(lines[0], "matrix: invalid config: matrix.yaml:2:") || !strings.HasPrefix(lines[1], "matrix: invalid config: scenarios/ext.yaml:4:") || !strings.HasPrefix(lines[2], "matrix: invalid config: scenarios/ext.yaml:5:") {
		t.Fatalf("order/positions wrong:\n%v", err)
	}
}

// TestAliasBomb 确认别名指数展开被截断而不是耗尽内存。
func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	_, err := load(with(map[string]string{"scenarios/ext.yaml": "mode: external\nserved_model_name: q\nbase_url: http://h/v1\nfeatures: *a8\n" + b.String()}))
	if err == nil || !strings.Contains(err.Error(), "document too large") {
		// 别名定义在引用之后时 yaml 报未知锚点；两种结果都说明没有展开。
		if err == nil || !strings.Contains(err.Error(), "unknown anchor") {
			t.Fatalf("err = %v", err)
		}
	}
	bomb := b.String() + "mode: external\nserved_model_name: q\nbase_url: http://h/v1\nfeatures: *a8\n"
	_, err = load(with(map[string]string{"scenarios/ext.yaml": bomb}))
	if err == nil || !strings.Contains(err.Error(), "a0: unknown field") {
		t.Fatalf("err = %v", err)
	}
}

// names 把计划中的场景名用逗号连接。
func names(plans []matrix.ScenarioPlan) string {
	var s []string
	for _, p := range plans {
		s = append(s, p.Scenario.Name)
	}
	return strings.Join(s, ",")
}

// profileNames 把档位列表的名字用逗号连接。
func profileNames(ns []matrix.NamedProfile) string {
	var s []string
	for _, n := range ns {
		s = append(s, n.Name)
	}
	return strings.Join(s, ",")
}

// TestOverrideBlock 通过矩阵中的 override 段检查 Block 的公开方法。
func TestOverrideBlock(t *testing.T) {
	m, err := load(validTree(), matrix.WithRoot("configs"))
	if err != nil {
		t.Fatal(err)
	}
	b := m.Entries[0].PR.Perf.Override
	if b.IsZero() || b.File() != "configs/matrix.yaml" || b.Line() != 9 {
		t.Fatalf("override block at %s:%d", b.File(), b.Line())
	}
	var wrong struct {
		OutputLength []string `yaml:"output_length"`
	}
	err = b.Decode(&wrong)
	if err == nil || !strings.Contains(err.Error(), `configs/matrix.yaml:9:63: scenarios.ext.pr.perf.override.output_length[0]: want a string, got an integer`) {
		t.Fatalf("err = %v", err)
	}
	var notPtr struct{}
	if err := b.Decode(notPtr); err == nil {
		t.Fatal("non-pointer must be rejected")
	}
	var zero matrix.Block
	keep := struct{ X int }{X: 7}
	if err := zero.Decode(&keep); err != nil || keep.X != 7 || zero.Line() != 0 || !zero.IsZero() {
		t.Fatalf("zero block: %v %v", keep, err)
	}
}

// TestStrictScalars 覆盖各种标量类型的严格检查。
func TestStrictScalars(t *testing.T) {
	m, err := load(with(map[string]string{"matrix.yaml": "scenarios:\n  emulator:\n    pr:\n      perf:\n        override:\n          seed: 18446744073709551616\n          temperature: yes\n          top_p: high\n          timeout: 5\n          input_length: {a: 1}\n"}))
	if err == nil {
		t.Fatalf("want error, got %+v", m)
	}
	for _, w := range []string{
		`override.seed: want an integer, got a number (got "18446744073709551616")`,
		`override.temperature: want a number, got a string (got "yes")`,
		`override.top_p: want a number, got a string (got "high")`,
		`override.timeout: want a duration such as "30s" or "20m", got an integer (got "5")`,
		`override.input_length: want a list, got a mapping`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in\n%v", w, err)
		}
	}
}

// TestMergeKeys 确认 YAML 合并键（<<: *anchor）按标准语义工作：显式键覆盖合并来的键，
// 合并进来的未知字段同样报错。
func TestMergeKeys(t *testing.T) {
	_, err := load(with(map[string]string{"matrix.yaml": `base: &base {output_length: [3], warmup: 2}
scenarios:
  emulator:
    pr:
      perf:
        override:
          <<: [*base]
          warmup: 0
`}))
	if err == nil || !strings.Contains(err.Error(), `base: unknown field "base"`) {
		t.Fatalf("top-level anchors must still be known fields: %v", err)
	}
	m, err := load(with(map[string]string{"matrix.yaml": `scenarios:
  emulator:
    daily: {perf: {override: &base {output_length: [3], warmup: 2}}}
    pr:
      perf:
        override:
          <<: *base
          warmup: 0
`}))
	if err != nil {
		t.Fatal(err)
	}
	plans, err := m.Plan(runtype.PR)
	if err != nil {
		t.Fatal(err)
	}
	var emu matrix.ScenarioPlan
	for _, p := range plans {
		if p.Scenario.Name == "emulator" {
			emu = p
		}
	}
	prof := emu.Perf.Profiles[0].Profile
	if prof.OutputLength[0] != 3 || prof.Warmup != 0 {
		t.Fatalf("merge: %+v", prof)
	}
	_, err = load(with(map[string]string{"matrix.yaml": "scenarios:\n  emulator:\n    daily: {perf: {override: &b {warmpu: 1}}}\n    pr: {perf: {override: {<<: *b}}}\n"}))
	if err == nil || !strings.Contains(err.Error(), `override.warmpu: unknown field "warmpu"`) {
		t.Fatalf("err = %v", err)
	}
	_, err = load(with(map[string]string{"matrix.yaml": "scenarios:\n  emulator:\n    pr: {perf: {override: {<<: 3}}}\n"}))
	if err == nil || !strings.Contains(err.Error(), `merge key (<<) needs a mapping`) {
		t.Fatalf("err = %v", err)
	}
}
