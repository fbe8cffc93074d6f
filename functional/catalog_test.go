package functional_test

import (
	"context"
	"testing"

	"github.com/vllm-cibench/cibench/functional"
)

// TestCatalogPassesOnFaithfulEmulator 证明没有缺陷时全部用例通过或带原因跳过。
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
		switch res.Status {
		case functional.StatusFail:
			t.Errorf("%s failed: %s\nrequest: %s\nresponse: %s", res.CaseID, res.Reason, res.Request, res.Response)
		case functional.StatusSkip:
			if res.Reason == "" {
				t.Errorf("%s skipped without a reason", res.CaseID)
			}
			t.Logf("%s skipped: %s", res.CaseID, res.Reason)
		}
	}
	t.Logf("%d cases, %d pass, %d skip, %v", len(rep.Results), rep.Count(functional.StatusPass), rep.Count(functional.StatusSkip), rep.Duration)
}
