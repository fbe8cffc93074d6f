package emulator

// Defects 是模拟器的缺陷开关：每个字段为 true 时，模拟器在线上故意
// 违反 vLLM 的某一条行为，用来证明功能用例真的能发现对应缺陷（一个永远不会
// 失败的用例毫无价值）。零值表示完全忠实于 vLLM。
type Defects struct {
	// NoDone 省略流末尾的 "data: [DONE]"。
	NoDone bool `json:"no_done,omitempty" yaml:"no_done,omitempty"`
	// WrongUsageTotal 让 usage.total_tokens 比 prompt+completion 多 1。
	WrongUsageTotal bool `json:"wrong_usage_total,omitempty" yaml:"wrong_usage_total,omitempty"`
	// NoRoleChunk 不发送首个 {"role":"assistant","content":""} chunk。
	NoRoleChunk bool `json:"no_role_chunk,omitempty" yaml:"no_role_chunk,omitempty"`
	// WrongFinishReason 把 "length" 报成 "stop"、把 "stop" 报成 "length"。
	WrongFinishReason bool `json:"wrong_finish_reason,omitempty" yaml:"wrong_finish_reason,omitempty"`
	// StopStringKept 命中 stop 字符串后仍把它留在输出文本里。
	StopStringKept bool `json:"stop_string_kept,omitempty" yaml:"stop_string_kept,omitempty"`
	// SeedIgnored 带 seed 的采样请求不可复现（每次输出不同）。
	SeedIgnored bool `json:"seed_ignored,omitempty" yaml:"seed_ignored,omitempty"`
	// JSONObjectInvalid 让 json_object / json_schema / structured_outputs.json 返回非 JSON 文本。
	JSONObjectInvalid bool `json:"json_object_invalid,omitempty" yaml:"json_object_invalid,omitempty"`
	// ToolArgsInvalid 让工具调用参数违反 parameters schema（缺少 required 字段、类型错误）。
	ToolArgsInvalid bool `json:"tool_args_invalid,omitempty" yaml:"tool_args_invalid,omitempty"`
	// ReasoningMissing 推理模型不返回推理字段（非流式无该字段，流式无推理 delta）。
	ReasoningMissing bool `json:"reasoning_missing,omitempty" yaml:"reasoning_missing,omitempty"`
	// NoContextCheck 提示+max_tokens 超过 max_model_len 时仍返回 200。
	NoContextCheck bool `json:"no_context_check,omitempty" yaml:"no_context_check,omitempty"`
	// MaxTokensIgnored 生成比 max_tokens 更多的 token（多 3 个）。
	MaxTokensIgnored bool `json:"max_tokens_ignored,omitempty" yaml:"max_tokens_ignored,omitempty"`
	// NoUsageChunk 忽略 stream_options.include_usage（不发送末尾 usage chunk）。
	NoUsageChunk bool `json:"no_usage_chunk,omitempty" yaml:"no_usage_chunk,omitempty"`
	// UsageNotMonotonic 在 continuous_usage_stats 下让 completion_tokens 中途回退。
	UsageNotMonotonic bool `json:"usage_not_monotonic,omitempty" yaml:"usage_not_monotonic,omitempty"`
	// WrongIDPrefix 使用 "req-" 而不是 "chatcmpl-"/"cmpl-" 作为 id 前缀。
	WrongIDPrefix bool `json:"wrong_id_prefix,omitempty" yaml:"wrong_id_prefix,omitempty"`
	// WrongObject 使用错误的 object 字段（"chat.completion" 与 "chat.completion.chunk" 互换，"text_completion" 变为 "completion"）。
	WrongObject bool `json:"wrong_object,omitempty" yaml:"wrong_object,omitempty"`
	// LogprobsWrongCount 让 top_logprobs / logprobs 的候选数比请求的少 1（请求 1 个时多 1 个）。
	LogprobsWrongCount bool `json:"logprobs_wrong_count,omitempty" yaml:"logprobs_wrong_count,omitempty"`
	// ModelMissingFromList 让 /v1/models 不列出正在服务的模型。
	ModelMissingFromList bool `json:"model_missing_from_list,omitempty" yaml:"model_missing_from_list,omitempty"`
	// UnknownModelOK 对未知模型名仍以 200 服务。
	UnknownModelOK bool `json:"unknown_model_ok,omitempty" yaml:"unknown_model_ok,omitempty"`
	// StreamDiffers 让 temperature 0 的流式文本与非流式文本不同。
	StreamDiffers bool `json:"stream_differs,omitempty" yaml:"stream_differs,omitempty"`
	// StreamDropsDelta 在流中丢掉中间的一个正文增量（第 6 个之后、正中的那个；其 token 仍计入
	// usage）：流式文本是非流式文本挖掉一段。容忍批漂移的比较必须仍然抓到它。
	StreamDropsDelta bool `json:"stream_drops_delta,omitempty" yaml:"stream_drops_delta,omitempty"`
	// DoubleFinish 每个 choice 发送两个带 finish_reason 的 chunk。
	DoubleFinish bool `json:"double_finish,omitempty" yaml:"double_finish,omitempty"`
	// WrongContentType 流式响应使用 application/json 而不是 text/event-stream。
	WrongContentType bool `json:"wrong_content_type,omitempty" yaml:"wrong_content_type,omitempty"`
	// NIgnored 忽略 n>1，只返回一个 choice。
	NIgnored bool `json:"n_ignored,omitempty" yaml:"n_ignored,omitempty"`
	// EchoIgnored 在 /v1/completions 上忽略 echo（不把提示放回输出开头）。
	EchoIgnored bool `json:"echo_ignored,omitempty" yaml:"echo_ignored,omitempty"`
	// NamedToolFinishToolCalls 让具名 tool_choice 以 "tool_calls" 结束（vLLM 是 "stop"）。
	NamedToolFinishToolCalls bool `json:"named_tool_finish_tool_calls,omitempty" yaml:"named_tool_finish_tool_calls,omitempty"`
	// NoParamValidation 接受越界的采样参数并返回 200。
	NoParamValidation bool `json:"no_param_validation,omitempty" yaml:"no_param_validation,omitempty"`
	// NoToolChoiceValidation 对无 tools 的 tool_choice、未知函数名、tools: [] 不报 400。
	NoToolChoiceValidation bool `json:"no_tool_choice_validation,omitempty" yaml:"no_tool_choice_validation,omitempty"`
	// EmbeddingWrongDim 返回的向量维度比请求（或默认）维度少 1。
	EmbeddingWrongDim bool `json:"embedding_wrong_dim,omitempty" yaml:"embedding_wrong_dim,omitempty"`
	// RerankUnsorted 返回按文档原顺序而非按 relevance_score 降序排列的 rerank 结果。
	RerankUnsorted bool `json:"rerank_unsorted,omitempty" yaml:"rerank_unsorted,omitempty"`
	// ErrorBodyMalformed 让 4xx 错误体不是 JSON（纯文本）。
	ErrorBodyMalformed bool `json:"error_body_malformed,omitempty" yaml:"error_body_malformed,omitempty"`
	// NoAuth 配置了 APIKey 也不校验。
	NoAuth bool `json:"no_auth,omitempty" yaml:"no_auth,omitempty"`
	// ThinkTagsUnclosed 在 ReasoningInContent 模式下省略 </think>。
	ThinkTagsUnclosed bool `json:"think_tags_unclosed,omitempty" yaml:"think_tags_unclosed,omitempty"`
	// TemperatureIgnored 忽略 temperature：采样请求总是给出贪心（temperature 0）的文本。
	TemperatureIgnored bool `json:"temperature_ignored,omitempty" yaml:"temperature_ignored,omitempty"`
	// TopKIgnored 接受 top_k 但不使用：top_k=1 时仍按完整分布采样（不再是贪心）。
	TopKIgnored bool `json:"top_k_ignored,omitempty" yaml:"top_k_ignored,omitempty"`
	// ThinkingNotDisabled 忽略 chat_template_kwargs 的 enable_thinking/thinking=false。
	ThinkingNotDisabled bool `json:"thinking_not_disabled,omitempty" yaml:"thinking_not_disabled,omitempty"`
	// BatchIgnored 让 /v1/completions 只服务提示列表中的第一个提示。
	BatchIgnored bool `json:"batch_ignored,omitempty" yaml:"batch_ignored,omitempty"`
	// ToolResultIgnored 在最后一条消息是工具结果时仍再次调用工具，而不是用正文回答。
	ToolResultIgnored bool `json:"tool_result_ignored,omitempty" yaml:"tool_result_ignored,omitempty"`
	// ImageIgnored 不把图片 token 计入 prompt_tokens（图片被丢弃）。
	ImageIgnored bool `json:"image_ignored,omitempty" yaml:"image_ignored,omitempty"`
	// ChoiceViolated 让 structured_outputs.choice / guided_choice 的输出不在候选之中。
	ChoiceViolated bool `json:"choice_violated,omitempty" yaml:"choice_violated,omitempty"`
	// HistoryIgnored 只把最后一条 user 消息计入 prompt_tokens（多轮历史被丢弃）。
	HistoryIgnored bool `json:"history_ignored,omitempty" yaml:"history_ignored,omitempty"`
	// EmbeddingBase64Wrong 让 encoding_format=base64 的向量按大端序编码（与 float 结果不一致）。
	EmbeddingBase64Wrong bool `json:"embedding_base64_wrong,omitempty" yaml:"embedding_base64_wrong,omitempty"`
	// RerankIndexWrong 让 rerank 结果的 index 与返回的文档错位。
	RerankIndexWrong bool `json:"rerank_index_wrong,omitempty" yaml:"rerank_index_wrong,omitempty"`
	// LengthDropsText 在因 max_tokens 截断（finish_reason "length"）时丢掉已生成的文本
	// （正文与推理都为空，usage 仍计入 token）：增量反分词器只在 EOS/stop 时才刷新输出。
	LengthDropsText bool `json:"length_drops_text,omitempty" yaml:"length_drops_text,omitempty"`
	// GreedySeedDependent 在 temperature 0 时仍让 seed 影响输出（贪心解码不再只由提示决定）。
	GreedySeedDependent bool `json:"greedy_seed_dependent,omitempty" yaml:"greedy_seed_dependent,omitempty"`
	// TopPZeroServerError 对 top_p=0 不做校验，采样器除零后返回 500（而不是 400）。
	TopPZeroServerError bool `json:"top_p_zero_server_error,omitempty" yaml:"top_p_zero_server_error,omitempty"`
	// MalformedJSONServerError 对不是合法 JSON 的 chat 请求体返回 500（未捕获的解析异常）而不是 400。
	MalformedJSONServerError bool `json:"malformed_json_server_error,omitempty" yaml:"malformed_json_server_error,omitempty"`
	// UnknownFieldRejected 对 chat 请求中未知的顶层字段返回 400（vLLM 只记录警告并忽略）。
	UnknownFieldRejected bool `json:"unknown_field_rejected,omitempty" yaml:"unknown_field_rejected,omitempty"`
	// StreamOptionsUnchecked 接受 stream=false 时的 stream_options（vLLM 返回 400）。
	StreamOptionsUnchecked bool `json:"stream_options_unchecked,omitempty" yaml:"stream_options_unchecked,omitempty"`
	// ImageNotValidated 不解码图片：无法解码的 data URL 图片按固定 token 数计入并以 200 回答。
	ImageNotValidated bool `json:"image_not_validated,omitempty" yaml:"image_not_validated,omitempty"`
	// EmbeddingBatchIgnored 让 /v1/embeddings 只嵌入输入列表中的第一项。
	EmbeddingBatchIgnored bool `json:"embedding_batch_ignored,omitempty" yaml:"embedding_batch_ignored,omitempty"`
	// TemperatureScaleIgnored 接受 temperature 但不缩放 logits：任何正温度都按 1 采样。
	TemperatureScaleIgnored bool `json:"temperature_scale_ignored,omitempty" yaml:"temperature_scale_ignored,omitempty"`
	// TopPIgnored 接受 top_p 但不截断分布（按 top_p=1 采样）。
	TopPIgnored bool `json:"top_p_ignored,omitempty" yaml:"top_p_ignored,omitempty"`
	// PresencePenaltyIgnored 接受 presence_penalty 但不施加。
	PresencePenaltyIgnored bool `json:"presence_penalty_ignored,omitempty" yaml:"presence_penalty_ignored,omitempty"`
	// FrequencyPenaltyIgnored 接受 frequency_penalty 但不施加。
	FrequencyPenaltyIgnored bool `json:"frequency_penalty_ignored,omitempty" yaml:"frequency_penalty_ignored,omitempty"`
	// LogitBiasIgnored 接受 logit_bias 但不施加。
	LogitBiasIgnored bool `json:"logit_bias_ignored,omitempty" yaml:"logit_bias_ignored,omitempty"`
	// LogprobsUnsorted 让 top_logprobs 按 logprob 升序排列，且被采样 token 的 logprob 低于备选。
	LogprobsUnsorted bool `json:"logprobs_unsorted,omitempty" yaml:"logprobs_unsorted,omitempty"`
	// StreamIDChanges 让流式响应的每个 chunk 带一个新的 id（vLLM 一个流只有一个 id）。
	StreamIDChanges bool `json:"stream_id_changes,omitempty" yaml:"stream_id_changes,omitempty"`
}
