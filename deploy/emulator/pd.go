package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/vllm-cibench/cibench/deploy"
	emu "github.com/vllm-cibench/cibench/internal/emulator"
)

// emuKVTransfer 是请求与响应中的 kv_transfer_params（vLLM KV connector 的约定，
// 字段名取自 NixlConnector 与 vLLM 的 disaggregated proxy 示例）。
type emuKVTransfer struct {
	DoRemoteDecode  bool `json:"do_remote_decode"`
	DoRemotePrefill bool `json:"do_remote_prefill"`
}

// planPD 按本实例的 PD 角色解释请求里的 kv_transfer_params：prefill 角色上
// do_remote_decode 的请求只做 prefill 并在响应里给出 kv_transfer_params；decode 角色上
// do_remote_prefill 的请求跳过本地 prefill，首 token 时间改按 KV 传输计。其余情况
// （混合部署、没有 kv_transfer_params）按普通请求完整处理——OmniInfer 的 1P1D 教程就
// 直接向 prefill 端口发普通请求做冒烟测试。
func planPD(cfg *Config, run *emuRun, kv *emuKVTransfer) {
	if kv == nil {
		return
	}
	switch {
	case cfg.PDRole == "prefill" && kv.DoRemoteDecode:
		run.perf.prefill = true
	case cfg.PDRole == "decode" && kv.DoRemotePrefill:
		run.perf.remote = true
	}
}

// appendKVTransfer 追加非流式响应的 kv_transfer_params：prefill 角色上的
// do_remote_decode 请求给出 decode 侧拉取 KV 所需的参数（与 NixlConnector.request_finished
// 返回的字段相同：do_remote_prefill、remote_block_ids、remote_engine_id、remote_host、
// remote_port、tp_size），其余为 null。
func appendKVTransfer(b []byte, run *emuRun) []byte {
	if !run.perf.prefill {
		return append(b, "null"...)
	}
	b = append(b, `{"do_remote_prefill":true,"do_remote_decode":false,"remote_block_ids":[`...)
	bs := run.cfg.BlockSize
	for i := 0; i < (run.promptTokens+bs-1)/bs; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(i), 10)
	}
	b = append(b, `],"remote_engine_id":`...)
	b = emu.AppendString(b, run.cfg.Model+"-prefill")
	host, port := "127.0.0.1", 0
	if run.local != nil {
		if a, ok := run.local.(*net.TCPAddr); ok {
			host, port = a.IP.String(), a.Port
		}
	}
	b = append(b, `,"remote_host":`...)
	b = emu.AppendString(b, host)
	b = append(b, `,"remote_port":`...)
	b = strconv.AppendInt(b, int64(port), 10)
	return append(b, `,"tp_size":1}`...)
}

// PDConfig 配置一组 PD 分离的模拟器（OmniInfer 1P1D 的形状）：一个 prefill 实例、一个
// decode 实例（各自一个端口），以及它们前面的代理（vLLM disaggregated serving 示例
// toy_proxy_server 的语义）。
type PDConfig struct {
	// Prefill 是 prefill 实例的配置；PDRole 由 NewPD 设为 "prefill"。
	Prefill Config `json:"prefill" yaml:"prefill"`
	// Decode 是 decode 实例的配置；PDRole 由 NewPD 设为 "decode"。KVTransferPerToken 在这里给。
	Decode Config `json:"decode" yaml:"decode"`
	// Addr 是代理的监听地址，空为 127.0.0.1:0。两个实例的地址取各自配置的 Addr。
	Addr string `json:"addr,omitempty" yaml:"addr,omitempty"`
	// Timeout 是代理转发一个请求（prefill 加上整段 decode 流）的上限，0 为 DefaultPDTimeout。
	Timeout time.Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"`
}

// DefaultPDTimeout 是 PDConfig.Timeout 为 0 时代理转发单个请求的上限。
const DefaultPDTimeout = 10 * time.Minute

// pdMaxBody 是代理读取的请求体与 prefill 响应体上限。
const pdMaxBody = emuMaxBody

// PD 是一组 PD 分离的模拟器。客户端与真实部署一样只和代理说话：代理把请求改写为
// max_tokens=1、stream=false、kv_transfer_params={"do_remote_decode":true,…} 发给
// prefill 实例，取回响应里的 kv_transfer_params，再把原请求连同它发给 decode 实例，
// 并把 decode 的响应（流式或非流式）原样转给客户端。decode 实例在首 token 前等待
// TTFT + 本地前缀缓存未命中的提示 token × KVTransferPerToken，然后按自己的 ITL 解码。
// 两个实例也可以直接访问（Deploy 返回的 *PDDeployment 给出它们的地址），不带
// kv_transfer_params 的请求在任一实例上都按混合部署完整处理。
//
// 并发约定：全部方法并发安全。
type PD struct {
	cfg     PDConfig
	prefill *Server
	decode  *Server
}

var _ deploy.Deployer = (*PD)(nil)

// NewPD 校验两份配置并构造 PD；错误点名是哪个实例（prefill/decode）。两个实例必须
// 服务同一个模型名。
func NewPD(cfg PDConfig) (*PD, error) {
	cfg.Prefill.PDRole, cfg.Decode.PDRole = "prefill", "decode"
	p, err := New(cfg.Prefill)
	if err != nil {
		return nil, fmt.Errorf("deploy: emulator pd: prefill: %w", err)
	}
	d, err := New(cfg.Decode)
	if err != nil {
		return nil, fmt.Errorf("deploy: emulator pd: decode: %w", err)
	}
	if pm, dm := p.Config().Model, d.Config().Model; pm != dm {
		return nil, fmt.Errorf("deploy: emulator pd: %w: Decode.Model=%s: must equal Prefill.Model=%s", ErrConfig, dm, pm)
	}
	if cfg.Addr != "" {
		if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
			return nil, fmt.Errorf("deploy: emulator pd: %w: Addr=%s: %v", ErrConfig, cfg.Addr, err)
		}
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("deploy: emulator pd: %w: Timeout=%v: must be >= 0", ErrConfig, cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultPDTimeout
	}
	return &PD{cfg: cfg, prefill: p, decode: d}, nil
}

// Prefill 返回 prefill 实例（用于 Update、Registry 等）；Decode 返回 decode 实例。
func (p *PD) Prefill() *Server { return p.prefill }

// Decode 见 Prefill。
func (p *PD) Decode() *Server { return p.decode }

// Deploy 依次启动 prefill、decode 两个实例与代理，全部健康后返回 *PDDeployment；
// 它的 Endpoint 是代理。任何一步失败时已启动的部分被关闭。
func (p *PD) Deploy(ctx context.Context) (deploy.Deployment, error) {
	d := &PDDeployment{}
	pre, err := p.prefill.Deploy(ctx)
	if err != nil {
		return nil, fmt.Errorf("deploy: emulator pd: prefill: %w", err)
	}
	d.prefill = pre
	dec, err := p.decode.Deploy(ctx)
	if err != nil {
		_ = d.Teardown(context.Background())
		return nil, fmt.Errorf("deploy: emulator pd: decode: %w", err)
	}
	d.decode = dec
	px := &pdProxy{prefill: emuRootOf(pre.Endpoint()), decode: emuRootOf(dec.Endpoint()), timeout: p.cfg.Timeout,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, ResponseHeaderTimeout: p.cfg.Timeout}}}
	addr := p.cfg.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		_ = d.Teardown(context.Background())
		return nil, fmt.Errorf("deploy: emulator pd: proxy listen %s: %w", addr, err)
	}
	d.proxy = &http.Server{Handler: px, ReadHeaderTimeout: 30 * time.Second}
	d.proxyDone = make(chan struct{})
	d.px = px
	go func() {
		defer close(d.proxyDone)
		_ = d.proxy.Serve(ln)
	}()
	base := "http://" + ln.Addr().String()
	if err := emuWaitHealthy(ctx, base+"/health"); err != nil {
		_ = d.Teardown(context.Background())
		return nil, err
	}
	d.ep = deploy.Endpoint{BaseURLs: []string{base + "/v1"}, Model: p.prefill.Config().Model, APIKey: dec.Endpoint().APIKey,
		// 代理没有自己的 /metrics：按角色列出两个实例，阶段分解因此按 prefill、KV 传输、decode 给出。
		Metrics: []deploy.MetricsInstance{
			{Name: "prefill", Role: "prefill", URL: emuRootOf(pre.Endpoint()) + "/metrics"},
			{Name: "decode", Role: "decode", URL: emuRootOf(dec.Endpoint()) + "/metrics"},
		}}
	return d, nil
}

// emuRootOf 返回端点去掉 /v1 的根地址。
func emuRootOf(ep deploy.Endpoint) string {
	u := ep.BaseURL()
	return u[:len(u)-len("/v1")]
}

// PDDeployment 是 PD.Deploy 返回的运行实例：Endpoint 是代理，PrefillEndpoint 与
// DecodeEndpoint 是两个实例（OmniInfer 教程里的 6660 与 6760 端口）。
type PDDeployment struct {
	prefill, decode deploy.Deployment
	proxy           *http.Server
	proxyDone       chan struct{}
	px              *pdProxy
	ep              deploy.Endpoint
	once            sync.Once
	err             error
}

// Endpoint 返回代理的地址（客户端应当使用的地址）。
func (d *PDDeployment) Endpoint() deploy.Endpoint { return d.ep }

// PrefillEndpoint 返回 prefill 实例的地址；DecodeEndpoint 返回 decode 实例的地址。
func (d *PDDeployment) PrefillEndpoint() deploy.Endpoint { return d.prefill.Endpoint() }

// DecodeEndpoint 见 PrefillEndpoint。
func (d *PDDeployment) DecodeEndpoint() deploy.Endpoint { return d.decode.Endpoint() }

// ArchiveLogs 把两个实例的日志与指标分别归档到 dir/prefill 与 dir/decode。
func (d *PDDeployment) ArchiveLogs(ctx context.Context, dir string) error {
	if err := d.prefill.ArchiveLogs(ctx, filepath.Join(dir, "prefill")); err != nil {
		return fmt.Errorf("deploy: emulator pd: prefill: %w", err)
	}
	if err := d.decode.ArchiveLogs(ctx, filepath.Join(dir, "decode")); err != nil {
		return fmt.Errorf("deploy: emulator pd: decode: %w", err)
	}
	return nil
}

// Teardown 关闭代理与两个实例；幂等。
func (d *PDDeployment) Teardown(ctx context.Context) error {
	d.once.Do(func() {
		var errs []error
		if d.proxy != nil {
			sctx, cancel := context.WithTimeout(ctx, emuShutdownGrace)
			if err := d.proxy.Shutdown(sctx); err != nil {
				_ = d.proxy.Close()
			}
			cancel()
			<-d.proxyDone
			d.px.client.CloseIdleConnections()
		}
		for _, dep := range []deploy.Deployment{d.decode, d.prefill} {
			if dep != nil {
				errs = append(errs, dep.Teardown(ctx))
			}
		}
		d.err = errors.Join(errs...)
	})
	return d.err
}

// pdProxy 是 PD 前面的代理（vLLM disaggregated serving 的 toy_proxy_server 语义）。
type pdProxy struct {
	prefill, decode string
	client          *http.Client
	timeout         time.Duration
}

// ServeHTTP 转发：两个生成端点走 prefill → decode 两段；/health 与其他路径转给 decode
// （/metrics 例外：代理没有自己的指标，两个实例要分别抓取，见 PDDeployment）。
func (px *pdProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && (r.URL.Path == "/v1/chat/completions" || r.URL.Path == "/v1/completions"):
		px.generate(w, r)
	case r.URL.Path == "/metrics":
		pdError(w, http.StatusNotFound, "the PD proxy has no metrics: scrape the prefill and decode instances")
	default:
		px.forward(w, r, px.decode, r.Body)
	}
}

// generate 做两段转发：先 prefill（只算 1 个 token），再把它给出的 kv_transfer_params
// 交给 decode。prefill 失败时把它的状态与错误体原样交给客户端。
func (px *pdProxy) generate(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), px.timeout)
	defer cancel()
	body, err := io.ReadAll(io.LimitReader(r.Body, pdMaxBody+1))
	if err != nil || len(body) > pdMaxBody {
		pdError(w, http.StatusBadRequest, "cannot read request body")
		return
	}
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		pdError(w, http.StatusBadRequest, "Invalid request body: "+err.Error())
		return
	}
	pre := make(map[string]json.RawMessage, len(req)+2)
	for k, v := range req {
		pre[k] = v
	}
	pre["kv_transfer_params"] = json.RawMessage(`{"do_remote_decode":true,"do_remote_prefill":false,"remote_engine_id":null,"remote_block_ids":null,"remote_host":null,"remote_port":null}`)
	pre["stream"] = json.RawMessage("false")
	pre["max_tokens"] = json.RawMessage("1")
	if _, ok := pre["max_completion_tokens"]; ok {
		pre["max_completion_tokens"] = json.RawMessage("1")
	}
	delete(pre, "stream_options")
	preBody, _ := json.Marshal(pre)
	resp, err := px.post(ctx, r, px.prefill, preBody)
	if err != nil {
		pdError(w, http.StatusBadGateway, "prefill: "+err.Error())
		return
	}
	out, err := io.ReadAll(io.LimitReader(resp.Body, pdMaxBody))
	resp.Body.Close()
	if err != nil {
		pdError(w, http.StatusBadGateway, "prefill: "+err.Error())
		return
	}
	if resp.StatusCode != http.StatusOK {
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(out)
		return
	}
	var pr struct {
		KV json.RawMessage `json:"kv_transfer_params"`
	}
	if err := json.Unmarshal(out, &pr); err == nil && len(pr.KV) > 0 && string(pr.KV) != "null" {
		req["kv_transfer_params"] = pr.KV
	}
	decBody, _ := json.Marshal(req)
	px.forward(w, r.WithContext(ctx), px.decode, bytes.NewReader(decBody))
}

// post 向 base+r.URL.Path 发 POST，带上客户端的 Authorization。
func (px *pdProxy) post(ctx context.Context, r *http.Request, base string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+r.URL.Path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if a := r.Header.Get("Authorization"); a != "" {
		req.Header.Set("Authorization", a)
	}
	return px.client.Do(req)
}

// forward 把请求转给 base 上的同一路径，并把响应（含流式响应，逐块刷新）交给客户端。
func (px *pdProxy) forward(w http.ResponseWriter, r *http.Request, base string, body io.Reader) {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, base+r.URL.RequestURI(), body)
	if err != nil {
		pdError(w, http.StatusBadGateway, err.Error())
		return
	}
	for _, h := range []string{"Content-Type", "Authorization", "Accept"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	resp, err := px.client.Do(req)
	if err != nil {
		pdError(w, http.StatusBadGateway, "decode: "+err.Error())
		return
	}
	defer resp.Body.Close()
	for _, h := range []string{"Content-Type", "Cache-Control", "Content-Length"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	fl, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}

// pdError 写出 vLLM 形状的错误体。
func pdError(w http.ResponseWriter, status int, msg string) {
	b := appendErrorJSON(nil, &emuErr{status: status, typ: emuErrType(status), msg: msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
