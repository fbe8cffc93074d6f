package emulator

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"sort"
	"strconv"
	"time"

	emu "github.com/vllm-cibench/cibench/internal/emulator"
)

// emuEmbeddingRequest 是 /v1/embeddings 的请求体。
type emuEmbeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
}

// handleEmbeddings 实现 POST /v1/embeddings（EnableEmbeddings 关闭时 404）：
// input 为字符串、字符串数组或 token id 数组；向量确定性、单位长度。
func (e *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	cfg := e.cfg.Load()
	if !cfg.EnableEmbeddings {
		e.writeError(w, cfg, &emuErr{status: http.StatusNotFound, msg: "Not Found"})
		return
	}
	var req emuEmbeddingRequest
	er := e.readJSON(r, func(body []byte) *emuErr { return decodeJSON(body, &req) })
	if er == nil {
		er = e.checkModel(cfg, req.Model, true)
	}
	var texts []string
	var counts []int
	if er == nil {
		texts, counts, _, er = parsePrompts(req.Input)
		if er != nil {
			er.param = "input"
		}
		if er == nil && cfg.Defects.EmbeddingBatchIgnored && len(texts) > 1 {
			texts, counts = texts[:1], counts[:1]
		}
	}
	dim := cfg.EmbeddingDim
	if er == nil && req.Dimensions != nil {
		if *req.Dimensions < 1 || *req.Dimensions > cfg.EmbeddingDim {
			er = emuBadRequest("dimensions", "dimensions must be in [1, "+strconv.Itoa(cfg.EmbeddingDim)+"], got "+strconv.Itoa(*req.Dimensions))
		} else {
			dim = *req.Dimensions
		}
	}
	if er == nil && req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		er = emuBadRequest("encoding_format", "encoding_format must be \"float\" or \"base64\", got "+strconv.Quote(req.EncodingFormat))
	}
	total := 0
	for i, c := range counts {
		total += c
		if er == nil && c > cfg.MaxModelLen && !cfg.Defects.NoContextCheck {
			er = emuBadRequest("input", "This model's maximum context length is "+strconv.Itoa(cfg.MaxModelLen)+" tokens. However, input["+strconv.Itoa(i)+"] has "+strconv.Itoa(c)+" tokens.")
		}
	}
	if er != nil {
		e.writeError(w, cfg, er)
		e.logAccess(r, er.status, false, 0, 0, start, "")
		return
	}
	outDim := dim
	if cfg.Defects.EmbeddingWrongDim {
		outDim = dim - 1
	}
	var b bytes.Buffer
	b.WriteString(`{"id":`)
	b.Write(emu.AppendString(nil, e.newID(cfg, "embd-")))
	b.WriteString(`,"object":"list","created":` + strconv.FormatInt(time.Now().Unix(), 10) + `,"model":`)
	b.Write(emu.AppendString(nil, cfg.Model))
	b.WriteString(`,"data":[`)
	num := make([]byte, 0, 32)
	for i, t := range texts {
		v := emu.Truncate(emu.Embed(t, cfg.EmbeddingDim), dim)[:outDim]
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"index":` + strconv.Itoa(i) + `,"object":"embedding","embedding":`)
		if req.EncodingFormat == "base64" {
			raw := make([]byte, 4*len(v))
			for k, x := range v {
				if cfg.Defects.EmbeddingBase64Wrong {
					binary.BigEndian.PutUint32(raw[4*k:], math.Float32bits(float32(x)))
				} else {
					binary.LittleEndian.PutUint32(raw[4*k:], math.Float32bits(float32(x)))
				}
			}
			b.WriteByte('"')
			b.WriteString(base64.StdEncoding.EncodeToString(raw))
			b.WriteByte('"')
		} else {
			b.WriteByte('[')
			for k, x := range v {
				if k > 0 {
					b.WriteByte(',')
				}
				num = strconv.AppendFloat(num[:0], float64(float32(x)), 'g', -1, 32)
				b.Write(num)
			}
			b.WriteByte(']')
		}
		b.WriteByte('}')
	}
	b.WriteString(`],"usage":{"prompt_tokens":` + strconv.Itoa(total) + `,"total_tokens":` + strconv.Itoa(total) +
		`,"completion_tokens":0,"prompt_tokens_details":null}}`)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b.Bytes())
	e.metrics.PromptTokens.Add(float64(total))
	e.logAccess(r, http.StatusOK, false, total, 0, start, "")
}

// emuRerankRequest 是 /rerank 的请求体；documents 可以是字符串或 {"text": …} 对象。
type emuRerankRequest struct {
	Model           string            `json:"model"`
	Query           *string           `json:"query"`
	Documents       []json.RawMessage `json:"documents"`
	TopN            int               `json:"top_n"`
	ReturnDocuments *bool             `json:"return_documents"`
}

// emuRerankResult 是一条 rerank 结果。
type emuRerankResult struct {
	Index          int                `json:"index"`
	Document       *map[string]string `json:"document,omitempty"`
	RelevanceScore float64            `json:"relevance_score"`
}

// handleRerank 实现 POST /v1/rerank、/rerank、/v2/rerank（EnableRerank 关闭时 404）：
// 分数是查询与文档词袋向量相似度的 sigmoid，结果按分数降序，top_n 截断。
func (e *Server) handleRerank(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	cfg := e.cfg.Load()
	if !cfg.EnableRerank {
		e.writeError(w, cfg, &emuErr{status: http.StatusNotFound, msg: "Not Found"})
		return
	}
	var req emuRerankRequest
	er := e.readJSON(r, func(body []byte) *emuErr { return decodeJSON(body, &req) })
	if er == nil {
		er = e.checkModel(cfg, req.Model, true)
	}
	docs := make([]string, 0, len(req.Documents))
	if er == nil {
		switch {
		case req.Query == nil:
			er = emuBadRequest("query", "query is required")
		case len(req.Documents) == 0:
			er = emuBadRequest("documents", "documents must be a non-empty list")
		case req.TopN < 0:
			er = emuBadRequest("top_n", "top_n must be >= 0, got "+strconv.Itoa(req.TopN))
		}
	}
	for i := 0; er == nil && i < len(req.Documents); i++ {
		var s string
		if json.Unmarshal(req.Documents[i], &s) != nil {
			var obj struct {
				Text *string `json:"text"`
			}
			if json.Unmarshal(req.Documents[i], &obj) != nil || obj.Text == nil {
				er = emuBadRequest("documents", "documents["+strconv.Itoa(i)+"] must be a string or an object with \"text\"")
				break
			}
			s = *obj.Text
		}
		docs = append(docs, s)
	}
	if er != nil {
		e.writeError(w, cfg, er)
		e.logAccess(r, er.status, false, 0, 0, start, "")
		return
	}
	total := 0
	results := make([]emuRerankResult, len(docs))
	for i, d := range docs {
		total += emuCount(*req.Query) + emuCount(d)
		results[i] = emuRerankResult{Index: i, RelevanceScore: emu.RerankScore(*req.Query, d)}
		if req.ReturnDocuments == nil || *req.ReturnDocuments {
			m := map[string]string{"text": d}
			results[i].Document = &m
		}
	}
	if !cfg.Defects.RerankUnsorted {
		sort.SliceStable(results, func(a, b int) bool { return results[a].RelevanceScore > results[b].RelevanceScore })
	}
	if cfg.Defects.RerankIndexWrong && len(results) > 1 {
		first := results[0].Index
		for i := 0; i+1 < len(results); i++ {
			results[i].Index = results[i+1].Index
		}
		results[len(results)-1].Index = first
	}
	if req.TopN > 0 && req.TopN < len(results) {
		results = results[:req.TopN]
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": e.newID(cfg, "rerank-"), "model": cfg.Model, "usage": map[string]int{"total_tokens": total}, "results": results,
	})
	e.metrics.PromptTokens.Add(float64(total))
	e.logAccess(r, http.StatusOK, false, total, 0, start, "")
}
