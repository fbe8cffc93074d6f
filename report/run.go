package report

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vllm-cibench/cibench/gate"
	"github.com/vllm-cibench/cibench/runtype"
)

// ErrInvalidName 表示运行类型、运行 ID、场景名或相对路径不是安全的单段名字
// （含路径分隔符、".."、空白等），拒绝它们是为了保证产物永远落在 root 之内。
var ErrInvalidName = errors.New("report: invalid name")

// ErrFinished 表示在 Finish 之后继续记录结果。
var ErrFinished = errors.New("report: run already finished")

// 运行目录与场景目录中的固定文件名。集中定义，Load 与写入两侧保持一致。
const (
	fileRun      = "run.json"
	fileSummary  = "summary.json"
	fileJUnit    = "junit.xml"
	fileHTML     = "report.html"
	fileManifest = "manifest.json"
	fileCommand  = "command.json"
	dirConfig    = "config"
	fileScenario = "scenario.json"
	tmpPrefix    = ".tmp-"
)

// safeName 是允许作为单个路径段的名字：不以点开头，避免 "." ".." 与隐藏文件。
var safeName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._\-]*$`)

// checkName 校验 what 字段的取值 v 能安全地用作一个目录名。
func checkName(what, v string) error {
	if !safeName.MatchString(v) || len(v) > 200 {
		return fmt.Errorf("%w: %s %q (want [A-Za-z0-9_][A-Za-z0-9._-]*)", ErrInvalidName, what, v)
	}
	return nil
}

// Option 调整 NewRun 的行为。
type Option func(*Run)

// WithCommit 记录被测代码的提交与分支，写入 run.json、摘要与报告。
func WithCommit(commit, branch string) Option {
	return func(r *Run) { r.res.Commit, r.res.Branch = commit, branch }
}

// WithRenderers 指定本次运行的阶段渲染器（见 Renderer）：Finish 用它们写 JUnit 与 HTML、
// 判断结果是否残缺，GateInputs 用它们生成门禁输入。顺序即 HTML 中各阶段的顺序。
// 没有渲染器的分节照样记进 summary.json 与各自的文件，只是不出现在 JUnit、HTML 与门禁中。
func WithRenderers(rs ...Renderer) Option {
	return func(r *Run) { r.renderers = append(r.renderers, rs...) }
}

// WithSecrets 指定本次运行的脱敏器（通常已 Add 过运行时读取的 API Key 与推送凭据）；
// 驱动用同一个 Secrets 包装自己的日志，产物与日志遮住的是同一组密钥。
// 未指定（或为 nil）时使用只含内置规则的新 Secrets，可经 Run.Secrets 补登记。
func WithSecrets(s *Secrets) Option {
	return func(r *Run) {
		if s != nil {
			r.sec = s
		}
	}
}

// Run 是一次 CI 运行的产物目录 root/<run_type>/<run_id>/ 及其内存中的结果。
//
// 所有写入都是"临时文件 + 重命名"的原子写，并在写出前脱敏；每个 Record*
// 调用立即把该阶段的结果文件与 summary.json 落盘，所以进程在任何时刻崩溃
// 都不会丢掉已经记录的内容，部分运行也能被 Load 重新装配。
//
// 并发：方法内部加锁，可被多个 goroutine 同时调用。
type Run struct {
	dir       string
	sec       *Secrets
	renderers []Renderer

	mu       sync.Mutex
	res      Result
	clean    map[string]fileStamp // 已确认脱敏过的文件，RedactTree 跳过它们
	infos    map[string]Scenario  // 已写出的 scenario.json 内容，未变化时不重写
	indexed  map[string]Section   // 已写出的分节索引（相对路径 → 内容），未变化时不重写
	finished bool
}

// fileStamp 以大小与修改时间标识文件版本，用于判断是否需要重新脱敏。
type fileStamp struct {
	size int64
	mod  time.Time
}

// NewRun 在 root/<runType>/<runID>/ 创建（或重新打开）一次运行的产物目录。
// runType 与 runID 是不同的类型，调用方必须显式转换，两者不会被悄悄写反；
// 它们都必须是安全的单段目录名（否则返回 ErrInvalidName）。
// 目录已存在时读取其中已记录的场景结果，这样分阶段的 CI job 可以共用同一
// run_id 逐步补全，汇总 job 也能在合并后的目录上直接 Finish。
// now 是运行开始时间（注入时钟便于测试）。
func NewRun(root string, runType runtype.Type, runID RunID, now time.Time, opts ...Option) (*Run, error) {
	if root == "" {
		return nil, fmt.Errorf("%w: empty artifacts root", ErrInvalidName)
	}
	if err := checkName("run type", string(runType)); err != nil {
		return nil, err
	}
	if err := checkName("run id", string(runID)); err != nil {
		return nil, err
	}
	r := &Run{
		dir:     filepath.Join(root, string(runType), string(runID)),
		sec:     &Secrets{},
		clean:   map[string]fileStamp{},
		infos:   map[string]Scenario{},
		indexed: map[string]Section{},
		res: Result{
			Schema:  SchemaVersion,
			RunType: runType,
			RunID:   string(runID),
			Started: now.UTC(),
		},
	}
	for _, o := range opts {
		o(r)
	}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, fmt.Errorf("report: create run dir: %w", err)
	}
	prev, err := Load(os.DirFS(r.dir))
	switch {
	case err == nil:
		// 重新打开：沿用首次开始时间与场景结果，提交信息以新值优先。
		r.res.Started = prev.Started
		r.res.Scenarios = prev.Scenarios
		if r.res.Commit == "" {
			r.res.Commit = prev.Commit
		}
		if r.res.Branch == "" {
			r.res.Branch = prev.Branch
		}
	case errors.Is(err, fs.ErrNotExist):
	default:
		return nil, fmt.Errorf("report: reopen %s: %w", r.dir, err)
	}
	meta := Result{Schema: r.res.Schema, RunType: runType, RunID: string(runID), Commit: r.res.Commit, Branch: r.res.Branch, Started: r.res.Started}
	if err := r.writeJSONLocked(fileRun, meta); err != nil {
		return nil, err
	}
	return r, nil
}

// Dir 返回运行目录的路径（root/<run_type>/<run_id>）。
func (r *Run) Dir() string { return r.dir }

// Renderers 返回 WithRenderers 指定的阶段渲染器（交给 Result.GateInputs 等）。
func (r *Run) Renderers() []Renderer { return append([]Renderer(nil), r.renderers...) }

// Secrets 返回本次运行使用的脱敏器：驱动用它包装日志输出
// （r.Secrets().Writer(f)），并登记运行时读到的密钥。
func (r *Run) Secrets() *Secrets { return r.sec }

// Result 返回当前结果的副本（切片为浅拷贝，调用方不应修改其元素）。
func (r *Run) Result() Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.res
	out.Scenarios = make([]Scenario, len(r.res.Scenarios))
	for i, sc := range r.res.Scenarios {
		out.Scenarios[i] = sc.clone() // 分节映射随后续记录变化，副本不能与之共享
	}
	out.Gates = append([]gate.Gate(nil), r.res.Gates...)
	return out
}

// ScenarioDir 创建并返回 <run>/<scenario>/<stage> 目录，供其他包直接写文件
// （例如 Deployment.ArchiveLogs、CSV 导出器）。这些文件在 Finish 时被统一脱敏。
func (r *Run) ScenarioDir(scenario string, stage Stage) (string, error) {
	if err := checkName("scenario", scenario); err != nil {
		return "", err
	}
	if err := checkName("stage", string(stage)); err != nil {
		return "", err
	}
	d := filepath.Join(r.dir, scenario, string(stage))
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", fmt.Errorf("report: scenario dir: %w", err)
	}
	return d, nil
}

// AddScenario 登记（或更新）场景描述，应在场景的第一个阶段之前调用，
// 这样即使部署失败报告里也有这个场景。
func (r *Run) AddScenario(info ScenarioInfo) error {
	if err := checkName("scenario", info.Name); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return ErrFinished
	}
	sc := r.scenarioLocked(info.Name)
	sc.Model, sc.Quant, sc.Deploy, sc.Backend, sc.Hardware = info.Model, info.Quant, info.Deploy, info.Backend, info.Hardware
	return r.persistScenarioLocked(sc, "")
}

// RecordError 记录某阶段失败的原因（err 文本脱敏后保存）。失败继续：
// 调用方记录后继续执行后续阶段与场景，门禁会把它算作失败。
func (r *Run) RecordError(scenario string, stage Stage, err error) error {
	if err == nil {
		return nil
	}
	if e := checkName("stage", string(stage)); e != nil {
		return e
	}
	msg := r.sec.Redact(err.Error())
	return r.record(scenario, func(sc *Scenario) string {
		sc.Errors = append(sc.Errors, StageError{Stage: stage, Message: msg})
		return errorsFile(stage)
	})
}

// RecordInterrupted 记录某阶段因运行被中断（Ctrl-C、SIGTERM、调用方取消）而没有做完，
// err 说明中断时它在做什么（脱敏后保存）。与 RecordError 不同，它不是失败：
// Evaluate 为它生成 interrupted 门禁，没有真正失败时运行以 gate.ExitInterrupted 结束。
// 作业超时不属于中断——运行超出了自己的预算，是失败，应使用 RecordError。
func (r *Run) RecordInterrupted(scenario string, stage Stage, err error) error {
	if err == nil {
		err = errors.New("interrupted")
	}
	if e := checkName("stage", string(stage)); e != nil {
		return e
	}
	msg := r.sec.Redact(err.Error())
	return r.record(scenario, func(sc *Scenario) string {
		sc.Errors = append(sc.Errors, StageError{Stage: stage, Message: msg, Interrupted: true})
		return errorsFile(stage)
	})
}

// RecordStage 登记（或替换）场景中一个阶段的状态，写进 summary.json 与
// <scenario>/stage-<stage>.json（分阶段 CI job 合并产物时互不覆盖）。
func (r *Run) RecordStage(scenario string, st StageResult) error {
	if e := checkName("stage", string(st.Stage)); e != nil {
		return e
	}
	st.Reason = r.sec.Redact(st.Reason)
	st.Started = st.Started.UTC()
	return r.record(scenario, func(sc *Scenario) string {
		for i := range sc.Stages {
			if sc.Stages[i].Stage == st.Stage {
				sc.Stages[i] = st
				return stageFile(st.Stage)
			}
		}
		sc.Stages = append(sc.Stages, st)
		return stageFile(st.Stage)
	})
}

// stageFile 返回某阶段状态记录的相对路径。
func stageFile(stage Stage) string { return "stage-" + string(stage) + ".json" }

// errorsFile 返回某阶段错误记录的相对路径。按阶段分文件，分阶段 CI job
// 合并产物时互不覆盖。
func errorsFile(stage Stage) string { return "errors-" + string(stage) + ".json" }

// record 是 Record* 的公共部分：定位场景、更新内存、落盘对应阶段文件与摘要。
func (r *Run) record(scenario string, update func(*Scenario) string) error {
	if err := checkName("scenario", scenario); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return ErrFinished
	}
	sc := r.scenarioLocked(scenario)
	rel := update(sc)
	return r.persistScenarioLocked(sc, rel)
}

// scenarioLocked 返回名为 name 的场景，不存在时按登记顺序追加。
func (r *Run) scenarioLocked(name string) *Scenario {
	for i := range r.res.Scenarios {
		if r.res.Scenarios[i].Name == name {
			return &r.res.Scenarios[i]
		}
	}
	r.res.Scenarios = append(r.res.Scenarios, Scenario{Name: name})
	return &r.res.Scenarios[len(r.res.Scenarios)-1]
}

// persistScenarioLocked 写出场景描述、rel 指向的阶段文件与运行摘要。
func (r *Run) persistScenarioLocked(sc *Scenario, rel string) error {
	info := Scenario{Name: sc.Name, Model: sc.Model, Quant: sc.Quant, Deploy: sc.Deploy, Backend: sc.Backend, Hardware: sc.Hardware}
	if prev, ok := r.infos[sc.Name]; !ok || prev.Model != info.Model || prev.Quant != info.Quant || prev.Deploy != info.Deploy || prev.Backend != info.Backend ||
		prev.Hardware != info.Hardware {
		if err := r.writeJSONLocked(path.Join(sc.Name, fileScenario), info); err != nil {
			return err
		}
		r.infos[sc.Name] = info
	}
	if rel != "" {
		var v any
		switch {
		case strings.HasPrefix(rel, "stage-"):
			stage := Stage(strings.TrimSuffix(strings.TrimPrefix(rel, "stage-"), ".json"))
			for _, st := range sc.Stages {
				if st.Stage == stage {
					v = st
				}
			}
		default:
			stage := Stage(strings.TrimSuffix(strings.TrimPrefix(rel, "errors-"), ".json"))
			var errs []StageError
			for _, e := range sc.Errors {
				if e.Stage == stage {
					errs = append(errs, e)
				}
			}
			v = errs
		}
		if err := r.writeJSONLocked(path.Join(sc.Name, rel), v); err != nil {
			return err
		}
	}
	return r.writeJSONLocked(fileSummary, r.res)
}

// WriteFile 以原子方式写入运行目录下的相对路径 rel（斜杠分隔），内容先脱敏。
// 用于命令快照、配置快照、驱动自己的附加文件。
func (r *Run) WriteFile(rel string, data []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writeFileLocked(rel, data)
}

// WriteJSON 把 v 编码为缩进 JSON 后原子写入 rel（脱敏）。
func (r *Run) WriteJSON(rel string, v any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writeJSONLocked(rel, v)
}

// writeJSONLocked 是持锁版本的 WriteJSON。
func (r *Run) writeJSONLocked(rel string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("report: encode %s: %w", rel, err)
	}
	return r.writeFileLocked(rel, append(b, '\n'))
}

// resolve 把斜杠相对路径转换为运行目录内的绝对路径，拒绝越界路径。
func (r *Run) resolve(rel string) (string, error) {
	if !fs.ValidPath(rel) || rel == "." {
		return "", fmt.Errorf("%w: path %q", ErrInvalidName, rel)
	}
	for _, seg := range strings.Split(rel, "/") {
		if strings.HasPrefix(seg, tmpPrefix) {
			return "", fmt.Errorf("%w: path %q uses reserved prefix %q", ErrInvalidName, rel, tmpPrefix)
		}
	}
	return filepath.Join(r.dir, filepath.FromSlash(rel)), nil
}

// writeFileLocked 脱敏并原子写入一个文件，登记为已脱敏。
func (r *Run) writeFileLocked(rel string, data []byte) error {
	abs, err := r.resolve(rel)
	if err != nil {
		return err
	}
	if err := atomicWrite(abs, bytes.NewReader(r.sec.RedactBytes(data)), nil); err != nil {
		return fmt.Errorf("report: write %s: %w", rel, err)
	}
	r.markCleanLocked(abs)
	return nil
}

// markCleanLocked 记下文件当前的大小与修改时间，表示该版本已脱敏。
func (r *Run) markCleanLocked(abs string) {
	if st, err := os.Lstat(abs); err == nil {
		r.clean[abs] = fileStamp{st.Size(), st.ModTime()}
	}
}

// atomicWrite 把 src 写入 abs 同目录下的临时文件，fsync 后重命名覆盖 abs。
// wrap 非 nil 时用它包装临时文件的写入端（例如脱敏 Writer），其 Close 在
// 重命名之前调用以冲出缓冲。任何一步失败都删除临时文件，旧内容保持不变。
func atomicWrite(abs string, src io.Reader, wrap func(io.Writer) io.WriteCloser) (err error) {
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(abs), tmpPrefix+"*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	var w io.Writer = f
	var wc io.WriteCloser
	if wrap != nil {
		wc = wrap(f)
		w = wc
	}
	if _, err = io.Copy(w, src); err != nil {
		return err
	}
	if wc != nil {
		if err = wc.Close(); err != nil {
			return err
		}
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), abs)
}

// Create 返回写入 rel 的 io.WriteCloser：写入内容流式脱敏到临时文件，
// Close 时原子地出现在 rel。适合较大的产物（请求明细 CSV、日志）。
// 未 Close 的文件不会出现在产物中。
func (r *Run) Create(rel string) (io.WriteCloser, error) {
	abs, err := r.resolve(rel)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		// 该 goroutine 由 Close 等待结束：管道读端读到 EOF 后 atomicWrite 返回。
		err := atomicWrite(abs, pr, func(w io.Writer) io.WriteCloser { return r.sec.Writer(w) })
		_ = pr.CloseWithError(err)
		done <- err
	}()
	return &pipeFile{r: r, abs: abs, pw: pw, done: done}, nil
}

// pipeFile 是 Create 返回的写端。
type pipeFile struct {
	r    *Run
	abs  string
	pw   *io.PipeWriter
	done chan error
	once sync.Once
	err  error
}

// Write 把数据送往后台的原子写 goroutine。
func (p *pipeFile) Write(b []byte) (int, error) { return p.pw.Write(b) }

// Close 结束写入并等待文件落盘；重复调用返回第一次的结果。
func (p *pipeFile) Close() error {
	p.once.Do(func() {
		_ = p.pw.Close()
		p.err = <-p.done
		if p.err == nil {
			p.r.mu.Lock()
			p.r.markCleanLocked(p.abs)
			p.r.mu.Unlock()
		} else {
			p.err = fmt.Errorf("report: create %s: %w", p.abs, p.err)
		}
	})
	return p.err
}

// Command 是命令快照：驱动实际执行的命令行与相关环境变量（值已脱敏）。
type Command struct {
	Args []string          `json:"args"`
	Env  map[string]string `json:"env,omitempty"`
	Dir  string            `json:"dir,omitempty"`
	Time time.Time         `json:"time"`
}

// SnapshotCommand 把命令快照写入 rel（为空时写到运行根目录的 command.json），
// 让人能精确复现这次运行。场景级命令（例如 vllm serve 的参数）可写到
// "<scenario>/logs/command.json"。
func (r *Run) SnapshotCommand(rel string, cmd Command) error {
	if rel == "" {
		rel = fileCommand
	}
	return r.WriteJSON(rel, cmd)
}

// SnapshotConfig 把 fsys 中的全部普通文件（通常是 configs/ 目录）复制到
// 运行目录的 config/ 下（脱敏后）。
func (r *Run) SnapshotConfig(fsys fs.FS) error {
	return fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("report: snapshot config: %w", err)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return fmt.Errorf("report: snapshot config %s: %w", p, err)
		}
		return r.WriteFile(path.Join(dirConfig, p), b)
	})
}

// RedactTree 对运行目录下所有未经本包写入（或写入后被改动）的普通文件做
// 流式脱敏并原子替换，覆盖其他包直接写入 ScenarioDir 的日志与 CSV。
// 符号链接与临时文件被跳过，不会跟随到目录之外。
func (r *Run) RedactTree(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.redactTreeLocked(ctx)
}

// redactTreeLocked 是持锁版本的 RedactTree。
func (r *Run) redactTreeLocked(ctx context.Context) error {
	return filepath.WalkDir(r.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("report: redact tree: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("report: redact tree: %w", err)
		}
		if !d.Type().IsRegular() || strings.HasPrefix(d.Name(), tmpPrefix) {
			return nil
		}
		st, err := d.Info()
		if err != nil {
			return fmt.Errorf("report: redact tree: %w", err)
		}
		if s, ok := r.clean[p]; ok && s.size == st.Size() && s.mod.Equal(st.ModTime()) {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("report: redact %s: %w", p, err)
		}
		err = atomicWrite(p, f, func(w io.Writer) io.WriteCloser { return r.sec.Writer(w) })
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("report: redact %s: %w", p, err)
		}
		r.markCleanLocked(p)
		return nil
	})
}

// ManifestFile 是清单中的一个文件。
type ManifestFile struct {
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256,omitempty"`
}

// Manifest 描述运行目录的内容，供下载产物的人或工具核对。
type Manifest struct {
	Schema   string         `json:"schema"`
	RunType  runtype.Type   `json:"run_type"`
	RunID    string         `json:"run_id"`
	Started  time.Time      `json:"started"`
	Updated  time.Time      `json:"updated"`
	Complete bool           `json:"complete"`
	Files    []ManifestFile `json:"files"`
}

// WriteManifest 列出运行目录中当前的文件写入 manifest.json；hashes 为 true 时
// 计算 SHA-256（Finish 时使用，过程中只列大小以免反复读大文件）。
func (r *Run) WriteManifest(now time.Time, hashes bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writeManifestLocked(now, hashes)
}

// writeManifestLocked 是持锁版本的 WriteManifest。
func (r *Run) writeManifestLocked(now time.Time, hashes bool) error {
	m := Manifest{Schema: SchemaVersion, RunType: r.res.RunType, RunID: r.res.RunID, Started: r.res.Started, Updated: now.UTC(), Complete: r.res.Complete}
	err := filepath.WalkDir(r.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() || strings.HasPrefix(d.Name(), tmpPrefix) {
			return nil
		}
		rel, err := filepath.Rel(r.dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == fileManifest {
			return nil
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		mf := ManifestFile{Path: rel, Bytes: st.Size()}
		if hashes {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			h := sha256.New()
			_, err = io.Copy(h, f)
			_ = f.Close()
			if err != nil {
				return err
			}
			mf.SHA256 = hex.EncodeToString(h.Sum(nil))
		}
		m.Files = append(m.Files, mf)
		return nil
	})
	if err != nil {
		return fmt.Errorf("report: manifest: %w", err)
	}
	sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Path < m.Files[j].Path })
	return r.writeJSONLocked(fileManifest, m)
}

// scenarioFilesLocked 列出每个场景目录下的普通文件（相对运行目录），供报告链接。
// 列举失败只影响链接列表，不影响报告本身，因此忽略错误。
func (r *Run) scenarioFilesLocked() map[string][]string {
	out := map[string][]string{}
	for _, sc := range r.res.Scenarios {
		_ = filepath.WalkDir(filepath.Join(r.dir, sc.Name), func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() || strings.HasPrefix(d.Name(), tmpPrefix) {
				return nil
			}
			if rel, err := filepath.Rel(r.dir, p); err == nil {
				out[sc.Name] = append(out[sc.Name], filepath.ToSlash(rel))
			}
			return nil
		})
	}
	return out
}

// Finish 结束运行：填入门禁结论与退出码，写出 summary.json、junit.xml、
// report.html，对整个目录做脱敏，最后写带哈希的 manifest.json。
// 返回值是进程应使用的退出码（见 ExitCode）。
// Finish 之后的 Record* 返回 ErrFinished；再次 Finish 会用新门禁重写报告。
// 脱敏是安全属性而不是可选步骤：即使 ctx 已取消，目录脱敏也会做完。
//
// 被中断、或只执行了部分阶段的运行改用 FinishIncomplete：Finish 把运行标为完成
// （complete=true），完成的每日运行会成为之后 PR 的性能基线。
func (r *Run) Finish(ctx context.Context, gates []gate.Gate, now time.Time) (int, error) {
	return r.finish(ctx, gates, now, true, false)
}

// FinishIncomplete 结束一次不完整的运行：被 Ctrl-C / SIGTERM / 作业超时中断
// （interrupted 为 true），或按 CI 作业只执行了部分阶段、稍后再汇总（false）。
// 它写出与 Finish 相同的全部产物（带门禁与退出码的 summary.json、junit.xml、带文件
// 链接的 report.html、目录脱敏、带哈希的 manifest.json），区别只在于 summary.json 的
// complete 保持 false、interrupted 如实记录：不完整的每日运行因此永远不会被
// CSVBaseline 当作基线，Load 也不会沿用它的门禁（汇总时重新计算）。HTML 报告标为
// INCOMPLETE。
//
// 退出码：有门禁失败为 gate.ExitGateFailed；否则被中断时为 gate.ExitInterrupted，只执行了
// 部分阶段时为 gate.ExitOK。之后的 Record* 同样返回 ErrFinished。
func (r *Run) FinishIncomplete(ctx context.Context, gates []gate.Gate, now time.Time, interrupted bool) (int, error) {
	return r.finish(ctx, gates, now, false, interrupted)
}

// incompleteLocked 问每个渲染器场景结果是否残缺（例如分片合并缺了分片）。
// 渲染器无法判断（分节解码失败）时按残缺处理并返回错误：宁可不把它当基线。
func (r *Run) incompleteLocked() (bool, error) {
	var errs []error
	missing := false
	for _, sc := range r.res.Scenarios {
		for _, rd := range r.renderers {
			if rd.Incomplete == nil {
				continue
			}
			bad, err := rd.Incomplete(sc)
			if err != nil {
				errs = append(errs, fmt.Errorf("report: %s: %w", rd.Name, err))
				bad = true
			}
			missing = missing || bad
		}
	}
	return missing, errors.Join(errs...)
}

// finish 是 Finish 与 FinishIncomplete 的共同实现。
func (r *Run) finish(ctx context.Context, gates []gate.Gate, now time.Time, complete, interrupted bool) (int, error) {
	ctx = context.WithoutCancel(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finished = true
	r.res.Gates = append([]gate.Gate(nil), gates...)
	sanitizeFloats(r.res.Gates)
	r.res.Finished = now.UTC()
	// 残缺的阶段结果（例如分片合并时有分片被杀、连不上、被取消：perfreport 的 Incomplete）让整个
	// 运行不完整：不论调用方用的是 Finish 还是 FinishIncomplete，complete 都为 false，它因此永远不会
	// 成为基线；门禁都通过时退出码也是 ExitError 而不是 0（issue 22）。
	var errs []error
	missing, err := r.incompleteLocked()
	if err != nil {
		errs = append(errs, err)
	}
	r.res.Complete = complete && !missing
	r.res.Interrupted = interrupted && !complete
	r.res.ExitCode = gate.ExitCode(gates)
	if r.res.ExitCode == gate.ExitOK && r.res.Interrupted {
		r.res.ExitCode = gate.ExitInterrupted
	}
	if r.res.ExitCode == gate.ExitOK && missing {
		r.res.ExitCode = gate.ExitError
	}
	switch r.res.ExitCode {
	case gate.ExitOK:
		r.res.Verdict = gate.VerdictPass
	case gate.ExitInterrupted:
		r.res.Verdict = gate.VerdictInterrupted
	default:
		r.res.Verdict = gate.VerdictFail
	}
	if err := r.writeJSONLocked(fileSummary, r.res); err != nil {
		errs = append(errs, err)
	}
	var buf bytes.Buffer
	// 渲染器出错时 JUnit 与 HTML 仍写出其余部分（buf 非空即完整的文档），错误一并返回。
	if err := WriteJUnit(&buf, r.res, r.renderers...); err != nil {
		errs = append(errs, err)
	}
	if buf.Len() > 0 {
		if err := r.writeFileLocked(fileJUnit, buf.Bytes()); err != nil {
			errs = append(errs, err)
		}
	}
	buf.Reset()
	if err := writeHTML(&buf, r.res, r.scenarioFilesLocked(), r.renderers); err != nil {
		errs = append(errs, err)
	}
	if buf.Len() > 0 {
		if err := r.writeFileLocked(fileHTML, buf.Bytes()); err != nil {
			errs = append(errs, err)
		}
	}
	if err := r.redactTreeLocked(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := r.writeManifestLocked(now, true); err != nil {
		errs = append(errs, err)
	}
	return r.res.ExitCode, errors.Join(errs...)
}
