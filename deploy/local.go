package deploy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vllm-cibench/cibench/internal/procgroup"
)

// Local 相关的默认值。
const (
	// DefaultLocalHost 是本地实例监听并被访问的地址。
	DefaultLocalHost = "127.0.0.1"
	// DefaultLocalPort 与 vLLM 的默认 --port 一致。
	DefaultLocalPort = 8000
	// DefaultStopGracePeriod 是 SIGTERM 后等待进程组退出的时间，之后 SIGKILL。
	DefaultStopGracePeriod = 30 * time.Second
	// localTailLines 是进程提前退出时附在错误里的日志行数。
	localTailLines = 20
)

// ErrPortInUse 表示启动前发现端口已被占用：此时启动只会让 vLLM 在加载
// 完模型后才报错，浪费数分钟，所以提前失败。
var ErrPortInUse = errors.New("deploy: local: port already in use")

// ErrUnsupportedOS 表示本操作系统没有进程组（如 Windows）：Local 无法保证 Teardown
// 能连同 vLLM 派生的 worker 一起结束，因此拒绝启动，而不是留下孤儿进程。
var ErrUnsupportedOS = errors.New("deploy: local: process groups are not supported on this OS")

// LocalConfig 描述本地启动的服务，由矩阵从场景 YAML 解码。
//
// Args、Env 的值以及每个实例的 Args、Env 中可以使用占位符：
// {port} 替换为该实例端口，{host} 替换为 Host，{index} 替换为实例序号
// （从 0 开始）。例如一卡一实例：
//
//	command: vllm
//	args: [serve, /models/qwen3-32b, --served-model-name, qwen3-32b, --port, "{port}"]
//	instances:
//	  - {port: 8000, env: {ASCEND_RT_VISIBLE_DEVICES: "0"}}
//	  - {port: 8001, env: {ASCEND_RT_VISIBLE_DEVICES: "1"}}
type LocalConfig struct {
	// Command 是可执行文件（按 PATH 查找），如 vllm 或 python3。
	Command string `yaml:"command" json:"command"`
	// Args 是命令参数，支持占位符。
	Args []string `yaml:"args,omitempty" json:"args,omitempty"`
	// Env 是追加的环境变量，支持占位符。
	Env map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	// CleanEnv 为真时不继承当前进程的环境，只用 Env。
	CleanEnv bool `yaml:"clean_env,omitempty" json:"clean_env,omitempty"`
	// Dir 是工作目录，空表示当前目录。
	Dir string `yaml:"dir,omitempty" json:"dir,omitempty"`
	// BaseURL 是场景给出的访问地址（如 http://127.0.0.1:9000/v1）；Host/Port
	// 未配置时从中取主机与端口，这样场景只需写 base_url 与命令。
	BaseURL string `yaml:"base_url,omitempty" json:"base_url,omitempty"`
	// Host 是访问地址，默认 127.0.0.1；写 0.0.0.0 时访问仍走 127.0.0.1。
	Host string `yaml:"host,omitempty" json:"host,omitempty"`
	// Port 是单实例时的端口，默认 8000；Instances 非空时忽略。
	Port int `yaml:"port,omitempty" json:"port,omitempty"`
	// Instances 为多实例（如每卡一个）时各实例的端口与差异化参数。
	Instances []LocalInstance `yaml:"instances,omitempty" json:"instances,omitempty"`
	// Model 是服务对外的模型名（served-model-name）。
	Model string `yaml:"served_model_name" json:"served_model_name"`
	// APIKey 是访问密钥，不会被记录。
	APIKey string `yaml:"api_key,omitempty" json:"-"`
	// HealthPath 默认 /health。
	HealthPath string `yaml:"health_path,omitempty" json:"health_path,omitempty"`
	// StartupTimeout 是等待所有实例健康的上限，默认 20 分钟。
	StartupTimeout time.Duration `yaml:"startup_timeout,omitempty" json:"startup_timeout,omitempty"`
	// StopGracePeriod 是 SIGTERM 与 SIGKILL 之间的宽限期，默认 30 秒。
	StopGracePeriod time.Duration `yaml:"stop_grace_period,omitempty" json:"stop_grace_period,omitempty"`
	// LogDir 是 stdout/stderr 文件所在目录；空时使用临时目录，并在 Teardown 时删除
	// （因此应在 Teardown 之前调用 ArchiveLogs）。
	LogDir string `yaml:"log_dir,omitempty" json:"log_dir,omitempty"`
	// HTTPClient 用于健康探测；nil 使用默认客户端。
	HTTPClient *http.Client `yaml:"-" json:"-"`
}

// LocalInstance 是多实例中的一个实例。
type LocalInstance struct {
	// Port 是该实例端口，必填且各实例互不相同。
	Port int `yaml:"port" json:"port"`
	// Env 覆盖/追加到 LocalConfig.Env 之上，如 ASCEND_RT_VISIBLE_DEVICES。
	Env map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	// Args 追加到 LocalConfig.Args 之后。
	Args []string `yaml:"args,omitempty" json:"args,omitempty"`
	// Command 非空时替换 LocalConfig.Command（此时不继承 LocalConfig.Args），
	// 用于同机 PD 分离：prefill、decode 与 proxy 是不同的命令。
	Command string `yaml:"command,omitempty" json:"command,omitempty"`
	// Internal 为真时该实例只参与健康等待与生命周期管理，不进入 Endpoint
	// （例如 PD 的 prefill/decode 只经 proxy 访问）。
	Internal bool `yaml:"internal,omitempty" json:"internal,omitempty"`
}

// ExitError 表示某个实例在健康之前退出；Tail 是其最后的日志行，
// 通常就包含真正的原因（显存不足、参数错误等）。
type ExitError struct {
	// Instance 是实例序号。
	Instance int
	// Err 是 exec 返回的退出错误。
	Err error
	// Tail 是 stderr（为空时 stdout）的最后若干行。
	Tail string
}

// Error 实现 error，把日志尾部一并给出，CI 日志里即可看到原因。
func (e *ExitError) Error() string {
	return fmt.Sprintf("deploy: local: instance %d exited before healthy: %v; last log lines:\n%s", e.Instance, e.Err, e.Tail)
}

// Unwrap 返回底层的退出错误（*exec.ExitError 等）。
func (e *ExitError) Unwrap() error { return e.Err }

// Local 是 Deployer：在本机以独立进程组启动一个或多个服务实例。
type Local struct {
	cfg LocalConfig
}

var (
	_ Deployer   = (*Local)(nil)
	_ Deployment = (*localDeployment)(nil)
)

// NewLocal 校验配置、填入默认值并返回 Local。
func NewLocal(cfg LocalConfig) (*Local, error) {
	if strings.TrimSpace(cfg.Command) == "" {
		for i, in := range cfg.Instances {
			if strings.TrimSpace(in.Command) == "" {
				return nil, fmt.Errorf("%w: local: command is required (instances[%d] has none)", ErrConfig, i)
			}
		}
		if len(cfg.Instances) == 0 {
			return nil, fmt.Errorf("%w: local: command is required", ErrConfig)
		}
	}
	if cfg.BaseURL != "" {
		n, err := normalizeBaseURL(cfg.BaseURL)
		if err != nil {
			return nil, fmt.Errorf("%w: local: base_url %q: %v", ErrConfig, redactURL(cfg.BaseURL), err)
		}
		u, _ := url.Parse(n)
		if cfg.Host == "" {
			cfg.Host = u.Hostname()
		}
		if cfg.Port == 0 && u.Port() != "" {
			cfg.Port, _ = strconv.Atoi(u.Port())
		}
	}
	if cfg.Host == "" {
		cfg.Host = DefaultLocalHost
	}
	if cfg.StartupTimeout < 0 || cfg.StopGracePeriod < 0 {
		return nil, fmt.Errorf("%w: local: startup_timeout and stop_grace_period must not be negative", ErrConfig)
	}
	if cfg.StopGracePeriod == 0 {
		cfg.StopGracePeriod = DefaultStopGracePeriod
	}
	if len(cfg.Instances) == 0 {
		port := cfg.Port
		if port == 0 {
			port = DefaultLocalPort
		}
		cfg.Instances = []LocalInstance{{Port: port}}
	}
	seen := map[int]int{}
	entries := 0
	for i, in := range cfg.Instances {
		if !in.Internal {
			entries++
		}
		if in.Port <= 0 || in.Port > 65535 {
			return nil, fmt.Errorf("%w: local: instances[%d].port %d out of range 1-65535", ErrConfig, i, in.Port)
		}
		if j, dup := seen[in.Port]; dup {
			return nil, fmt.Errorf("%w: local: instances[%d].port %d duplicates instances[%d]", ErrConfig, i, in.Port, j)
		}
		seen[in.Port] = i
	}
	if entries == 0 {
		return nil, fmt.Errorf("%w: local: every instance is internal; at least one must serve the endpoint", ErrConfig)
	}
	return &Local{cfg: cfg}, nil
}

// accessHost 返回用于访问的主机名：监听通配地址时经回环访问。
func (l *Local) accessHost() string {
	switch l.cfg.Host {
	case "0.0.0.0", "::", "[::]":
		return DefaultLocalHost
	}
	return l.cfg.Host
}

// expand 替换占位符；只替换我们定义的三个，其余花括号原样保留（JSON 参数常见）。
func expand(s, host string, port, index int) string {
	r := strings.NewReplacer("{port}", strconv.Itoa(port), "{host}", host, "{index}", strconv.Itoa(index))
	return r.Replace(s)
}

// Deploy 检查端口、启动全部实例并等待它们健康。任一实例提前退出或超时，
// 都会停止已启动的实例并返回错误（提前退出时为 *ExitError，含日志尾部）。
func (l *Local) Deploy(ctx context.Context) (Deployment, error) {
	if !procgroup.Supported {
		return nil, fmt.Errorf("%w (GOOS=%s)", ErrUnsupportedOS, runtime.GOOS)
	}
	host := l.accessHost()
	for i, in := range l.cfg.Instances {
		if err := checkPortFree(l.cfg.Host, in.Port); err != nil {
			return nil, fmt.Errorf("%w: instance %d %s:%d: %v", ErrPortInUse, i, l.cfg.Host, in.Port, err)
		}
	}
	d := &localDeployment{grace: l.cfg.StopGracePeriod, abort: make(chan error, len(l.cfg.Instances))}
	logDir := l.cfg.LogDir
	if logDir == "" {
		tmp, err := os.MkdirTemp("", "cibench-local-*")
		if err != nil {
			return nil, fmt.Errorf("deploy: local: log dir: %w", err)
		}
		logDir, d.removeLogDir = tmp, true
	} else if err := ensureDir(logDir); err != nil {
		return nil, err
	}
	d.logDir = logDir
	d.ep = Endpoint{Model: l.cfg.Model, APIKey: l.cfg.APIKey}
	var all []string
	for i, in := range l.cfg.Instances {
		u := fmt.Sprintf("http://%s/v1", net.JoinHostPort(host, strconv.Itoa(in.Port)))
		all = append(all, u)
		if !in.Internal {
			d.ep.BaseURLs = append(d.ep.BaseURLs, u)
		}
		if err := d.start(l.cfg, i, in); err != nil {
			_ = d.Teardown(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	for _, u := range all {
		err := WaitHealthy(ctx, HealthURL(u, l.cfg.HealthPath), HealthOptions{
			Client:  l.cfg.HTTPClient,
			Timeout: l.cfg.StartupTimeout,
			Abort:   d.abort,
		})
		if err != nil {
			var exit *ExitError
			if !errors.As(err, &exit) {
				err = fmt.Errorf("deploy: local: %w; last log lines:\n%s", err, d.tails())
			}
			_ = d.Teardown(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	return d, nil
}

// checkPortFree 通过试监听判断端口是否可用。
func checkPortFree(host string, port int) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return ln.Close()
}

// localProc 是一个实例进程及其日志文件。
type localProc struct {
	index          int
	cmd            *exec.Cmd
	stdout, stderr *os.File
	done           chan struct{} // Wait 返回后关闭
	err            error         // Wait 的结果，done 关闭后可读
}

// localDeployment 是 Local 启动的一组进程。
type localDeployment struct {
	ep           Endpoint
	grace        time.Duration
	logDir       string
	removeLogDir bool
	abort        chan error

	mu       sync.Mutex
	procs    []*localProc
	tornDown bool
}

// start 启动第 i 个实例：独立进程组（Setpgid）使得 Teardown 能连同 vLLM
// 派生的 worker 子进程一起结束；stdout/stderr 直接写文件，避免管道被写满阻塞。
func (d *localDeployment) start(cfg LocalConfig, i int, in LocalInstance) error {
	host := cfg.Host
	command, base := cfg.Command, cfg.Args
	if in.Command != "" {
		command, base = in.Command, nil
	}
	args := make([]string, 0, len(base)+len(in.Args))
	for _, a := range append(append([]string(nil), base...), in.Args...) {
		args = append(args, expand(a, host, in.Port, i))
	}
	cmd := exec.Command(command, args...)
	cmd.Dir = cfg.Dir
	env := map[string]string{}
	for k, v := range cfg.Env {
		env[k] = v
	}
	for k, v := range in.Env {
		env[k] = v
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if !cfg.CleanEnv {
		cmd.Env = os.Environ()
	} else {
		cmd.Env = []string{}
	}
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+expand(env[k], host, in.Port, i))
	}
	procgroup.Setup(cmd)
	p := &localProc{index: i, cmd: cmd, done: make(chan struct{})}
	var err error
	if p.stdout, err = os.Create(filepath.Join(d.logDir, fmt.Sprintf("local-%d.stdout.log", i))); err != nil {
		return fmt.Errorf("deploy: local: instance %d: %w", i, err)
	}
	if p.stderr, err = os.Create(filepath.Join(d.logDir, fmt.Sprintf("local-%d.stderr.log", i))); err != nil {
		_ = p.stdout.Close()
		return fmt.Errorf("deploy: local: instance %d: %w", i, err)
	}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	if err := cmd.Start(); err != nil {
		_ = p.stdout.Close()
		_ = p.stderr.Close()
		return fmt.Errorf("deploy: local: instance %d: start %s: %w", i, command, err)
	}
	d.mu.Lock()
	d.procs = append(d.procs, p)
	d.mu.Unlock()
	// 每个进程一个等待协程，由它回收子进程；它在进程退出后结束，不会泄漏。
	go func() {
		err := cmd.Wait()
		if err == nil {
			err = errors.New("exit status 0")
		}
		p.err = err
		close(p.done)
		select {
		case d.abort <- &ExitError{Instance: i, Err: err, Tail: tailOf(p)}:
		default:
		}
	}()
	return nil
}

// tails 汇总所有实例的日志尾部，用于超时类错误。
func (d *localDeployment) tails() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var b strings.Builder
	for _, p := range d.procs {
		fmt.Fprintf(&b, "[instance %d]\n%s\n", p.index, tailOf(p))
	}
	return b.String()
}

// tailOf 读取实例 stderr 的最后几行；stderr 为空时退而读 stdout。
func tailOf(p *localProc) string {
	for _, f := range []*os.File{p.stderr, p.stdout} {
		if t := tailFile(f.Name(), localTailLines); t != "" {
			return t
		}
	}
	return "(no output)"
}

// tailFile 返回文件最后 n 行；只读取末尾 64 KiB，避免大日志拖慢报错。
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const maxRead = 64 << 10
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(st.Size()-maxRead, 0)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(bytes.ToValidUTF8(buf, []byte("?"))), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// Endpoint 返回所有实例的地址。
func (d *localDeployment) Endpoint() Endpoint { return d.ep }

// ArchiveLogs 把各实例的 stdout/stderr 文件复制到 dir。
func (d *localDeployment) ArchiveLogs(ctx context.Context, dir string) error {
	if err := ensureDir(dir); err != nil {
		return err
	}
	d.mu.Lock()
	procs := append([]*localProc(nil), d.procs...)
	d.mu.Unlock()
	var errs []error
	for _, p := range procs {
		for _, f := range []*os.File{p.stdout, p.stderr} {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("deploy: local: archive logs: %w", err)
			}
			if err := copyFile(f.Name(), filepath.Join(dir, filepath.Base(f.Name()))); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("deploy: local: archive logs: %w", err)
	}
	return nil
}

// copyFile 复制单个文件；源与目标相同时（LogDir 即归档目录）直接跳过。
func copyFile(src, dst string) error {
	if as, _ := filepath.Abs(src); as != "" {
		if ad, _ := filepath.Abs(dst); ad == as {
			return nil
		}
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// Teardown 向每个进程组发送 SIGTERM，等待宽限期（或 ctx 结束）后 SIGKILL，
// 然后关闭日志文件。幂等：第二次调用直接返回 nil。
func (d *localDeployment) Teardown(ctx context.Context) error {
	d.mu.Lock()
	if d.tornDown {
		d.mu.Unlock()
		return nil
	}
	d.tornDown = true
	procs := append([]*localProc(nil), d.procs...)
	d.mu.Unlock()

	for _, p := range procs {
		_ = procgroup.Terminate(p.cmd.Process.Pid)
	}
	timer := time.NewTimer(d.grace)
	defer timer.Stop()
	for _, p := range procs {
		select {
		case <-p.done:
		case <-timer.C:
		case <-ctx.Done():
		}
	}
	var errs []error
	for _, p := range procs {
		// 即使组长已退出，组内的 worker 也可能还活着，所以总是对整个组补一枪。
		if err := procgroup.Kill(p.cmd.Process.Pid); err != nil {
			errs = append(errs, fmt.Errorf("instance %d: kill: %w", p.index, err))
		}
		<-p.done
		_ = p.stdout.Close()
		_ = p.stderr.Close()
	}
	if d.removeLogDir {
		if err := os.RemoveAll(d.logDir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("deploy: local: teardown: %w", err)
	}
	return nil
}

// ensureDir 创建归档目录（含父目录）。
func ensureDir(dir string) error {
	if dir == "" {
		return fmt.Errorf("%w: archive dir is empty", ErrConfig)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("deploy: archive dir: %w", err)
	}
	return nil
}
