package accuracy_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/vllm-cibench/cibench/accuracy"
	"github.com/vllm-cibench/cibench/accuracy/simpleevals"
	"github.com/vllm-cibench/cibench/endpoint"
)

// TestConstructorErrorsWrapErrConfig 检查构造参数写错（不只是 Config.Validate）时，
// 调用方能用 errors.Is(err, accuracy.ErrConfig) 把它与运行期失败（网络、数据集不可得）区分开。
func TestConstructorErrorsWrapErrConfig(t *testing.T) {
	src := simpleevals.SampleData()
	cases := map[string]error{}
	_, cases["chat base url"] = accuracy.NewChatSampler(accuracy.ChatConfig{Endpoint: endpoint.Endpoint{BaseURLs: []string{"localhost:8000/v1"}, Model: "m"}})
	_, cases["chat model"] = accuracy.NewChatSampler(accuracy.ChatConfig{Endpoint: endpoint.Endpoint{BaseURLs: []string{"http://x/v1"}}})
	_, cases["chat negative"] = accuracy.NewChatSampler(accuracy.ChatConfig{Endpoint: endpoint.Endpoint{BaseURLs: []string{"http://x/v1"}, Model: "m"}, MaxTokens: -1})
	_, cases["gpqa"] = simpleevals.NewGPQA(src, simpleevals.GPQAOptions{NRepeats: -1})
	_, cases["mmlu"] = simpleevals.NewMMLU(src, simpleevals.MMLUOptions{NumExamples: -1})
	_, cases["mgsm"] = simpleevals.NewMGSM(src, simpleevals.MGSMOptions{NumExamplesPerLang: -1})
	_, cases["drop"] = simpleevals.NewDROP(src, simpleevals.DROPOptions{NumExamples: -1})
	_, cases["registry"] = simpleevals.Registry().New("gpqa", src, accuracy.EvalOptions{Examples: -1})
	_, cases["http source"] = accuracy.NewHTTPSource("ftp://x/", "", nil, http.DefaultClient)
	for name, err := range cases {
		if err == nil || !errors.Is(err, accuracy.ErrConfig) {
			t.Errorf("%s: err = %v, want one wrapping accuracy.ErrConfig", name, err)
		}
	}
	// 端点写错同时包装 endpoint.ErrInvalid，文本与 loadgen、functional 相同。
	for _, name := range []string{"chat base url", "chat model"} {
		if !errors.Is(cases[name], endpoint.ErrInvalid) {
			t.Errorf("%s: err = %v, want one wrapping endpoint.ErrInvalid", name, cases[name])
		}
	}
	if got := cases["chat base url"].Error(); got != `accuracy: chat: endpoint: base_urls[0] "localhost:8000/v1": invalid endpoint: no scheme (want http:// or https://)` {
		t.Errorf("chat base url: %s", got)
	}
}
