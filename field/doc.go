// Package field 定义 cibench 所有配置加载器与校验函数共用的一个错误类型 Error：哪个文件、
// 哪一行哪一列、哪个字段路径、什么值、为什么不对。
//
// loadgen.Profile.Validate、functional 与 accuracy 的配置、metrics 的输入校验、matrix 的
// 配置树以及 YAML 严格解码器（internal/yamlstrict）都返回 *field.Error（可能经 errors.Join
// 合并、%w 包装），调用方只用一次 errors.As 就能取出字段与位置，不必解析文本，也不必认识
// 每个包各自的错误类型：
//
//	var fe *field.Error
//	if errors.As(err, &fe) {
//		fmt.Println(fe.File, fe.Line, fe.Field, fe.Value)
//	}
//
// 产生错误的包把自己的哨兵错误放进 Err（loadgen.ErrInvalidProfile、functional.ErrConfig、
// accuracy.ErrConfig、metrics.ErrInvalid、matrix.ErrConfig），于是 errors.Is 照常可用，
// 文本也以包名开头。本包只依赖标准库，是一片叶子：任何包都可以导入它。
package field
