#!/usr/bin/env bash
# apicheck.sh 执行兼容性承诺（pipeline 包文档、CHANGELOG.md）：把发布点与当前工作树的公开 API 比较。
#
# 发布点是 api/BASE 记下的提交（最近一次发布，见 CHANGELOG.md）；这里把它解到缓存目录（见下），交给
# scripts/apicheck（golang.org/x/exp/apidiff 的小程序，自己的模块，不进根模块的依赖）逐个公开包比较：
#   - 不兼容的变化一律失败，-update 也不例外（不会把破坏“洗”进记录）；唯一允许的删除是发布点上
#     已经标注 Deprecated 的标识符、字段、方法或整个包；
#   - 兼容的变化与允许的删除必须与提交的 api/next.txt 逐字一致（评审里可见），-update 重写它。
# 发布新版本时：CHANGELOG.md 写上 api/next.txt 的内容与版本号，api/BASE 改成发布的提交，清空 next.txt。
#
# 用法：scripts/apicheck.sh          检查
#       scripts/apicheck.sh -update  按当前工作树重写 api/next.txt（只记兼容变化；有破坏时照样失败）
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
base="$(grep -v '^#' api/BASE | tr -d '[:space:]')"
git cat-file -e "$base^{commit}" 2>/dev/null || { echo "apicheck: api/BASE names $base, which is not a commit of this clone" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# 发布点的树用 git archive 解到缓存里一个按提交命名的固定目录（${CIBENCH_CACHE:-~/.cache/cibench}/apicheck-base/<提交>），
# 之后的运行直接用它：go 命令的编译结果按源文件所在目录缓存，每次解到新的临时目录就要把发布点的几十个包
# 重新编译一遍（热启动时这一步 38 秒里的大部分）。目录里的 .complete 表示解压完整；不依赖本克隆（不是 worktree）。
cache="${CIBENCH_CACHE:-$HOME/.cache/cibench}/apicheck-base"
basedir="$cache/$base"
if [ ! -e "$basedir/.complete" ]; then
	rm -rf "$basedir"
	mkdir -p "$basedir"
	git archive "$base" | tar -x -C "$basedir"
	touch "$basedir/.complete"
	# 只留当前发布点的树：旧发布点的目录不再有用。
	find "$cache" -mindepth 1 -maxdepth 1 ! -name "$base" -exec rm -rf {} +
fi
# 发布点按当前工作区选中的第三方版本编译：发布点的工作区曾选中比当前新的 golang.org/x/sys、x/net（它的
# scripts/apicheck 要求较新的 golang.org/x/tools），依赖它们的整棵树（client-go、Prometheus……）于是为发布点
# 另编一遍——冷启动时这一步 102 CPU 秒的大部分。所以每次运行时从发布点的 go.work 出发：
#   - 去掉 scripts/apicheck 这个工具模块（不属于公开 API，也不被比较）；
#   - 版本与当前工作区不同的每个模块，用 go.work 的 replace 钉到当前的版本（校验和取当前各模块的 go.sum）。
# 公开包之间的比较不受影响：cibench 导出 API 里出现的第三方类型（如 client-go 的接口）两边于是是同一个版本，
# 发布点的包也从构建缓存取依赖的编译结果。
if [ -f "$basedir/go.work" ]; then
	git show "$base:go.work" >"$basedir/go.work"
	rm -f "$basedir/go.work.sum"
	git show "$base:go.work.sum" >"$basedir/go.work.sum" 2>/dev/null || true
	(cd "$basedir" && go work edit -dropuse=./scripts/apicheck)
	mods() { go list -m -f '{{if not .Main}}{{.Path}} {{.Version}}{{end}}' all | sort; }
	mapfile -t pins < <(join <(cd "$basedir" && mods) <(mods) | awk '$2 != $3 { print "-replace=" $1 "=" $1 "@" $3 }')
	if [ "${#pins[@]}" -gt 0 ]; then
		(cd "$basedir" && go work edit "${pins[@]}")
		git ls-files -z -- '*go.sum' | xargs -0 cat >>"$basedir/go.work.sum"
	fi
fi
args=(-base "$basedir" -head "$root" -next "$root/api/next.txt")
if [ "${1:-}" = "-update" ]; then
	args+=(-update)
fi
cd scripts/apicheck
go build -o "$tmp/apicheck" .
"$tmp/apicheck" "${args[@]}"
