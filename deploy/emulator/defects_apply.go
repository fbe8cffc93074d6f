package emulator

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// decodeChatBody 解析 chat 请求体，并施加只在解码阶段可见的缺陷
// （MalformedJSONServerError、UnknownFieldRejected）；无缺陷时与 decodeJSON 完全相同。
// 单独成函数，让缺陷逻辑不混进 handleChat 的正常路径。
func decodeChatBody(cfg *Config, body []byte, req *emuChatRequest) *emuErr {
	er := decodeJSON(body, req)
	d := &cfg.Defects
	switch {
	case er != nil && d.MalformedJSONServerError && !json.Valid(body):
		return &emuErr{status: http.StatusInternalServerError, typ: "InternalServerError", msg: "Internal Server Error"}
	case er == nil && d.UnknownFieldRejected:
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(new(emuChatRequest)); err != nil {
			return emuBadRequest("", "Extra inputs are not permitted: "+err.Error())
		}
	}
	return er
}
