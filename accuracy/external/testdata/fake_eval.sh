#!/bin/sh
# 模拟外部评测工具（OpenCompass/MME 的替身）：检查传入的地址、模型与密钥，
# 在输出目录写出结果文件。第一个参数选择输出格式。
set -eu
out="$CIBENCH_OUT_DIR"
[ "$CIBENCH_MODEL" = "${FAKE_WANT_MODEL:-m1}" ] || { echo "bad model $CIBENCH_MODEL" >&2; exit 3; }
[ "${OPENAI_API_KEY:-}" = "sk-x" ] || { echo "missing key" >&2; exit 4; }
case "$1" in
json)
  mkdir -p "$out/run1"
  printf '{"summary": {"datasets": [{"name": "gsm8k", "accuracy": "81.5"}]}, "base": "%s", "extra": "%s"}\n' "$2" "$FAKE_EXTRA" > "$out/run1/result.json"
  ;;
csv)
  mkdir -p "$out/summary"
  printf 'dataset,version,metric,mode,m1\ngsm8k,1d7fe4,accuracy,gen,79.25\n' > "$out/summary/summary_1.csv"
  ;;
mme)
  echo "=========== Perception ===========" > "$out/mme.txt"
  echo "total score: 1523.75" >> "$out/mme.txt"
  ;;
urls)
  echo "argv=$2 first=$3 env=$CIBENCH_BASE_URLS envfirst=$CIBENCH_BASE_URL"
  echo "score: 1" > "$out/urls.txt"
  ;;
fail)
  echo "boom" >&2
  exit 7
  ;;
none)
  ;;
esac
echo "done $1"
