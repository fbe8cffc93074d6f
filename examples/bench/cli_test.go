package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/vllm-cibench/cibench/loadgen"
)

// optCase 是一个选项的表驱动用例：一个非默认取值、它在 options 中的效果与期望值。
type optCase struct {
	value string
	get   func(o *options) any
	want  any
	extra []string // 让取值有效所需的其他参数（例如 -i 需要数据集文件）
}

// profFieldOf 把 Profile 编码成 YAML 键 → 值，用来确认选项改的正是它声明的字段。
func profFieldOf(t *testing.T, o *options) map[string]any {
	t.Helper()
	b, err := yaml.Marshal(o.profile())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	// 嵌套的键（如 sweep.min_requests）展开成带点的键，使选项可以声明子字段。
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			for sk, sv := range sub {
				m[k+"."+sk] = sv
			}
		}
	}
	return m
}

// writeTrace 在临时目录写一个两行的 Mooncake 轨迹（块大小 8 与默认 512 都合法）。
func writeTrace(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(f, []byte(`{"timestamp":0,"input_length":8,"output_length":2,"hash_ids":[1]}`+"\n"+`{"timestamp":50,"input_length":6,"output_length":2,"hash_ids":[1]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// writeJSONL 在临时目录写一个两行、input_length 为 64 与 128 的数据集。
func writeJSONL(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "ds.jsonl")
	if err := os.WriteFile(f, []byte(`{"prompt":"a b c","input_length":64}`+"\n"+`{"prompt":"d e f","input_length":128}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestProfEveryOption 对 prof 的每个选项：短名与长名、"-x v" 与 "--x=v" 两种写法得到同样的
// 取值，且改变的正是选项声明的 Profile 字段；列表选项的逗号与重复写法等价；
// 表中每个选项都必须有用例（新增选项忘了写测试会失败）。
func TestProfEveryOption(t *testing.T) {
	ds := writeJSONL(t)
	ptr := func(o *options) *loadgen.Profile { return &o.p }
	cases := map[string]optCase{
		"dataset-type":     {value: "custom", extra: []string{"--input-path", ds}, get: func(o *options) any { return ptr(o).DatasetType }, want: loadgen.DatasetCustom},
		"config-option":    {value: "image_width:64,image_height:32", get: func(o *options) any { return [2]int{o.p.ImageWidth, o.p.ImageHeight} }, want: [2]int{64, 32}},
		"modal-type":       {value: "image-text", get: func(o *options) any { return o.p.ModalType }, want: loadgen.ModalImageText},
		"input-path":       {value: ds, get: func(o *options) any { return len(o.p.Prompts) }, want: 2},
		"input-length":     {value: "64,2048", get: func(o *options) any { return o.p.InputLength }, want: []int{64, 2048}},
		"num-requests":     {value: "5", get: func(o *options) any { return o.p.NumRequests }, want: []int{5}},
		"tokenizer":        {value: "tok.json", get: func(o *options) any { return o.tokenizer }, want: "tok.json"},
		"random-seed":      {value: "42", get: func(o *options) any { return o.p.Seed }, want: int64(42)},
		"concurrency":      {value: "1,2,4", get: func(o *options) any { return o.p.Concurrency }, want: []int{1, 2, 4}},
		"request-rate":     {value: "12.5", get: func(o *options) any { return o.p.RequestRate }, want: 12.5},
		"burstiness":       {value: "0.5", get: func(o *options) any { return o.p.Burstiness }, want: 0.5},
		"use-climb":        {value: "true", get: func(o *options) any { return o.p.ControlMethod }, want: loadgen.ControlClimb},
		"growth-rate":      {value: "2", get: func(o *options) any { return o.p.GrowthRate }, want: 2},
		"growth-interval":  {value: "5000", get: func(o *options) any { return o.p.GrowthInterval }, want: 5 * time.Second},
		"bucket-interval":  {value: "500", get: func(o *options) any { return o.p.BucketInterval }, want: 500 * time.Millisecond},
		"init-concurrency": {value: "1", get: func(o *options) any { return o.p.InitConcurrency }, want: []int{1}},
		"climb-mode":       {value: "linear", get: func(o *options) any { return o.p.ClimbMode }, want: loadgen.ClimbLinear},
		"goodput":          {value: "ttft:50,e2e:1000", get: func(o *options) any { return o.p.Goodput }, want: []string{"ttft:50", "e2e:1000"}},
		"backend":          {value: "openai", get: func(o *options) any { return o.p.Backend }, want: loadgen.BackendCompletion},
		"provider":         {value: "x.yaml", get: func(o *options) any { return o.provider }, want: "x.yaml"},
		"provider-id":      {value: "pid1", get: func(o *options) any { return o.providerID }, want: "pid1"},
		"output-length":    {value: "16,32", get: func(o *options) any { return o.p.OutputLength }, want: []int{16, 32}},
		"range-ratio-above": {value: "0.25", get: func(o *options) any { return [2]float64{o.p.OutputRangeRatioAbove, o.p.RangeRatioAbove} },
			want: [2]float64{0.25, 0}},
		"range-ratio-below": {value: "0.5", get: func(o *options) any { return [2]float64{o.p.OutputRangeRatioBelow, o.p.RangeRatioBelow} },
			want: [2]float64{0.5, 0}},
		"warmup":                   {value: "3", get: func(o *options) any { return o.p.Warmup }, want: 3},
		"epochs":                   {value: "2", get: func(o *options) any { return o.p.Epochs }, want: 2},
		"top-k":                    {value: "-1", get: func(o *options) any { return *o.p.TopK }, want: -1},
		"top-p":                    {value: "0.9", get: func(o *options) any { return *o.p.TopP }, want: 0.9},
		"temperature":              {value: "0", get: func(o *options) any { return *o.p.Temperature }, want: 0.0},
		"use-spec-decode":          {value: "true", get: func(o *options) any { return true }, want: true},
		"timeout":                  {value: "1.5", get: func(o *options) any { return o.p.Timeout }, want: 1500 * time.Millisecond},
		"ignore-eos":               {value: "false", get: func(o *options) any { return *o.p.IgnoreEOS }, want: false},
		"continuous-usage-stats":   {value: "false", get: func(o *options) any { return *o.p.ContinuousUsageStats }, want: false},
		"benchmark-save-path":      {value: "outdir", get: func(o *options) any { return o.savePath }, want: "outdir"},
		"perf-profile":             {value: "../../configs/tests/perf/profiles/pr.yaml", get: func(o *options) any { return o.p.ControlMethod }, want: loadgen.ControlClimb},
		"prefix-length":            {value: "8", get: func(o *options) any { return o.p.PrefixLength }, want: 8},
		"input-range-ratio-above":  {value: "0.25", get: func(o *options) any { return [2]float64{o.p.RangeRatioAbove, o.p.OutputRangeRatioAbove} }, want: [2]float64{0.25, 0}},
		"input-range-ratio-below":  {value: "0.25", get: func(o *options) any { return [2]float64{o.p.RangeRatioBelow, o.p.OutputRangeRatioBelow} }, want: [2]float64{0.25, 0}},
		"sweep":                    {value: "true", extra: []string{"-g", "e2e:1000"}, get: func(o *options) any { return o.p.ControlMethod }, want: loadgen.ControlSweep},
		"sweep-start-rate":         {value: "2.5", get: func(o *options) any { return o.p.Sweep.StartRate }, want: 2.5},
		"sweep-max-rate":           {value: "64", get: func(o *options) any { return o.p.Sweep.MaxRate }, want: 64.0},
		"sweep-growth":             {value: "1.5", get: func(o *options) any { return o.p.Sweep.Growth }, want: 1.5},
		"sweep-precision":          {value: "0.1", get: func(o *options) any { return o.p.Sweep.Precision }, want: 0.1},
		"sweep-step-duration":      {value: "3s", get: func(o *options) any { return o.p.Sweep.StepDuration }, want: 3 * time.Second},
		"sweep-min-requests":       {value: "7", get: func(o *options) any { return o.p.Sweep.MinRequests }, want: 7},
		"sweep-budget":             {value: "2m", get: func(o *options) any { return o.p.Sweep.Budget }, want: 2 * time.Minute},
		"sweep-attainment":         {value: "0.9", get: func(o *options) any { return o.p.Sweep.Attainment }, want: 0.9},
		"sweep-max-fail-rate":      {value: "0.01", get: func(o *options) any { return o.p.Sweep.MaxFailRate }, want: 0.01},
		"emu-max-num-seqs":         {value: "4", get: func(o *options) any { return o.emuMaxNumSeqs }, want: 4},
		"idle-timeout":             {value: "2.5", get: func(o *options) any { return o.p.IdleTimeout }, want: 2500 * time.Millisecond},
		"max-event-bytes":          {value: "4096", get: func(o *options) any { return o.p.MaxEventBytes }, want: 4096},
		"requests-per-concurrency": {value: "4", get: func(o *options) any { return o.p.RequestsPerConcurrency }, want: 4},
		"timestamps":               {value: "read", get: func(o *options) any { return o.p.Timestamps }, want: loadgen.TimestampsRead},
		"chunk-times":              {value: "true", get: func(o *options) any { return o.chunkTimes }, want: true},
		"quiet":                    {value: "true", get: func(o *options) any { return o.quiet }, want: true},
		"perf-selftest":            {value: "true", get: func(o *options) any { return o.selftest }, want: true},
		"selftest-only":            {value: "memory", get: func(o *options) any { return o.selftestOnly }, want: "memory"},
		"selftest-requests":        {value: "10", get: func(o *options) any { return o.selftestRequests }, want: 10},
		"cpuprofile":               {value: "cpu.out", get: func(o *options) any { return o.cpuProfile }, want: "cpu.out"},
		"emu-ttft":                 {value: "5ms", get: func(o *options) any { return o.emuTTFT }, want: 5 * time.Millisecond},
		"emu-itl":                  {value: "1ms", get: func(o *options) any { return o.emuITL }, want: time.Millisecond},
		"emu-tokens-per-chunk":     {value: "4", get: func(o *options) any { return o.emuTokensPerChunk }, want: 4},
		"shards":                   {value: "4", extra: []string{"-c", "8"}, get: func(o *options) any { return o.shard.local }, want: 4},
		"shard-index":              {value: "2", extra: []string{"--shard-count", "4", "-c", "8"}, get: func(o *options) any { return o.shard.index }, want: 2},
		"shard-count":              {value: "4", extra: []string{"-c", "8"}, get: func(o *options) any { return o.shard.count }, want: 4},
		"shard-start":              {value: "2026-01-02T03:04:05.5Z", get: func(o *options) any { return o.shard.start }, want: time.Date(2026, 1, 2, 3, 4, 5, 5e8, time.UTC)},
		"shard-from-env":           {value: "true", get: func(o *options) any { return o.shard.fromEnv }, want: true},
		"shard-records":            {value: "r.csv", get: func(o *options) any { return o.shard.records }, want: "r.csv"},
		"kube-shards":              {value: "3", extra: []string{"--kube-image", "img", "-c", "8"}, get: func(o *options) any { return o.shard.kube }, want: 3},
		"kube-image":               {value: "reg/bench:1", get: func(o *options) any { return o.shard.image }, want: "reg/bench:1"},
		"kube-namespace":           {value: "perf", get: func(o *options) any { return o.shard.namespace }, want: "perf"},
		"kube-cpu":                 {value: "2", get: func(o *options) any { return o.shard.cpu }, want: "2"},
		"kube-memory":              {value: "4Gi", get: func(o *options) any { return o.shard.memory }, want: "4Gi"},
		"kube-spread":              {value: "true", get: func(o *options) any { return o.shard.spread }, want: true},
		"kube-start-delay":         {value: "5s", get: func(o *options) any { return o.shard.startDelay }, want: 5 * time.Second},
	}
	// 真实负载的选项：轨迹类需要 -dt 与 -i 指向一个轨迹文件。
	tr := writeTrace(t)
	mc := []string{"-dt", "mooncake_trace", "-i", tr}
	spx := []string{"-dt", "shared_prefix"}
	prx := []string{"-dt", "prefix_repetition"}
	mt := []string{"--multi-turn-conversations", "2"}
	for k, c := range map[string]optCase{
		"trace-block-size":                    {value: "8", extra: mc, get: func(o *options) any { return o.p.Trace.BlockSize }, want: 8},
		"trace-salt":                          {value: "7", extra: mc, get: func(o *options) any { return o.p.Trace.Salt }, want: int64(7)},
		"trace-time-scale":                    {value: "0.5", extra: mc, get: func(o *options) any { return o.p.Trace.TimeScale }, want: 0.5},
		"trace-start-offset":                  {value: "1.5", extra: mc, get: func(o *options) any { return o.p.Trace.StartOffset }, want: 1500 * time.Microsecond},
		"trace-end-offset":                    {value: "100", extra: mc, get: func(o *options) any { return o.p.Trace.EndOffset }, want: 100 * time.Millisecond},
		"trace-max-idle":                      {value: "20", extra: mc, get: func(o *options) any { return o.p.Trace.MaxIdle }, want: 20 * time.Millisecond},
		"shared-prefix-num-groups":            {value: "3", extra: spx, get: func(o *options) any { return o.p.SharedPrefix.NumGroups }, want: 3},
		"shared-prefix-num-prompts-per-group": {value: "4", extra: spx, get: func(o *options) any { return o.p.SharedPrefix.NumPromptsPerGroup }, want: 4},
		"shared-prefix-system-prompt-len":     {value: "64", extra: spx, get: func(o *options) any { return o.p.SharedPrefix.SystemPromptLen }, want: 64},
		"shared-prefix-question-len":          {value: "9", extra: spx, get: func(o *options) any { return o.p.SharedPrefix.QuestionLen }, want: 9},
		"shared-prefix-output-len":            {value: "5", extra: spx, get: func(o *options) any { return o.p.SharedPrefix.OutputLen }, want: 5},
		"shared-prefix-seed":                  {value: "11", extra: spx, get: func(o *options) any { return *o.p.SharedPrefix.Seed }, want: int64(11)},
		"prefix-repetition-prefix-len":        {value: "32", extra: prx, get: func(o *options) any { return o.p.PrefixRepetition.PrefixLen }, want: 32},
		"prefix-repetition-suffix-len":        {value: "16", extra: prx, get: func(o *options) any { return o.p.PrefixRepetition.SuffixLen }, want: 16},
		"prefix-repetition-num-prefixes":      {value: "3", extra: prx, get: func(o *options) any { return o.p.PrefixRepetition.NumPrefixes }, want: 3},
		"prefix-repetition-output-len":        {value: "6", extra: prx, get: func(o *options) any { return o.p.PrefixRepetition.OutputLen }, want: 6},
		"sharegpt-output-len":                 {value: "12", get: func(o *options) any { return o.p.ShareGPT.OutputLen }, want: 12},
		"multi-turn-conversations":            {value: "3", get: func(o *options) any { return o.p.MultiTurn.Conversations }, want: 3},
		"multi-turn-turns-mean":               {value: "2.5", extra: mt, get: func(o *options) any { return o.p.MultiTurn.TurnsMean }, want: 2.5},
		"multi-turn-turns-stddev":             {value: "1", extra: mt, get: func(o *options) any { return o.p.MultiTurn.TurnsStddev }, want: 1.0},
		"multi-turn-think-time":               {value: "250", extra: mt, get: func(o *options) any { return o.p.MultiTurn.ThinkTime }, want: 250 * time.Millisecond},
		"multi-turn-max-active-conversations": {value: "2", extra: mt, get: func(o *options) any { return o.p.MultiTurn.MaxActiveConversations }, want: 2},
		"multi-turn-sampling":                 {value: "random", extra: mt, get: func(o *options) any { return o.p.MultiTurn.Sampling }, want: loadgen.SamplingRandom},
	} {
		cases[k] = c
	}
	// 非默认值才生效的 image-text 需要图片尺寸之外的默认项；这里只有 modal-type 与 config-option 相关。
	base, err := parseFlags(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	baseFields := profFieldOf(t, base)
	for _, d := range profDefs() {
		if d.reject != "" {
			continue
		}
		c, ok := cases[d.long]
		if !ok {
			t.Errorf("option %s has no test case", d.names())
			continue
		}
		var forms [][]string
		names := []string{"--" + d.long}
		if d.short != "" {
			names = append(names, "-"+d.short, "--"+d.short)
		}
		for _, n := range names {
			forms = append(forms, []string{n, c.value}, []string{n + "=" + c.value})
		}
		if d.kind == kBool {
			// 布尔：单独出现即 true；值可写 True/False（acs-bench 用户的写法）。
			if c.value == "true" {
				forms = append(forms, []string{names[len(names)-1]}, []string{names[0], "True"})
			} else {
				forms = append(forms, []string{names[len(names)-1], "False"})
			}
		}
		if d.kind == kIntList || d.kind == kStrList {
			if items := strings.Split(c.value, ","); len(items) > 1 {
				var rep []string
				for _, it := range items {
					rep = append(rep, names[len(names)-1], it)
				}
				forms = append(forms, rep)
			}
		}
		for _, f := range forms {
			args := append(append([]string(nil), f...), c.extra...)
			o, err := parseFlags(args, &bytes.Buffer{})
			if err != nil {
				t.Errorf("%v: %v", args, err)
				continue
			}
			if got := c.get(o); !reflect.DeepEqual(got, c.want) {
				t.Errorf("%v: got %#v, want %#v", args, got, c.want)
			}
			// 选项声明的字段（YAML 键）确实因它而变。
			if d.field != "" && d.long != "perf-profile" {
				fields := profFieldOf(t, o)
				changed := false
				for _, k := range strings.Split(d.field, "/") {
					if _, ok := fields[k]; !ok {
						t.Errorf("%s: field %q is not a --perf-profile YAML key", d.names(), k)
					}
					changed = changed || fmt.Sprint(fields[k]) != fmt.Sprint(baseFields[k])
				}
				if !changed {
					t.Errorf("%v: Profile field %s unchanged (%v)", args, d.field, fields[strings.Split(d.field, "/")[0]])
				}
			}
		}
	}
}

// TestProfRejectedOptions 验证 acs-bench 中有、本实现里没有意义的选项：默认值照常接受
// （原命令行能跑），其他取值报错并点名选项与取值。
func TestProfRejectedOptions(t *testing.T) {
	nonDefault := map[string]string{
		"revision": "main", "trust-remote-code": "true", "num-process": "4", "request-mode": "pd_dynamic",
		"prefill-concurrency": "8", "decoder-concurrency": "8", "concurrency-backend": "asyncio",
		"chunk-size": "4096", "num-spec-tokens": "3", "use-mtp-accept-rate": "false", "num-scheduler-steps": "8",
		"profile": "true", "profile-level": "Level1", "trace": "True",
	}
	for _, d := range profDefs() {
		if d.reject == "" {
			continue
		}
		v, ok := nonDefault[d.long]
		if !ok {
			t.Errorf("rejected option %s has no test case", d.names())
			continue
		}
		for _, n := range []string{"-" + d.short, "--" + d.long} {
			if d.def != "" {
				if _, err := parseFlags([]string{n, d.def}, &bytes.Buffer{}); err != nil {
					t.Errorf("%s %s (the default) rejected: %v", n, d.def, err)
				}
			}
			_, err := parseFlags([]string{n, v}, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), n+` "`+v+`"`) || !strings.Contains(err.Error(), d.reject) {
				t.Errorf("%s %s: err %v", n, v, err)
			}
		}
	}
	// 题中点名的两个：--profile true 与 -rm pd_dynamic。
	for _, args := range [][]string{{"--profile", "true"}, {"-rm", "pd_dynamic"}, {"-pf"}} {
		if _, err := parseFlags(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// TestGenEveryOption 对 generate dataset 的每个选项验证短名、长名与取值写法，
// 以及 -ra/-rb/-pl 在这里是输入长度比例与前缀长度（与 prof 不同）。
func TestGenEveryOption(t *testing.T) {
	req := []string{"-o", "d", "-il", "100", "-n", "3"}
	cases := map[string]optCase{
		"output-path":       {value: "dir2", get: func(o *options) any { return o.gen.outDir }, want: "dir2"},
		"input-length":      {value: "64", get: func(o *options) any { return o.gen.spec.InputLength }, want: 64},
		"prefix-length":     {value: "16", get: func(o *options) any { return o.gen.spec.PrefixLength }, want: 16},
		"num-requests":      {value: "7", get: func(o *options) any { return o.gen.spec.NumRequests }, want: 7},
		"tokenizer":         {value: "t.json", get: func(o *options) any { return o.gen.tokenizer }, want: "t.json"},
		"range-ratio-above": {value: "0.2", get: func(o *options) any { return o.gen.spec.RangeRatioAbove }, want: 0.2},
		"range-ratio-below": {value: "0.3", get: func(o *options) any { return o.gen.spec.RangeRatioBelow }, want: 0.3},
		"random-seed":       {value: "9", get: func(o *options) any { return o.gen.spec.Seed }, want: int64(9)},
		"quiet":             {value: "true", get: func(o *options) any { return o.gen.quiet }, want: true},
	}
	rejected := map[string]string{"dataset-type": "LongBench", "input-path": "x.jsonl", "modal-type": "image-text",
		"config-option": "image_width:64", "revision": "main", "trust-remote-code": "True"}
	for _, d := range genDefs() {
		names := []string{"--" + d.long}
		if d.short != "" {
			names = append(names, "-"+d.short)
		}
		if d.reject != "" {
			v, ok := rejected[d.long]
			if !ok {
				t.Errorf("rejected option %s has no test case", d.names())
			}
			for _, n := range names {
				if _, err := parseGen(append([]string{n, v}, req...), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), n) {
					t.Errorf("%s %s: err %v", n, v, err)
				}
			}
			continue
		}
		c, ok := cases[d.long]
		if !ok {
			t.Errorf("option %s has no test case", d.names())
			continue
		}
		for _, n := range names {
			for _, f := range [][]string{{n, c.value}, {n + "=" + c.value}} {
				g, err := parseGen(append(append([]string(nil), req...), f...), &bytes.Buffer{})
				if err != nil {
					t.Errorf("%v: %v", f, err)
					continue
				}
				if got := c.get(&options{gen: *g}); !reflect.DeepEqual(got, c.want) {
					t.Errorf("%v: got %#v, want %#v", f, got, c.want)
				}
			}
		}
	}
	for _, bad := range [][]string{{"-il", "100", "-n", "3"}, {"-o", "d", "-n", "3"}, {"-o", "d", "-il", "100"},
		{"-o", "d", "-il", "100,200", "-n", "3"}, {"-o", "d", "-il", "100", "-n", "3", "-pl", "100"}, {"-o", "d", "-il", "0", "-n", "3"}} {
		if _, err := parseGen(bad, &bytes.Buffer{}); err == nil {
			t.Errorf("generate dataset %v accepted", bad)
		}
	}
}

// TestBadCommandLinesNameFlagAndValue 验证 issue 14 的坏命令行在运行前报错，并点名选项与取值。
func TestBadCommandLinesNameFlagAndValue(t *testing.T) {
	cases := map[string][]string{
		`--concurrency "1,,2"`:       {"--concurrency", "1,,2"},
		`-c "1,2,"`:                  {"-c", "1,2,"},
		`--epochs "0"`:               {"--epochs", "0"},
		`-e "100000"`:                {"-e", "100000"},
		`-r "NaN"`:                   {"-r", "NaN"},
		`--timeout "0"`:              {"--timeout", "0"},
		`-n "99999999999"`:           {"-n", "99999999999"},
		`-c "100000"`:                {"-c", "100000"},
		`-il "0"`:                    {"-il", "0"},
		`-ol "2000000"`:              {"-ol", "2000000"},
		`-burst "0"`:                 {"-burst", "0"},
		`-tp "0"`:                    {"-tp", "0"},
		`-ra "1.5"`:                  {"-ra", "1.5"},
		`-rb "1"`:                    {"-rb", "1"},
		`-temper "Inf"`:              {"-temper", "Inf"},
		`-ub "maybe"`:                {"-ub=maybe"},
		`-n [1 2]`:                   {"-c", "1,2,4", "-n", "1,2"},
		`-gi "0"`:                    {"-gi", "0"},
		`unknown option --nope`:      {"--nope", "1"},
		`needs a value`:              {"-c"},
		`unexpected argument "true"`: {"-c", "1", "true"},
		`--shards/--kube-shards/--shard-count 4: loadgen: invalid shard: concurrency[0]=2`: {"--shards", "4", "-c", "2"},
		`--kube-shards 2: needs --kube-image`:                                              {"--kube-shards", "2", "-c", "4"},
		`--shard-index 3: needs --shard-count greater`:                                     {"--shard-index", "3", "--shard-count", "2", "-c", "4"},
		`--shard-start "yesterday"`:                                                        {"--shard-start", "yesterday"},
		`exclude each other`:                                                               {"--shards", "2", "--kube-shards", "2", "--kube-image", "i", "-c", "4"},
	}
	for want, args := range cases {
		_, err := parseFlags(args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: err %v, want it to contain %s", args, err, want)
		}
	}
}

// TestProfileYAMLErrorsNameFileLine 验证 --perf-profile 中荒谬或笔误的取值在运行前报错并给出 文件:行。
func TestProfileYAMLErrorsNameFileLine(t *testing.T) {
	head := "concurrency: [1, 2]\ninput_length: [16]\noutput_length: [8]\n"
	cases := map[string]string{
		head + "requests_per_concurrency: 999999999999\n":          ":4: requests_per_concurrency: 999999999999",
		head + "epochs: 0\n":                                       ":4: epochs: 0",
		head + "num_threads: 100000000\n":                          `:4:1: num_threads: unknown field "num_threads"`,
		"concurrency: [1, -2]\ninput_length: [16]\n":               ":1: concurrency: -2",
		"concurrency: [1, 100000]\ninput_length: [16]\n":           ":1: concurrency: 100000",
		head + "timeout: 0s\n":                                     ":4: timeout: 0s",
		head + "warmup: 99999999999\n":                             ":4: warmup: 99999999999",
		head + "request_rate: .nan\n":                              ":4: request_rate: NaN",
		"concurrency: [1]\ninput_length: [16]\noutput_length: [x]": `:3:17: output_length[0]: want an integer, got a string (got "x")`,
		"concurrency:\n  - 1\n  - 0\ninput_length: [16]\n":         ":3: concurrency: 0",
		head + "backend: openai_chat\n":                            `:4:10: backend: want "openai-chat" or "openai" (got "openai_chat")`,
	}
	for body, want := range cases {
		f := filepath.Join(t.TempDir(), "p.yaml")
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := parseFlags([]string{"--perf-profile", f}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), f+want) {
			t.Errorf("%q: err %v, want %s%s", body, err, f, want)
		}
	}
	// 命令行覆盖了出错的字段时，点名选项而不是文件。
	f := filepath.Join(t.TempDir(), "p.yaml")
	os.WriteFile(f, []byte(head), 0o644)
	_, err := parseFlags([]string{"--perf-profile", f, "-n", "1,2,3"}, &bytes.Buffer{})
	if err == nil || !strings.HasPrefix(err.Error(), "-n [1 2 3]: give one value or one per concurrency group (2)") {
		t.Errorf("err %v", err)
	}
}

// TestProfileYAMLCLIKeys 验证 --perf-profile 里只属于命令行层的两个键（input_path、tokenizer）
// 照常被接受并读进 options（它们不再是 loadgen.Profile 的字段），input_path 的数据集被读成 Prompts。
func TestProfileYAMLCLIKeys(t *testing.T) {
	ds := writeJSONL(t)
	f := filepath.Join(t.TempDir(), "p.yaml")
	body := "concurrency: [1]\ninput_length: [64]\noutput_length: [8]\ninput_path: " + ds + "\ntokenizer: tok.json\n"
	if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := parseFlags([]string{"--perf-profile", f}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.inputPath != ds || o.tokenizer != "tok.json" || o.p.DatasetType != loadgen.DatasetCustom || len(o.p.Prompts) != 2 {
		t.Fatalf("input %q tokenizer %q dataset %q prompts %d", o.inputPath, o.tokenizer, o.p.DatasetType, len(o.p.Prompts))
	}
}

// TestHelpListsEveryOption 验证 --help 列出每个选项的两个名字，并单列只接受默认值的选项。
func TestHelpListsEveryOption(t *testing.T) {
	for _, sub := range []struct {
		args []string
		defs []*optDef
	}{{[]string{"prof", "--help"}, profDefs()}, {[]string{"--help"}, profDefs()}, {[]string{"generate", "dataset", "-h"}, genDefs()}} {
		h := helpText(sub.args)
		for _, d := range sub.defs {
			if !strings.Contains(h, d.names()) {
				t.Errorf("%v: help lacks %s", sub.args, d.names())
			}
		}
		if !strings.Contains(h, "only with their default value") {
			t.Errorf("%v: no section for rejected options", sub.args)
		}
	}
	if err := run([]string{"--help"}, &bytes.Buffer{}); err != nil {
		t.Fatalf("--help: %v", err)
	}
	for _, bad := range [][]string{{"generate"}, {"generate", "model"}, {"bench"}} {
		if err := run(bad, &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
