#!/usr/bin/env bash
# 20-prometheus.sh 为 metrics 包的集成测试安装真实的 Prometheus 与 Pushgateway。
#
# 安装 Debian 软件包 prometheus 与 prometheus-pushgateway（缺失时），但不启动
# Debian 自带的 systemd 服务：测试自己在回环地址的临时端口上启动二进制。
# 幂等：已安装时只做几次 command -v 检查，立即退出。
# 测试通过 PATH（或 CIBENCH_PROMETHEUS / CIBENCH_PUSHGATEWAY 环境变量）查找二进制；
# Debian 的 pushgateway 二进制名为 prometheus-pushgateway，这里在
# ${CIBENCH_CACHE:-$HOME/.cache/cibench}/bin 放两个符号链接，使名字稳定。
set -euo pipefail

cache="${CIBENCH_CACHE:-$HOME/.cache/cibench}"
bindir="$cache/bin"
mkdir -p "$bindir"

# find_pushgateway 打印 Pushgateway 二进制路径（Debian 名或上游名），找不到时返回 1。
find_pushgateway() {
	local c
	for c in /usr/bin/prometheus-pushgateway /usr/bin/pushgateway; do
		if [ -x "$c" ]; then
			echo "$c"
			return 0
		fi
	done
	command -v prometheus-pushgateway 2>/dev/null || command -v pushgateway 2>/dev/null
}

# find_prometheus 打印 Prometheus 二进制路径，找不到时返回 1。
find_prometheus() {
	if [ -x /usr/bin/prometheus ]; then
		echo /usr/bin/prometheus
		return 0
	fi
	command -v prometheus 2>/dev/null
}

need=()
find_prometheus >/dev/null || need+=(prometheus)
find_pushgateway >/dev/null || need+=(prometheus-pushgateway)

if [ "${#need[@]}" -gt 0 ]; then
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then
		sudo="sudo"
	fi
	echo "20-prometheus: installing ${need[*]}" >&2
	# policy-rc.d 返回 101 阻止 dpkg 在安装后启动 Debian 服务；仅在本次安装期间存在。
	policy=/usr/sbin/policy-rc.d
	created_policy=0
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
		$sudo chmod +x "$policy"
		created_policy=1
	fi
	cleanup() {
		if [ "$created_policy" = 1 ]; then
			$sudo rm -f "$policy"
		fi
	}
	trap cleanup EXIT
	export DEBIAN_FRONTEND=noninteractive
	if ! $sudo apt-get install -y --no-install-recommends "${need[@]}"; then
		$sudo apt-get update
		$sudo apt-get install -y --no-install-recommends "${need[@]}"
	fi
fi

prom="$(find_prometheus)"
pgw="$(find_pushgateway)"
ln -sf "$prom" "$bindir/prometheus"
ln -sf "$pgw" "$bindir/pushgateway"
ln -sf "$pgw" "$bindir/prometheus-pushgateway"
echo "20-prometheus: prometheus=$prom pushgateway=$pgw" >&2
