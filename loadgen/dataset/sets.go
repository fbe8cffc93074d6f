package dataset

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"github.com/vllm-cibench/cibench/internal/tokenize"
)

// 集合类数据集（shared_prefix、prefix_repetition、sharegpt）的池：整个集合（不受 PoolSize 限制，集合
// 大小已在 loadgen.Profile.Validate 中设限），打乱后请求按序号循环使用。prompt 由生成器片段拼成，
// 按 internal/tokenize 规则恰好是目标 token 数；不经服务端 /tokenize 校准——校准会逐条改写文本，
// 共享的前缀就不再逐字相同。

// add 把一条 prompt 追加进池。
func (pool *Pool) add(text string, tokens, maxTok int) {
	q, _ := json.Marshal(text)
	pool.Quoted = append(pool.Quoted, q)
	pool.Tokens = append(pool.Tokens, tokens)
	pool.MaxTokens = append(pool.MaxTokens, maxTok)
}

// SharedPrefixPool 建立 inference-perf shared_prefix 的池：NumGroups 组，每组一个系统提示与
// NumPromptsPerGroup 个问题；种子取 sp.Seed，为空时取 seed（Profile.Seed）。
func SharedPrefixPool(sp SharedPrefixConfig, seed int64) (*Pool, error) {
	pool := &Pool{Complete: true}
	s := uint64(seed)
	if sp.Seed != nil {
		s = uint64(*sp.Seed)
	}
	for g := range sp.NumGroups {
		sys := strings.Join(newTextGen(s*1_000_003+uint64(g)*7919+0x5157).pieces(nil, sp.SystemPromptLen), "")
		for q := range sp.NumPromptsPerGroup {
			gen := newTextGen(s*1_000_033 + uint64(g)*104_729 + uint64(q)*15_485_863 + 0x9e57)
			pool.add(sys+strings.Join(gen.pieces(nil, sp.QuestionLen), ""), sp.SystemPromptLen+sp.QuestionLen, sp.OutputLen)
		}
	}
	return pool.shuffled(s, "shared_prefix")
}

// PrefixRepetitionPool 建立 vLLM bench prefix_repetition 的池：n 是本组（含预热）的请求数，
// 与 vLLM 相同，集合就是 n 条，轮流分给 NumPrefixes 个前缀。
func PrefixRepetitionPool(pr PrefixRepetitionConfig, seed int64, n int) (*Pool, error) {
	pool := &Pool{Complete: true}
	s := uint64(seed)
	per, extra := n/pr.NumPrefixes, n%pr.NumPrefixes
	i := 0
	for k := range pr.NumPrefixes {
		prefix := strings.Join(newTextGen(s*1_000_003+uint64(k)*7919+0x9f1e).pieces(nil, pr.PrefixLen), "")
		cnt := per
		if k < extra {
			cnt++
		}
		for range cnt {
			gen := newTextGen(s*1_000_033 + uint64(i)*104_729 + 0x5aff)
			pool.add(prefix+strings.Join(gen.pieces(nil, pr.SuffixLen), ""), pr.PrefixLen+pr.SuffixLen, pr.OutputLen)
			i++
		}
	}
	return pool.shuffled(s, "prefix_repetition")
}

// ShareGPTPool 建立 sharegpt 的池：prompts 来自 ReadShareGPT，c.OutputLen 非 0 时覆盖逐条的输出长度。
func ShareGPTPool(prompts []Prompt, c ShareGPTConfig, seed int64) (*Pool, error) {
	pool := &Pool{Complete: true}
	for _, ps := range prompts {
		mt := ps.MaxTokens
		if c.OutputLen > 0 {
			mt = c.OutputLen
		}
		pool.add(ps.Text, ps.Tokens, mt)
	}
	return pool.shuffled(uint64(seed), "sharegpt")
}

// shuffled 打乱池并检查它不为空（name 是数据集名，用于错误信息）。
func (pool *Pool) shuffled(seed uint64, name string) (*Pool, error) {
	if len(pool.Quoted) == 0 {
		return nil, fmt.Errorf("dataset: %s: no prompts", name)
	}
	shufflePool(pool, seed)
	return pool, nil
}

// shufflePool 用 seed 决定的顺序打乱池（三个切片同步交换）。
func shufflePool(pl *Pool, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x5f0ff1e))
	rng.Shuffle(len(pl.Quoted), func(i, j int) {
		pl.Quoted[i], pl.Quoted[j] = pl.Quoted[j], pl.Quoted[i]
		pl.Tokens[i], pl.Tokens[j] = pl.Tokens[j], pl.Tokens[i]
		pl.MaxTokens[i], pl.MaxTokens[j] = pl.MaxTokens[j], pl.MaxTokens[i]
	})
}

// ShareGPT 过滤条件，与 vLLM bench 的 sharegpt 数据集默认值相同（is_valid_sequence：
// prompt 与回答至少 4 个 token，prompt 至多 1024、两者之和至多 2048）。这里按 internal/tokenize
// 规则计数，与模型分词器的计数会有出入，见 docs/loadgen.md。
const (
	shareGPTMinLen    = 4
	shareGPTMaxPrompt = 1024
	shareGPTMaxTotal  = 2048
)

// shareGPTEntry 是 ShareGPT JSON 数组的一个元素。
type shareGPTEntry struct {
	Conversations []struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
}

// ReadShareGPT 读取 ShareGPT 格式的 JSON 文件（一个数组，每个元素有 conversations:
// [{from, value}, …]，如 ShareGPT_V3_unfiltered_cleaned_split.json）。与 vLLM bench 相同：
// 少于两轮的对话跳过，prompt 是第一轮的 value，输出长度是第二轮（回答）的 token 数，
// 按 vLLM 的默认过滤条件剔除过短与过长的条目。数组逐个元素流式解码，大文件不整体读入。
// name 只用于错误信息；一条都不剩时报错。
func ReadShareGPT(r io.Reader, name string) ([]Prompt, error) {
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("dataset: read sharegpt %s: %w", name, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, fmt.Errorf("dataset: read sharegpt %s: want a JSON array of conversations, got %v", name, tok)
	}
	var out []Prompt
	seen := 0
	for dec.More() {
		var e shareGPTEntry
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("dataset: read sharegpt %s: entry %d: %w", name, seen, err)
		}
		seen++
		if len(e.Conversations) < 2 {
			continue
		}
		prompt, answer := e.Conversations[0].Value, e.Conversations[1].Value
		pl, ol := tokenize.Count(prompt), tokenize.Count(answer)
		if pl < shareGPTMinLen || ol < shareGPTMinLen || pl > shareGPTMaxPrompt || pl+ol > shareGPTMaxTotal {
			continue
		}
		if len(out) >= MaxSetPrompts {
			break
		}
		out = append(out, Prompt{Text: prompt, MaxTokens: ol, Tokens: pl})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("dataset: read sharegpt %s: no usable conversation among %d entries (need >= 2 turns, %d..%d prompt tokens, <= %d in total)",
			name, seen, shareGPTMinLen, shareGPTMaxPrompt, shareGPTMaxTotal)
	}
	return out, nil
}
