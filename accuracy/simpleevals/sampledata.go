package simpleevals

import (
	"embed"
	"github.com/vllm-cibench/cibench/accuracy"
	"io/fs"
)

// sampleFiles 内嵌合成样例数据（见 sampledata/gen_sampledata.py），文件名与格式同参考实现。
//
//go:embed sampledata/*.csv sampledata/*.tsv sampledata/*.gz
var sampleFiles embed.FS

// SampleData 返回内置的合成样例数据集（不是任何真实基准的数据），只供对进程内
// 模拟器的端到端演示与测试（精度配置 dataset: builtin-sample，Registry 把它放进
// accuracy.Data.Sample）：GPQA 12 题、MMLU 16 题、MGSM 每语言 4 题、
// DROP 开发集 12 条/训练集 6 条、HumanEval 12 题。
func SampleData() accuracy.Source {
	sub, _ := fs.Sub(sampleFiles, "sampledata") // 目录名是常量，不会出错
	return accuracy.BuiltinSource(sub, "accuracy/simpleevals/sampledata")
}
