package functional_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/functional"
)

// TestRequiresTypoFailsInsteadOfSkipping 复现 issue #30：Requires 写了一个没有登记的能力名
// （拼写错误）时，Runner.Run 曾把用例记为 skip “not enabled”，于是它永远不运行也永远不红。
// 现在这是一个写明已登记名字的失败；登记过但场景没开启的能力仍是 skip。
func TestRequiresTypoFailsInsteadOfSkipping(t *testing.T) {
	_, target := startEmulator(t, emulator.Config{Model: "m"})
	feats := functional.DefaultFeatures()
	if err := feats.Register("acme_lora"); err != nil {
		t.Fatal(err)
	}
	r, err := functional.NewRunner(target, functional.Options{Features: feats})
	if err != nil {
		t.Fatal(err)
	}
	noop := func(context.Context, *functional.T) {}
	rep, err := r.Run(context.Background(), []functional.Case{
		{ID: "team/typo", Suite: "team", Requires: []functional.Feature{"reasonning"}, Run: noop},
		{ID: "team/off", Suite: "team", Requires: []functional.Feature{"acme_lora"}, Run: noop},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Results[0]; got.Status != functional.StatusFail || !strings.Contains(got.Reason, `unknown feature "reasonning"`) {
		t.Fatalf("typo: %+v", got)
	}
	if got := rep.Results[1]; got.Status != functional.StatusSkip {
		t.Fatalf("registered but not enabled: %+v", got)
	}
}

// TestExpectRecordsWantAndGotAlike 复现 issue #30：T.Expect 曾记录 Want="number of choices=3"、
// Got="2"——两边格式不同，读结果的程序无法直接比较。现在 What 是被比较的东西，Want 与 Got 是两边的值。
func TestExpectRecordsWantAndGotAlike(t *testing.T) {
	_, target := startEmulator(t, emulator.Config{Model: "m"})
	r, err := functional.NewRunner(target, functional.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.Run(context.Background(), []functional.Case{{ID: "team/n", Suite: "team",
		Run: func(_ context.Context, tt *functional.T) { tt.Expect("number of choices", 3, 2) }}})
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Results[0]
	if res.Status != functional.StatusFail || res.What != "number of choices" || res.Want != "3" || res.Got != "2" {
		t.Fatalf("result = %+v", res)
	}
	var f *functional.Failure
	if !errors.As(res.Err(), &f) || f.What != "number of choices" || f.Want != "3" || f.Got != "2" ||
		f.Error() != "functional: case team/n: number of choices: want 3, got 2" {
		t.Fatalf("failure = %+v (%v)", f, f)
	}
}
