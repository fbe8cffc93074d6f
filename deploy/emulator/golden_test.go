package emulator_test

import (
	"regexp"
	"testing"

	"github.com/vllm-cibench/cibench/deploy/emulator"
)

// emuCreated 抹掉随时间变化的 created 字段，其余字节逐一比较。
var emuCreated = regexp.MustCompile(`"created":\d+`)

// TestStreamBytesGolden 逐字节锁定 SSE 线上格式（字段顺序、usage:null、stop_reason 位置、
// 空 choices 的 usage chunk、事件分隔与 [DONE]），与 vLLM 的 pydantic 输出一致。
func TestStreamBytesGolden(t *testing.T) {
	_, ep := emulator.Start(t, emulator.Config{Model: "m", Seed: 1})
	_, _, raw := emuPost(t, ep, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"golden 金"}],"max_tokens":3,"ignore_eos":true,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`)
	const wantChat = "data: {\"id\":\"chatcmpl-beeb8da1658eec6708c9eb4685b1dad7\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n" +
		"data: {\"id\":\"chatcmpl-beeb8da1658eec6708c9eb4685b1dad7\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Weight\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n" +
		"data: {\"id\":\"chatcmpl-beeb8da1658eec6708c9eb4685b1dad7\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" so\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n" +
		"data: {\"id\":\"chatcmpl-beeb8da1658eec6708c9eb4685b1dad7\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" fast\"},\"logprobs\":null,\"finish_reason\":\"length\",\"stop_reason\":null}],\"usage\":null}\n\n" +
		"data: {\"id\":\"chatcmpl-beeb8da1658eec6708c9eb4685b1dad7\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":2,\"total_tokens\":5,\"completion_tokens\":3,\"prompt_tokens_details\":null}}\n\n" +
		"data: [DONE]\n\n"
	if got := string(emuCreated.ReplaceAll(raw, []byte(`"created":0`))); got != wantChat {
		t.Fatalf("chat stream bytes:\n got %q\nwant %q", got, wantChat)
	}
	_, _, raw = emuPost(t, ep, "/v1/completions", `{"model":"m","prompt":"golden 金","max_tokens":2,"ignore_eos":true,"temperature":0,"stream":true}`)
	const wantCmpl = "data: {\"id\":\"cmpl-f893a2eefb32555eaa7e844961f494ee\",\"object\":\"text_completion\",\"created\":0,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\"Queue\",\"logprobs\":null,\"finish_reason\":null,\"stop_reason\":null}]}\n\n" +
		"data: {\"id\":\"cmpl-f893a2eefb32555eaa7e844961f494ee\",\"object\":\"text_completion\",\"created\":0,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\" can\",\"logprobs\":null,\"finish_reason\":\"length\",\"stop_reason\":null}]}\n\n" +
		"data: [DONE]\n\n"
	if got := string(emuCreated.ReplaceAll(raw, []byte(`"created":0`))); got != wantCmpl {
		t.Fatalf("completion stream bytes:\n got %q\nwant %q", got, wantCmpl)
	}
}
