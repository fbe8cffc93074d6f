package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"github.com/vllm-cibench/cibench/internal/tokenize"
)

// setPool 建立集合类数据集（shared_prefix、prefix_repetition、sharegpt）的 prompt 池：
// 整个集合（不受 poolSize 限制，集合大小已在 Validate 中设限），打乱后请求按序号循环使用。
// n 是本组（含预热）的请求数，只有 prefix_repetition 用它决定集合大小（与 vLLM 相同：
// 集合就是 num_requests 条）。prompt 由生成器片段拼成，按 internal/tokenize 规则恰好是
// 目标 token 数；不经服务端 /tokenize 校准——校准会逐条改写文本，共享的前缀就不再逐字相同。
func setPool(p *Profile, n int) (*promptPool, error) {
	pool := &promptPool{complete: true}
	add := func(text string, tokens, maxTok int) {
		q, _ := jsonString(text)
		pool.quoted = append(pool.quoted, q)
		pool.tokens = append(pool.tokens, tokens)
		pool.maxTok = append(pool.maxTok, maxTok)
	}
	switch p.DatasetType {
	case DatasetSharedPrefix:
		sp := p.SharedPrefix
		seed := uint64(p.Seed)
		if sp.Seed != nil {
			seed = uint64(*sp.Seed)
		}
		for g := range sp.NumGroups {
			sys := strings.Join(newTextGen(seed*1_000_003+uint64(g)*7919+0x5157).pieces(nil, sp.SystemPromptLen), "")
			for q := range sp.NumPromptsPerGroup {
				gen := newTextGen(seed*1_000_033 + uint64(g)*104_729 + uint64(q)*15_485_863 + 0x9e57)
				add(sys+strings.Join(gen.pieces(nil, sp.QuestionLen), ""), sp.SystemPromptLen+sp.QuestionLen, sp.OutputLen)
			}
		}
		shufflePool(pool, seed)
	case DatasetPrefixRepetition:
		pr := p.PrefixRepetition
		seed := uint64(p.Seed)
		per, extra := n/pr.NumPrefixes, n%pr.NumPrefixes
		i := 0
		for k := range pr.NumPrefixes {
			prefix := strings.Join(newTextGen(seed*1_000_003+uint64(k)*7919+0x9f1e).pieces(nil, pr.PrefixLen), "")
			cnt := per
			if k < extra {
				cnt++
			}
			for range cnt {
				gen := newTextGen(seed*1_000_033 + uint64(i)*104_729 + 0x5aff)
				add(prefix+strings.Join(gen.pieces(nil, pr.SuffixLen), ""), pr.PrefixLen+pr.SuffixLen, pr.OutputLen)
				i++
			}
		}
		shufflePool(pool, seed)
	case DatasetShareGPT:
		for _, ps := range p.Prompts {
			mt := ps.MaxTokens
			if p.ShareGPT.OutputLen > 0 {
				mt = p.ShareGPT.OutputLen
			}
			add(ps.Text, ps.Tokens, mt)
		}
		shufflePool(pool, uint64(p.Seed))
	default:
		return nil, fmt.Errorf("loadgen: %s is not a prompt-set dataset", p.DatasetType)
	}
	if len(pool.quoted) == 0 {
		return nil, fmt.Errorf("loadgen: dataset %s: no prompts", p.DatasetType)
	}
	return pool, nil
}

// shufflePool 用 seed 决定的顺序打乱池（三个切片同步交换）。
func shufflePool(pl *promptPool, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x5f0ff1e))
	rng.Shuffle(len(pl.quoted), func(i, j int) {
		pl.quoted[i], pl.quoted[j] = pl.quoted[j], pl.quoted[i]
		pl.tokens[i], pl.tokens[j] = pl.tokens[j], pl.tokens[i]
		pl.maxTok[i], pl.maxTok[j] = pl.maxTok[j], pl.maxTok[i]
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
		return nil, fmt.Errorf("loadgen: read sharegpt %s: %w", name, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, fmt.Errorf("loadgen: read sharegpt %s: want a JSON array of conversations, got %v", name, tok)
	}
	var out []Prompt
	seen := 0
	for dec.More() {
		var e shareGPTEntry
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("loadgen: read sharegpt %s: entry %d: %w", name, seen, err)
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
		return nil, fmt.Errorf("loadgen: read sharegpt %s: no usable conversation among %d entries (need >= 2 turns, %d..%d prompt tokens, <= %d in total)",
			name, seen, shareGPTMinLen, shareGPTMaxPrompt, shareGPTMaxTotal)
	}
	return out, nil
}
