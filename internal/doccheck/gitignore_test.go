package doccheck

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoSourceFileIsIgnored 守住一个这一轮才发现的缺陷：.gitignore 为根目录下的示例二进制写了
// /functional、/accuracy，这两个名字也是包目录，于是 functional/ 下新加的 .go 文件被 git 悄悄忽略——
// 本地编译、测试都通过，提交里却没有它们，干净的克隆编译失败。任何被忽略的 .go、go.mod、.md、.yaml
// 文件都是错误。
func TestNoSourceFileIsIgnored(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	cmd := exec.Command("git", "ls-files", "--others", "--ignored", "--exclude-standard", "--", "*.go", "*go.mod", "*.md", "*.yaml")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	for _, f := range strings.Fields(string(out)) {
		t.Errorf("%s is ignored by .gitignore and would never be committed", f)
	}
}
