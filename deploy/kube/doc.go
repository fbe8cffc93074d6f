// Package kube 把用户提供的 Kubernetes YAML 部署成被测服务：混合部署（一个角色）
// 或 PD 分离部署（scheduler/proxy、prefill、decode 等多个角色），经 NodePort 访问。
//
// 流程（Deployer.Deploy）：
//  1. 构造时解析全部清单（多文档 YAML/JSON，List 展开），写错的文档以
//     *ManifestError 报出文件名与文档序号；
//  2. 通过 discovery REST mapper + 动态客户端做服务端 apply（Force，字段管理者
//     cibench）：CRD 与 Namespace 最先，CRD 等到 Established；遇到“无此类型”
//     时重置映射并重试；命名空间级对象缺省放进配置的命名空间；
//  3. 按角色顺序等待就绪：Deployment、StatefulSet、DaemonSet、LeaderWorkerSet
//     （Available 条件且 readyReplicas 达标）、Volcano Job（Running 且不少于
//     minAvailable）、Pod；其他类型用配置的 pod_selector（Pod 全部 Ready）；
//  4. 入口 Service 的命名端口（默认 http）→ NodePort（没有时用 node_port 兜底），
//     节点地址取 InternalIP，否则 ExternalIP → http://<NodeIP>:<NodePort>/v1；
//  5. 等待 /health 返回 200。总时长受 startup_timeout（默认 20 分钟）限制。
//
// 任何一步失败，Deploy 都会先执行 Teardown 再返回错误。Teardown（幂等）先把 Pod
// 日志（每个容器，重启过的还有 previous）、Pod 状态与命名空间事件归档到 log_dir，
// 再按 apply 的逆序前台级联删除，并在 delete_timeout 内等待对象消失；删不掉的
// 以 *TeardownError 列出。CRD 默认保留。
//
// 只有本包依赖 client-go；只用模拟器的使用者不会引入它。
package kube
