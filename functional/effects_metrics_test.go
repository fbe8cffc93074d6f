package functional

import (
	"slices"
	"testing"
)

// TestEffectMetrics 用手算的值固定效果用例使用的统计量：单位切分（词小写、每个汉字、
// 每个标点，空白与 NUL 不计）、重复率、公共前缀与中位数/两两平均。
func TestEffectMetrics(t *testing.T) {
	if got := units("The cat, the CAT 猫猫。\x00x"); !slices.Equal(got, []string{"the", "cat", ",", "the", "cat", "猫", "猫", "。", "x"}) {
		t.Fatalf("units = %q", got)
	}
	if got := repeatRatio("the cat the cat"); got != 0.5 {
		t.Fatalf("repeatRatio = %v, want 0.5", got)
	}
	if got := repeatRatio(""); got != 0 {
		t.Fatalf("repeatRatio(\"\") = %v", got)
	}
	if got := commonPrefix("机器人 robot", "机器 robot"); got != 2 {
		t.Fatalf("commonPrefix = %d, want 2 (runes)", got)
	}
	ss := []string{"abcd", "abx", "a", "zzz"}
	if got := medianPrefix(ss, "abcz"); got != 1 {
		t.Fatalf("medianPrefix = %d, want 1 (prefixes 3,2,1,0 → lower median)", got)
	}
	if got := medianPrefix(nil, "x"); got != 0 {
		t.Fatalf("medianPrefix(nil) = %d", got)
	}
	// 两两前缀：abcd/abx 2、abcd/a 1、abcd/zzz 0、abx/a 1、abx/zzz 0、a/zzz 0 → 4/6。
	if got := meanPairPrefix(ss); got != 4.0/6 {
		t.Fatalf("meanPairPrefix = %v, want %v", got, 4.0/6)
	}
	if got := meanPairPrefix([]string{"only"}); got != 0 {
		t.Fatalf("meanPairPrefix of one sample = %v", got)
	}
	if got := distinct([]string{"a", "b", "a"}); got != 2 {
		t.Fatalf("distinct = %d", got)
	}
}
