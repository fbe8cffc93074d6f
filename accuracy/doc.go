// Package accuracy 提供与 simple-evals 兼容的在线精度评测。
//
// 提示词、答案抽取正则、抽样（Python random.Random(0) 的 Mersenne Twister）
// 与聚合方式都与 simple-evals 一致，以便结果能与其直接对比；PR 运行使用
// debug 小样本，每日运行使用全量数据。
package accuracy
