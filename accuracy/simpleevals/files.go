package simpleevals

// 参考实现使用的数据文件名；本地目录与 URL 缓存都用这些名字。
const (
	FileGPQADiamond = "gpqa_diamond.csv"
	FileMMLU        = "mmlu.csv"
	FileDROPTrain   = "drop_v0_train.jsonl.gz"
	FileDROPDev     = "drop_v0_dev.jsonl.gz"
	FileHumanEval   = "HumanEval.jsonl.gz"
)

// FileMGSM 返回某语言 MGSM 数据的文件名（mgsm_<lang>.tsv）。
func FileMGSM(lang string) string { return "mgsm_" + lang + ".tsv" }

// DefaultBaseURL 是 simple-evals 下载数据的公共地址。HumanEval 不在这里，
// 参考实现从 human-eval 包内读取，其上游地址见 DefaultURLs。
const DefaultBaseURL = "https://openaipublic.blob.core.windows.net/simple-evals/"

// DefaultURLs 返回不在 DefaultBaseURL 下的文件的上游地址（每次返回新 map）。
func DefaultURLs() map[string]string {
	return map[string]string{FileHumanEval: "https://github.com/openai/human-eval/raw/master/data/HumanEval.jsonl.gz"}
}
