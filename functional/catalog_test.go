package functional_test

import (
	"context"
	"testing"

	"github.com/vllm-cibench/cibench/functional"
)

// faithfulNotPassing 是忠实模拟器（全部能力开启、默认能力声明）上唯一不通过的用例：
// top_p=0 被 vLLM 与模拟器以 400 拒绝，默认声明为 probe，所以是 unsupported。
var faithfulNotPassing = map[string]functional.Status{"params_boundary/top_p=0": functional.StatusUnsupported}

// TestCatalogPassesOnFaithfulEmulator 证明没有缺陷时恰好 faithfulNotPassing 之外的全部用例
// 执行并通过：断言的是执行与通过的数量，一个悄悄变成 skip 的用例会让它失败。
func TestCatalogPassesOnFaithfulEmulator(t *testing.T) {
	_, target := startEmulator(t, fullEmulator())
	r, err := functional.NewRunner(target, functional.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.Run(context.Background(), functional.DefaultCatalog().Cases())
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range rep.Results {
		want, listed := faithfulNotPassing[res.CaseID]
		switch {
		case listed && res.Status != want:
			t.Errorf("%s: want %s, got %s %q", res.CaseID, want, res.Status, res.Reason)
		case listed && res.Reason == "":
			t.Errorf("%s: %s without a reason", res.CaseID, res.Status)
		case !listed && res.Status != functional.StatusPass:
			t.Errorf("%s: want pass, got %s %q\nrequest: %s\nresponse: %s", res.CaseID, res.Status, res.Reason, res.Request, res.Response)
		}
	}
	total := functional.DefaultCatalog().Len()
	if len(rep.Results) != total || rep.Count(functional.StatusPass) != total-len(faithfulNotPassing) {
		t.Errorf("%d results, %d passed; want %d results, %d passed", len(rep.Results), rep.Count(functional.StatusPass), total, total-len(faithfulNotPassing))
	}
	for _, s := range rep.Suites {
		if s.Ran == 0 || s.PassRatio == nil {
			t.Errorf("suite %s executed no case on the faithful emulator: %+v", s.Suite, s)
		}
	}
	t.Logf("%d cases, %d pass, %d unsupported, %v", len(rep.Results), rep.Count(functional.StatusPass), rep.Count(functional.StatusUnsupported), rep.Duration)
}
