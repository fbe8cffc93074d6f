#!/usr/bin/env bash
# 00-base.sh 安装所有包共用的静态检查工具 staticcheck（版本固定，便于复现）。
#
# 幂等：缓存目录下已有同版本的二进制时直接退出。二进制放在
# ${CIBENCH_CACHE:-$HOME/.cache/cibench}/bin，scripts/test.sh 会把该目录加入 PATH。
# 只需要 Go 本身（go install 经 Go 模块代理下载源码并编译），不需要 apt。
set -euo pipefail

version=v0.8.2 # honnef.co/go/tools；支持当前 go.mod 的 Go 版本
cache="${CIBENCH_CACHE:-$HOME/.cache/cibench}"
bindir="$cache/bin"
stamp="$bindir/.staticcheck-$version-$(go env GOVERSION)"
mkdir -p "$bindir"

if [ -x "$bindir/staticcheck" ] && [ -e "$stamp" ]; then
	exit 0
fi
echo "00-base: installing staticcheck $version" >&2
GOBIN="$bindir" GOFLAGS=-mod=mod go install "honnef.co/go/tools/cmd/staticcheck@$version"
rm -f "$bindir"/.staticcheck-*
touch "$stamp"
"$bindir/staticcheck" -version >&2
