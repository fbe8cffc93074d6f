#!/usr/bin/env bash
# 30-kube.sh 为 deploy/kube 的集成测试准备一个真实的 Kubernetes 控制面：
#   - etcd           （Debian 包 etcd-server）
#   - kube-apiserver / kube-controller-manager（从 k8s.io/kubernetes 源码构建）
#   - kwok           （go install，无需 kubelet 即可把节点与 Pod 标成 Running）
# 测试只用这四个程序：internal/kubetest 自己绑定 Pod（不需要 kube-scheduler），kwok 代替 kubelet。
# 产物全部放在仓库之外的 ${CIBENCH_CACHE:-$HOME/.cache/cibench}/bin；已存在则跳过。
# 幂等：重复运行只做检查。只需要 Go（etcd 来自 apt）。
#
# 冷构建是整个测试最贵的一步，所以：
#   - kube-apiserver 与 kube-controller-manager 在同一次 go build 里构建：一张动作图，共享包
#     只编一次，两个链接并行（不依赖两次调用之间的构建缓存）；
#   - -trimpath、-ldflags="-s -w"（不写符号表与 DWARF）、-gcflags=all=-dwarf=false（编译器也不
#     生成 DWARF：省编译 CPU 与缓存 I/O，二进制行为不变，只是不能单步调试）；不加 -race。
# 冷构建的 CPU 与墙钟时间见 docs/deploy.md"测试：真实控制面"。
set -euo pipefail

CACHE="${CIBENCH_CACHE:-$HOME/.cache/cibench}"
BIN="$CACHE/bin"
K8S_VERSION="${CIBENCH_K8S_VERSION:-v1.36.3}"
STAGING_VERSION="v0${K8S_VERSION#v1}"   # v1.36.3 -> v0.36.3
KWOK_VERSION="${CIBENCH_KWOK_VERSION:-v0.8.0}"
mkdir -p "$BIN"

SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi

log() { echo "[30-kube] $*"; }

# 1. etcd
if [ ! -x "$BIN/etcd" ]; then
  if ! command -v etcd >/dev/null 2>&1 && [ ! -x /usr/bin/etcd ]; then
    log "installing etcd-server (apt)"
    $SUDO apt-get update -qq || true
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends etcd-server
    # 包安装时可能顺带启动系统服务；测试自己启动 etcd，停掉它以免占用 2379。
    $SUDO systemctl disable --now etcd >/dev/null 2>&1 || true
  fi
  ETCD="$(command -v etcd || echo /usr/bin/etcd)"
  ln -sf "$ETCD" "$BIN/etcd"
  log "etcd -> $ETCD"
else
  log "etcd present"
fi

# 2. kwok
if [ ! -x "$BIN/kwok" ]; then
  log "go install sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  GOBIN="$BIN" nice -n 19 go install -trimpath -ldflags="-s -w" -gcflags=all=-dwarf=false "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
else
  log "kwok present"
fi

# 3. kube-apiserver + kube-controller-manager
if [ ! -x "$BIN/kube-apiserver" ] || [ ! -x "$BIN/kube-controller-manager" ]; then
  MOD="$CACHE/kube-build"
  mkdir -p "$MOD"
  GOMODFILE="$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$K8S_VERSION.mod"
  if [ ! -f "$GOMODFILE" ]; then
    (cd "$MOD" && GOFLAGS=-mod=mod go mod download k8s.io/kubernetes@"$K8S_VERSION")
  fi
  # 复制 kubernetes 自身 go.mod 的 replace 块，把 ./staging/src/k8s.io/X 换成 k8s.io/X 的 v0 版本。
  {
    echo "module cibench.local/kube-build"
    echo
    echo "go $(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1/')"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    sed -n '/^replace (/,/^)/p' "$GOMODFILE" | grep '=> ./staging/src/' |
      awk -v v="$STAGING_VERSION" '{print "\t" $1 " => " $1 " " v}'
    echo ")"
  } > "$MOD/go.mod"
  cat > "$MOD/tools.go" <<'GO'
//go:build tools

// Package tools 只为让 go mod tidy 保留两个命令的依赖。
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
GO
  cd "$MOD"
  log "resolving modules for kubernetes $K8S_VERSION (staging $STAGING_VERSION)"
  GOFLAGS=-mod=mod go mod tidy >/dev/null
  log "building kube-apiserver and kube-controller-manager in one go build (slow when cold)"
  start=$(date +%s)
  out="$BIN/.kube-build.tmp"
  rm -rf "$out"
  mkdir -p "$out"
  GOFLAGS=-mod=mod nice -n 19 go build -trimpath -ldflags="-s -w" -gcflags=all=-dwarf=false -o "$out/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
  for cmd in kube-apiserver kube-controller-manager; do
    mv "$out/$cmd" "$BIN/$cmd"
  done
  rmdir "$out"
  log "built kube-apiserver and kube-controller-manager in $(( $(date +%s) - start ))s"
else
  log "kube-apiserver and kube-controller-manager present"
fi
log "ok: $BIN"
