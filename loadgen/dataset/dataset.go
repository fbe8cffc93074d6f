package dataset

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vllm-cibench/cibench/field"
	"github.com/vllm-cibench/cibench/internal/tokenize"
	"golang.org/x/sync/errgroup"
)

// englishWords 与 chineseChars 是随机文本的素材。每个英文词（带前导空格）、
// 每个汉字、每个标点在 internal/tokenize 规则下恰好是 1 个 token，
// 所以"片段数 = token 数"，不依赖服务端即可得到精确长度。
var englishWords = strings.Fields(`the of and to in is that for it as was with be by on not he this are or
his from at which but have an they you were her she there been one all we their has would when if so no
what up out more about into than them can only other time new some could these two may first then do any
like my now over such our man me even most made after also did many before must through back years where
much your way well down should because each just those people how too little state good very make world
still own see men work long get here between both life being under never day same another know while last
might us great old year off come since against go came right used take three model token server latency
request stream batch cache memory prompt decode prefill kernel tensor matrix vector queue worker router
cluster node engine sample output input length benchmark throughput system test`)

// chineseChars 取常用汉字，保证在 CJK 统一表意文字区，按规则逐字成 token。
const chineseChars = `的一是不了在人有我他这个们中来上大为和国地到以说时要就出会可也你对生能而子那得于着下自之年过发后作里用道行所然家种事成方多经么去法学如都同现当没动面起看定天分还进好小部其些主样理心她本前开但因只从想实日军者意无力它与长把机十民第公此已工使情明性知全三又关点正业外将两高间由问很最重并物手应战向头文体政美相见被利什二等产或新己制身果加西斯月话合回特代内信表化老给世位次度门任常先海通教儿原东声提立及比员解水名真论处走义各入几口认条平系气题活尔更别打女变四神总何电数安少报才结反受目太量再感建务做接必场件计管期市直德资命山金指克许统区保至队形社便空决治展马科司五基眼书非则听白却界达光放强即像难且权思王象完设式色路记南品住告类求据程北边死张该交规万取拉格望觉术领共确传师观清今切院让识候带导争运笑飞风步改收根干造言联持组每济车亲极林服快办议往元英士证近失转夫令准布始怎呢存未远叫台单影具罗字爱击流备兵连调深商算质团集百需价花党华城石级整府离况亚请技际约示复病息究线似官火断精满支视消越器容照须九增研写称企八功吗包片史委乎查轻易早曾除农找装广显吧阿李标谈吃图念六引历首医局突专费号尽另周较注语仅考落青随选列武红响虽推势参希古众构房半节土投某案黑维革划敌致陈律足态护七兴派孩验责营星够章音跟志底站严巴例防族供效续施留讲型料终答紧黄绝奇察母京段依批群项故按河米围江织害斗双境客纪采举杀攻父苏密低朝友诉止细愿千值仍男钱破网热助倒育属坐帝限船脸职速刻乐否刚威毛状率甚独球般普怕弹校苦创假久错承印晚兰试股拿脑预谁益阳若哪微尼继送急血惊伤素药适波夜省初喜卫源食险待述陆习置居劳财环排福纳欢雷警获模充负云停木游龙树疑层冷洲冲射略范竟句室异激汉村哈策演简卡罪判担州静退既衣您宗积余痛检差富灵协角占配征修皮挥胜降阶审沉坚善妈刘读啊超免压银买皇养伊怀执副乱抗犯追帮宣佛岁航优怪香著田铁控税左右份穿艺背阵草脚概恶块顿敢守酒岛托央户烈洋哥索胡款靠评版宝座释景顾弟登货互付伯慢欧换闻危忙核暗姐介坏讨丽良序升监临亮露永呼味野架域沙掉括舰鱼杂误湖激`

// zhPunct 与 enPunct 是插入文本中的标点，每个在规则下是 1 个 token。
var (
	zhPunct = []string{"，", "。", "、", "；", "：", "？", "！"}
	enPunct = []string{",", ".", ";", ":", "?", "!"}
)

// textGen 用可复现的随机数生成中英混合的 token 片段。
type textGen struct {
	rng   *rand.Rand
	zh    []rune
	inZh  bool // 当前处于中文段还是英文段
	left  int  // 当前段剩余片段数
	since int  // 距上一个标点的片段数
}

// newTextGen 以 seed 创建生成器；相同 seed 产生相同文本。
func newTextGen(seed uint64) *textGen {
	return &textGen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), zh: []rune(chineseChars)}
}

// piece 返回下一个恰为 1 个 token 的片段：英文词总带前导空格，
// 这样任意两个片段相邻都不会被规则合并成一个 token。
func (g *textGen) piece() string {
	if g.left == 0 {
		g.inZh = !g.inZh
		g.left = 4 + g.rng.IntN(24)
	}
	g.left--
	g.since++
	if g.since > 6 && g.rng.IntN(8) == 0 {
		g.since = 0
		if g.inZh {
			return zhPunct[g.rng.IntN(len(zhPunct))]
		}
		return enPunct[g.rng.IntN(len(enPunct))]
	}
	if g.inZh {
		r := g.zh[g.rng.IntN(len(g.zh))]
		return string(r)
	}
	return " " + englishWords[g.rng.IntN(len(englishWords))]
}

// pieces 追加 n 个片段到 dst。
func (g *textGen) pieces(dst []string, n int) []string {
	for range n {
		dst = append(dst, g.piece())
	}
	return dst
}

// RandomText 返回由 seed 决定的中英混合随机文本，按 internal/tokenize 规则恰好 tokens 个 token。
// 同一 seed 与长度总是得到同一文本，这是压测可复现的基础。
func RandomText(seed int64, tokens int) string {
	g := newTextGen(uint64(seed))
	return strings.Join(g.pieces(nil, tokens), "")
}

// TokenCounter 给出服务端分词器下文本的 token 数（通常是 vLLM 的 POST /tokenize）。
// 建池时最多 16 条 prompt 并发校准，所以 CountTokens 必须可以被并发调用。
type TokenCounter interface {
	CountTokens(ctx context.Context, text string) (int, error)
}

// PoolSize 是每个输入长度预生成的不同 prompt 个数上限；请求按序号循环使用。
// 有上限是为了让 1,000,000 个请求的运行内存保持有界（prefix_repetition 的集合就是全部请求，不受它限制）。
const PoolSize = 1024

// Pool 是一个输入长度分组的 prompt 池：预生成的 prompt（已转成 JSON 字符串字面量，发送时直接拼接）、
// 各自的 token 数与（集合类、custom 数据集的）逐条输出长度；轨迹回放时 Trace 非 nil、切片为空，
// 每个请求的 prompt 按序号现生成。压测的热路径按序号直接读这些字段（不经方法、不分配）。
type Pool struct {
	Quoted [][]byte // json 编码后的字符串（含引号）
	Tokens []int    // 目标 token 数（服务端校准后的实际值）
	// MaxTokens 是逐条的 max_tokens（0 = 用分组的输出长度）；random 数据集为 nil。
	MaxTokens []int
	// Exact 报告长度是否经服务端分词器（或 Target.Tokenizer）确认。
	Exact bool
	// Complete 表示池就是整个数据集（集合类数据集、轨迹），任何请求数都不需要重建。
	Complete bool
	// Trace 非 nil 时是轨迹回放：每个请求的 prompt 由 Trace.Prompt 按序号现生成。
	Trace *Trace
}

// TokenizeWorkers 是校准 prompt 长度时并发的 /tokenize 请求数上限：足以把 1024 条 prompt
// 的往返时延重叠起来（串行时对慢一些的服务要 2.6 秒），又不至于在压测开始前压垮服务端。
const TokenizeWorkers = 16

// tokenizeTimeout 是单次 /tokenize 调用的期限；服务端卡住时启动阶段因此有界地失败，而不是挂起
// （变量只为让测试缩短它）。
var tokenizeTimeout = 10 * time.Second

// PromptsFor 返回 custom 数据集中属于输入长度 inputLen 的 prompt：
// InputLength 为 0 的条目属于所有长度；inputLen 为 0（未给 --input-length）时返回全部。
func PromptsFor(ps []Prompt, inputLen int) []Prompt {
	if inputLen == 0 {
		return ps
	}
	var out []Prompt
	for _, p := range ps {
		if p.InputLength == 0 || p.InputLength == inputLen {
			out = append(out, p)
		}
	}
	return out
}

// LengthsOf 列出 custom 数据集中出现的名义输入长度（"in the dataset: 64, 128, any"），用于错误信息。
func LengthsOf(ps []Prompt) string {
	seen := map[int]bool{}
	var ls []string
	for _, p := range ps {
		if !seen[p.InputLength] {
			seen[p.InputLength] = true
			if p.InputLength == 0 {
				ls = append(ls, "any")
			} else {
				ls = append(ls, strconv.Itoa(p.InputLength))
			}
		}
	}
	return "in the dataset: " + strings.Join(ls, ", ")
}

// Random 是 random 数据集的生成参数：种子、公共前缀长度与输入长度的上浮 / 下潜比例
// （Profile 的 seed、prefix_length、range_ratio_above、range_ratio_below）。
type Random struct {
	Seed            int64
	PrefixLength    int
	RangeRatioAbove float64
	RangeRatioBelow float64
}

// RandomPool 为输入长度 inputLen 生成 n 个随机 prompt（n 超过 PoolSize 时取 PoolSize）。有 counter 时
// 逐条用它校准（多退少补，最多 12 轮），最多 16 条并发；否则按 internal/tokenize 的规则精确生成。
// 每条 prompt 的文本只由种子与序号决定，所以并发不影响可复现性。
func RandomPool(ctx context.Context, r Random, inputLen, n int, counter TokenCounter) (*Pool, error) {
	n = min(n, PoolSize)
	pool := &Pool{Exact: counter != nil}
	err := randomPrompts(ctx, r, inputLen, n, counter, func(text string, tokens int) error {
		q, _ := json.Marshal(text)
		pool.Quoted = append(pool.Quoted, q)
		pool.Tokens = append(pool.Tokens, tokens)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return pool, nil
}

// CustomPool 用 custom 数据集中属于输入长度 inputLen 的前 n 条 prompt（至多 PoolSize 条）建池：
// 没有 prompt_tokens 的条目按 internal/tokenize 规则计数，逐条的 max_tokens 原样保留。
func CustomPool(prompts []Prompt, inputLen, n int) *Pool {
	ps := PromptsFor(prompts, inputLen)
	pool := &Pool{}
	for i := range min(n, PoolSize, len(ps)) {
		q, _ := json.Marshal(ps[i].Text)
		pool.Quoted = append(pool.Quoted, q)
		tok := ps[i].Tokens
		if tok == 0 {
			tok = tokenize.Count(ps[i].Text)
		}
		pool.Tokens = append(pool.Tokens, tok)
		pool.MaxTokens = append(pool.MaxTokens, ps[i].MaxTokens)
	}
	return pool
}

// randomPrompts 按 p 的种子、前缀长度与输入长度抖动（RangeRatioAbove/Below）生成
// n 条随机 prompt，按序号顺序交给 emit。压测的 random 数据集与 Generate 共用它，
// 所以同样的参数得到同样的文本。有 counter 时最多 TokenizeWorkers 条并发校准：每条
// prompt 的文本只由种子与序号决定，长度抖动也按序号预先抽好，所以结果与串行时相同。
func randomPrompts(ctx context.Context, p Random, inputLen, n int, counter TokenCounter, emit func(text string, tokens int) error) error {
	prefixGen := newTextGen(uint64(p.Seed) ^ 0x5eed)
	prefix := prefixGen.pieces(nil, p.PrefixLength)
	lenRng := rand.New(rand.NewPCG(uint64(p.Seed), uint64(inputLen)))
	targets := make([]int, n)
	for i := range targets { // 长度抖动按序号顺序抽取，与并发无关
		targets[i] = max(Jitter(lenRng, inputLen, p.RangeRatioBelow, p.RangeRatioAbove), p.PrefixLength+1)
	}
	texts, counts := make([]string, n), make([]int, n)
	build := func(ctx context.Context, i int) error {
		g := newTextGen(uint64(p.Seed)*1_000_003 + uint64(inputLen)*7919 + uint64(i))
		pieces := append(append([]string(nil), prefix...), g.pieces(nil, targets[i]-p.PrefixLength)...)
		texts[i], counts[i] = strings.Join(pieces, ""), targets[i]
		if counter == nil {
			return nil
		}
		var err error
		texts[i], counts[i], err = calibrate(ctx, counter, g, pieces, targets[i], p.PrefixLength)
		return err
	}
	if counter == nil {
		for i := range n {
			_ = build(ctx, i) // 没有 counter 时不会出错
		}
	} else {
		// 有界并发、第一个错误取消其余：errgroup 的语义。循环在 ctx 结束后不再派发，
		// 已派发的 build 经 gctx 尽快返回。
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(TokenizeWorkers)
		for i := range n {
			if gctx.Err() != nil {
				break
			}
			g.Go(func() error { return build(gctx, i) })
		}
		if err := g.Wait(); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
	}
	for i := range n {
		if err := emit(texts[i], counts[i]); err != nil {
			return err
		}
	}
	return nil
}

// Spec 是 acs-bench "generate dataset" 的参数（acs-bench 选项（docs/requirements.md 附录 A.1））：一个输入长度、
// 条数、公共前缀长度与输入长度的上浮 / 下潜比例。
type Spec struct {
	InputLength     int
	NumRequests     int
	PrefixLength    int
	RangeRatioAbove float64
	RangeRatioBelow float64
	Seed            int64
}

// ErrInvalidSpec 是 Spec 校验错误（*field.Error）包住的哨兵，可用 errors.Is 判断。
var ErrInvalidSpec = errors.New("dataset: invalid spec")

// invalid 构造一个带字段名与取值的校验错误（*field.Error，Field 是与 Profile 相同的 YAML 键）。
func invalid(name string, value any, why string) error {
	return field.New(ErrInvalidSpec, name, value, why)
}

// finite 报告 v 是有限数（NaN 与 ±Inf 在任何字段里都没有意义）。
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Validate 检查 Spec；错误是 *field.Error（字段名同 Profile 的 YAML 键），errors.Is(err, ErrInvalidSpec) 成立。
func (s Spec) Validate() error {
	switch {
	case s.InputLength < 1 || s.InputLength > MaxTokens:
		return invalid("input_length", s.InputLength, fmt.Sprintf("must be in [1, %d]", MaxTokens))
	case s.NumRequests < 1 || s.NumRequests > MaxRequests:
		return invalid("num_requests", s.NumRequests, fmt.Sprintf("must be in [1, %d]", MaxRequests))
	case s.PrefixLength < 0 || s.PrefixLength >= s.InputLength:
		return invalid("prefix_length", s.PrefixLength, fmt.Sprintf("must be in [0, input_length %d)", s.InputLength))
	case !finite(s.RangeRatioAbove) || s.RangeRatioAbove < 0 || s.RangeRatioAbove > 1:
		return invalid("range_ratio_above", s.RangeRatioAbove, "must be in [0, 1]")
	case !finite(s.RangeRatioBelow) || s.RangeRatioBelow < 0 || s.RangeRatioBelow >= 1:
		return invalid("range_ratio_below", s.RangeRatioBelow, "must be in [0, 1)")
	}
	return nil
}

// FileName 是生成的数据集文件名：random_input{L}_num{N}[_prefix{P}].jsonl。
// prof -dt custom -i 目录 读取目录下所有 .jsonl，按每行的 input_length 分组，文件名只供人看。
func (s Spec) FileName() string {
	name := fmt.Sprintf("random_input%d_num%d", s.InputLength, s.NumRequests)
	if s.PrefixLength > 0 {
		name += fmt.Sprintf("_prefix%d", s.PrefixLength)
	}
	return name + ".jsonl"
}

// Generate 把 s 描述的随机数据集逐行写成 JSONL（每行一个 Prompt：prompt、
// input_length 为名义长度、prompt_tokens 为实际 token 数）。counter 非 nil 时（--tokenizer
// 或服务端 /tokenize）每条 prompt 按它校准到目标长度，否则按内置计数规则精确生成。
// 与压测时 random 数据集的文本相同（同种子、同长度、同前缀）。返回写出的条数。
func Generate(ctx context.Context, w io.Writer, s Spec, counter TokenCounter) (int, error) {
	if err := s.Validate(); err != nil {
		return 0, err
	}
	p := Random{Seed: s.Seed, PrefixLength: s.PrefixLength, RangeRatioAbove: s.RangeRatioAbove, RangeRatioBelow: s.RangeRatioBelow}
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	n := 0
	err := randomPrompts(ctx, p, s.InputLength, s.NumRequests, counter, func(text string, tokens int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		n++
		return enc.Encode(Prompt{Text: text, InputLength: s.InputLength, Tokens: tokens})
	})
	if err != nil {
		return n, fmt.Errorf("dataset: generate: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("dataset: generate: %w", err)
	}
	return n, nil
}

// calibrate 让文本在服务端分词器下恰好（或尽量接近）target 个 token。每个片段在
// 真实分词器下可能是多个 token（字节级 BPE 中一个汉字常是 2~3 个），所以按当前的
// "token/片段"比例估算要增删的片段数，最多 12 轮，返回最接近目标的文本与其计数。
func calibrate(ctx context.Context, c TokenCounter, g *textGen, pieces []string, target, keep int) (string, int, error) {
	bestText, bestGot := "", -1
	for range 12 {
		text := strings.Join(pieces, "")
		cctx, cancel := context.WithTimeout(ctx, tokenizeTimeout)
		got, err := c.CountTokens(cctx, text)
		cancel()
		if err != nil {
			return "", 0, fmt.Errorf("dataset: tokenize: %w", err)
		}
		if bestGot < 0 || abs(got-target) < abs(bestGot-target) {
			bestText, bestGot = text, got
		}
		if got == target || got == 0 {
			break
		}
		ratio := float64(got) / float64(len(pieces))
		step := int(math.Round(float64(target-got) / ratio))
		if step == 0 {
			step = sign(target - got)
		}
		n := max(len(pieces)+step, keep+1)
		if n == len(pieces) {
			break
		}
		if n > len(pieces) {
			pieces = g.pieces(pieces, n-len(pieces))
		} else {
			pieces = pieces[:n]
		}
	}
	return bestText, bestGot, nil
}

// abs 返回整数的绝对值。
func abs(v int) int { return max(v, -v) }

// sign 返回 v 的符号（-1、0、1）。
func sign(v int) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// Jitter 在 [base×(1−below), base×(1+above)] 内均匀取整数长度（至少 1）：输入长度的抖动
// （range_ratio_*）与压测时输出长度的抖动（output_range_ratio_*）共用它。
func Jitter(r *rand.Rand, base int, below, above float64) int {
	if below == 0 && above == 0 {
		return base
	}
	lo := int(float64(base) * (1 - below))
	hi := int(float64(base) * (1 + above))
	if hi < lo {
		hi = lo
	}
	v := lo + r.IntN(hi-lo+1)
	return max(v, 1)
}

// ReadPrompts 从 JSONL 读取 custom 数据集：每行一个对象，文本取 "prompt"、"text"、
// "input" 或 "question" 中第一个非空字段，可选 "max_tokens"/"output_length"、
// "input_length"（所属输入长度组，GenerateDataset 写出）与 "prompt_tokens"。
// 空行忽略；坏行（含越界的长度）报错并指出行号。
func ReadPrompts(r io.Reader) ([]Prompt, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<30)
	var out []Prompt
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var row struct {
			Prompt       string `json:"prompt"`
			Text         string `json:"text"`
			Input        string `json:"input"`
			Question     string `json:"question"`
			MaxTokens    int    `json:"max_tokens"`
			OutputLength int    `json:"output_length"`
			InputLength  int    `json:"input_length"`
			Tokens       int    `json:"prompt_tokens"`
		}
		if err := json.Unmarshal(b, &row); err != nil {
			return nil, fmt.Errorf("dataset: read prompts: line %d: %w", line, err)
		}
		text := firstNonEmpty(row.Prompt, row.Text, row.Input, row.Question)
		if text == "" {
			return nil, fmt.Errorf("dataset: read prompts: line %d: no prompt/text/input/question field", line)
		}
		mt := row.MaxTokens
		if mt == 0 {
			mt = row.OutputLength
		}
		if mt < 0 || mt > MaxTokens || row.InputLength < 0 || row.InputLength > MaxTokens || row.Tokens < 0 {
			return nil, fmt.Errorf("dataset: read prompts: line %d: max_tokens %d / input_length %d / prompt_tokens %d out of range [0, %d]",
				line, mt, row.InputLength, row.Tokens, MaxTokens)
		}
		out = append(out, Prompt{Text: text, MaxTokens: mt, InputLength: row.InputLength, Tokens: row.Tokens})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("dataset: read prompts: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("dataset: read prompts: no prompts")
	}
	return out, nil
}

// firstNonEmpty 返回第一个非空字符串。
func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// ImageDataURL 生成一张 w×h、由 seed 决定的色块 PNG，编码为 data URL，
// 供 image-text 模态使用（真实像素数据，服务端需要真正解码）。
func ImageDataURL(seed uint64, w, h int) string {
	rng := rand.New(rand.NewPCG(seed, 0x1a9e))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	const block = 16
	for by := 0; by < h; by += block {
		for bx := 0; bx < w; bx += block {
			c := color.RGBA{uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), 255}
			for y := by; y < min(by+block, h); y++ {
				for x := bx; x < min(bx+block, w); x++ {
					img.SetRGBA(x, y, c)
				}
			}
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img) // 写入内存缓冲不会失败
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
}

// validUTF8Prefix 截断到合法 UTF-8 边界，供错误信息截取使用。
func validUTF8Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
