// Package deploy 负责把被测的 OpenAI 兼容服务拉起到健康状态、归档日志并清理。
//
// 所有部署方式都实现同一组小接口：Deployer.Deploy 返回一个健康的
// Deployment，Deployment 提供 Endpoint、ArchiveLogs 与幂等的 Teardown。
//
// 本包提供的部署方式：
//   - External：服务已在运行（场景给出 base_url），只做 /health 等待；
//   - Local：在本机以独立进程组启动任意命令（如 `vllm serve …`）；
//   - 模拟器：进程内、与 vLLM 线上行为一致的 OpenAI 兼容模拟服务位于子包
//     deploy/emulator（emulator.New 实现 Deployer，测试用 emulator.Start）；
//     它是 examples/ci 的默认被测对象，也是各包与用户测试使用的替身；
//   - Kubernetes（混合部署与 PD 分离）位于子包 deploy/kube，以免
//     只需模拟器的使用者引入 client-go。
//
// 子包依赖本包（Endpoint、Deployment），本包不依赖任何子包。
package deploy
