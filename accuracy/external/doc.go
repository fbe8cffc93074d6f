// Package external 运行外部精度评测工具（OpenCompass、MME……）：按 YAML（精度配置的
// external[]，即 Config）启动一个子进程，把被测服务的地址、模型与密钥交给它，等它退出，
// 再按 ScoreSpec（JSON 路径或正则）从结果文件读出总分，得到 Result。
//
// 本包是叶子包，只依赖 endpoint 与标准库：accuracy.RunStage 导入它，把 Result 变成只有
// 总分的 accuracy.EvalResult 并按 threshold 设门禁；其他程序也可以单独使用 New 与 Run。
//
// 占位符与环境变量：command、env 的值、dir 与 result_file 支持 {base_url}（主地址）、
// {base_urls}（全部实例地址，逗号分隔）、{model}、{out_dir}；子进程还得到
// CIBENCH_BASE_URL、CIBENCH_BASE_URLS、CIBENCH_MODEL、CIBENCH_OUT_DIR 与 OPENAI_API_KEY
// （若有）。密钥只经环境变量传递，从不出现在命令行中。命令不经 shell 执行。
//
// 本包不读取调用方进程的参数，不向 stderr 写任何东西：子进程的输出交给调用方给的 io.Writer。
package external
