// Package pipeline 是 cibench 的组合 API：加载配置矩阵，对每个计划中的场景依次
// 部署 → 功能 → 性能 → 精度 →（团队阶段）→ 归档日志与清理，然后计算门禁、写出报告，
// 并在每日运行时推送指标。参考 CI 驱动 examples/ci 是它外面一层薄薄的 main（解析参数、
// 读取环境变量、处理信号）；团队在自己的程序里调用 Run，把自己的用例、能力、评测、部署方式、
// 导出器、门禁、collector 与阶段经 Options.Extensions 传进来（见 examples/team），不需要 fork。
//
// # 兼容性承诺
//
// 本包与它用到的库包（deploy、functional、loadgen、accuracy、metrics、report、gate、matrix 及其
// 子包，以及 deploy/kube、loadgen/shard/kubejob 两个 Kubernetes 模块）的导出 API 是稳定的：在 v0 期间，
// 导出的标识符只增加，不改名、不删除、不改变签名或语义；必须改的，先以 Deprecated 标注，保留到下一个
// 发布点之后才删除，并写进 CHANGELOG.md。发布点（v0.1.0 起）记在 CHANGELOG.md 与 api/BASE 里，团队按
// 模块标签钉住它（docs/packages.md“模块与版本”）。CI 执行这条承诺（scripts/apicheck.sh）：把每个公开包与
// 发布点逐个比较，任何不兼容的变化都让 CI 失败，-update 也不接受；唯一允许的删除是发布点上已经标注
// Deprecated 的标识符；兼容的新增必须记在 api/next.txt 里，于是每一处导出变化都是一次评审过的决定。
// internal/、examples/ 与 scripts/ 下的包不在承诺之内。
//
// 本包只用本模块的公开 API（不导入任何 internal/ 包，见 examples/ci 的
// TestDriverImportsOnlyPublicAPI）：团队用同样的积木能搭出同样的流水线。
//
// # Options
//
// Options 分成五部分：Selection（跑什么）、Outputs（结果去哪）、Extensions（团队扩展）、
// Environment（进程环境）与 Hooks（观察者）。部署方式是登记表（DefaultModes 含 external、
// local 与 emulator），场景 YAML 的 mode 选其中一个，方式自己的配置块由登记项解码、校验，错误带
// 文件:行:列。Kubernetes 的 k8s-hybrid 与 k8s-pd 在自己的模块 github.com/vllm-cibench/cibench/deploy/kube
// 里，加一行即可使用：
//
//	modes := pipeline.DefaultModes()
//	if err := modes.Register(kube.Modes()...); err != nil { … }
//	o.Extensions.Modes = modes
//
// 不登记它们的程序（本包自己也是）不链接任何 k8s.io 包。
package pipeline
