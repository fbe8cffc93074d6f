#!/usr/bin/env bash
# docs-screenshots.sh 重新拍 docs/report.md 里的四张截图（1400 px 宽，无头 Chromium），全部来自同一组运行，
# 按 docs/report.md "A real red gate" 的配方：
#   1. 每日基线：emulator 场景 max_num_seqs 8，-run-type daily -stages perf；
#   2. 红色 PR：max_num_seqs 4，-stages perf（退出码 1）；
#   3. 绿色 PR：max_num_seqs 8，完整的默认运行，对同一基线；
#   4. 比较页：基线对红色 PR（examples/compare -html）。
# 只改临时目录里的 configs 副本，不动仓库的 configs/。需要 chromium（scripts/setup.d/40-chromium.sh）。
# 用法：scripts/docs-screenshots.sh [输出目录，默认 docs/img]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-docs/img}"
chrome="${CIBENCH_CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# KEEP=1 留下运行目录（打印路径），便于再看整页。
if [ -n "${KEEP:-}" ]; then trap - EXIT; echo "runs kept in $work"; fi
cp -r configs "$work/configs"
go build -o "$work/ci" ./examples/ci
go build -o "$work/compare" ./examples/compare

# seqs N 把 configs 副本里 emulator 场景的调度参数设成 max_num_seqs N（前缀缓存与 KV 块开着，缓存与 KV 数字是真的）。
seqs() {
	sed -i -E '/^  (max_num_seqs|enable_prefix_caching|num_kv_blocks):/d' "$work/configs/scenarios/emulator.yaml"
	sed -i "s/^emulator:\$/emulator:\n  max_num_seqs: $1\n  enable_prefix_caching: true\n  num_kv_blocks: 8192/" "$work/configs/scenarios/emulator.yaml"
}

# shot PAGE PNG HEIGHT 用无头 Chromium 把页面拍成 1400 px 宽的 PNG。
shot() {
	"$chrome" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
		--disable-component-update --disable-sync --disable-dev-shm-usage --hide-scrollbars \
		--user-data-dir="$work/profile" --window-size="1400,$3" --screenshot="$2" "file://$1" >/dev/null 2>&1
	echo "wrote $2"
}

art="$work/artifacts"
seqs 8
"$work/ci" -config "$work/configs" -artifacts "$art" -run-type daily -stages perf -run-id 20261128-daily -commit v0.10.0 >/dev/null
seqs 4
code=0
"$work/ci" -config "$work/configs" -artifacts "$art" -run-type pr -stages perf -run-id 20261128-pr-1234 -commit 5f3c2e1 || code=$?
[ "$code" = 1 ] || { echo "the red PR run exited $code, want 1" >&2; exit 1; }
seqs 8
"$work/ci" -config "$work/configs" -artifacts "$art" -run-type pr -run-id 20261128-pr-1235 -commit 7a1d9e0 >/dev/null || echo "note: the green PR run exited $? (a busy machine?)" >&2
"$work/compare" -html "$work/compare.html" "$art/daily/20261128-daily" "$art/pr/20261128-pr-1234" >/dev/null || true

mkdir -p "$out"
shot "$art/pr/20261128-pr-1234/report.html" "$out/report-red-gate.png" 1300
shot "$art/pr/20261128-pr-1235/report.html" "$out/report-green-pr.png" 1000
shot "$art/daily/20261128-daily/report.html" "$out/report-daily.png" 1000
shot "$work/compare.html" "$out/compare.png" 1100
