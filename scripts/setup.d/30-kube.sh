#!/usr/bin/env bash
# 30-kube.sh 为 deploy/kube 的集成测试准备一个真实的 Kubernetes 控制面：
#   - etcd           （Debian 包 etcd-server）
#   - kube-apiserver / kube-controller-manager（从 k8s.io/kubernetes 源码构建）
#   - kwok           （无需 kubelet 即可把节点与 Pod 标成 Running）
# 产物全部放在仓库之外的 ${CIBENCH_CACHE:-$HOME/.cache/cibench}/bin；已存在则跳过。
# 幂等：重复运行只做检查。只需要 Go（与 etcd 的 apt 包）。
#
# 冷构建是整个测试最贵的一步，所以三个 Go 程序在同一个模块、同一次 go build 里构建：
#   - kwok v0.8.0 依赖 k8s.io/{api,apimachinery,client-go} v0.36.1，放进同一个模块后按
#     kubernetes 的 replace 统一为 v0.36.3（补丁版本），client-go、api、grpc、protobuf、
#     prometheus 客户端等共享依赖只编译一次，而不是 go install kwok 时在它自己的模块里再编一遍；
#   - 一次 go build 列出三个命令，go 命令把它们放进一张动作图：共享包编一次，链接并行；
#   - -trimpath、-ldflags=-s -w（不写符号表与 DWARF）、-gcflags=all=-dwarf=false（编译器
#     也不生成 DWARF，省编译时间与缓存 I/O；二进制行为不变，只是不能用调试器单步）。不加 -race。
# 测试只用这三个程序（外加 etcd）：internal/kubetest 自己做调度（不需要 kube-scheduler），
# kwok 代替 kubelet。冷构建的 CPU 时间与墙钟时间见 docs/testing.md。
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

# 2. kube-apiserver + kube-controller-manager + kwok：同一个模块，一次 go build。
if [ ! -x "$BIN/kube-apiserver" ] || [ ! -x "$BIN/kube-controller-manager" ] || [ ! -x "$BIN/kwok" ]; then
  MOD="$CACHE/kube-build"
  mkdir -p "$MOD"
  GOMODFILE="$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$K8S_VERSION.mod"
  if [ ! -f "$GOMODFILE" ]; then
    (cd "$MOD" && GOFLAGS=-mod=mod go mod download k8s.io/kubernetes@"$K8S_VERSION")
  fi
  # 复制 kubernetes 自身 go.mod 的 replace 块，把 ./staging/src/k8s.io/X 换成 k8s.io/X 的 v0 版本。
  # 这些 replace 不带版本，所以也作用于 kwok 要求的 k8s.io/* 版本。
  {
    echo "module cibench.local/kube-build"
    echo
    echo "go $(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1/')"
    echo
    echo "require ("
    echo "	k8s.io/kubernetes $K8S_VERSION"
    echo "	sigs.k8s.io/kwok $KWOK_VERSION"
    echo ")"
    echo
    echo "replace ("
    sed -n '/^replace (/,/^)/p' "$GOMODFILE" | grep '=> ./staging/src/' |
      awk -v v="$STAGING_VERSION" '{print "\t" $1 " => " $1 " " v}'
    echo ")"
  } > "$MOD/go.mod.new"
  # 模块内容变了（版本升级）才丢掉旧的 go.sum，重新解析。
  if ! cmp -s "$MOD/go.mod.new" "$MOD/go.mod.in" 2>/dev/null; then
    cp "$MOD/go.mod.new" "$MOD/go.mod"
    rm -f "$MOD/go.sum"
    mv "$MOD/go.mod.new" "$MOD/go.mod.in"
  else
    rm -f "$MOD/go.mod.new"
  fi
  cat > "$MOD/tools.go" <<'GO'
//go:build tools

// Package tools 只为让 go mod tidy 保留三个命令的依赖。
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
GO
  cd "$MOD"
  log "resolving modules for kubernetes $K8S_VERSION (staging $STAGING_VERSION) and kwok $KWOK_VERSION"
  GOFLAGS=-mod=mod go mod tidy >/dev/null
  log "building kube-apiserver, kube-controller-manager and kwok in one go build (slow when cold)"
  start=$(date +%s)
  out="$BIN/.kube-build.tmp"
  rm -rf "$out"
  mkdir -p "$out"
  GOFLAGS=-mod=mod nice -n 19 go build -trimpath -ldflags="-s -w" -gcflags=all=-dwarf=false -o "$out/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager sigs.k8s.io/kwok/cmd/kwok
  for cmd in kube-apiserver kube-controller-manager kwok; do
    mv "$out/$cmd" "$BIN/$cmd"
  done
  rmdir "$out"
  log "built kube-apiserver, kube-controller-manager and kwok in $(( $(date +%s) - start ))s"
else
  log "kube-apiserver, kube-controller-manager and kwok present"
fi
log "ok: $BIN"
