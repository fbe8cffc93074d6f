package functional

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/field"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/vllm-cibench/cibench/internal/yamlstrict"
)

// ErrConfig 是配置非法时所有错误共同包裹的哨兵，调用方用 errors.Is 判断。
var ErrConfig = errors.New("functional: invalid config")

// Config 是全部功能套件的参数集合（需求 §4（docs/requirements.md）），每个字段对应
// configs/tests/functional/ 下的一个文件：文件的唯一顶层键就是套件名，
// 例如 chat_core.yaml 的内容为 `chat_core: {...}`。
//
// 零值不可直接使用；请从 DefaultConfig 出发，再用 Decode 叠加各个文件，
// 文件中未出现的键保留默认值。
type Config struct {
	ChatCore        ChatCoreConfig        `yaml:"chat_core" json:"chat_core"`
	CompletionsCore CompletionsCoreConfig `yaml:"completions_core" json:"completions_core"`
	Streaming       StreamingConfig       `yaml:"streaming" json:"streaming"`
	ParamsBoundary  ParamsBoundaryConfig  `yaml:"params_boundary" json:"params_boundary"`
	Guided          GuidedConfig          `yaml:"guided" json:"guided"`
	FunctionCall    FunctionCallConfig    `yaml:"function_call" json:"function_call"`
	Reasoning       ReasoningConfig       `yaml:"reasoning" json:"reasoning"`
	Errors          ErrorsConfig          `yaml:"errors" json:"errors"`
	Multimodal      MultimodalConfig      `yaml:"multimodal" json:"multimodal"`
	Embeddings      EmbeddingsConfig      `yaml:"embeddings" json:"embeddings"`
	Rerank          RerankConfig          `yaml:"rerank" json:"rerank"`
	// Request 是全部套件共用的请求参数（request.yaml），不是一个套件。
	Request RequestConfig `yaml:"request" json:"request"`
	// Params 是团队用例的参数：键是用例 ID（如 "acme/lora_swap"），值是原样保存的 YAML 块，
	// 由用例用 T.Params 解码（见 Case.Params）。内置套件的参数在上面各自的字段里，不在这里。
	Params map[string]CaseParams `yaml:"params" json:"-"`
}

// CaseParams 是一个用例的参数块（功能配置的 params.<用例 ID>:），原样保存为 YAML 文本，由用例
// 运行时用 T.Params 严格解码进它自己的结构体。加载配置的代码（LoadConfig、Config.Decode、
// matrix.Load）填写全部字段；在 Go 里构造配置时只写 YAML 即可，例如
// CaseParams{YAML: "max_tokens: 5"}。类型里没有 YAML 库的类型：本包换用或升级 YAML 库不牵连调用方。
type CaseParams struct {
	// YAML 是块的内容（一个映射：参数名 → 取值）。
	YAML string
	// File、Line、Column 是块在配置文件中的位置（运行时的解码错误定位到这里）；在 Go 里构造时可以为空。
	File         string
	Line, Column int
}

// RequestConfig 是每个请求的界限：ci 的功能阶段与 examples/functional -config 用它们
// 设置 Options.RequestTimeout 与 Options.MaxResponseBytes（命令行参数优先）。
type RequestConfig struct {
	// Timeout 是单个请求（含读完响应体或整个流）的超时，默认 120s；必须 > 0。
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
	// MaxResponseBytes 是响应体与单个 SSE 事件的上限，默认 64 MiB；必须 > 0。
	MaxResponseBytes int64 `yaml:"max_response_bytes" json:"max_response_bytes"`
}

// SuiteConfig 是 Config 的别名，供矩阵加载器按“套件配置”的语义引用。
type SuiteConfig = Config

// ChatCoreConfig 是 chat_core 套件的参数。
type ChatCoreConfig struct {
	// Prompt 是基础非流式/流式请求使用的用户消息。
	Prompt string `yaml:"prompt" json:"prompt"`
	// System 是多轮用例中的 system 消息。
	System string `yaml:"system" json:"system"`
	// History 是多轮用例中位于最后一个用户问题之前的 user/assistant 交替历史，
	// 长度必须为偶数（user, assistant, user, assistant…）。
	History []string `yaml:"history" json:"history"`
	// MixedPrompts 是中英文混合的提示，每个生成一个用例。
	MixedPrompts []string `yaml:"mixed_prompts" json:"mixed_prompts"`
	// MaxTokens 是本套件请求的 max_tokens。
	MaxTokens int `yaml:"max_tokens" json:"max_tokens"`
	// N 是 n 用例请求的候选数（>1）。
	N int `yaml:"n" json:"n"`
}

// CompletionsCoreConfig 是 completions_core 套件的参数。
type CompletionsCoreConfig struct {
	Prompt       string   `yaml:"prompt" json:"prompt"`
	BatchPrompts []string `yaml:"batch_prompts" json:"batch_prompts"`
	MaxTokens    int      `yaml:"max_tokens" json:"max_tokens"`
	// DefaultMaxTokens 是不传 max_tokens 时服务端的默认值（vLLM 为 16）。
	DefaultMaxTokens int `yaml:"default_max_tokens" json:"default_max_tokens"`
}

// StreamingConfig 是 streaming 套件的参数。
type StreamingConfig struct {
	Prompt    string `yaml:"prompt" json:"prompt"`
	MaxTokens int    `yaml:"max_tokens" json:"max_tokens"`
	// ChunkSize 是服务端每个 SSE chunk 携带的 token 数（vLLM 的 stream interval、
	// 模拟器的 TokensPerChunk）；0 表示场景未声明，chunk_size 用例跳过。
	ChunkSize int `yaml:"chunk_size" json:"chunk_size"`
}

// ParamsBoundaryConfig 是 params_boundary 套件的参数，取值即需求 §4（docs/requirements.md）的边界集合，
// 每个取值生成一个用例。
type ParamsBoundaryConfig struct {
	Prompt           string    `yaml:"prompt" json:"prompt"`
	MaxTokens        []int     `yaml:"max_tokens" json:"max_tokens"`
	Temperature      []float64 `yaml:"temperature" json:"temperature"`
	TopP             []float64 `yaml:"top_p" json:"top_p"`
	TopK             []int     `yaml:"top_k" json:"top_k"`
	PresencePenalty  []float64 `yaml:"presence_penalty" json:"presence_penalty"`
	FrequencyPenalty []float64 `yaml:"frequency_penalty" json:"frequency_penalty"`
	Seeds            []int64   `yaml:"seeds" json:"seeds"`
	// Stop 是停止串用例的种类：single、multiple、unicode。停止串取自同一请求在
	// 温度 0 下的输出，保证它确实会出现。
	Stop []string `yaml:"stop" json:"stop"`
	// TopLogprobs 是 logprobs 用例的 top_logprobs 取值（0..20）。
	TopLogprobs []int `yaml:"top_logprobs" json:"top_logprobs"`
	// LogitBias 为 true 时生成 logit_bias 用例。
	LogitBias bool `yaml:"logit_bias" json:"logit_bias"`
	// Samples 是判断“采样是否有随机性/是否退化为贪心”时发送的请求数（>=2）。
	Samples int `yaml:"samples" json:"samples"`
	// SampleTokens 是上述采样请求的 max_tokens。
	SampleTokens int `yaml:"sample_tokens" json:"sample_tokens"`
	// MaxTokensBudget 是 max_tokens 边界用例读流的时间预算：在预算内生成完的值核对精确的
	// token 数与 finish_reason，生成不完的只核对"没有提前结束"并报告看到的 token 数。
	// 0 取单请求超时的一半；不超过单请求超时的 90%。
	MaxTokensBudget time.Duration `yaml:"max_tokens_budget" json:"max_tokens_budget"`
}

// GuidedConfig 是 guided 套件的参数。
type GuidedConfig struct {
	JSONObjectPrompt string `yaml:"json_object_prompt" json:"json_object_prompt"`
	JSONSchemaPrompt string `yaml:"json_schema_prompt" json:"json_schema_prompt"`
	// JSONSchema 是 response_format json_schema 与 structured_outputs.json 使用的 Schema。
	JSONSchema map[string]any `yaml:"json_schema" json:"json_schema"`
	// Choices 是 structured_outputs.choice 的候选。
	Choices   []string `yaml:"choices" json:"choices"`
	MaxTokens int      `yaml:"max_tokens" json:"max_tokens"`
}

// ToolConfig 描述一个用于 function_call 套件的函数。
type ToolConfig struct {
	Name        string         `yaml:"name" json:"name"`
	Description string         `yaml:"description" json:"description"`
	Parameters  map[string]any `yaml:"parameters" json:"parameters"`
}

// FunctionCallConfig 是 function_call 套件的参数。
type FunctionCallConfig struct {
	Prompt string `yaml:"prompt" json:"prompt"`
	// Tools 是 1–2 个简单函数；第一个用于单函数用例，全部用于双函数用例。
	Tools []ToolConfig `yaml:"tools" json:"tools"`
	// ToolResult 是后续轮次中 tool 消息的内容。
	ToolResult string `yaml:"tool_result" json:"tool_result"`
	MaxTokens  int    `yaml:"max_tokens" json:"max_tokens"`
}

// ReasoningConfig 是 reasoning 套件的参数。
type ReasoningConfig struct {
	Prompt string `yaml:"prompt" json:"prompt"`
	// Keys 是 message/delta 中推理字段的候选键名，按顺序查找；Target.ReasoningKeys
	// 非空时排在这些键之前。
	Keys []string `yaml:"keys" json:"keys"`
	// AllowEmpty 为 true 时推理字段可以存在但为空（由场景决定）。
	AllowEmpty bool `yaml:"allow_empty" json:"allow_empty"`
	// DisableKwargs 是关闭思考的 chat_template_kwargs（Qwen3: enable_thinking=false）。
	DisableKwargs map[string]any `yaml:"disable_kwargs" json:"disable_kwargs"`
	MaxTokens     int            `yaml:"max_tokens" json:"max_tokens"`
}

// InvalidRequest 是一个应被拒绝的请求：Params 叠加到一个正常请求之上。
type InvalidRequest struct {
	// Name 成为用例 ID 的一部分（errors/invalid/<name>）。
	Name string `yaml:"name" json:"name"`
	// Endpoint 为 chat 或 completions。
	Endpoint string `yaml:"endpoint" json:"endpoint"`
	// Params 覆盖到基础请求上的字段；值为 null 表示删除该字段。
	Params map[string]any `yaml:"params" json:"params"`
	// Status 是期望的 HTTP 状态码（默认 400）。
	Status int `yaml:"status" json:"status"`
	// Requires 是该请求涉及的可选能力（如 function_call），未开启时跳过。
	Requires []Feature `yaml:"requires" json:"requires"`
}

// ErrorsConfig 是 errors 套件的参数。
type ErrorsConfig struct {
	Prompt string `yaml:"prompt" json:"prompt"`
	// MaxModelLen 覆盖服务端公布的 max_model_len；0 表示从 /tokenize 或 /v1/models 读取。
	MaxModelLen int `yaml:"max_model_len" json:"max_model_len"`
	// BoundaryMaxTokens 是上下文边界用例中留给生成的 token 数。
	BoundaryMaxTokens int `yaml:"boundary_max_tokens" json:"boundary_max_tokens"`
	// Invalid 是非法与冲突参数的请求列表。
	Invalid []InvalidRequest `yaml:"invalid" json:"invalid"`
}

// MultimodalConfig 是 multimodal 套件的参数。
type MultimodalConfig struct {
	Prompt string `yaml:"prompt" json:"prompt"`
	// ImageSize 是生成的 PNG 图片边长（像素）。
	ImageSize int `yaml:"image_size" json:"image_size"`
	MaxTokens int `yaml:"max_tokens" json:"max_tokens"`
}

// EmbeddingsConfig 是 embeddings 套件的参数。
type EmbeddingsConfig struct {
	Inputs []string `yaml:"inputs" json:"inputs"`
	// Dim 是期望的向量维度；0 表示只要求一批内维度一致且大于 0。
	Dim int `yaml:"dim" json:"dim"`
	// Dimensions 是 dimensions 参数用例请求的维度；0 表示不生成该用例。
	Dimensions int `yaml:"dimensions" json:"dimensions"`
}

// RerankConfig 是 rerank 套件的参数。
type RerankConfig struct {
	Query     string   `yaml:"query" json:"query"`
	Documents []string `yaml:"documents" json:"documents"`
	TopN      int      `yaml:"top_n" json:"top_n"`
}

// DefaultConfig 返回需求 §4（docs/requirements.md）的默认参数集合，与 configs/tests/functional/*.yaml 一致。
func DefaultConfig() Config {
	return Config{
		ChatCore: ChatCoreConfig{
			Prompt:       "Introduce yourself in one sentence.",
			System:       "You are a concise assistant. 回答要简洁。",
			History:      []string{"What is the capital of France?", "The capital of France is Paris."},
			MixedPrompts: []string{"请用中文和 English 各写一句话介绍 vLLM。", "Translate 你好世界 into English and explain it."},
			MaxTokens:    64,
			N:            2,
		},
		CompletionsCore: CompletionsCoreConfig{
			Prompt:           "The quick brown fox",
			BatchPrompts:     []string{"Once upon a time", "从前有座山"},
			MaxTokens:        32,
			DefaultMaxTokens: 16,
		},
		Streaming: StreamingConfig{
			Prompt:    "Write a short poem about the sea. 写一首关于大海的短诗。",
			MaxTokens: 48,
			ChunkSize: 1,
		},
		ParamsBoundary: ParamsBoundaryConfig{
			Prompt:           "Tell me a story about a robot. 讲一个机器人的故事。",
			MaxTokens:        []int{1, 128, 16384},
			Temperature:      []float64{0.0, 0.6, 1.0},
			TopP:             []float64{0.0, 0.1, 1.0},
			TopK:             []int{1, 50},
			PresencePenalty:  []float64{-2.0, 0.0, 2.0},
			FrequencyPenalty: []float64{-2.0, 0.0, 2.0},
			Seeds:            []int64{0, 42, 1234},
			Stop:             []string{"single", "multiple", "unicode"},
			TopLogprobs:      []int{1, 5},
			LogitBias:        true,
			Samples:          4,
			SampleTokens:     32,
		},
		Guided: GuidedConfig{
			JSONObjectPrompt: "请返回一个含 name/age 的 JSON",
			JSONSchemaPrompt: "Describe a person as JSON with name and age.",
			JSONSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name": map[string]any{"type": "string"},
					"age":  map[string]any{"type": "integer", "minimum": 0, "maximum": 150},
				},
				"required":             []any{"name", "age"},
				"additionalProperties": false,
			},
			Choices:   []string{"positive", "negative", "neutral"},
			MaxTokens: 256,
		},
		FunctionCall: FunctionCallConfig{
			Prompt: "What is the weather like in Beijing today? 北京今天天气怎么样？",
			Tools: []ToolConfig{
				{
					Name:        "get_weather",
					Description: "Get the current weather for a city.",
					Parameters: map[string]any{
						"type": "object",
						"properties": map[string]any{
							"city": map[string]any{"type": "string"},
							"unit": map[string]any{"type": "string", "enum": []any{"celsius", "fahrenheit"}},
						},
						"required": []any{"city"},
					},
				},
				{
					Name:        "get_time",
					Description: "Get the current local time for a city.",
					Parameters: map[string]any{
						"type":       "object",
						"properties": map[string]any{"city": map[string]any{"type": "string"}},
						"required":   []any{"city"},
					},
				},
			},
			ToolResult: `{"city":"Beijing","temperature":22,"unit":"celsius","condition":"sunny"}`,
			MaxTokens:  256,
		},
		Reasoning: ReasoningConfig{
			Prompt:        "9.11 and 9.8, which is greater? 请思考后回答。",
			Keys:          []string{"reasoning_content", "reasoning"},
			AllowEmpty:    false,
			DisableKwargs: map[string]any{"enable_thinking": false},
			MaxTokens:     256,
		},
		Errors: ErrorsConfig{
			Prompt:            "Say hello.",
			BoundaryMaxTokens: 8,
			Invalid: []InvalidRequest{
				{Name: "temperature_negative", Endpoint: "chat", Params: map[string]any{"temperature": -1.0}},
				{Name: "top_p_above_one", Endpoint: "chat", Params: map[string]any{"top_p": 1.5}},
				{Name: "presence_penalty_out_of_range", Endpoint: "chat", Params: map[string]any{"presence_penalty": 2.5}},
				{Name: "frequency_penalty_out_of_range", Endpoint: "chat", Params: map[string]any{"frequency_penalty": -2.5}},
				{Name: "max_tokens_zero", Endpoint: "chat", Params: map[string]any{"max_tokens": 0}},
				{Name: "top_logprobs_above_20", Endpoint: "chat", Params: map[string]any{"logprobs": true, "top_logprobs": 21}},
				{Name: "top_logprobs_without_logprobs", Endpoint: "chat", Params: map[string]any{"top_logprobs": 5}},
				{Name: "stream_options_without_stream", Endpoint: "chat", Params: map[string]any{"stream_options": map[string]any{"include_usage": true}}},
				{Name: "min_tokens_above_max_tokens", Endpoint: "chat", Params: map[string]any{"min_tokens": 10, "max_tokens": 5}},
				{Name: "completions_temperature_negative", Endpoint: "completions", Params: map[string]any{"temperature": -0.5}},
				{Name: "completions_suffix", Endpoint: "completions", Params: map[string]any{"suffix": " the end"}},
				{Name: "tool_choice_without_tools", Endpoint: "chat", Params: map[string]any{"tool_choice": "required"}, Requires: []Feature{FeatureFunctionCall}},
				{Name: "named_tool_not_in_tools", Endpoint: "chat", Requires: []Feature{FeatureFunctionCall}, Params: map[string]any{
					"tools":       []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": map[string]any{"type": "object", "properties": map[string]any{}}}}},
					"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "no_such_tool"}},
				}},
			},
		},
		Multimodal: MultimodalConfig{
			Prompt:    "Describe this image. 描述这张图片。",
			ImageSize: 16,
			MaxTokens: 64,
		},
		Embeddings: EmbeddingsConfig{
			Inputs:     []string{"vLLM is a fast inference engine.", "北京是中国的首都。", "The cat sat on the mat."},
			Dim:        0,
			Dimensions: 256,
		},
		Rerank: RerankConfig{
			Query:     "What is the capital of China?",
			Documents: []string{"Beijing is the capital of China.", "The giant panda lives in Sichuan.", "巴黎是法国的首都。", "Shanghai is a large city in China."},
			TopN:      2,
		},
		Request: RequestConfig{Timeout: 120 * time.Second, MaxResponseBytes: DefaultMaxResponseBytes},
	}
}

// Decode 把一个 YAML 文档严格解码并叠加到 c 上：未知键、类型错误都会报错，
// 文档中未出现的键保持原值。name 用于错误信息（通常是文件名）。
// 解码后会用 feats（nil 取 DefaultFeatures）校验整个配置。
func (c *Config) Decode(name string, r io.Reader, feats *Features) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("functional: decode %s: %w", name, err)
	}
	next := c.clone()
	// 与矩阵、档位、providers.yaml 同一个严格解码器："name:行:列: 字段路径: 原因"。
	d := yamlstrict.NewDecoder(name)
	d.Custom = captureParams
	if err := d.Unmarshal(data, &next); err != nil && !errors.Is(err, yamlstrict.ErrEmpty) {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := next.Validate(feats); err != nil {
		var doc yaml.Node
		_ = yaml.Unmarshal(data, &doc)
		located := false
		for _, e := range flatten(err) {
			var fe *field.Error
			if errors.As(e, &fe) {
				if n := nodeOf(&doc, fe.Field); n != nil {
					fe.File, fe.Line, fe.Col, located = name, n.Line, n.Column, true
				}
			}
		}
		if located {
			return err
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	*c = next
	return nil
}

// flatten 展开 errors.Join 得到的各个错误。
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// nodeOf 返回 path（如 "params_boundary.top_p[1]"）在 YAML 文档中的节点（行列由它给出）；
// 找不到（取值来自默认值）时为 nil。
func nodeOf(doc *yaml.Node, path string) *yaml.Node {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, seg := range strings.Split(path, ".") {
		key, idx := seg, -1
		if i := strings.IndexByte(seg, '['); i >= 0 && strings.HasSuffix(seg, "]") {
			if v, err := strconv.Atoi(seg[i+1 : len(seg)-1]); err == nil {
				key, idx = seg[:i], v
			}
		}
		next := (*yaml.Node)(nil)
		if n.Kind == yaml.MappingNode {
			for j := 0; j+1 < len(n.Content); j += 2 {
				if n.Content[j].Value == key {
					next = n.Content[j+1]
				}
			}
		}
		if next == nil {
			return nil
		}
		n = next
		if idx >= 0 {
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return nil
			}
			n = n.Content[idx]
		}
	}
	return n
}

// LoadConfigDir 与 LoadConfig 相同，但读取目录 dir：目录不存在、不是目录或其中没有
// *.yaml 都是写明路径的错误——否则一个拼错的 -config 会悄悄使用内置默认值。
// 错误中的文件名是 dir 下的路径。feats 同 LoadConfig。
func LoadConfigDir(dir string, feats *Features) (Config, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return Config{}, fmt.Errorf("%w: config dir %s: %w", ErrConfig, dir, err)
	}
	if !st.IsDir() {
		return Config{}, fmt.Errorf("%w: config dir %s is not a directory", ErrConfig, dir)
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(names) == 0 {
		return Config{}, fmt.Errorf("%w: config dir %s holds no *.yaml file", ErrConfig, dir)
	}
	return loadConfig(os.DirFS(dir), func(n string) string { return filepath.Join(dir, n) }, feats)
}

// LoadConfig 从 DefaultConfig 出发，按文件名顺序叠加 fsys 根目录下的全部 *.yaml
// （即 configs/tests/functional/ 的内容），返回校验后的配置。根目录不可读是错误。
// 矩阵加载器也可以对每个文件的内容直接调用 Config.Decode。feats 是 requires 可以
// 引用的能力登记表（nil 取 DefaultFeatures）：没人登记的能力名仍是错误。
func LoadConfig(fsys fs.FS, feats *Features) (Config, error) {
	return loadConfig(fsys, func(n string) string { return n }, feats)
}

// loadConfig 是 LoadConfig 的实现；display 把文件名变成错误中显示的路径。
func loadConfig(fsys fs.FS, display func(string) string, feats *Features) (Config, error) {
	cfg := DefaultConfig()
	if _, err := fs.ReadDir(fsys, "."); err != nil {
		return Config{}, fmt.Errorf("%w: load config: %w", ErrConfig, err)
	}
	names, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		return Config{}, fmt.Errorf("functional: load config: %w", err)
	}
	slices.Sort(names)
	for _, n := range names {
		f, err := fsys.Open(n)
		if err != nil {
			return Config{}, fmt.Errorf("functional: load config: %w", err)
		}
		err = cfg.Decode(display(n), f, feats)
		_ = f.Close()
		if err != nil {
			return Config{}, err
		}
	}
	return cfg, nil
}

// clone 通过 JSON 往返得到深拷贝，避免 Decode 失败时半途修改调用方的配置
// （yaml.v3 会就地修改 map 与切片）；不经 JSON 的 Params 另行复制。
func (c Config) clone() Config {
	b, err := json.Marshal(c)
	if err != nil {
		return c
	}
	var out Config
	if json.Unmarshal(b, &out) != nil {
		return c
	}
	// Params 不经 JSON（标签是 "-"）：单独复制。CaseParams 只含字符串与整数，复制映射即深拷贝。
	out.Params = maps.Clone(c.Params)
	return out
}

// Validate 检查配置中会让用例无法给出有意义结论的取值，错误信息写明字段与值；
// 返回的错误由 *field.Error 组成（errors.As 可取出；Field 是定位到元素的路径，如
// "params_boundary.top_p[1]"，errors.Is(err, ErrConfig) 成立）。feats 是 invalid_request 用例的
// requires 可以引用的能力登记表（nil 取 DefaultFeatures）：YAML 仍拒绝没人登记的名字。
func (c Config) Validate(feats *Features) error {
	ck := &configCheck{}
	c.validateCore(ck)
	c.ParamsBoundary.validate(ck)
	c.validateStructured(ck)
	c.Errors.validate(ck, feats.orDefault())
	c.validateOther(ck)
	return errors.Join(ck.errs...)
}

// configCheck 收集 Validate 的字段错误（*field.Error，包装 ErrConfig），按检查的顺序排列。
type configCheck struct{ errs []error }

// bad 记录字段 path 的取值 v 不合法及原因。
func (ck *configCheck) bad(path string, v any, why string) {
	ck.errs = append(ck.errs, field.New(ErrConfig, path, v, why))
}

// positive 在 v <= 0 时记录错误。
func (ck *configCheck) positive(path string, v int) {
	if v <= 0 {
		ck.bad(path, v, "must be > 0")
	}
}

// dups 对列表中重复出现的取值（已格式化成用例 ID 里的写法）逐个记录错误：每个取值生成一个用例，
// 重复的取值会生成两个同 ID 的用例。
func (ck *configCheck) dups(path string, vals []string) {
	seen := map[string]bool{}
	for i, v := range vals {
		if seen[v] {
			ck.bad(elemPath(path, i), v, "duplicate value (each value becomes one case)")
		}
		seen[v] = true
	}
}

// elemPath 返回列表元素的字段路径，如 "params_boundary.top_p[1]"。
func elemPath(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// formatEach 把 n 个取值逐个格式化（f(i) 是第 i 个的写法）。
func formatEach(n int, f func(i int) string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// validateCore 检查 chat_core、completions_core 与 streaming。
func (c Config) validateCore(ck *configCheck) {
	ck.positive("chat_core.max_tokens", c.ChatCore.MaxTokens)
	if c.ChatCore.N < 2 {
		ck.bad("chat_core.n", c.ChatCore.N, "must be >= 2")
	}
	if len(c.ChatCore.History)%2 != 0 {
		ck.bad("chat_core.history", len(c.ChatCore.History), "needs user/assistant pairs (even length)")
	}
	ck.positive("completions_core.max_tokens", c.CompletionsCore.MaxTokens)
	ck.positive("completions_core.default_max_tokens", c.CompletionsCore.DefaultMaxTokens)
	if len(c.CompletionsCore.BatchPrompts) < 2 {
		ck.bad("completions_core.batch_prompts", len(c.CompletionsCore.BatchPrompts), "needs at least 2 prompts")
	}
	ck.positive("streaming.max_tokens", c.Streaming.MaxTokens)
	if c.Streaming.ChunkSize < 0 {
		ck.bad("streaming.chunk_size", c.Streaming.ChunkSize, "must be >= 0")
	}
}

// validate 检查 params_boundary：每个取值在服务端接受的范围内、不重复（每个取值一个用例）。
func (p ParamsBoundaryConfig) validate(ck *configCheck) {
	for i, v := range p.MaxTokens {
		if v <= 0 {
			ck.bad(elemPath("params_boundary.max_tokens", i), v, "must be > 0")
		}
	}
	for i, v := range p.Temperature {
		if v < 0 || v > 2 {
			ck.bad(elemPath("params_boundary.temperature", i), v, "must be in [0, 2]")
		}
	}
	for i, v := range p.TopP {
		if v < 0 || v > 1 {
			ck.bad(elemPath("params_boundary.top_p", i), v, "must be in [0, 1]")
		}
	}
	for i, v := range p.TopK {
		if v < 1 {
			ck.bad(elemPath("params_boundary.top_k", i), v, "must be >= 1")
		}
	}
	for _, pen := range []struct {
		field string
		vals  []float64
	}{{"params_boundary.presence_penalty", p.PresencePenalty}, {"params_boundary.frequency_penalty", p.FrequencyPenalty}} {
		for i, v := range pen.vals {
			if v < -2 || v > 2 {
				ck.bad(elemPath(pen.field, i), v, "must be in [-2, 2]")
			}
		}
	}
	for i, s := range p.Stop {
		if s != "single" && s != "multiple" && s != "unicode" {
			ck.bad(elemPath("params_boundary.stop", i), s, "must be single, multiple or unicode")
		}
	}
	for i, v := range p.TopLogprobs {
		if v < 0 || v > 20 {
			ck.bad(elemPath("params_boundary.top_logprobs", i), v, "must be in [0, 20]")
		}
	}
	ck.dups("params_boundary.max_tokens", formatEach(len(p.MaxTokens), func(i int) string { return fmt.Sprint(p.MaxTokens[i]) }))
	ck.dups("params_boundary.temperature", formatEach(len(p.Temperature), func(i int) string { return describe(p.Temperature[i]) }))
	ck.dups("params_boundary.top_p", formatEach(len(p.TopP), func(i int) string { return describe(p.TopP[i]) }))
	ck.dups("params_boundary.top_k", formatEach(len(p.TopK), func(i int) string { return fmt.Sprint(p.TopK[i]) }))
	ck.dups("params_boundary.presence_penalty", formatEach(len(p.PresencePenalty), func(i int) string { return describe(p.PresencePenalty[i]) }))
	ck.dups("params_boundary.frequency_penalty", formatEach(len(p.FrequencyPenalty), func(i int) string { return describe(p.FrequencyPenalty[i]) }))
	ck.dups("params_boundary.seeds", formatEach(len(p.Seeds), func(i int) string { return fmt.Sprint(p.Seeds[i]) }))
	ck.dups("params_boundary.stop", p.Stop)
	ck.dups("params_boundary.top_logprobs", formatEach(len(p.TopLogprobs), func(i int) string { return fmt.Sprint(p.TopLogprobs[i]) }))
	if p.Samples < 2 {
		ck.bad("params_boundary.samples", p.Samples, "must be >= 2")
	}
	ck.positive("params_boundary.sample_tokens", p.SampleTokens)
}

// validateStructured 检查 guided、function_call 与 reasoning：Schema 能编译、工具有名字。
func (c Config) validateStructured(ck *configCheck) {
	if _, err := compileSchema(c.Guided.JSONSchema); err != nil {
		ck.bad("guided.json_schema", "…", err.Error())
	}
	ck.positive("guided.max_tokens", c.Guided.MaxTokens)
	if n := len(c.FunctionCall.Tools); n < 1 || n > 2 {
		ck.bad("function_call.tools", n, "needs 1 or 2 tools")
	}
	for i, tl := range c.FunctionCall.Tools {
		if tl.Name == "" {
			ck.bad(fmt.Sprintf("function_call.tools[%d].name", i), `""`, "must not be empty")
		}
		if _, err := compileSchema(tl.Parameters); err != nil {
			ck.bad(fmt.Sprintf("function_call.tools[%d].parameters", i), "…", err.Error())
		}
	}
	ck.positive("function_call.max_tokens", c.FunctionCall.MaxTokens)
	if len(c.Reasoning.Keys) == 0 {
		ck.bad("reasoning.keys", "[]", "needs at least one key")
	}
	ck.positive("reasoning.max_tokens", c.Reasoning.MaxTokens)
}

// validate 检查 errors 套件：边界值，以及每个 invalid_request 用例的名字、端点、状态码与
// requires（必须是 feats 中登记的能力）。
func (e ErrorsConfig) validate(ck *configCheck, feats *Features) {
	ck.positive("errors.boundary_max_tokens", e.BoundaryMaxTokens)
	if e.MaxModelLen < 0 {
		ck.bad("errors.max_model_len", e.MaxModelLen, "must be >= 0")
	}
	seen := map[string]bool{}
	for i, inv := range e.Invalid {
		f := fmt.Sprintf("errors.invalid[%d]", i)
		if inv.Name == "" || strings.ContainsAny(inv.Name, " /") {
			ck.bad(f+".name", inv.Name, "must be a non-empty word without spaces or slashes")
		}
		if seen[inv.Name] && inv.Name != "" {
			ck.bad(f+".name", inv.Name, "duplicate")
		}
		seen[inv.Name] = true
		if inv.Endpoint != "chat" && inv.Endpoint != "completions" {
			ck.bad(f+".endpoint", inv.Endpoint, "must be chat or completions")
		}
		if inv.Status != 0 && (inv.Status < 400 || inv.Status > 499) {
			ck.bad(f+".status", inv.Status, "must be a 4xx code")
		}
		for j, r := range inv.Requires {
			if err := feats.Check(r); err != nil {
				ck.bad(elemPath(f+".requires", j), r, err.Error())
			}
		}
	}
}

// validateOther 检查 multimodal、embeddings、rerank 与 request。
func (c Config) validateOther(ck *configCheck) {
	ck.positive("multimodal.image_size", c.Multimodal.ImageSize)
	ck.positive("multimodal.max_tokens", c.Multimodal.MaxTokens)
	if len(c.Embeddings.Inputs) < 2 {
		ck.bad("embeddings.inputs", len(c.Embeddings.Inputs), "needs at least 2 inputs")
	}
	if c.Embeddings.Dim < 0 {
		ck.bad("embeddings.dim", c.Embeddings.Dim, "must be >= 0")
	}
	if c.Embeddings.Dimensions < 0 {
		ck.bad("embeddings.dimensions", c.Embeddings.Dimensions, "must be >= 0")
	}
	if len(c.Rerank.Documents) < 2 {
		ck.bad("rerank.documents", len(c.Rerank.Documents), "needs at least 2 documents")
	}
	if c.Rerank.TopN < 1 || c.Rerank.TopN > len(c.Rerank.Documents) {
		ck.bad("rerank.top_n", c.Rerank.TopN, "must be in [1, len(documents)]")
	}
	if c.Request.Timeout <= 0 {
		ck.bad("request.timeout", c.Request.Timeout, "must be > 0 (a Go duration such as 120s)")
	}
	if c.Request.MaxResponseBytes <= 0 {
		ck.bad("request.max_response_bytes", c.Request.MaxResponseBytes, "must be > 0")
	}
}

// compileSchema 把配置里的 JSON Schema 编译成校验器；nil Schema 视为错误，
// 因为没有 Schema 的 json_schema 用例无法断言任何东西。
func compileSchema(s map[string]any) (*jsonschema.Schema, error) {
	if len(s) == 0 {
		return nil, errors.New("schema is empty")
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	comp := jsonschema.NewCompiler()
	if err := comp.AddResource("mem://schema.json", doc); err != nil {
		return nil, err
	}
	return comp.Compile("mem://schema.json")
}
