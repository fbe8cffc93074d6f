package simpleevals_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/accuracy/simpleevals"
	"github.com/vllm-cibench/cibench/internal/pycompat"
)

// TestPromptsAgainstCPython 用 testdata/pyprompts.py（Python 标准库 random/csv/gzip）
// 独立构造各数据集的样本顺序与提示，与 Go 的 Examples 逐字节比较。
// 这同时验证了 GPQA 的子集抽样 + 每题选项排列、MMLU/DROP/HumanEval 的
// random.Random(seed).sample 以及 DROP 的示例拼接。
func TestPromptsAgainstCPython(t *testing.T) {
	py := python3OrSkip(t)
	out, err := exec.Command(py, "testdata/pyprompts.py", filepath.Join("sampledata"), "testdata/reference/simple_evals_prompts.json").Output()
	if err != nil {
		t.Fatalf("pyprompts: %v", err)
	}
	var want map[string]json.RawMessage
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	prompts := func(t *testing.T, e accuracy.Eval) []string {
		t.Helper()
		exs, err := e.Examples(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var ps []string
		for _, ex := range exs {
			ps = append(ps, ex.Messages[0].Content)
		}
		return ps
	}
	src := simpleevals.SampleData()
	build := map[string]func() (accuracy.Eval, error){
		"gpqa_debug": func() (accuracy.Eval, error) {
			return simpleevals.Registry().New("gpqa", src, accuracy.EvalOptions{Debug: true})
		},
		"gpqa_full": func() (accuracy.Eval, error) {
			return simpleevals.Registry().New("gpqa", src, accuracy.EvalOptions{})
		},
		"gpqa_examples7": func() (accuracy.Eval, error) {
			return simpleevals.Registry().New("gpqa", src, accuracy.EvalOptions{Examples: 7, NRepeats: 1})
		},
		"mmlu_debug": func() (accuracy.Eval, error) {
			return simpleevals.Registry().New("mmlu", src, accuracy.EvalOptions{Debug: true})
		},
		"mmlu_full": func() (accuracy.Eval, error) {
			return simpleevals.Registry().New("mmlu", src, accuracy.EvalOptions{})
		},
		"drop_debug": func() (accuracy.Eval, error) {
			return simpleevals.Registry().New("drop", src, accuracy.EvalOptions{Debug: true})
		},
		"drop_full": func() (accuracy.Eval, error) {
			return simpleevals.Registry().New("drop", src, accuracy.EvalOptions{})
		},
		"humaneval_debug": func() (accuracy.Eval, error) {
			return simpleevals.Registry().New("humaneval", src, accuracy.EvalOptions{Debug: true, Interpreter: []string{py}})
		},
		"humaneval_full": func() (accuracy.Eval, error) {
			return simpleevals.Registry().New("humaneval", src, accuracy.EvalOptions{Interpreter: []string{py}})
		},
	}
	for name, mk := range build {
		t.Run(name, func(t *testing.T) {
			var w []string
			if err := json.Unmarshal(want[name], &w); err != nil {
				t.Fatal(err)
			}
			e, err := mk()
			if err != nil {
				t.Fatal(err)
			}
			got := prompts(t, e)
			if len(got) != len(w) {
				t.Fatalf("%d prompts, python has %d", len(got), len(w))
			}
			for i := range w {
				if got[i] != w[i] {
					t.Fatalf("prompt %d differs:\n got %q\nwant %q", i, got[i], w[i])
				}
			}
		})
	}
	t.Run("mgsm_debug", func(t *testing.T) {
		var w [][2]string
		if err := json.Unmarshal(want["mgsm_inputs"], &w); err != nil {
			t.Fatal(err)
		}
		e, err := simpleevals.Registry().New("mgsm", src, accuracy.EvalOptions{Debug: true})
		if err != nil {
			t.Fatal(err)
		}
		got := prompts(t, e)
		if len(got) != len(w) {
			t.Fatalf("%d prompts, python has %d", len(got), len(w))
		}
		for i := range w {
			if !strings.HasSuffix(got[i], "\n\n"+w[i][1]) {
				t.Errorf("mgsm %d (%s): %q does not end with the input %q", i, w[i][0], got[i], w[i][1])
			}
		}
	})
}

// TestGoldenJSONIsPythonJSON 让 Python 读入每个 golden 结果 JSON 再以
// json.dumps(indent=2) 写回，必须与文件逐字节相同（键序、浮点 repr、转义）。
func TestGoldenJSONIsPythonJSON(t *testing.T) {
	py := python3OrSkip(t)
	files, _ := filepath.Glob("testdata/golden/*.json")
	if len(files) == 0 {
		t.Fatal("no golden json files")
	}
	for _, f := range files {
		orig, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(py, "-c", "import json,sys; d=json.load(sys.stdin); sys.stdout.write(json.dumps(d, indent=2))")
		cmd.Stdin = strings.NewReader(string(orig))
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != string(orig) {
			t.Errorf("%s: python re-dump differs:\n%s\nvs\n%s", f, out, orig)
		}
	}
}

// TestGoldenScoresAgainstCPython 把 golden JSONL 中每条记录的原始回复交给
// testdata/pyref.py --rescore（Python re 模块实现的参考评分规则），逐条比较
// score 与指标：GPQA 的 chars、MGSM 的语言分、DROP 的 EM 与（numpy round 后的）F1。
func TestGoldenScoresAgainstCPython(t *testing.T) {
	py := python3OrSkip(t)
	var in strings.Builder
	var recs []accuracy.SingleResult
	var names []string
	for _, ds := range []string{"gpqa_debug", "gpqa_full", "mmlu_debug", "mmlu_full", "mgsm_debug", "drop_debug", "drop_full"} {
		f, err := os.Open(filepath.Join("testdata", "golden", ds+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		rs, err := accuracy.ReadJSONL(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		dataset := strings.Split(ds, "_")[0]
		for _, r := range rs {
			line, _ := json.Marshal([]any{dataset, r})
			in.Write(line)
			in.WriteByte('\n')
			recs = append(recs, r)
			names = append(names, dataset)
		}
	}
	cmd := exec.Command(py, "testdata/pyref.py", "testdata/reference/simple_evals_prompts.json", "--rescore")
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pyref --rescore: %v", err)
	}
	var want []struct {
		Score   float64            `json:"score"`
		Metrics map[string]float64 `json:"metrics"`
	}
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(recs) || len(recs) < 200 {
		t.Fatalf("python scored %d of %d records", len(want), len(recs))
	}
	for i, r := range recs {
		w := want[i]
		if r.Score != w.Score {
			t.Errorf("%s %s: score go=%v py=%v (response %q)", names[i], r.ID, r.Score, w.Score, r.Responses[0])
		}
		for k, v := range w.Metrics {
			switch k {
			case "f1_unrounded":
				got, _ := r.Metrics.Get("f1_score")
				if got != pycompat.RoundNumpy(v, 2) {
					t.Errorf("%s %s: f1 go=%v py=%v", names[i], r.ID, got, v)
				}
			default:
				if got, ok := r.Metrics.Get(k); !ok || got != v {
					t.Errorf("%s %s: %s go=%v py=%v", names[i], r.ID, k, got, v)
				}
			}
		}
	}
}
