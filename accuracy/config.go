package accuracy

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Config 是 configs/tests/accuracy/{pr,daily}.yaml 的结构（matrix 严格解码到它）。
// 零值加 Defaults 即可用；Validate 给出指明字段与取值的错误。
type Config struct {
	// Evaluator 选择评测工具："simple-evals"（默认，内置）；external 中的条目另行运行。
	Evaluator string `yaml:"evaluator"`
	// Debug 对应参考命令行 --debug（PR 用 true，每日全量用 false）。
	Debug bool `yaml:"debug"`
	// MaxTokens 对应 --max-tokens（PR 128，每日 16384）。
	MaxTokens int `yaml:"max_tokens"`
	// Temperature 对应 --temperature（规格为 0.6）；0 即贪心采样。
	Temperature float64 `yaml:"temperature"`
	// NumThreads 对应 --num-threads（规格为 32）。
	NumThreads int `yaml:"num_threads"`
	// RequestTimeout 是单次请求时限；Retries 是失败重试次数。
	RequestTimeout time.Duration `yaml:"request_timeout"`
	Retries        int           `yaml:"retries"`
	// Timeout 是整个精度阶段的时限（规格：accuracy 90 分钟，每日可放宽）。
	Timeout time.Duration `yaml:"timeout"`
	// DatasetPath 是本地数据目录（参考文件名）；DatasetURL 是下载根地址；
	// CacheDir 是下载缓存目录。三者都为空时使用内置的合成样例数据。
	DatasetPath string `yaml:"dataset_path"`
	DatasetURL  string `yaml:"dataset_url"`
	CacheDir    string `yaml:"cache_dir"`
	// Datasets 是要评测的数据集及其阈值。
	Datasets []DatasetConfig `yaml:"datasets"`
	// External 是 OpenCompass/MME 等外部评测（子进程适配器）。
	External []ExternalConfig `yaml:"external"`
}

// DatasetConfig 是一个数据集的评测设置与门禁阈值。
type DatasetConfig struct {
	// Name 是 gpqa、mmlu、mgsm、drop、humaneval 之一。
	Name string `yaml:"name"`
	// Threshold 是门禁阈值：Metric 的值 >= Threshold 为通过；nil 表示不设门禁。
	Threshold *float64 `yaml:"threshold"`
	// Metric 是参与门禁的指标，默认 "score"（也可用 "f1_score"、"pass@1" 等）。
	Metric string `yaml:"metric"`
	// Examples 与 NRepeats 对应 --examples 与 --n-repeats（0 = 参考默认）。
	Examples int `yaml:"examples"`
	NRepeats int `yaml:"n_repeats"`
}

// DefaultConfig 返回与规格 PR 命令一致的默认值（debug、128 tokens、0.6、32 线程、GPQA）。
func DefaultConfig() Config {
	return Config{
		Evaluator: "simple-evals", Debug: true, MaxTokens: 128, Temperature: 0.6, NumThreads: 32,
		RequestTimeout: 10 * time.Minute, Retries: 3, Timeout: 90 * time.Minute,
		Datasets: []DatasetConfig{{Name: "gpqa"}},
	}
}

// WithDefaults 为未设置的字段填入默认值（不改变显式给出的值）。
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	if c.Evaluator == "" {
		c.Evaluator = d.Evaluator
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = d.MaxTokens
	}
	if c.NumThreads == 0 {
		c.NumThreads = d.NumThreads
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = d.RequestTimeout
	}
	if c.Timeout == 0 {
		c.Timeout = d.Timeout
	}
	for i := range c.Datasets {
		if c.Datasets[i].Metric == "" {
			c.Datasets[i].Metric = "score"
		}
	}
	return c
}

// Validate 检查取值范围与数据集名，错误指明字段路径与取值。
func (c Config) Validate() error {
	if c.Evaluator != "" && c.Evaluator != "simple-evals" {
		return fmt.Errorf("accuracy: config: evaluator: %q is not supported (want simple-evals; use external for others)", c.Evaluator)
	}
	if c.MaxTokens < 0 {
		return fmt.Errorf("accuracy: config: max_tokens: %d must be >= 0", c.MaxTokens)
	}
	if c.Temperature < 0 || c.Temperature > 2 || math.IsNaN(c.Temperature) {
		return fmt.Errorf("accuracy: config: temperature: %v must be in [0, 2]", c.Temperature)
	}
	if c.NumThreads < 0 || c.Retries < 0 || c.RequestTimeout < 0 || c.Timeout < 0 {
		return fmt.Errorf("accuracy: config: num_threads/retries/request_timeout/timeout must be >= 0")
	}
	seen := map[string]bool{}
	for i, d := range c.Datasets {
		if !slices.Contains(Datasets(), d.Name) {
			return fmt.Errorf("accuracy: config: datasets[%d].name: %q: %w (want one of %v)", i, d.Name, ErrUnknownDataset, Datasets())
		}
		if seen[d.Name] {
			return fmt.Errorf("accuracy: config: datasets[%d].name: %q listed twice", i, d.Name)
		}
		seen[d.Name] = true
		if d.Threshold != nil && (math.IsNaN(*d.Threshold) || *d.Threshold < 0) {
			return fmt.Errorf("accuracy: config: datasets[%d].threshold: %v must be >= 0", i, *d.Threshold)
		}
		if d.Examples < 0 || d.NRepeats < 0 {
			return fmt.Errorf("accuracy: config: datasets[%d]: examples=%d n_repeats=%d must be >= 0", i, d.Examples, d.NRepeats)
		}
		if d.Examples > 0 && !c.Debug && d.Name == "gpqa" && d.NRepeats != 1 {
			return fmt.Errorf("accuracy: config: datasets[%d]: gpqa with examples=%d in full mode needs n_repeats: 1 (simple-evals asserts this)", i, d.Examples)
		}
	}
	for i, e := range c.External {
		if err := e.Validate(); err != nil {
			return fmt.Errorf("accuracy: config: external[%d]: %w", i, err)
		}
	}
	return nil
}

// Verdict 是一个数据集相对阈值的判定结果。
type Verdict struct {
	Dataset   string   `json:"dataset"`
	Metric    string   `json:"metric"`
	Value     float64  `json:"value"`
	Threshold *float64 `json:"threshold,omitempty"`
	Pass      bool     `json:"pass"`
	Reason    string   `json:"reason"`
}

// Gate 判定 r 是否达到 d 的阈值。没有阈值时 Pass=true 并说明原因；
// 部分运行（被取消）一律不通过，因为分数不具代表性；指标缺失也不通过。
func Gate(d DatasetConfig, r EvalResult) Verdict {
	metric := d.Metric
	if metric == "" {
		metric = "score"
	}
	v := Verdict{Dataset: r.Dataset, Metric: metric, Threshold: d.Threshold}
	value, ok := r.Score, true
	if metric != "score" {
		value, ok = r.Metrics[metric]
	}
	v.Value = value
	switch {
	case !ok:
		v.Reason = fmt.Sprintf("metric %q not produced by %s", metric, r.Dataset)
	case r.Partial:
		v.Reason = fmt.Sprintf("partial run: %d of %d examples", r.Examples, r.Planned)
	case d.Threshold == nil:
		v.Pass, v.Reason = true, "no threshold configured"
	case math.IsNaN(value):
		v.Reason = fmt.Sprintf("%s is NaN (no examples scored)", metric)
	case value >= *d.Threshold:
		v.Pass, v.Reason = true, fmt.Sprintf("%s %.4f >= threshold %.4f", metric, value, *d.Threshold)
	default:
		v.Reason = fmt.Sprintf("%s %.4f < threshold %.4f", metric, value, *d.Threshold)
	}
	return v
}
