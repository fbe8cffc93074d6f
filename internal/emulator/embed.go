package emulator

import (
	"math"

	"github.com/vllm-cibench/cibench/internal/tokenize"
)

// Embed 返回文本 text 的 dim 维确定性单位向量：每个 token 对应一个由其内容
// 决定的伪随机向量，文本向量是它们之和再归一化（“词袋”）。因此相同文本得到
// 相同向量，共享词语越多的文本余弦相似度越高——足以让 rerank 的排序有意义，
// 但不代表任何真实语义。空文本返回第一维为 1 的向量。
func Embed(text string, dim int) []float64 {
	v := make([]float64, dim)
	tokenize.Walk(text, func(p string) bool {
		r := NewRand(Hash(trimSpace(p)))
		for i := range v {
			// 均匀分布的和近似高斯，足够用于方向随机。
			v[i] += r.Float64() + r.Float64() - 1
		}
		return true
	})
	return normalize(v)
}

// Truncate 取前 dim 维并重新归一化（Matryoshka 式降维，对应请求的 dimensions）。
func Truncate(v []float64, dim int) []float64 {
	if dim >= len(v) {
		return v
	}
	return normalize(append([]float64(nil), v[:dim]...))
}

// normalize 把 v 归一化为单位向量；零向量变为第一维为 1。
func normalize(v []float64) []float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	if s == 0 {
		if len(v) > 0 {
			v[0] = 1
		}
		return v
	}
	n := math.Sqrt(s)
	for i := range v {
		v[i] /= n
	}
	return v
}

// trimSpace 去掉 token 的前导空白，使 " word" 与 "word" 映射到同一向量。
func trimSpace(p string) string {
	i := 0
	for i < len(p) && (p[i] == ' ' || p[i] == '\n' || p[i] == '\t' || p[i] == '\r') {
		i++
	}
	if i == len(p) {
		return p
	}
	return p[i:]
}

// Cosine 返回两个向量的余弦相似度（单位向量时即点积）。
func Cosine(a, b []float64) float64 {
	var dot, na, nb float64
	for i := range a {
		if i >= len(b) {
			break
		}
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// RerankScore 把 query 与 doc 的相似度映射到 (0,1)：score = sigmoid(8·cos - 2)，
// 与交叉编码器 reranker 的输出范围一致。
func RerankScore(query, doc string) float64 {
	const dim = 256
	c := Cosine(Embed(query, dim), Embed(doc, dim))
	return 1 / (1 + math.Exp(-(8*c - 2)))
}
