package regname

import "testing"

// TestCheck 覆盖规则的每一条：合法名字（含 '.'、'-'、'_'、数字）与每种非法写法。
func TestCheck(t *testing.T) {
	for _, ok := range []string{"a", "acme.lora", "k8s-pd", "tiny_exact", "x9"} {
		if err := Check(ok); err != nil {
			t.Errorf("Check(%q) = %v", ok, err)
		}
	}
	long := make([]byte, Max+1)
	for i := range long {
		long[i] = 'a'
	}
	for _, bad := range []string{"", "Acme", "9a", ".a", "a b", "a/b", string(long), "é"} {
		if err := Check(bad); err == nil {
			t.Errorf("Check(%q) = nil", bad)
		}
	}
}
