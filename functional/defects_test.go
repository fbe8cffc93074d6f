package functional_test

import (
	"context"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/vllm-cibench/cibench/deploy/emulator"
	"github.com/vllm-cibench/cibench/functional"
)

// without 返回去掉 drop 之后的 list 副本。
func without(list []string, drop string) []string {
	var out []string
	for _, s := range list {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

// paramsExact 是 params_boundary 中断言“精确 token 数 + 固定 seed 可复现”的用例
// （top_p/top_k/惩罚项的每个取值，top_p=0 被模拟器以 400 拒绝而跳过）。
var paramsExact = []string{
	"params_boundary/top_p=0.1", "params_boundary/top_p=1",
	"params_boundary/top_k=1", "params_boundary/top_k=50",
	"params_boundary/presence_penalty=-2", "params_boundary/presence_penalty=0", "params_boundary/presence_penalty=2",
	"params_boundary/frequency_penalty=-2", "params_boundary/frequency_penalty=0", "params_boundary/frequency_penalty=2",
}

// penaltyEffects 是 presence/frequency penalty 的效果用例（chat 与 completions）。
var (
	presenceEffects  = []string{"params_boundary/presence_penalty_effect", "params_boundary/presence_penalty_effect_completions"}
	frequencyEffects = []string{"params_boundary/frequency_penalty_effect", "params_boundary/frequency_penalty_effect_completions"}
)

// samplingEffects 是需要服务端真正随机采样的效果用例（成对比较两组 seed 的输出）。
var samplingEffects = []string{"params_boundary/top_p_effect", "params_boundary/top_k_effect", "params_boundary/temperature_effect"}

// defectMaxTokens 是缺陷表所用目录的 max_tokens 上边界。出厂边界 16384 的一个用例要流 16384 个 token
// （-race 下约 2 秒，占一次整目录运行的九成），乘以五十多个缺陷就是两分钟；缺陷表要证明的是"这个
// 缺陷让哪些用例变红"，2048 个 token 的上边界抓到的缺陷与 16384 相同（忽略 max_tokens、错的
// finish_reason 与 usage……）。16384 本身由 TestCatalogPassesOnFaithfulEmulator 与 maxtokens_test.go 检查。
const defectMaxTokens = 2048

// defectCatalog 是缺陷表使用的目录：出厂配置，只把 max_tokens 的上边界换成 defectMaxTokens。
func defectCatalog(t *testing.T) *functional.Catalog {
	t.Helper()
	cfg := functional.DefaultConfig()
	cfg.ParamsBoundary.MaxTokens = []int{1, 128, defectMaxTokens}
	cat, err := functional.NewCatalog(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// maxTokensCases 是缺陷表目录的 max_tokens 边界值用例。
var maxTokensCases = []string{"params_boundary/max_tokens=1", "params_boundary/max_tokens=128", "params_boundary/max_tokens=" + strconv.Itoa(defectMaxTokens)}

// stopCases 是三种停止串用例。
var stopCases = []string{"params_boundary/stop=single", "params_boundary/stop=multiple", "params_boundary/stop=unicode"}

// join 拼接若干 ID 列表。
func join(parts ...[]string) []string { return slices.Concat(parts...) }

// defectTable 把模拟器的每个缺陷开关映射到应当变红的用例集合——恰好这些，
// 不多不少。每一行都有理由：缺陷违反的是哪条 vLLM 行为，哪些用例断言了它。
var defectTable = map[string]struct {
	want []string
	// inContent 让模拟器把思考放在正文的 <think> 中（ThinkTagsUnclosed 只在该模式下生效）。
	inContent bool
	// wholeSuite 允许缺陷让整个套件变红：违反的是每个流都必须遵守的线上约定时，
	// 每个读流的用例都必须拒绝它，streaming 套件因此整体变红是正确的。
	wholeSuite bool
}{
	"NoDone":          {want: []string{"streaming/done"}},
	"WrongUsageTotal": {want: join([]string{"chat_core/usage", "chat_core/n", "chat_core/mixed_zh_en_1", "chat_core/mixed_zh_en_2", "completions_core/usage", "streaming/include_usage"}, maxTokensCases)},
	"NoRoleChunk":     {want: []string{"streaming/role_first"}},
	// stop↔length 互换：所有断言 finish_reason 的 length/stop 用例。
	"WrongFinishReason": {want: join([]string{"completions_core/default_max_tokens"}, maxTokensCases, paramsExact, stopCases,
		[]string{"params_boundary/logit_bias", "function_call/named"})},
	"StopStringKept": {want: stopCases},
	// 固定 seed 不再可复现：seed 用例与“固定 seed 可复现”的参数用例；top_k=1 是贪心、
	// top_p=0.1 在模拟器的分布上只剩 argmax（贪心 token 的概率始终 ≥ 0.1），都与 seed 无关，
	// 不受影响。效果用例只比较同一组 seed 之间的差异，不要求复现。
	"SeedIgnored":       {want: join(without(without(paramsExact, "params_boundary/top_k=1"), "params_boundary/top_p=0.1"), []string{"params_boundary/seed=0", "params_boundary/seed=42", "params_boundary/seed=1234"})},
	"JSONObjectInvalid": {want: []string{"guided/json_object", "guided/json_schema", "guided/structured_outputs_json"}},
	"ToolArgsInvalid":   {want: []string{"function_call/auto", "function_call/required", "function_call/named", "function_call/two_tools", "function_call/stream"}},
	// 推理 token 已计入 usage 但没有下发：推理用例，以及 chunk 数与 token 数对不上。
	"ReasoningMissing": {want: []string{"streaming/chunk_size", "reasoning/present", "reasoning/stream"}},
	"NoContextCheck":   {want: []string{"errors/context_overflow", "errors/context_boundary"}},
	"MaxTokensIgnored": {want: join([]string{"chat_core/usage", "completions_core/usage", "completions_core/default_max_tokens", "streaming/completions_usage"},
		maxTokensCases, paramsExact, []string{"params_boundary/logit_bias"})},
	// include_usage 声明为支持却没有 usage chunk：chunk_size 也无法对应 chunk 与 token，失败而不是跳过。
	"NoUsageChunk":         {want: []string{"streaming/include_usage", "streaming/continuous_usage", "streaming/completions_usage", "streaming/chunk_size"}},
	"UsageNotMonotonic":    {want: []string{"streaming/continuous_usage"}},
	"WrongIDPrefix":        {want: []string{"chat_core/ids_object", "completions_core/ids_object"}},
	"WrongObject":          {want: []string{"chat_core/ids_object", "completions_core/ids_object"}},
	"LogprobsWrongCount":   {want: []string{"params_boundary/top_logprobs=1", "params_boundary/top_logprobs=5", "params_boundary/completions_logprobs=5"}},
	"ModelMissingFromList": {want: []string{"chat_core/models"}},
	// body_shape 需要 404 才能检查错误体：状态不对是失败，不是跳过。
	"UnknownModelOK": {want: []string{"errors/unknown_model", "errors/body_shape"}},
	// 流式走了另一条解码路径：文本从第一个 token 起就不同，容忍批漂移的比较也变红。工具参数
	// 的前几个 token 由 schema 决定（{"city": …），只有值不同，这与批漂移分不开：
	// function_call/stream 只在服务端声明 batch_invariant: supported 时抓到它
	// （TestStrictModeCatchesToolArgsDrift）。
	"StreamDiffers": {want: []string{"completions_core/stream", "streaming/matches_nonstream"}},
	// 丢一个正文增量：流式与非流式的比较（容忍批漂移也不放过），以及 chunk 与 token 的对应。
	"StreamDropsDelta": {want: []string{"completions_core/stream", "streaming/matches_nonstream", "streaming/chunk_size"}},
	// 每个 choice 两个 finish chunk：vLLM 从不这样做，每个读流的用例都以 protocol 失败。
	"DoubleFinish": {wholeSuite: true, want: []string{"chat_core/stream", "completions_core/stream", "function_call/stream", "reasoning/stream",
		maxTokensCases[0], maxTokensCases[1], maxTokensCases[2],
		"streaming/chunk_size", "streaming/completions_usage", "streaming/content_type", "streaming/continuous_usage", "streaming/done",
		"streaming/include_usage", "streaming/matches_nonstream", "streaming/one_id", "streaming/role_first", "streaming/single_finish"}},
	"WrongContentType": {want: []string{"streaming/content_type"}},
	"NIgnored":         {want: []string{"chat_core/n", "streaming/single_finish"}},
	"EchoIgnored":      {want: []string{"completions_core/echo"}},
	// vLLM 对具名 tool_choice 以 stop 结束。
	"NamedToolFinishToolCalls": {want: []string{"function_call/named"}},
	"NoParamValidation": {want: []string{"errors/body_shape", "errors/invalid/temperature_negative", "errors/invalid/top_p_above_one",
		"errors/invalid/presence_penalty_out_of_range", "errors/invalid/frequency_penalty_out_of_range", "errors/invalid/max_tokens_zero",
		"errors/invalid/top_logprobs_above_20", "errors/invalid/top_logprobs_without_logprobs", "errors/invalid/min_tokens_above_max_tokens",
		"errors/invalid/completions_temperature_negative", "errors/invalid/completions_suffix"}},
	"NoToolChoiceValidation": {want: []string{"errors/invalid/tool_choice_without_tools", "errors/invalid/named_tool_not_in_tools"}},
	"EmbeddingWrongDim":      {want: []string{"embeddings/dimensions"}},
	"RerankUnsorted":         {want: []string{"rerank/sorted", "rerank/top_n"}},
	"ErrorBodyMalformed":     {want: []string{"errors/body_shape"}},
	"NoAuth":                 {want: []string{"errors/auth"}},
	"ThinkTagsUnclosed":      {want: []string{"reasoning/present", "reasoning/stream", "reasoning/separated"}, inContent: true},
	// 采样总是贪心：随机性与不同 seed 的用例，以及需要真正采样才能比较的效果用例
	// （惩罚项在贪心下同样生效，仍然通过）。
	"TemperatureIgnored": {want: join([]string{"params_boundary/temperature=0.6", "params_boundary/temperature=1", "params_boundary/seed_varies"}, samplingEffects)},
	// 关不掉思考：reasoning/disabled，以及依赖关闭思考来看正文的参数与结构化用例（思考耗尽 max_tokens）。
	"ThinkingNotDisabled": {want: join([]string{"reasoning/disabled", "guided/structured_outputs_choice",
		"params_boundary/top_logprobs=1", "params_boundary/top_logprobs=5",
		// 效果用例中只看正文的三个：思考耗尽预算后正文为空或过短。
		"params_boundary/logit_bias_promote", "params_boundary/logit_bias_ban", "params_boundary/logprobs_effect"}, stopCases)},
	"BatchIgnored":         {want: []string{"completions_core/batch"}},
	"ToolResultIgnored":    {want: []string{"function_call/follow_up"}},
	"ImageIgnored":         {want: []string{"multimodal/image_data_url"}},
	"ChoiceViolated":       {want: []string{"guided/structured_outputs_choice"}},
	"HistoryIgnored":       {want: []string{"chat_core/multi_turn"}},
	"EmbeddingBase64Wrong": {want: []string{"embeddings/base64"}},
	"RerankIndexWrong":     {want: []string{"rerank/documents"}},
	// 截断时文本丢失：所有不带 ignore_eos、以 length 结束且检查文本的用例（basic、stream、
	// 采样多样性、停止串、logprobs 与 token 对应、错误之后的正常请求……）；ignore_eos 的
	// 精确长度用例只看 usage，不受影响。
	"LengthDropsText": {want: join([]string{"chat_core/basic", "chat_core/stream", "chat_core/mixed_zh_en_1", "chat_core/mixed_zh_en_2",
		"completions_core/basic", "completions_core/batch", "errors/recovers", "multimodal/image_data_url",
		"params_boundary/completions_logprobs=5", "params_boundary/top_logprobs=1", "params_boundary/top_logprobs=5",
		"params_boundary/temperature=0.6", "params_boundary/temperature=1", "params_boundary/seed_varies",
		"streaming/completions_usage",
		// 效果用例都比较 max_tokens 截断的文本：文本丢失后两组输出都为空，比较不出差异。
		"params_boundary/logit_bias_promote", "params_boundary/logit_bias_ban", "params_boundary/logprobs_effect"},
		samplingEffects, presenceEffects, frequencyEffects, stopCases)},
	// 贪心解码随 seed 变化：temperature=0 用例同时发送带与不带 seed 的贪心请求；top_k=1 的
	// 两个用例比较不同 seed 的 top_k=1 输出（以及与不带 seed 的贪心输出）。
	"GreedySeedDependent": {want: []string{"params_boundary/temperature=0", "params_boundary/top_k=1", "params_boundary/top_k_effect"}},
	// 每个“接受但忽略”的采样参数只让它自己的效果用例变红：接受与精确长度的用例仍然通过。
	"TemperatureScaleIgnored": {want: []string{"params_boundary/temperature_effect"}},
	"TopPIgnored":             {want: []string{"params_boundary/top_p_effect"}},
	"PresencePenaltyIgnored":  {want: presenceEffects},
	"FrequencyPenaltyIgnored": {want: frequencyEffects},
	"LogitBiasIgnored":        {want: []string{"params_boundary/logit_bias_promote", "params_boundary/logit_bias_ban"}},
	"LogprobsUnsorted":        {want: []string{"params_boundary/logprobs_effect"}},
	// top_k 被忽略：top_k=1 不再是贪心，不同 seed 给出不同文本。
	"TopKIgnored": {want: []string{"params_boundary/top_k=1", "params_boundary/top_k_effect"}},
	// top_p=0 不校验而 500：5xx 从不被当作“不支持”跳过，用例变红。
	"TopPZeroServerError": {want: []string{"params_boundary/top_p=0"}},
	// 非法 JSON 得到 500：errors/recovers 也发送非法 JSON，但不检查其状态码。
	"MalformedJSONServerError": {want: []string{"errors/malformed_json"}},
	// 严格拒绝未知字段：目录里只有这个用例发送模拟器不认识的顶层字段。
	"UnknownFieldRejected":   {want: []string{"errors/unknown_field_ignored"}},
	"StreamOptionsUnchecked": {want: []string{"errors/invalid/stream_options_without_stream"}},
	"ImageNotValidated":      {want: []string{"multimodal/invalid_image_rejected"}},
	// 每个 chunk 换一个 id：只有 one_id 核对 chunk 之间的 id，其余读流的用例都照样通过。
	"StreamIDChanges": {want: []string{"streaming/one_id"}},
	// 只嵌入第一项：dimensions/base64 逐项比较，数量一致（都是 1）仍通过。
	"EmbeddingBatchIgnored": {want: []string{"embeddings/batch"}},
}

// TestDefectsTurnExactlyTheirCasesRed 对每个缺陷开关，只打开这一个缺陷运行整个目录，
// 断言失败用例的集合恰好等于表中的集合（非空，且不是整个套件）。
func TestDefectsTurnExactlyTheirCasesRed(t *testing.T) {
	cat := defectCatalog(t)
	suiteSize := map[string]int{}
	for _, c := range cat.Cases() {
		suiteSize[c.Suite]++
	}
	typ := reflect.TypeFor[emulator.Defects]()
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		row, ok := defectTable[name]
		if !ok {
			t.Errorf("defect %s has no row in defectTable: no case is proven to catch it", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			if len(row.want) == 0 {
				t.Fatal("empty expectation: every defect must turn at least one case red")
			}
			cfg := fullEmulator()
			cfg.ReasoningInContent = row.inContent
			reflect.ValueOf(&cfg.Defects).Elem().Field(i).SetBool(true)
			_, target := startEmulator(t, cfg)
			r, err := functional.NewRunner(target, functional.Options{Retries: -1})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := r.Run(context.Background(), cat.Cases())
			if err != nil {
				t.Fatal(err)
			}
			got := rep.Failed()
			want := slices.Clone(row.want)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("failing cases\n got %q\nwant %q", got, want)
			}
			failedPerSuite := map[string]int{}
			for _, res := range rep.Results {
				if res.Status == functional.StatusFail {
					failedPerSuite[res.Suite]++
					if res.Class == "" {
						t.Errorf("%s failed without a fault class", res.CaseID)
					}
					if res.Reason == "" || res.Request == "" {
						t.Errorf("%s failed without reason or recorded request", res.CaseID)
					}
				}
			}
			for s, n := range failedPerSuite {
				if n >= suiteSize[s] && !row.wholeSuite {
					t.Errorf("defect turns the whole suite %s red (%d/%d): not specific", s, n, suiteSize[s])
				}
			}
		})
	}
	for name := range defectTable {
		if _, ok := typ.FieldByName(name); !ok {
			t.Errorf("defectTable row %s names no field of emulator.Defects", name)
		}
	}
}

// pendingDefects 列出目前还没有任何模拟器缺陷能让其变红的用例，以及证明它所需的缺陷
// （已向模拟器维护者提出）。TestEveryCaseIsProvenOrPending 保证每个用例要么出现在
// defectTable 中，要么在这里写明缺什么——覆盖缺口是可见的，而不是被默默忽略。
var pendingDefects = map[string]string{}

// TestEveryCaseIsProvenOrPending 检查每个用例都被某个缺陷证明能失败，或者列在
// pendingDefects 中并写明需要的缺陷；两边不能重复。
func TestEveryCaseIsProvenOrPending(t *testing.T) {
	proven := map[string]bool{}
	for _, row := range defectTable {
		for _, id := range row.want {
			proven[id] = true
		}
	}
	// 缺陷表的目录与出厂目录只差 max_tokens 的上边界（同一个构造函数、同样的断言）。
	cat := defectCatalog(t)
	for _, c := range cat.Cases() {
		_, pending := pendingDefects[c.ID]
		switch {
		case proven[c.ID] && pending:
			t.Errorf("%s is proven by a defect and still listed as pending", c.ID)
		case !proven[c.ID] && !pending:
			t.Errorf("%s: no defect turns it red and it is not listed in pendingDefects", c.ID)
		}
	}
	for id := range pendingDefects {
		if _, err := cat.Select(id); err != nil {
			t.Errorf("pendingDefects names unknown case %s", id)
		}
	}
	t.Logf("%d cases proven by emulator defects, %d pending", len(proven), len(pendingDefects))
}
