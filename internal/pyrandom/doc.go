// Package pyrandom 逐位复刻 CPython 3.11 的 random.Random：Mersenne Twister
// MT19937、以整数为种子的 init_by_array 播种、getrandbits、random()、
// _randbelow、shuffle 与 sample（含小总体的列表池法与大总体的集合拒绝法）。
//
// simple-evals 用 random.Random(0) 选择 GPQA/MMLU/DROP/HumanEval 的子集与
// GPQA 的选项排列；只有抽样序列与 Python 完全一致，Go 与 Python 的评测
// 结果才可以逐题对比。本包不是并发安全的：一个 Random 只能由一个
// goroutine 使用，这与 Python 的单线程调用顺序一致。
package pyrandom
