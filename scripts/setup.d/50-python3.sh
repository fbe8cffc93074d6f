#!/usr/bin/env bash
# 50-python3.sh 为 accuracy 的集成测试安装 python3（Debian 包 python3-minimal）：
# HumanEval 在 python3 子进程中执行生成的代码，pyrandom/pycompat/accuracy 的测试
# 还用它与 CPython 交叉验证随机数、浮点格式、正则与提示文本。只需要标准库。
# 幂等：已安装时立即退出；只在非 root 时使用 sudo。
set -euo pipefail

cache="${CIBENCH_CACHE:-$HOME/.cache/cibench}"
mkdir -p "$cache/bin"

if ! command -v python3 >/dev/null 2>&1; then
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	$sudo apt-get install -y --no-install-recommends python3-minimal >/dev/null
fi

py="$(command -v python3)"
# 交叉验证脚本用到 json/csv/gzip/random/unicodedata，python3-minimal 缺 unicodedata 时补装完整包。
if ! "$py" -c 'import json, csv, gzip, random, re, unicodedata' >/dev/null 2>&1; then
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
	$sudo apt-get install -y --no-install-recommends python3 >/dev/null
fi
if [ ! -e "$cache/bin/python3" ]; then
	ln -sf "$py" "$cache/bin/python3"
fi
"$cache/bin/python3" --version
