package deploy

import "net/http"

// handleEmbeddings 实现 POST /v1/embeddings（EnableEmbeddings 关闭时 404）。
func (e *Emulator) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	cfg := e.cfg.Load()
	e.writeError(w, cfg, &emuErr{status: http.StatusNotFound, msg: "Not Found"})
}

// handleRerank 实现 POST /v1/rerank 与 /rerank（EnableRerank 关闭时 404）。
func (e *Emulator) handleRerank(w http.ResponseWriter, r *http.Request) {
	cfg := e.cfg.Load()
	e.writeError(w, cfg, &emuErr{status: http.StatusNotFound, msg: "Not Found"})
}
