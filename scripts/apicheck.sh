#!/usr/bin/env bash
# apicheck.sh：让每一处导出 API 的变化都是一次评审过的决定，而不是意外（pipeline 包文档的兼容性承诺）。
#
# 用 apidiff（golang.org/x/exp/cmd/apidiff，模块模式）比较 api/BASE 记下的发布点与当前工作树的
# 导出 API（internal/ 与 examples/ 之外的全部包），报告必须与提交的 api/next.txt 逐字一致：
#   - 改了导出 API 却没更新 api/next.txt → 失败，并打印差异；
#   - 更新 api/next.txt 的提交就是那次决定（不兼容的变化在评审里一眼可见）。
# 发布新版本时：把 api/BASE 改成发布的提交、清空 api/next.txt。
#
# 用法：scripts/apicheck.sh          检查
#       scripts/apicheck.sh -update  按当前工作树重写 api/next.txt（之后评审它的 diff）
set -euo pipefail
cd "$(dirname "$0")/.."
mod=github.com/vllm-cibench/cibench
gobin="$(go env GOPATH)/bin"
apidiff="$gobin/apidiff"
if [ ! -x "$apidiff" ]; then
	# 版本固定：apidiff 的报告格式随版本可能变化，next.txt 按这个版本写成。
	GOFLAGS= go install golang.org/x/exp/cmd/apidiff@v0.0.0-20261113113407-e3970619a1a4
fi
base="$(tr -d '[:space:]' < api/BASE)"
git cat-file -e "$base^{commit}" 2>/dev/null || { echo "apicheck: api/BASE names $base, which is not a commit of this clone" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'git worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git worktree add --detach -q "$tmp/base" "$base"
(cd "$tmp/base" && "$apidiff" -m -w "$tmp/base.export" "$mod")
"$apidiff" -m -w "$tmp/head.export" "$mod"
# 只比较公开包：apidiff 已跳过 internal/（"Ignoring internal package" 行），这里再去掉 examples/ 下的
# 程序与团队示例（它们不在兼容性承诺之内）。
"$apidiff" -m "$tmp/base.export" "$tmp/head.export" 2>&1 | grep -v -e '^Ignoring internal package' -e '/examples/' -e '^- \./examples' > "$tmp/next.txt" || true
if [ "${1:-}" = "-update" ]; then
	cp "$tmp/next.txt" api/next.txt
	echo "apicheck: api/next.txt rewritten; review its diff" >&2
	exit 0
fi
if ! diff -u api/next.txt "$tmp/next.txt"; then
	echo "apicheck: the exported API differs from api/next.txt (changes since $base)." >&2
	echo "apicheck: if the change is intended, run scripts/apicheck.sh -update and commit api/next.txt with it." >&2
	exit 1
fi
echo "apicheck: exported API matches api/next.txt (base $base)"
