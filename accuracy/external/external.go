package external

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/endpoint"
)

// Config 在 YAML（精度配置的 external[]）中描述一个子进程评测：运行什么命令、带哪些环境变量、
// 结果写在哪里、如何从结果文件读出分数。
//
// command、env 的值与 result_file 支持占位符 {base_url}（主地址，即第一个实例）、
// {base_urls}（全部实例地址，以逗号分隔，单实例时与 {base_url} 相同）、{model}、{out_dir}；
// 子进程还会得到 CIBENCH_BASE_URL、CIBENCH_BASE_URLS、CIBENCH_MODEL、CIBENCH_OUT_DIR 与
// OPENAI_API_KEY（若有）环境变量。能把请求分到多个地址的评测工具用 {base_urls}，
// 只认一个地址的用 {base_url}（那时只有主实例被评测）。
type Config struct {
	// Name 是评测工具名（如 opencompass、mme）。
	Name string `yaml:"name"`
	// Dataset 是写入结果与指标标签的数据集名，默认同 Name。
	Dataset string `yaml:"dataset"`
	// Command 是 argv（不经 shell）。
	Command []string          `yaml:"command"`
	Env     map[string]string `yaml:"env"`
	// Dir 是工作目录，空则为 out_dir。
	Dir string `yaml:"dir"`
	// ResultFile 是结果文件（相对 out_dir 或绝对路径），可含通配符，多个匹配取最后修改的。
	ResultFile string `yaml:"result_file"`
	// Score 说明如何读出分数。
	Score ScoreSpec `yaml:"score"`
	// Scale 把读出的分数乘以该系数（如百分制 → 0.01），0 取 1。
	Scale float64 `yaml:"scale"`
	// Threshold 是门禁阈值（>= 通过，须 > 0）；缺省时必须写 report_only: true。
	Threshold *float64 `yaml:"threshold"`
	// ReportOnly 为 true 时只记录分数、不设门禁（与 Threshold 互斥）。
	ReportOnly bool `yaml:"report_only"`
	// Timeout 是子进程时限，0 表示只受 ctx 约束。
	Timeout time.Duration `yaml:"timeout"`
}

// ScoreSpec 描述分数的位置：format 为 json 时 path 是以 "." 分隔的键/下标路径
// （如 "results.0.accuracy"）；format 为 regex 时 pattern 的第一个捕获组是分数
// （RE2 语法，取第一处匹配）。
type ScoreSpec struct {
	Format  string `yaml:"format"`
	Path    string `yaml:"path"`
	Pattern string `yaml:"pattern"`
}

// Validate 检查必填字段与分数读取方式，错误文本是 "名字: 字段: 原因"（不带哨兵，
// 调用方把它放到自己的字段路径下）。
func (c Config) Validate() error {
	if c.Name == "" {
		return fmt.Errorf("name: required")
	}
	if len(c.Command) == 0 || c.Command[0] == "" {
		return fmt.Errorf("%s: command: required", c.Name)
	}
	if c.ResultFile == "" {
		return fmt.Errorf("%s: result_file: required", c.Name)
	}
	if c.Scale < 0 || c.Timeout < 0 {
		return fmt.Errorf("%s: scale/timeout must be >= 0", c.Name)
	}
	switch c.Score.Format {
	case "json":
		if c.Score.Path == "" {
			return fmt.Errorf("%s: score.path: required for format json", c.Name)
		}
	case "regex":
		re, err := regexp.Compile(c.Score.Pattern)
		if err != nil {
			return fmt.Errorf("%s: score.pattern: %w", c.Name, err)
		}
		if re.NumSubexp() < 1 {
			return fmt.Errorf("%s: score.pattern: %q needs one capture group", c.Name, c.Score.Pattern)
		}
	default:
		return fmt.Errorf("%s: score.format: %q (want json or regex)", c.Name, c.Score.Format)
	}
	return nil
}

// ErrNoScore 表示结果文件中找不到分数。
var ErrNoScore = errors.New("external: score not found in result file")

// ErrInvalid 被 New 的参数错误包装。Config.Validate 只返回 "字段: 原因"，由调用方定位
// （accuracy.Config.Validate 把它记到 external[i] 上，包装 accuracy.ErrConfig）。
var ErrInvalid = errors.New("external: invalid configuration")

// Result 是一次外部评测的结论：读出并乘以 Scale 之后的总分，以及运行的起止时间。
// accuracy.RunStage 把它变成只有总分的 accuracy.EvalResult 并按 threshold 设门禁。
type Result struct {
	// Name 是 Config.Name；Dataset 是 Config.Dataset（缺省同 Name），写进结果与指标标签。
	Name    string
	Dataset string
	// Model 是被测服务的模型名（endpoint.Endpoint.Model）。
	Model string
	// Score 是读出的分数乘以 Scale；ResultFile 是读分数的文件（通配符展开后）。
	Score      float64
	ResultFile string
	Started    time.Time
	Finished   time.Time
}

// Subprocess 运行一个外部评测工具（子进程）并从它的结果文件读出分数。
type Subprocess struct {
	cfg    Config
	outDir string
	logs   io.Writer
}

// New 校验配置并构造子进程评测（错误包装 ErrInvalid）。outDir 是子进程的输出目录（会被创建），
// logs 接收子进程的 stdout/stderr（nil 丢弃）。
func New(cfg Config, outDir string, logs io.Writer) (*Subprocess, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if outDir == "" {
		return nil, fmt.Errorf("%w: %s: out dir required", ErrInvalid, cfg.Name)
	}
	if cfg.Scale == 0 {
		cfg.Scale = 1
	}
	if cfg.Dataset == "" {
		cfg.Dataset = cfg.Name
	}
	if logs == nil {
		logs = io.Discard
	}
	return &Subprocess{cfg: cfg, outDir: outDir, logs: logs}, nil
}

// expand 替换占位符。
func (s *Subprocess) expand(v string, t endpoint.Endpoint) string {
	return strings.NewReplacer("{base_urls}", strings.Join(t.BaseURLs, ","), "{base_url}", t.BaseURL(), "{model}", t.Model, "{out_dir}", s.outDir).Replace(v)
}

// Run 对服务 t 运行命令，等待退出，再从结果文件读出分数。命令非零退出即失败；
// 子进程在 ctx 取消或 Config.Timeout 到期时被终止（之后至多再等 5 秒输出管道）。
// 失败时返回的 Result 仍带着名字、模型与开始时间。
func (s *Subprocess) Run(ctx context.Context, t endpoint.Endpoint) (Result, error) {
	res := Result{Name: s.cfg.Name, Dataset: s.cfg.Dataset, Model: t.Model, Started: time.Now()}
	if err := os.MkdirAll(s.outDir, 0o755); err != nil {
		return res, fmt.Errorf("external: %s: out dir: %w", s.cfg.Name, err)
	}
	if s.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.Timeout)
		defer cancel()
	}
	args := make([]string, len(s.cfg.Command))
	for i, a := range s.cfg.Command {
		args[i] = s.expand(a, t)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = s.outDir
	if s.cfg.Dir != "" {
		cmd.Dir = s.expand(s.cfg.Dir, t)
	}
	env := append(os.Environ(), "CIBENCH_BASE_URL="+t.BaseURL(), "CIBENCH_BASE_URLS="+strings.Join(t.BaseURLs, ","),
		"CIBENCH_MODEL="+t.Model, "CIBENCH_OUT_DIR="+s.outDir)
	if t.APIKey != "" {
		env = append(env, "OPENAI_API_KEY="+t.APIKey)
	}
	keys := make([]string, 0, len(s.cfg.Env))
	for k := range s.cfg.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+s.expand(s.cfg.Env[k], t))
	}
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return res, fmt.Errorf("external: %s: run %s: %w", s.cfg.Name, args[0], err)
	}
	path, err := s.resultPath(t)
	if err != nil {
		return res, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return res, fmt.Errorf("external: %s: result file: %w", s.cfg.Name, err)
	}
	score, err := extractScore(s.cfg.Score, data)
	if err != nil {
		return res, fmt.Errorf("external: %s: %s: %w", s.cfg.Name, path, err)
	}
	res.Score = score * s.cfg.Scale
	res.ResultFile = path
	res.Finished = time.Now()
	return res, nil
}

// resultPath 展开占位符与通配符，多个匹配时取最后修改的文件。
func (s *Subprocess) resultPath(t endpoint.Endpoint) (string, error) {
	p := s.expand(s.cfg.ResultFile, t)
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.outDir, p)
	}
	matches, err := filepath.Glob(p)
	if err != nil {
		return "", fmt.Errorf("external: %s: result_file %q: %w", s.cfg.Name, p, err)
	}
	if len(matches) == 0 {
		return "", fmt.Errorf("external: %s: result_file %q: no such file", s.cfg.Name, p)
	}
	best, bestT := "", time.Time{}
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil && !st.IsDir() && !st.ModTime().Before(bestT) {
			best, bestT = m, st.ModTime()
		}
	}
	if best == "" {
		return "", fmt.Errorf("external: %s: result_file %q: no regular file", s.cfg.Name, p)
	}
	return best, nil
}

// extractScore 按 ScoreSpec 从文件内容中读出分数。
func extractScore(spec ScoreSpec, data []byte) (float64, error) {
	switch spec.Format {
	case "json":
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			return 0, fmt.Errorf("decode json: %w", err)
		}
		for _, key := range strings.Split(spec.Path, ".") {
			switch node := v.(type) {
			case map[string]any:
				next, ok := node[key]
				if !ok {
					return 0, fmt.Errorf("%w: key %q of path %q", ErrNoScore, key, spec.Path)
				}
				v = next
			case []any:
				i, err := strconv.Atoi(key)
				if err != nil || i < 0 || i >= len(node) {
					return 0, fmt.Errorf("%w: index %q of path %q", ErrNoScore, key, spec.Path)
				}
				v = node[i]
			default:
				return 0, fmt.Errorf("%w: %q of path %q is not an object or array", ErrNoScore, key, spec.Path)
			}
		}
		switch x := v.(type) {
		case float64:
			return x, nil
		case string:
			f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
			if err != nil {
				return 0, fmt.Errorf("%w: value %q at %q is not a number", ErrNoScore, x, spec.Path)
			}
			return f, nil
		}
		return 0, fmt.Errorf("%w: value at %q is %T, not a number", ErrNoScore, spec.Path, v)
	case "regex":
		re, err := regexp.Compile(spec.Pattern)
		if err != nil {
			return 0, err
		}
		m := re.FindSubmatch(data)
		if m == nil {
			return 0, fmt.Errorf("%w: pattern %q did not match", ErrNoScore, spec.Pattern)
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(string(m[1])), 64)
		if err != nil {
			return 0, fmt.Errorf("%w: captured %q is not a number", ErrNoScore, m[1])
		}
		return f, nil
	}
	return 0, fmt.Errorf("score.format %q unsupported", spec.Format)
}
