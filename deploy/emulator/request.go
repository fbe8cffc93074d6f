package emulator

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	_ "image/gif"  // 注册 GIF 解码器，用于按图片尺寸计算图片 token
	_ "image/jpeg" // 注册 JPEG 解码器
	_ "image/png"  // 注册 PNG 解码器
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/vllm-cibench/cibench/internal/tokenize"
)

// emuStreamOptions 对应 stream_options。
type emuStreamOptions struct {
	IncludeUsage         *bool `json:"include_usage"`
	ContinuousUsageStats *bool `json:"continuous_usage_stats"`
}

// emuResponseFormat 对应 response_format。
type emuResponseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict *bool           `json:"strict"`
	} `json:"json_schema"`
}

// emuStructured 对应 vLLM 的 structured_outputs（json/regex/choice/grammar）。
type emuStructured struct {
	JSON    json.RawMessage `json:"json"`
	Regex   *string         `json:"regex"`
	Choice  []string        `json:"choice"`
	Grammar *string         `json:"grammar"`
}

// emuCommon 是 chat 与 completions 共有的请求字段（含 vLLM 的扩展采样参数）。
type emuCommon struct {
	Model                  string             `json:"model"`
	Stream                 bool               `json:"stream"`
	StreamOptions          *emuStreamOptions  `json:"stream_options"`
	MaxTokens              *int               `json:"max_tokens"`
	Temperature            *float64           `json:"temperature"`
	TopP                   *float64           `json:"top_p"`
	TopK                   *int               `json:"top_k"`
	MinP                   *float64           `json:"min_p"`
	PresencePenalty        *float64           `json:"presence_penalty"`
	FrequencyPenalty       *float64           `json:"frequency_penalty"`
	RepetitionPenalty      *float64           `json:"repetition_penalty"`
	Seed                   *int64             `json:"seed"`
	N                      *int               `json:"n"`
	Stop                   json.RawMessage    `json:"stop"`
	StopTokenIDs           []int              `json:"stop_token_ids"`
	IgnoreEOS              bool               `json:"ignore_eos"`
	MinTokens              *int               `json:"min_tokens"`
	LogitBias              map[string]float64 `json:"logit_bias"`
	IncludeStopStrInOutput bool               `json:"include_stop_str_in_output"`
	ResponseFormat         *emuResponseFormat `json:"response_format"`
	StructuredOutputs      *emuStructured     `json:"structured_outputs"`
	GuidedJSON             json.RawMessage    `json:"guided_json"`
	GuidedRegex            *string            `json:"guided_regex"`
	GuidedChoice           []string           `json:"guided_choice"`
	Echo                   bool               `json:"echo"`
	KVTransferParams       *emuKVTransfer     `json:"kv_transfer_params"`
}

// emuTool 是 tools 数组的一项。
type emuTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// emuChatRequest 是 /v1/chat/completions 的请求体；未知字段被忽略（与 vLLM 一致）。
type emuChatRequest struct {
	emuCommon
	Messages            []emuMessage    `json:"messages"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Logprobs            *bool           `json:"logprobs"`
	TopLogprobs         *int            `json:"top_logprobs"`
	Tools               []emuTool       `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ChatTemplateKwargs  map[string]any  `json:"chat_template_kwargs"`
	IncludeReasoning    *bool           `json:"include_reasoning"`
}

// emuCompletionRequest 是 /v1/completions 的请求体。
type emuCompletionRequest struct {
	emuCommon
	Prompt   json.RawMessage `json:"prompt"`
	Logprobs *int            `json:"logprobs"`
	Suffix   *string         `json:"suffix"`
}

// emuMessage 是一条 chat 消息；content 可以是字符串、null 或内容片段数组。
type emuMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name,omitempty"`
	ToolCalls []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// emuPrompt 是解析后的对话：用于计数的文本段、图片 token 数、最后一条
// user 消息与最后一条消息的角色（决定是否在工具结果之后用正文回答）。
type emuPrompt struct {
	texts       []string
	imageTokens int
	lastUser    string
	lastRole    string
	all         string // 全部文本拼接，作为确定性生成的键
}

// tokens 返回提示 token 数：文本按 internal/tokenize 计数，加上图片 token；
// 刻意不计 chat 模板开销，使 loadgen 按内容构造的定长提示与 usage 完全一致。
func (p *emuPrompt) tokens() int {
	n := p.imageTokens
	for _, t := range p.texts {
		n += tokenize.Count(t)
	}
	return n
}

// parseMessages 解析 messages，校验角色与内容片段。
func parseMessages(msgs []emuMessage, lenientImages bool) (*emuPrompt, *emuErr) {
	if len(msgs) == 0 {
		return nil, emuBadRequest("messages", "messages must be a non-empty list")
	}
	p := &emuPrompt{}
	var all strings.Builder
	for i, m := range msgs {
		switch m.Role {
		case "system", "user", "assistant", "tool", "developer":
		default:
			return nil, emuBadRequest("messages", fmt.Sprintf("messages[%d].role: unsupported role %q", i, m.Role))
		}
		var text string
		c := bytes.TrimSpace(m.Content)
		switch {
		case len(c) == 0 || string(c) == "null":
		case c[0] == '"':
			if err := json.Unmarshal(c, &text); err != nil {
				return nil, emuBadRequest("messages", fmt.Sprintf("messages[%d].content: %v", i, err))
			}
			p.texts = append(p.texts, text)
		case c[0] == '[':
			var parts []struct {
				Type     string `json:"type"`
				Text     string `json:"text"`
				ImageURL *struct {
					URL string `json:"url"`
				} `json:"image_url"`
			}
			if err := json.Unmarshal(c, &parts); err != nil {
				return nil, emuBadRequest("messages", fmt.Sprintf("messages[%d].content: %v", i, err))
			}
			var sb strings.Builder
			for j, part := range parts {
				switch part.Type {
				case "text":
					p.texts = append(p.texts, part.Text)
					sb.WriteString(part.Text)
				case "image_url":
					if part.ImageURL == nil {
						return nil, emuBadRequest("messages", fmt.Sprintf("messages[%d].content[%d].image_url is required", i, j))
					}
					n, err := emuImageTokens(part.ImageURL.URL)
					if err != nil && lenientImages {
						n, err = emuRemoteImageTokens, nil
					}
					if err != nil {
						return nil, emuBadRequest("messages", fmt.Sprintf("messages[%d].content[%d].image_url: %v", i, j, err))
					}
					p.imageTokens += n
					sb.WriteString("<image:" + strconv.Itoa(n) + ">")
				default:
					return nil, emuBadRequest("messages", fmt.Sprintf("messages[%d].content[%d]: unsupported content part type %q", i, j, part.Type))
				}
			}
			text = sb.String()
		default:
			return nil, emuBadRequest("messages", fmt.Sprintf("messages[%d].content must be a string or a list of content parts", i))
		}
		for _, tc := range m.ToolCalls {
			p.texts = append(p.texts, tc.Function.Arguments)
			text += tc.Function.Name + tc.Function.Arguments
		}
		if m.Role == "user" {
			p.lastUser = text
		}
		p.lastRole = m.Role
		all.WriteString(m.Role)
		all.WriteByte(0)
		all.WriteString(text)
		all.WriteByte(0)
	}
	p.all = all.String()
	return p, nil
}

// emuImagePatch 是图片 token 的边长（像素）：每 28×28 像素一个 token，
// 与 Qwen2-VL/Qwen3-VL 合并 2×2 个 14 像素 patch 的规则一致。
const emuImagePatch = 28

// emuRemoteImageTokens 是非 data URL 图片的 token 数：模拟器不下载远程图片，按 448×448 计。
const emuRemoteImageTokens = 256

// emuImageTokens 按文档化规则计算一张图片的 token 数：data URL 解码图片头取得宽高，
// token = ceil(w/28)·ceil(h/28)（至少 1）；http(s) URL 固定为 256。
func emuImageTokens(url string) (int, error) {
	if strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://") {
		return emuRemoteImageTokens, nil
	}
	if !strings.HasPrefix(url, "data:") {
		return 0, fmt.Errorf("unsupported URL scheme in %.32q", url)
	}
	comma := strings.IndexByte(url, ',')
	if comma < 0 || !strings.HasSuffix(url[:comma], ";base64") {
		return 0, fmt.Errorf("data URL must be base64 encoded")
	}
	raw, err := base64.StdEncoding.DecodeString(url[comma+1:])
	if err != nil {
		return 0, fmt.Errorf("invalid base64 image data: %w", err)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(raw))
	if err != nil {
		return 0, fmt.Errorf("cannot decode image: %w", err)
	}
	n := ((cfg.Width + emuImagePatch - 1) / emuImagePatch) * ((cfg.Height + emuImagePatch - 1) / emuImagePatch)
	return max(n, 1), nil
}

// parseStop 解析 stop：字符串或字符串数组。
func parseStop(raw json.RawMessage) ([]string, *emuErr) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, emuBadRequest("stop", "stop: "+err.Error())
		}
		return []string{s}, nil
	}
	var ss []string
	if err := json.Unmarshal(raw, &ss); err != nil {
		return nil, emuBadRequest("stop", "stop must be a string or a list of strings")
	}
	return ss, nil
}

// emuSampling 是校验后的采样设置。
type emuSampling struct {
	temperature float64
	topK        int     // 0 或 -1 表示不限
	topP        float64 // 1 表示不限
	presence    float64
	frequency   float64
	seed        *int64
	n           int
	stop        []string
	maxTokens   int  // 已解析的上限（未给出时按上下文剩余）
	maxGiven    bool // 请求是否显式给出 max_tokens
	minTokens   int
}

// greedy 报告这组参数是否等价于贪心解码：temperature 为 0，或 top_k 为 1（vLLM 先按
// top_k 截断再采样，只剩一个候选时结果与 argmax 相同，与温度和 seed 无关）。
func (s *emuSampling) greedy() bool { return s.temperature == 0 || s.topK == 1 }

// validateSampling 按 vLLM 的范围校验采样参数（越界 400），并应用能力开关。
func validateSampling(c *emuCommon, cfg *Config, maxTokens *int) (*emuSampling, *emuErr) {
	s := &emuSampling{temperature: 1, topP: 1, n: 1, seed: c.Seed}
	d := &cfg.Defects
	if c.Temperature != nil {
		s.temperature = *c.Temperature
		if d.TemperatureScaleIgnored && s.temperature > 0 {
			s.temperature = 1
		}
	}
	if c.TopK != nil && !d.TopKIgnored {
		s.topK = *c.TopK
	}
	if c.TopP != nil && !d.TopPIgnored {
		s.topP = *c.TopP
	}
	if c.PresencePenalty != nil && !d.PresencePenaltyIgnored {
		s.presence = *c.PresencePenalty
	}
	if c.FrequencyPenalty != nil && !d.FrequencyPenaltyIgnored {
		s.frequency = *c.FrequencyPenalty
	}
	if c.N != nil {
		s.n = *c.N
	}
	stop, er := parseStop(c.Stop)
	if er != nil {
		return nil, er
	}
	s.stop = stop
	if maxTokens != nil {
		s.maxTokens, s.maxGiven = *maxTokens, true
	}
	if c.MinTokens != nil {
		s.minTokens = *c.MinTokens
	}
	if c.StreamOptions != nil && !c.Stream && !cfg.Defects.StreamOptionsUnchecked {
		return nil, emuBadRequest("stream_options", "Stream options can only be defined when `stream=True`.")
	}
	if cfg.DisableTopK && c.TopK != nil {
		return nil, emuBadRequest("top_k", "top_k is not supported by this server")
	}
	if cfg.DisablePenalties && (c.PresencePenalty != nil || c.FrequencyPenalty != nil || c.RepetitionPenalty != nil) {
		return nil, emuBadRequest("presence_penalty", "penalties are not supported by this server")
	}
	if cfg.Defects.TopPZeroServerError && c.TopP != nil && *c.TopP == 0 {
		return nil, &emuErr{status: http.StatusInternalServerError, typ: "InternalServerError", msg: "float division by zero"}
	}
	if cfg.Defects.NoParamValidation {
		if s.n < 1 {
			s.n = 1
		}
		if s.maxGiven && s.maxTokens < 1 {
			s.maxTokens = 1
		}
		if s.minTokens < 0 {
			s.minTokens = 0
		}
		return s, nil
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	switch {
	case s.temperature < 0 || math.IsNaN(s.temperature):
		return nil, emuBadRequest("temperature", "temperature must be non-negative, got "+f(s.temperature)+".")
	case c.TopP != nil && !(*c.TopP > 0 && *c.TopP <= 1):
		return nil, emuBadRequest("top_p", "top_p must be in (0, 1], got "+f(*c.TopP)+".")
	case c.TopK != nil && *c.TopK < -1:
		return nil, emuBadRequest("top_k", "top_k must be 0 (disable), or at least 1, got "+strconv.Itoa(*c.TopK)+".")
	case c.MinP != nil && !(*c.MinP >= 0 && *c.MinP <= 1):
		return nil, emuBadRequest("min_p", "min_p must be in [0, 1], got "+f(*c.MinP)+".")
	case c.PresencePenalty != nil && !(*c.PresencePenalty >= -2 && *c.PresencePenalty <= 2):
		return nil, emuBadRequest("presence_penalty", "presence_penalty must be in [-2, 2], got "+f(*c.PresencePenalty)+".")
	case c.FrequencyPenalty != nil && !(*c.FrequencyPenalty >= -2 && *c.FrequencyPenalty <= 2):
		return nil, emuBadRequest("frequency_penalty", "frequency_penalty must be in [-2, 2], got "+f(*c.FrequencyPenalty)+".")
	case c.RepetitionPenalty != nil && !(*c.RepetitionPenalty > 0):
		return nil, emuBadRequest("repetition_penalty", "repetition_penalty must be greater than zero, got "+f(*c.RepetitionPenalty)+".")
	case s.n < 1:
		return nil, emuBadRequest("n", "n must be at least 1, got "+strconv.Itoa(s.n)+".")
	case s.n > 1 && s.temperature == 0:
		return nil, emuBadRequest("n", "n must be 1 when using greedy sampling, got "+strconv.Itoa(s.n)+".")
	case s.maxGiven && s.maxTokens < 1:
		return nil, emuBadRequest("max_tokens", "max_tokens must be at least 1, got "+strconv.Itoa(s.maxTokens)+".")
	case s.minTokens < 0:
		return nil, emuBadRequest("min_tokens", "min_tokens must be greater than or equal to 0, got "+strconv.Itoa(s.minTokens)+".")
	case s.maxGiven && s.minTokens > s.maxTokens:
		return nil, emuBadRequest("min_tokens", "min_tokens must be less than or equal to max_tokens="+strconv.Itoa(s.maxTokens)+", got "+strconv.Itoa(s.minTokens)+".")
	}
	for _, st := range s.stop {
		if st == "" {
			return nil, emuBadRequest("stop", "stop cannot contain an empty string.")
		}
	}
	for k, v := range c.LogitBias {
		id, err := strconv.Atoi(k)
		if err != nil || id < 0 || id >= tokenize.VocabSize {
			return nil, emuBadRequest("logit_bias", "token_id "+strconv.Quote(k)+" in logit_bias contains out-of-vocab token id")
		}
		if !(v >= -100 && v <= 100) {
			return nil, emuBadRequest("logit_bias", "logit_bias values must be in [-100, 100], got "+f(v)+" for token "+k)
		}
	}
	return s, nil
}

// emuCount 是 tokenize.Count 的别名，集中在一处以便所有计数走同一规则。
func emuCount(s string) int { return tokenize.Count(s) }
