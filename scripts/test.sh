#!/usr/bin/env bash
# scripts/test.sh 是 cibench 唯一的测试命令（README 与 .ci/run 都调用它）。
#
# 在一台只装了 Go 的全新 Debian 机器上也能直接运行：
#   1. 依次执行 scripts/setup.d/*.sh（幂等：已安装时很快返回），安装测试需要的
#      staticcheck、prometheus/pushgateway、kube 组件、chromium 等；
#   2. gofmt 检查、go vet、staticcheck、导出 API 与 api/next.txt 一致（scripts/apicheck.sh）；
#   3. go test -race -cover ./...，打印每个包的覆盖率，并要求库包覆盖率 >= 85%。
# CIBENCH_REQUIRE_INTEGRATION=1 让缺少外部二进制的集成测试失败而不是跳过。
set -euo pipefail

cd "$(dirname "$0")/.."
export CIBENCH_CACHE="${CIBENCH_CACHE:-$HOME/.cache/cibench}"
mkdir -p "$CIBENCH_CACHE/bin"

min_cover="${CIBENCH_MIN_COVERAGE:-85}"

# 这里的每个 go 命令（连同测试里再起的 go build、go test、go list -export，它们继承环境）都不生成 DWARF：
# 编译器省约一成半 CPU（k8s.io 的包上测得 141 → 122 CPU 秒），二进制照常运行——panic 与竞态报告的栈取自
# pclntab 而不是 DWARF——只是不能用调试器单步。所有 go 命令用同一组参数，编译结果才在它们之间共享
# （也与后台的控制面构建共享，30-kube.sh 用同样的参数）。
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-gcflags=all=-dwarf=false"

# 时间花在哪里：phase NAME 结束上一段、开始名为 NAME 的一段；脚本结束时（成功或失败）打印每段的秒数、
# 子进程用掉的 CPU 秒数（用户态 + 内核态）与最慢的测试包（见 report_time）。冷启动受 CPU 限制（2 核机器上
# 墙钟约等于全部 CPU 秒数的一半），所以 CPU 一栏才说明该省哪一段。
run_start=$(date +%s)
phase_names=() phase_secs=() phase_cpus=()
phase_name="" phase_start=$run_start
# child_cpu 打印本 shell 已等待的子进程累计用掉的 CPU 秒数（bash 内建 times 的第二行，如 "1m2.500s 0m3.100s"）。
# times 必须在本 shell 里执行（重定向到文件，不经管道或 $(...)：子 shell 里的 times 数的是子 shell 自己的子进程）；
# 所以调用方写 child_cpu; cpu=$REPLY，而不是 cpu=$(child_cpu)。
child_cpu() {
	local f="$work/times.$BASHPID" # 后台子 shell 也调用它：各写各的文件
	times >"$f"
	REPLY=$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } printf "%.0f", t }' "$f")
}
# cpu_offset：当前段里收回的、不属于这一段的子进程 CPU，记账时减掉：后台的 kube 构建（子 shell）结束时
# bash 立即收回它，它的全部 CPU 于是算进它结束时正在进行的那一段——由 phase 查它写下的 kube-cpu 文件、
# 从那一段里减掉（只减一次）。
phase_cpu_start=0 cpu_offset=0 kube_accounted=""
phase() {
	local now cpu
	now=$(date +%s)
	child_cpu
	cpu=$REPLY
	if [ -z "$kube_accounted" ] && [ -s "$work/kube-cpu" ]; then
		cpu_offset=$(cat "$work/kube-cpu")
		kube_accounted=1
	fi
	if [ -n "$phase_name" ]; then
		phase_names+=("$phase_name")
		phase_secs+=($((now - phase_start)))
		phase_cpus+=($((cpu - phase_cpu_start - cpu_offset)))
	fi
	phase_name="$1" phase_start=$now phase_cpu_start=$cpu cpu_offset=0
	[ -z "$1" ] || echo "==> $1"
}
# report_time 在退出时打印：每段的秒数、后台的 kube 构建（冷启动时）与最慢的 12 个测试包
# （go test 每包一行的耗时：包的测试二进制从开始到结束的墙钟，与别的包并行时含等待 CPU 的时间）。
# work 放本次运行的临时文件：各模块的依赖版本、每次 go test 的输出与覆盖率文件。
work="$(mktemp -d)"
report_time() {
	phase ""
	echo
	child_cpu
	echo "==> where the time went ($(( $(date +%s) - run_start ))s wall, $REPLY CPU-seconds of child processes in all)"
	printf '  %6s  %6s  %s\n' wall CPU step
	local i
	for i in "${!phase_names[@]}"; do
		printf '  %5ss  %5ss  %s\n' "${phase_secs[$i]}" "${phase_cpus[$i]}" "${phase_names[$i]}"
	done
	if [ -n "$kube_bg" ] && [ -f "$kube_log" ]; then
		sed -n 's/^\[30-kube\] built \(.*\) in \([0-9]*\)s$/  (background: go build of \1 took \2s)/p' "$kube_log"
		[ ! -s "$work/kube-cpu" ] || echo "  (background: the kube setup used $(cat "$work/kube-cpu") CPU-seconds at nice ${CIBENCH_KUBE_NICE:-0})"
		[ -z "${kube_after:-}" ] || echo "  (background: the whole kube setup finished $kube_after)"
	fi
	if compgen -G "$work/test-*.log" >/dev/null; then
		echo "  slowest test packages (seconds):"
		cat "$work"/test-*.log | grep -E '^(ok|FAIL)[[:space:]]+[^[:space:]]+[[:space:]]+[0-9.]+s' |
			awk '{ t = $3; sub(/s$/, "", t); printf "  %8.1f  %s\n", t, $2 }' | sort -rn | sed -n 1,12p
	fi
}
trap 'report_time; [ -z "${CIBENCH_KUBE_BUILD_AFTER:-}" ] || touch "$CIBENCH_KUBE_BUILD_AFTER"; rm -rf "$work"' EXIT
# 本仓库是几个模块（go.work 把它们连成一个工作区）：根模块 github.com/vllm-cibench/cibench 不依赖
# Kubernetes；deploy/kube、loadgen/shard/kubejob、internal/kubetest、examples/ci、examples/bench 各是一个模块。
# 工作区里根目录的 ./... 不含嵌套模块，所以包模式是每个本仓库模块的 ./<目录>/...（团队示例模块
# examples/team 与 examples/operator 按团队看到的样子、由 examples 包的测试以 GOWORK=off 运行）。
module=github.com/vllm-cibench/cibench
mods=()
while IFS=$'\t' read -r mpath mdir; do
	case "$mpath" in "$module" | "$module"/*) ;; *) continue ;; esac
	rel="$(realpath --relative-to="$PWD" "$mdir")"
	mods+=("$rel")
done < <(go list -m -f '{{.Path}}{{"\t"}}{{.Dir}}')
all_pkgs=()
for m in "${mods[@]}"; do
	if [ "$m" = . ]; then all_pkgs+=("./..."); else all_pkgs+=("./$m/..."); fi
done
# 模块分两组：依赖 Kubernetes 的（go.mod 里有 k8s.io/）与其余的。编译一步先编前一组（见那里），
# 冷启动时两组各是一次 go test。
plain_mods=() kube_mods=() plain_pkgs=() kube_pkgs=()
for m in "${mods[@]}"; do
	pat="./$m/..."
	[ "$m" = . ] && pat="./..."
	if grep -q 'k8s.io/' "$m/go.mod"; then
		kube_mods+=("$m") kube_pkgs+=("$pat")
	else
		plain_mods+=("$m") plain_pkgs+=("$pat")
	fi
done
# CIBENCH_TEST_PKGS 可把测试限制在部分包（开发时用）；CI 始终是全部模块。
if [ -n "${CIBENCH_TEST_PKGS:-}" ]; then
	read -r -a pkgs <<<"$CIBENCH_TEST_PKGS"
else
	pkgs=("${all_pkgs[@]}")
fi

# CIBENCH_SKIP_SETUP=1 跳过安装步骤（依赖已就绪时加快本地迭代）。
#
# 冷启动时最贵的一步是 30-kube.sh 从源码构建 etcd、kube-apiserver 与 kube-controller-manager、安装 kwok。
# 只有起控制面的那些测试（internal/kubetest.Start）需要它们，所以冷启动时它最先在后台开始（下载、解析模块；
# go build 等本仓库的 Kubernetes 模块编完，共享它们的编译结果），同时做其余安装、静态检查与全部测试：Kubernetes 模块的测试也立即开始（编译、
# 不需要控制面的测试照常跑），只有 kubetest.Start 等后台构建写好状态文件（CIBENCH_KUBE_BUILD_STATUS）。
# 二进制已在缓存里时（热启动）一次 go test 跑全部模块。
# 其余安装步骤按顺序执行：apt 不能并行。
kube_bg=""
kube_log="$CIBENCH_CACHE/kube-setup.log"
# 30-kube.sh 不用 apt（只要 Go），所以冷启动时它第一个开始：模块下载与构建从一开始就与其余步骤重叠。
if [ "${CIBENCH_SKIP_SETUP:-0}" != 1 ] && [ -z "${CIBENCH_TEST_PKGS:-}" ] && [ -x scripts/setup.d/30-kube.sh ] && ! scripts/setup.d/30-kube.sh --check; then
	echo "==> setup: scripts/setup.d/30-kube.sh in the background (cold: building the control plane; log $kube_log)"
	mkdir -p "$(dirname "$kube_log")"
	# 子 shell 在脚本结束后：用 times 记下它用掉的 CPU 秒数（$work/kube-cpu，报告里单列）与结束时刻
	# （$work/kube-done），再把结果写进状态文件（先写临时文件再改名）：ok，或失败的原因——等在
	# kubetest.Start 里的测试据此开始或失败。
	export CIBENCH_KUBE_BUILD_STATUS="$work/kube-status"
	# 30-kube.sh 先下载、解析模块，go build 等这个文件出现才开始：下面"modules tidy and compile"一步
	# 编完 Kubernetes 模块（标准库与 client-go 整棵树进构建缓存）就创建它，控制面的构建取这些结果而不是
	# 同时另编一遍（两个 go 命令同时编同一个包时各编各的）。脚本提前退出时 EXIT 里也创建它。
	export CIBENCH_KUBE_BUILD_AFTER="$work/kube-go"
	(
		rc=0
		scripts/setup.d/30-kube.sh || rc=$?
		child_cpu
		echo "$REPLY" >"$work/kube-cpu"
		date +%s >"$work/kube-done"
		if [ "$rc" -eq 0 ]; then echo ok; else echo "scripts/setup.d/30-kube.sh exited with status $rc; log $kube_log"; fi >"$work/kube-status.tmp"
		mv "$work/kube-status.tmp" "$work/kube-status"
		exit "$rc"
	) >"$kube_log" 2>&1 &
	kube_bg=$!
fi
for s in scripts/setup.d/*.sh; do
	[ "${CIBENCH_SKIP_SETUP:-0}" = 1 ] && break
	[ -e "$s" ] || continue
	if [ ! -x "$s" ]; then
		echo "==> setup: $s is not executable, skipped"
		continue
	fi
	[ -n "$kube_bg" ] && [ "$(basename "$s")" = 30-kube.sh ] && continue
	phase "setup: $s"
	"$s"
done

export PATH="$CIBENCH_CACHE/bin:$(go env GOPATH)/bin:$PATH"
export CIBENCH_REQUIRE_INTEGRATION=1

# 仓库里不该有构建产物：go build 在 examples/<name>/ 里留下的同名可执行文件曾被 git add -A 一起提交
# （examples/ci/ci 124 MB、examples/bench/bench 70 MB，在 24083dd 进入主线），之后每重新构建一次再提交，
# 提交就多出上百 MB（一次提交因此整个被拒）。这两个历史遗留文件只允许保持落地时的内容（删除它们留给单独
# 的一次提交）；其余任何超过 1 MiB 的文件都让 CI 失败。
phase "tracked files (no build output, nothing over 1 MiB)"
legacy="5557879f45b4f1001bdd47169f2d39484f737fde examples/ci/ci
133799bc51cfbc33af56a8b952986573c4f100f1 examples/bench/bench"
bad_files="$(git ls-files -s | sed -E 's/^[0-7]+ ([0-9a-f]+) [0-9]+\t/\1 /' |
	git cat-file --batch-check='%(objectname) %(objectsize) %(rest)' | while read -r obj size path; do
	[ "$size" -gt 1048576 ] || continue
	grep -qxF "$obj $path" <<<"$legacy" && continue
	echo "  $path ($size bytes)"
done)"
if [ -n "$bad_files" ]; then
	echo "FAIL: tracked files over 1 MiB (a binary left by go build? restore a legacy one with: git checkout 59a1e87 -- PATH):"
	echo "$bad_files"
	exit 1
fi

phase "gofmt"
unformatted="$(gofmt -l .)"
if [ -n "$unformatted" ]; then
	echo "gofmt: these files need 'gofmt -w':"
	echo "$unformatted"
	exit 1
fi

phase "modules tidy and compile: ${mods[*]}"
# 记下每个模块单独构建时用到的第三方模块版本（-deps 列出依赖；编译本来就包括它们），下面与工作区比较。
fmt='{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}}{{end}}{{end}}'
# 每个模块单独（GOWORK=off，即导入它的人看到的样子）也必须自洽：go.mod/go.sum 是整理过的、能构建。
# go 指令是仍受支持的最老发布线（1.26.0，没有补丁下限）：go vet 的 stdversion 检查与编译器的 -lang
# 都按这个版本检查，用了更新的标准库 API 就会在下面的 vet 里报出（pipeline 的 TestRootModuleRequiresNoKubernetes
# 与 TestEveryModuleDeclaresGo1260 核对 go 指令本身）。
for m in "${kube_mods[@]}" go-ahead "${plain_mods[@]}" examples/team examples/operator; do
	# Kubernetes 模块编完：后台的控制面构建可以开始（它与这些模块共享标准库与 client-go 树的编译结果）。
	if [ "$m" = go-ahead ]; then
		[ -z "${CIBENCH_KUBE_BUILD_AFTER:-}" ] || touch "$CIBENCH_KUBE_BUILD_AFTER"
		continue
	fi
	if ! (cd "$m" && GOWORK=off go mod tidy -diff >/dev/null); then
		echo "go.mod/go.sum of module $m are not tidy: run (cd $m && GOWORK=off go mod tidy)"
		(cd "$m" && GOWORK=off go mod tidy -diff) || true
		exit 1
	fi
	# 只编译、不链接（go list -export 为每个包生成导出数据；编译错误照样让它失败）：链接 main 包的可执行文件
	# 对"能否构建"没有多说什么，却在热缓存时占了这一步的大部分时间（34 秒 → 3 秒）。
	# 编译结果（普通构建）在构建缓存里留给后面的 go vet、staticcheck、apicheck，以及 examples/hostile 测试构建的
	# 四个程序与团队模块的 vet 和 build：它们是用户运行的普通二进制。只有 go test 用 -race，那是另一套编译。
	case " ${mods[*]} " in
	*" $m "*) (cd "$m" && GOWORK=off go list -export -deps -f "$fmt" ./...) | grep -v "^$module[/ ]" | sort -u | sed "s|^|$m |" >>"$work/alone" ;;
	*) (cd "$m" && GOWORK=off go list -export -f '{{.ImportPath}}' ./... >/dev/null) ;;
	esac
done
# 每个模块单独构建时与工作区（vet、staticcheck、跨平台构建与 go test 用的）必须选中同样的依赖版本：
# 否则冷启动时两套版本各编一遍——scripts/apicheck 曾要求较新的 golang.org/x/tools，把工作区的
# golang.org/x/sys 抬到 v0.49.0（各模块单独是 v0.48.0），client-go 以上整棵树因此多编一遍。
(go list -deps -f "$fmt" "${all_pkgs[@]}") | grep -v "^$module[/ ]" | sort -u >"$work/workspace"
skew="$(awk 'NR == FNR { ws[$1] = $2; next } ($2 in ws) && ws[$2] != $3 {
	printf "  module %s alone builds %s %s; the workspace builds %s\n", $1, $2, $3, ws[$2] }' "$work/workspace" "$work/alone")"
if [ -n "$skew" ]; then
	echo "FAIL: modules build different dependency versions alone and in the workspace (a cold run compiles both):"
	echo "$skew"
	echo "Align the requirements (the module that asks for the newer version, or the others' go.mod) so both select one version."
	exit 1
fi

# go vet 跑全部默认分析器（含测试文件），是 go test 自带那一小组 vet 检查的超集；所以下面的 go test 用 -vet=off，
# 否则它按另一组参数把整棵依赖树的 vet 事实再算一遍（冷启动时几百 CPU 秒，结果与这里重复）。
phase "go vet"
go vet "${pkgs[@]}"

phase "staticcheck"
staticcheck "${pkgs[@]}"

# 导出 API 的每一处变化都必须记在 api/next.txt 里（pipeline 包文档的兼容性承诺）；
# 文档里的 Go 片段由 internal/doccheck 的测试在下面的 go test 中编译检查。
phase "API compatibility (scripts/apicheck.sh)"
scripts/apicheck.sh

# 跨平台：每个包都要能在 macOS 与 Windows 上编译，使嵌入模拟器与各阶段的用户不被 Unix 专有调用挡住。
# 为另一个系统把依赖树（openai-go、Prometheus、client-go……）各编一遍，冷启动时要几百 CPU 秒，所以分两类：
#   - 平台相关的包：在 linux、darwin、windows 上选中的源文件或导入不同，或导入 golang.org/x/sys、cgo。
#     它们连同全部依赖（包括标准库）为 darwin 与 windows 从源码做类型检查（scripts/apicheck/ostypes：为另一个
#     系统编译它们要先为那个系统编译 net/http、x/sys 等整个依赖闭包，冷启动时约 70 CPU 秒；能因平台出错的
#     缺文件、缺函数、类型不符都是类型错误），它们的导出 API（go doc -all
#     的声明，常量的值除外）在三个系统上必须相同——导入它们的包因此在哪个系统上都看到同样的 API。平台相关的
#     调用（进程组、信号、rlimit、getrusage、内核接收时间戳）收在这样的小包里：internal/procgroup、
#     internal/procstat、internal/rxstamp、loadgen/internal/h1，它们只依赖标准库与 golang.org/x/sys。
#   - 其余每个包：三个系统上文件与导入都相同，用到 syscall 时只用三个系统都有的 SIGINT、SIGTERM
#     （examples/ci 只许用公开 API 与标准库，退出信号因此直接写 syscall.SIGTERM）。这样的包只依赖各系统 API
#     相同的标准库、上面那些 API 相同的包与第三方依赖，在 linux 上编译通过（前面已编译），在别的系统上也就编译
#     通过。第三方依赖本身（都是各平台构建的纯 Go 库）不在这里为别的系统编译。
phase "cross-OS: platform-specific packages type-checked for darwin and windows; every other package checked platform-independent"
files='{{.ImportPath}} {{.Name}} files: {{join .GoFiles " "}} {{join .CgoFiles " "}} imports: {{join .Imports " "}}'
for goos in linux darwin windows; do
	GOOS=$goos GOARCH=amd64 go list -f "$files" "${all_pkgs[@]}" >"$work/files-$goos"
done
platform_re=' (C|golang\.org/x/sys/[^ ]*|internal/syscall/[^ ]*)( |$)'
{
	diff "$work/files-linux" "$work/files-darwin" || true
	diff "$work/files-linux" "$work/files-windows" || true
} | sed -n 's/^[<>] \([^ ]*\) .*/\1/p' >"$work/platform"
grep -E "$platform_re" "$work/files-linux" | cut -d' ' -f1 >>"$work/platform" || true
mapfile -t platform_pkgs < <(sort -u "$work/platform")
echo "platform-specific packages: ${platform_pkgs[*]:-none}"
platform_bad=""
if [ "${#platform_pkgs[@]}" -gt 0 ]; then
	go build -o "$work/ostypes" ./scripts/apicheck/ostypes
	"$work/ostypes" -goos darwin "${platform_pkgs[@]}"
	"$work/ostypes" -goos windows "${platform_pkgs[@]}"
	# api PKG：go doc -all 里的声明行（文档说明缩进四格，去掉），常量的值去掉（如 procgroup.Supported 在 Windows 上是 false）。
	api() { go doc -all "$1" | grep -v '^    ' | sed -E 's/^(const [A-Za-z0-9_]+) = .*/\1/; s/^(\t[A-Za-z0-9_]+) += .*/\1/'; }
	for p in "${platform_pkgs[@]}"; do
		grep -q "^$p main " "$work/files-linux" && continue # main 包没有被导入的 API
		GOOS=linux api "$p" >"$work/api-linux"
		for goos in darwin windows; do
			GOOS=$goos api "$p" >"$work/api-$goos"
			if ! d="$(diff "$work/api-linux" "$work/api-$goos")"; then
				platform_bad+="  $p: exported API differs on $goos:"$'\n'"$(sed 's/^/    /' <<<"$d")"$'\n'
			fi
		done
	done
fi
# 其余的包若导入 syscall：只许 SIGINT 与 SIGTERM（linux、darwin、windows 的 syscall 都定义了它们）。
others="$(grep -vxFf <(printf '%s\n' "${platform_pkgs[@]}") <(cut -d' ' -f1 "$work/files-linux") || true)"
if [ -n "$others" ]; then
	platform_bad+="$(go list -f '{{range .Imports}}{{if eq . "syscall"}}{{range $.GoFiles}}{{$.Dir}}/{{.}} {{end}}{{end}}{{end}}' $others |
		xargs -r grep -HnoE 'syscall\.[A-Za-z0-9_]+' | grep -vE ':syscall\.(SIGINT|SIGTERM)$' | sed 's/^/  uses a platform-specific syscall name outside the platform-specific packages: /')" || true
fi
if [ -n "$platform_bad" ]; then
	echo "FAIL: platform check. Platform-specific code belongs in the small packages above (internal/procgroup, internal/procstat, ...),"
	echo "with the same exported API on linux, darwin and windows:"
	echo "$platform_bad"
	exit 1
fi

# gotest NAME P PKG... 以 -p P 运行一次 go test（-race、覆盖率），输出写到终端与 test-NAME.log（冷启动时两次 go test
# 同时运行，各写各的文件，覆盖率表读的是合起来的 test.log）；返回 go test 的退出码。
gotest() {
	local status
	set +e
	go test -race -vet=off -count=1 -p "$2" -timeout 30m -covermode=atomic -coverprofile="$work/cover-$1.out" "${@:3}" 2>&1 | tee "$work/test-$1.log"
	status=${PIPESTATUS[0]}
	set -e
	return "$status"
}
# 同时运行的测试二进制数：核数 + 1。大部分慢测试在等控制器、定时器与服务（kwok 的 Job、前台删除、
# 模拟器的注入时延），多一个并行的包让这些等待与 CPU 密集的包重叠；CIBENCH_TEST_P 可改。
test_p="${CIBENCH_TEST_P:-$(( $(nproc) + 1 ))}"
test_status=0
[ -n "$kube_bg" ] || phase "go test -race -cover"
if [ -n "$kube_bg" ]; then
	# 冷启动：两次 go test 同时开始（各自的 -p，Kubernetes 模块那次 -p 2）。Kubernetes 模块的测试二进制
	# 立即编译，不需要控制面的测试立即运行；起控制面的测试在 kubetest.Start 里等后台构建（它们等待时不占 CPU，
	# 也不占另一次 go test 的名额）。以前整个 Kubernetes 模块的测试在构建完成后才开始，编译它们的竞态检测版
	# client-go 树与不需要控制面的测试都排在构建之后，成了冷启动的尾巴。
	# 两次同时开始的 go test 都要竞态检测版的标准库、openai-go 与根模块的包：两个 go 命令同时编同一个包时
	# 不互相等待、各编一遍（冷启动时约 160 CPU 秒白费）。所以先把两组测试共同依赖的（非测试）包编一遍，
	# 两次 go test 都从构建缓存取。
	phase "go test -race: compile the packages both test runs import, once"
	race_deps() { go list -race -deps -test -f '{{if not .ForTest}}{{.ImportPath}}{{end}}' "$@" | grep -v '\.test$' | sort -u; }
	mapfile -t shared_race < <(comm -12 <(race_deps "${kube_pkgs[@]}") <(race_deps "${plain_pkgs[@]}"))
	echo "${#shared_race[@]} packages"
	[ "${#shared_race[@]}" -eq 0 ] || go list -race -export -f '' "${shared_race[@]}" >/dev/null
	phase "go test -race -cover (cold: every module at once; the control-plane tests wait for the background build)"
	gotest kube 2 "${kube_pkgs[@]}" &
	kube_test_pid=$!
	gotest plain "$test_p" "${plain_pkgs[@]}" || test_status=$?
	wait "$kube_test_pid" || test_status=$?
	kube_status=0
	wait "$kube_bg" || kube_status=$?
	if [ -s "$work/kube-done" ]; then
		kube_after=$(( $(cat "$work/kube-done") - phase_start ))
		if [ "$kube_after" -ge 0 ]; then kube_after="${kube_after}s into the tests"; else kube_after="$((-kube_after))s before the tests started"; fi
		echo "==> the background kube build finished $kube_after"
	fi
	tail -n 3 "$kube_log"
	if [ "$kube_status" -ne 0 ]; then
		cat "$kube_log"
		echo "FAIL: scripts/setup.d/30-kube.sh failed (log above)"
		exit 1
	fi
elif [ -n "${CIBENCH_TEST_PKGS:-}" ]; then
	gotest all "$test_p" "${pkgs[@]}" || test_status=$?
else
	# Kubernetes 模块排在前面：它们最长的测试大多在等控制面，先开始，让别的包在这段时间里用 CPU。
	gotest all "$test_p" "${kube_pkgs[@]}" "${plain_pkgs[@]}" || test_status=$?
fi
phase "coverage table"
cat "$work"/test-*.log >"$work/test.log"

# 覆盖率表：从 go test 的每包输出中取 "coverage: N% of statements"（相对路径按仓库根算，嵌套模块的
# 模块路径也以 $module 开头）。
echo
echo "==> coverage per package (library packages need >= ${min_cover}%)"
printf '%-50s %10s  %s\n' PACKAGE COVERAGE NOTE
low=()
while read -r pkg; do
	nostmt=""
	rel="${pkg#"$module"}"
	rel="${rel#/}"
	[ -n "$rel" ] || rel="."
	line="$(grep -E "^(ok|FAIL|---|\?)?[[:space:]]+${pkg}([[:space:]]|$)" "$work/test.log" | tail -n 1 || true)"
	cov="$(sed -nE 's/.*coverage: ([0-9.]+)% of statements.*/\1/p' <<<"$line")"
	if [ -z "$cov" ]; then
		if grep -q "no test files" <<<"$line"; then cov="0.0"; else cov="-"; fi
		# 只有测试的包（如 internal/doccheck：非测试文件只有包文档）go test 报 "coverage: [no statements]"。
		if grep -q "coverage: \[no statements\]" <<<"$line"; then cov="100.0"; nostmt=" (no statements)"; fi
		# 只有类型与常量、没有一条可执行语句的包（如 deploy/kube/spec）没有可覆盖的东西：
		# 记为 100%，而不是因为"没有测试文件"被算作 0%。
		if [ "$cov" = "0.0" ] && ! grep -qE '^func ' $(go list -f '{{range .GoFiles}}{{$.Dir}}/{{.}} {{end}}' "$pkg"); then cov="100.0"; nostmt=" (no statements)"; fi
	fi
	note=""
	case "$rel" in
	internal/kubetest | accuracy/internal/scripted)
		# 仅供测试使用的桩件，不是 SDK 的库代码：internal/kubetest 是控制面启动器（etcd/kube-apiserver/kwok），
		# 主要由 deploy/kube 的集成测试驱动；accuracy/internal/scripted 是精度测试共用的确定性
		# “模型”（导入 testing，只被 accuracy 与 accuracy/simpleevals 的 _test.go 导入），由那两个包的
		# 测试驱动。按包统计的覆盖率只数本包自己的测试，所以不计入门槛。
		note="test harness (not gated)"
		;;
	examples | examples/*)
		# 参考程序与可靠性测试（main 包），由各自的测试驱动，不是库代码；examples 本身是
		# 只有测试的包（检查团队模块 examples/team 与各程序的依赖），没有可覆盖的语句。
		;;
	*)
		# 其余每个包都是库包（包括新加入的包）：不再逐个列名，免得新包漏出门槛。
		note="library${nostmt}"
		if [ "$cov" = "-" ] || awk -v c="$cov" -v m="$min_cover" 'BEGIN { exit !(c < m) }'; then
			note="library: BELOW ${min_cover}%"
			low+=("$rel (${cov}%)")
		fi
		;;
	esac
	printf '%-50s %9s%%  %s\n' "$rel" "$cov" "$note"
done < <(go list "${pkgs[@]}")

if [ "$test_status" -ne 0 ]; then
	echo
	echo "FAIL: go test exited with status $test_status (see the failures above)"
	exit "$test_status"
fi
if [ "${#low[@]}" -gt 0 ]; then
	echo
	echo "FAIL: library packages below ${min_cover}% coverage:"
	printf '  %s\n' "${low[@]}"
	exit 1
fi
echo
echo "OK: gofmt, go vet, staticcheck, go test -race and coverage >= ${min_cover}% all passed"
