// Package accuracy 是在线精度评测的核心：评测的形状、运行器、登记表与 CI 精度阶段。
// 一个团队加一个评测只需要这个包。
//
// 核心由四部分组成：
//   - 评测的形状：Eval（Name、Examples、Score）描述一个数据集，Example/Message 是发给模型的
//     样本，SingleResult 是一个样本的评分，EvalResult 是聚合结果；Sampler 是被测模型
//     （ChatSampler 走任意 OpenAI 兼容的 /v1/chat/completions，多实例轮询、有界重试）。
//   - 运行器：Run 以固定并发把 Sampler 与 Eval 连起来，按 simple-evals 的规则聚合（numpy 的
//     成对求和、总体标准差、键顺序）；WriteJSON 与 simple-evals 的结果 JSON 逐字节相同，
//     WriteHTML/WriteJSONL 供审阅与 Rescore 离线重评分。
//   - 登记表：Registry 把 datasets[].name 映射到构造函数（EvalFactory），还带默认数据来源
//     （Data：下载地址与内置样例）。NewRegistry 是空表；本包不导入任何数据集。
//   - 精度阶段：Config 是 configs/tests/accuracy/*.yaml 的结构，Validate 在运行之前指出写错的
//     字段；RunStage 构造采样器与数据来源（Source：fs.FS 目录或带磁盘缓存的 HTTP，记录每个
//     文件的 sha256），逐个运行登记的评测与外部评测（external 包），写结果文件，用 Gate 判定。
//
// 拆分的取舍（数据集在哪里）：OpenAI simple-evals 的五个数据集（GPQA、MMLU、MGSM、DROP、
// HumanEval）与它们的提示词、答案抽取、合成样例数据在子包 accuracy/simpleevals，它导入本包、
// 实现 Eval，并拥有内置登记表 simpleevals.Registry()；外部评测工具（OpenCompass、MME 的子进程
// 适配器）在 accuracy/external，一个只依赖 endpoint 的叶子包。于是依赖只有一个方向：
// simpleevals → accuracy → external，没有环，也没有两份需要手工同步的类型。代价是调用方
// 必须显式给出登记表（StageOptions.Evals 为 nil 是配置错误，Config.Validate(nil) 什么名字都
// 不认）：要内置评测就传 simpleevals.Registry()，只跑自己的评测就从 NewRegistry() 出发——
// 这样的程序不链接五个数据集（见 docs/accuracy.md 的 go list -deps 对比）。参考驱动与 matrix
// 在没给登记表时取 simpleevals.Registry()。
//
// 加一个评测：实现 Eval，在登记表上 Register(name, factory)（可带 WithCheck 的配置校验与
// WithMetricMax 的指标上限），把同一张表交给 matrix.WithEvals 与 StageOptions.Evals（或
// 参考驱动的 Options.Evals）。构造函数返回包装 ErrSkip 的错误时该数据集被跳过并写明原因。
//
// 被测服务（Target、ChatConfig）嵌入 endpoint.Endpoint，约定见 endpoint 包文档；
// 多实例部署的全部 BaseURLs 都被评测（轮询，重试换到下一个实例，见 ChatSampler）。
//
// 本包不读取环境变量或命令行参数，不向 stderr 写任何东西，没有全局登记表。
package accuracy
