package accuracy_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/accuracy/simpleevals"
	"github.com/vllm-cibench/cibench/deploy/emulator"
)

// TestThinkingModelAtPRMaxTokens 检验 issue 29 第 3 部分提到的 PR 精度门禁：GPQA、max_tokens 128
// （需求的 debug 命令），被测的是默认思考的模型（Qwen3）。一个真实的思考模型在 GPQA 上推理数千个
// token，128 个 token 全部花在推理上、写不出答案：分数一定是 0、每个请求都失败。现在失败的原因
// 写明是 reasoning_truncated 以及怎么办；用 extra_body 关掉思考（chat_template_kwargs
// enable_thinking: false，Qwen3 的聊天模板认这个参数）之后同样的配置能答题。
func TestThinkingModelAtPRMaxTokens(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "qwen3-32b", Reasoning: true, ReasoningField: "reasoning_content", ReasoningTokens: 3000})
	run := func(extra map[string]any) accuracy.StageResult {
		t.Helper()
		thr := 0.2
		cfg := accuracy.Config{Debug: true, MaxTokens: 128, Temperature: 0.6, NumThreads: 5, Retries: -1, ExtraBody: extra,
			Datasets: []accuracy.DatasetConfig{{Name: "gpqa", Threshold: &thr}}}
		res, err := accuracy.RunStage(context.Background(), cfg, accuracy.Target{Endpoint: ep}, accuracy.StageOptions{
			Evals: simpleevals.Registry(), Source: simpleevals.SampleData()})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run(nil)
	if len(res.Verdicts) != 1 || res.Verdicts[0].Pass {
		t.Fatalf("thinking model at max_tokens 128 passed: %+v", res.Verdicts)
	}
	v := res.Verdicts[0]
	if !strings.Contains(v.Reason, "reasoning_truncated: 5") {
		t.Errorf("reason does not name the truncation: %q", v.Reason)
	}
	if !errors.Is(accuracy.ErrReasoningTruncated, accuracy.ErrEmptyContent) || !strings.Contains(accuracy.ErrReasoningTruncated.Error(), "enable_thinking: false") {
		t.Errorf("error text: %v", accuracy.ErrReasoningTruncated)
	}
	res = run(map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": false}})
	if len(res.Results) != 1 || res.Results[0].Errors != 0 {
		t.Fatalf("with thinking disabled: %+v", res.Results)
	}
	t.Logf("thinking on: %s; thinking off: score %.2f, %d errors", v.Reason, res.Results[0].Score, res.Results[0].Errors)
	// extra_body 不能改评测自己设置的字段。
	if err := (accuracy.Config{ExtraBody: map[string]any{"max_tokens": 9}, Datasets: []accuracy.DatasetConfig{{Name: "gpqa"}}}).Validate(simpleevals.Registry()); err == nil || !strings.Contains(err.Error(), "extra_body.max_tokens") {
		t.Errorf("extra_body.max_tokens accepted: %v", err)
	}
}
