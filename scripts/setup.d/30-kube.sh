#!/usr/bin/env bash
# 30-kube.sh 为 deploy/kube 的集成测试准备一个真实的 Kubernetes 控制面：
#   - etcd、kube-apiserver、kube-controller-manager（从 k8s.io/kubernetes 的模块图构建，etcd 取
#     Kubernetes 自己钉住的 go.etcd.io/etcd/server/v3 版本）
#   - kwok（无需 kubelet 即可把节点与 Pod 标成 Running），在同一个模块里构建
# 测试只用这四个程序：internal/kubetest 自己绑定 Pod（不需要 kube-scheduler），kwok 代替 kubelet。
# 产物全部放在仓库之外的 ${CIBENCH_CACHE:-$HOME/.cache/cibench}/bin；版本相符则跳过。
# 幂等：重复运行只做检查。只需要 Go。
#
# 为什么不用 Debian 的 etcd-server：它是 3.4.23，不支持 RequestWatchProgress（3.4.31/3.5.13 起才有）。
# API Server 因此拒绝 client-go 默认的"流式 watch list"，kwok 的反射器每次失败后按指数退避重列，
# Pod 的 Pending→Running→Succeeded 每一步要等 1 到 60 秒，一个两片的 Job 从创建到完成测得 1 秒到 1 分 41 秒
# （同一控制面上连续 6 个 Job）；换成 3.6.8 后 8 个 Job 每个都是 1.0 到 1.2 秒。
#
# 冷构建是整个测试最贵的一步，所以：
#   - 四个程序在同一个模块、同一次 go build 里构建：一张动作图，共享包（k8s.io/api、apimachinery、
#     client-go、apiserver、gRPC、etcd 客户端、Prometheus……）只编一次，链接并行。kwok 以前单独
#     go install（它的 go.mod 要 k8s.io/* v0.36.1），整棵 Kubernetes 客户端树因此多编一遍；放进来以后
#     k8s.io/* 统一到 v0.36.3，代价是 MVS 把 gRPC 从 1.79.3 升到 1.81.1、OpenTelemetry 到 1.44（kwok 的要求），
#     三个控制面程序随之用这两个版本——deploy/kube 与 kubejob 的集成测试在这样构建的控制面上通过；
#   - -gcflags=all=-dwarf=false（编译器不生成 DWARF：省约一成半编译 CPU 与缓存 I/O，二进制行为不变，只是
#     不能单步调试）、-ldflags="-s -w"（不写符号表与 DWARF）；不加 -race，也不加 -trimpath（见下一条）；
#   - 与本仓库的构建共享编译结果：本仓库的 Kubernetes 模块（deploy/kube、loadgen/shard/kubejob、
#     internal/kubetest）用到的每个第三方模块（client-go、api、apimachinery、x/net……）按工作区选中的版本
#     写进本模块的 go.mod（MVS 取两者较高的版本）；scripts/test.sh 的每个 go 命令也用 -gcflags=all=-dwarf=false
#     （它设在 GOFLAGS 里），于是标准库与这些模块的包动作 ID 相同、直接取构建缓存里已有的结果：冷启动时
#     scripts/test.sh 先编译本仓库的 Kubernetes 模块、再让本脚本开始 go build（等 CIBENCH_KUBE_BUILD_AFTER
#     指的文件出现），标准库与 client-go 整棵树不再为控制面另编一遍（空缓存的 2 核机器上，这次构建 527 → 387
#     CPU 秒）。反过来需要更高版本的模块（kwok v0.8.0 要 jsonreference v0.21.0、pflag v1.0.10）已在本仓库的
#     Kubernetes 模块里抬到同一版本；仍不一致的模块在日志里列出（构建照样成功，只是那部分不共享）。
# 冷构建的 CPU 与墙钟时间见 docs/deploy.md"测试：真实控制面"。
set -euo pipefail

CACHE="${CIBENCH_CACHE:-$HOME/.cache/cibench}"
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
BIN="$CACHE/bin"
K8S_VERSION="${CIBENCH_K8S_VERSION:-v1.36.3}"
STAGING_VERSION="v0${K8S_VERSION#v1}"   # v1.36.3 -> v0.36.3
KWOK_VERSION="${CIBENCH_KWOK_VERSION:-v0.8.0}"
# etcd 的版本跟着 Kubernetes 走：k8s.io/kubernetes v1.36.3 的模块图里 go.etcd.io/etcd/server/v3 是 v3.6.8
# （下面 go mod tidy 解析出来的就是它）；换 Kubernetes 版本时改这里，构建后的版本核对会指出不符。
ETCD_VERSION="${CIBENCH_ETCD_VERSION:-v3.6.8}"
mkdir -p "$BIN"
# 冷启动时 scripts/test.sh 把本脚本放在后台、与静态检查和测试并行；编译的 nice 值是 CIBENCH_KUBE_NICE（默认 0）。
# 构建要约 390 CPU 秒（共享本仓库的编译之后）。整个冷运行受 CPU 限制，结束时刻取决于最后一段是否还把两个核
# 用满：nice 10 时构建只拿到前台空出来的 CPU，测试开始后 500 s 才完成（空缓存的 2 核机器上），之后约 130 s
# 只剩起控制面的测试在跑（它们大多在等控制器），另一个核空着，整个运行 1335 s。nice 0 让构建与前台平分 CPU：
# 开始编译后 391 s、测试开始之前就完成，控制面测试与其余测试重叠，整个运行 1114 s。（更早的流程里 Kubernetes 模块的测试全部排在构建之后，那时取 nice 10、19。）
NICE="${CIBENCH_KUBE_NICE:-0}"

log() { echo "[30-kube] $*"; }

# 每个程序报告的版本与想要的相符才算装好：旧缓存里可能还是指向 Debian etcd 3.4 的符号链接，
# 或上一个 Kubernetes 版本的构建。
# 先把 --version 的全部输出读进变量再比较，不用 `... | grep -q`：grep -q 读到匹配行就退出，程序再写下一行
# （etcd 打印四行）时收到 SIGPIPE、以 141 退出，pipefail 让判断为假——忙的机器上版本对的二进制因此被判为
# 没装好（见 internal/kubetest 的 TestSetupCheckReadsWholeVersionOutput）。
have() { # have NAME WANT：NAME 存在、可执行、不是符号链接，且 --version 的输出含 WANT
  local got
  [ -x "$BIN/$1" ] && [ ! -L "$BIN/$1" ] && got="$("$BIN/$1" --version 2>/dev/null)" && [[ "$got" == *"$2"* ]]
}
# control_plane_ready：etcd、kube-apiserver、kube-controller-manager 与 kwok 都是想要的版本。
control_plane_ready() {
  have etcd "Version: ${ETCD_VERSION#v}" && have kube-apiserver "Kubernetes $K8S_VERSION" &&
    have kube-controller-manager "Kubernetes $K8S_VERSION" && have kwok "kwok version $KWOK_VERSION"
}
# --check：只报告是否已全部就绪（退出码 0/1），什么也不装；scripts/test.sh 用它决定要不要放到后台构建。
if [ "${1:-}" = --check ]; then
  control_plane_ready
  exit
fi

# etcd + kube-apiserver + kube-controller-manager + kwok
if ! control_plane_ready; then
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
    echo "require ("
    echo "	k8s.io/kubernetes $K8S_VERSION"
    echo "	sigs.k8s.io/kwok $KWOK_VERSION"
    echo ")"
    echo
    echo "replace ("
    sed -n '/^replace (/,/^)/p' "$GOMODFILE" | grep '=> ./staging/src/' |
      awk -v v="$STAGING_VERSION" '{print "\t" $1 " => " $1 " " v}'
    echo ")"
  } > "$MOD/go.mod"
  cat > "$MOD/tools.go" <<'GO'
//go:build tools

// Package tools 只为让 go mod tidy 保留这三个命令的依赖。
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
GO
  # etcd 的 main 与上游 etcd 仓库根目录的 main.go 相同：整个服务端在 etcdmain 里。
  mkdir -p "$MOD/cmd/etcd"
  cat > "$MOD/cmd/etcd/main.go" <<'GO'
// Command etcd 是上游 etcd 的服务端（go.etcd.io/etcd/server/v3/etcdmain），版本由本模块的 go.mod 决定。
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  # 本仓库 Kubernetes 模块的第三方依赖（工作区选中的版本，path@version）：要求同样的版本，编译才能共享。
  # 只是 go list（不编译）；不在本仓库里运行（没有 go.work）时为空。
  shared=()
  if [ -f "$REPO/go.work" ]; then
    mapfile -t shared < <(cd "$REPO" && go list -deps -f '{{with .Module}}{{if not .Main}}{{.Path}}@{{.Version}}{{end}}{{end}}' \
      ./deploy/kube/... ./loadgen/shard/kubejob/... ./internal/kubetest/... | sort -u)
  fi
  cd "$MOD"
  if [ "${#shared[@]}" -gt 0 ]; then
    go mod edit $(printf -- '-require=%s ' "${shared[@]}")
  fi
  log "resolving modules for kubernetes $K8S_VERSION (staging $STAGING_VERSION)"
  GOFLAGS=-mod=mod go mod tidy >/dev/null
  # 选中的版本与工作区不同的模块列出来：它们的包不共享编译结果（不影响正确性）。
  unshared=()
  for mv in "${shared[@]}"; do
    got="$(go list -m -f '{{.Version}}' "${mv%@*}" 2>/dev/null || true)"
    [ -n "$got" ] || continue # 控制面不用这个模块（go mod tidy 去掉了它的要求）
    [ "$got" = "${mv#*@}" ] || unshared+=("${mv%@*} $got (workspace ${mv#*@})")
  done
  if [ "${#unshared[@]}" -gt 0 ]; then
    log "not shared with the repository's build (the control plane selects another version; align the Kubernetes modules' go.mod):"
    printf '[30-kube]   %s\n' "${unshared[@]}"
  fi
  got_etcd="$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)"
  if [ "$got_etcd" != "$ETCD_VERSION" ]; then
    echo "[30-kube] kubernetes $K8S_VERSION resolves go.etcd.io/etcd/server/v3 $got_etcd, not $ETCD_VERSION: set CIBENCH_ETCD_VERSION=$got_etcd (or update ETCD_VERSION in $0)" >&2
    exit 1
  fi
  log "building etcd $ETCD_VERSION, kube-apiserver, kube-controller-manager and kwok $KWOK_VERSION in one go build (slow when cold)"
  start=$(date +%s)
  out="$BIN/.kube-build.tmp"
  rm -rf "$out"
  mkdir -p "$out"
  # 版本号像 Kubernetes 自己的构建那样经 -X 写进 component-base/version（否则 --version 报 v0.0.0-master）。
  minor="${K8S_VERSION#v1.}"
  minor="${minor%%.*}"
  ver="k8s.io/component-base/version"
  ldflags="-s -w -X $ver.gitVersion=$K8S_VERSION -X $ver.gitMajor=1 -X $ver.gitMinor=$minor -X $ver.gitTreeState=clean"
  # 冷启动时 scripts/test.sh 先编译本仓库的模块（标准库与 client-go 树进构建缓存），再创建这个文件；
  # 同时编译同一个包的两个 go 命令不互相等待，会各编一遍。等待有上限：文件迟迟不来也照样构建。
  if [ -n "${CIBENCH_KUBE_BUILD_AFTER:-}" ]; then
    waited=0
    # 文件所在的目录没了（调用的脚本已退出并清理）也不再等。
    while [ ! -e "$CIBENCH_KUBE_BUILD_AFTER" ] && [ -d "$(dirname "$CIBENCH_KUBE_BUILD_AFTER")" ] && [ "$waited" -lt 1800 ]; do
      sleep 1
      waited=$((waited + 1))
    done
    log "waited ${waited}s for the repository's modules to compile (shared packages come from the build cache)"
    start=$(date +%s)
  fi
  GOFLAGS=-mod=mod nice -n "$NICE" go build -ldflags="$ldflags" -gcflags=all=-dwarf=false -o "$out/" \
    ./cmd/etcd k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager sigs.k8s.io/kwok/cmd/kwok
  for cmd in etcd kube-apiserver kube-controller-manager kwok; do
    rm -f "$BIN/$cmd" # 可能是旧的符号链接（Debian etcd）
    mv "$out/$cmd" "$BIN/$cmd"
  done
  rmdir "$out"
  log "built etcd, kube-apiserver, kube-controller-manager and kwok in $(( $(date +%s) - start ))s"
  if ! control_plane_ready; then
    echo "[30-kube] the new binaries do not report etcd ${ETCD_VERSION#v} / Kubernetes $K8S_VERSION / kwok $KWOK_VERSION:" >&2
    for cmd in etcd kube-apiserver kube-controller-manager kwok; do "$BIN/$cmd" --version 2>&1 | sed -n 1p >&2 || true; done
    exit 1
  fi
else
  log "etcd $ETCD_VERSION, kube-apiserver and kube-controller-manager $K8S_VERSION, kwok $KWOK_VERSION present"
fi
log "ok: $BIN"
