#!/usr/bin/env bash
# 40-chromium.sh 安装 report 包 HTML 报告测试所需的无头 Chromium（Debian 包 chromium）。
# 幂等：已安装时立即退出；只在非 root 时使用 sudo。
set -euo pipefail

cache="${CIBENCH_CACHE:-$HOME/.cache/cibench}"
mkdir -p "$cache/bin"

# find_chromium 打印第一个找到的 Chromium 可执行文件路径，找不到时返回 1。
find_chromium() {
	for c in chromium chromium-browser google-chrome; do
		if command -v "$c" >/dev/null 2>&1; then
			command -v "$c"
			return 0
		fi
	done
	return 1
}

if ! bin="$(find_chromium)"; then
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	$sudo apt-get install -y --no-install-recommends chromium fonts-dejavu-core >/dev/null
	bin="$(find_chromium)"
fi

# 让测试脚本加入 PATH 的缓存目录里也能找到 chromium（CIBENCH_CHROMIUM 可覆盖）。
if [ ! -e "$cache/bin/chromium" ]; then
	ln -sf "$bin" "$cache/bin/chromium"
fi
echo "chromium: $bin"
