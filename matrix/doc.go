// Package matrix 加载并校验 configs/ 配置树，把它变成一次运行的计划。
//
// 配置树布局（需求 §3（docs/requirements.md））：
//
//	scenarios/*.yaml            被测场景：mode、模型、量化、能力、部署参数
//	tests/functional/*.yaml     功能套件的参数与边界集合（functional 包解释）
//	tests/perf/profiles/*.yaml  性能档位 pr / daily（loadgen 包解释）
//	tests/accuracy/*.yaml       精度配置 pr（debug）/ daily（全量）（accuracy 包解释）
//	matrix.yaml                 场景 → {pr, daily} → 各阶段开关与用例子集
//	providers.yaml              acs-bench 格式的 provider 列表
//
// Load 严格解码：未知字段、类型不符、非法枚举、重复键、缺失引用都是错误，
// 每条错误都指明 "文件:行:列"、字段路径和出错的值，并一次报告全部问题。
// 各阶段自己的配置以 Block 形式保存，由对应的包用同样严格的规则解码。
//
// 密钥永远不写进 YAML：场景只通过 api_key_env 给出环境变量名。
package matrix
