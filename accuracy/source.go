package accuracy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// ErrDatasetUnavailable 表示已配置的来源拿不到某个数据文件；错误信息写明文件名与查找位置。
var ErrDatasetUnavailable = errors.New("accuracy: dataset unavailable")

// ErrDownloadTooLarge 表示数据文件超过下载大小上限。
var ErrDownloadTooLarge = errors.New("accuracy: dataset download exceeds the size limit")

// 数据来源的种类（DataSource.Kind）。
const (
	SourceBuiltin = BuiltinSample
	SourcePath    = "path"
	SourceURL     = "url"
)

// DataSource 记录一次评测实际读取的数据：种类、位置与每个文件的 sha256，
// 写进结果、summary.json、HTML 报告与推送的 _info 指标，让每个分数都能追溯到字节。
type DataSource struct {
	// Kind 是 builtin-sample、path 或 url。
	Kind string `json:"kind"`
	// Location 是目录、下载根地址或内置样例的说明。
	Location string `json:"location"`
	// Files 是本次读取的文件，按读取顺序。
	Files []DataFile `json:"files,omitempty"`
}

// DataFile 是读取的一个数据文件。
type DataFile struct {
	Name string `json:"name"`
	// Location 是文件的完整路径或 URL；来自下载缓存时写 URL 并在 Cached 中给出缓存路径。
	Location string `json:"location"`
	Cached   string `json:"cached,omitempty"`
	SHA256   string `json:"sha256"`
	Bytes    int64  `json:"bytes"`
}

// Source 按参考实现的文件名打开数据文件。实现须可并发调用。
type Source interface {
	Open(ctx context.Context, name string) (io.ReadCloser, error)
}

// describer 由能说明自己种类与位置的 Source 实现，RunStage 用它填写 DataSource。
type describer interface {
	Describe() DataSource
	// Locate 返回 name 的完整路径或 URL。
	Locate(name string) string
}

// FSSource 从一个 fs.FS（通常是 os.DirFS(--dataset-path)）读取数据文件。
type FSSource struct {
	FS fs.FS
	// Label 用于错误信息与 DataSource.Location，如目录路径。
	Label string
}

// Open 打开 name；不存在时返回包装了 ErrDatasetUnavailable 的错误。
func (s FSSource) Open(_ context.Context, name string) (io.ReadCloser, error) {
	if s.FS == nil {
		return nil, fmt.Errorf("%w: %s: FSSource has no file system", ErrDatasetUnavailable, name)
	}
	f, err := s.FS.Open(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s not found in %s", ErrDatasetUnavailable, name, s.label())
		}
		return nil, fmt.Errorf("accuracy: open %s in %s: %w", name, s.label(), err)
	}
	return f, nil
}

// Describe 说明来源是本地目录。
func (s FSSource) Describe() DataSource { return DataSource{Kind: SourcePath, Location: s.label()} }

// Locate 返回 name 在目录中的路径。
func (s FSSource) Locate(name string) string { return filepath.Join(s.label(), name) }

// label 返回用于错误信息的来源描述。
func (s FSSource) label() string {
	if s.Label != "" {
		return s.Label
	}
	return "dataset directory"
}

// BuiltinSource 把随代码提供的合成样例（通常是 embed.FS 的子目录）包装成数据来源：
// 它在 DataSource 中明确标为 builtin-sample，不会被误认为某个目录里的真实数据。
// location 是样例在源码树中的位置（如 "accuracy/simpleevals/sampledata"），写进
// DataSource 与每个 DataFile。登记表用它填 Data.Sample。
func BuiltinSource(fsys fs.FS, location string) Source {
	return sampleSource{FSSource: FSSource{FS: fsys, Label: "built-in synthetic sample data"}, location: location}
}

// sampleSource 是 BuiltinSource 返回的来源；单独的类型让 Describe 给出 builtin-sample。
type sampleSource struct {
	FSSource
	location string
}

// Describe 说明来源是内置样例。
func (s sampleSource) Describe() DataSource {
	return DataSource{Kind: SourceBuiltin, Location: "built-in synthetic sample (" + s.location + ", not a real benchmark)"}
}

// Locate 返回样例文件在源码树中的位置。
func (s sampleSource) Locate(name string) string { return s.location + "/" + name }

// noSource 是登记表没有默认下载地址、配置也没给 dataset_path/dataset_url 时的来源：
// 不读数据的评测（数据随代码提供）照常运行，要读文件的评测得到写明原因的错误。
type noSource struct{}

// Open 总是返回包装 ErrDatasetUnavailable 的错误。
func (noSource) Open(_ context.Context, name string) (io.ReadCloser, error) {
	return nil, fmt.Errorf("%w: %s: no dataset_path or dataset_url configured and the eval registry has no default download URL", ErrDatasetUnavailable, name)
}

// Describe 说明没有配置任何来源。
func (noSource) Describe() DataSource {
	return DataSource{Kind: "none", Location: "no dataset source configured"}
}

// Locate 返回文件名本身（没有位置可言）。
func (noSource) Locate(name string) string { return name }

// HTTPSource 从 BaseURL（或 URLs 中的逐文件地址）下载数据，并缓存在 CacheDir。
// CacheDir 为空时不缓存；缓存写入先落临时文件再改名，并发下载同一文件是安全的。
// 每次下载受 Timeout 与 MaxBytes 约束（0 取 DefaultDownloadTimeout、DefaultMaxDownloadBytes）。
type HTTPSource struct {
	BaseURL  string
	URLs     map[string]string
	CacheDir string
	Client   *http.Client
	Timeout  time.Duration
	MaxBytes int64
}

// NewHTTPSource 校验地址并构造 HTTPSource；client 为 nil 时使用 http.DefaultClient
// （时限由 Timeout 经 ctx 施加）。URLs 中的地址优先于 BaseURL。
func NewHTTPSource(baseURL, cacheDir string, urls map[string]string, client *http.Client) (*HTTPSource, error) {
	if baseURL == "" && len(urls) == 0 {
		return nil, fmt.Errorf("%w: no dataset URL configured", ErrDatasetUnavailable)
	}
	if baseURL != "" {
		u, err := url.Parse(baseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, optErrf("accuracy: dataset base URL %q: must be http(s)", baseURL)
		}
		if !strings.HasSuffix(baseURL, "/") {
			baseURL += "/"
		}
	}
	if client == nil {
		client = http.DefaultClient
	}
	return &HTTPSource{BaseURL: baseURL, URLs: urls, CacheDir: cacheDir, Client: client}, nil
}

// urlFor 返回 name 的下载地址。
func (s *HTTPSource) urlFor(name string) string {
	if u, ok := s.URLs[name]; ok {
		return u
	}
	if s.BaseURL == "" {
		return ""
	}
	return s.BaseURL + name
}

// Describe 说明来源是下载地址。
func (s *HTTPSource) Describe() DataSource {
	loc := s.BaseURL
	if loc == "" {
		loc = "per-file URLs"
	}
	return DataSource{Kind: SourceURL, Location: loc}
}

// Locate 返回 name 的下载地址。
func (s *HTTPSource) Locate(name string) string { return s.urlFor(name) }

// cachePath 返回 name 在缓存目录中的路径（无缓存目录时为空）。
func (s *HTTPSource) cachePath(name string) string {
	if s.CacheDir == "" {
		return ""
	}
	return filepath.Join(s.CacheDir, name)
}

// Open 先查缓存，未命中则下载（并写入缓存）。失败时错误写明文件名、下载地址与缓存位置，
// 并包装 ErrDatasetUnavailable——从不退回到其他数据。
func (s *HTTPSource) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if strings.ContainsAny(name, `/\`) || name == ".." || name == "" {
		return nil, optErrf("accuracy: dataset file name %q must be a plain file name", name)
	}
	cache := s.cachePath(name)
	if cache != "" {
		if f, err := os.Open(cache); err == nil {
			return f, nil
		}
	}
	u := s.urlFor(name)
	if u == "" {
		return nil, fmt.Errorf("%w: %s: no URL configured for it", ErrDatasetUnavailable, name)
	}
	where := "GET " + u
	if cache != "" {
		where += " (cache " + cache + ": not present)"
	}
	fail := func(err error) error {
		return fmt.Errorf("%w: %s: %s: %w", ErrDatasetUnavailable, name, where, err)
	}
	timeout, limit := s.Timeout, s.MaxBytes
	if timeout <= 0 {
		timeout = DefaultDownloadTimeout
	}
	if limit <= 0 {
		limit = DefaultMaxDownloadBytes
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fail(err)
	}
	client := s.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fail(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fail(fmt.Errorf("HTTP %d", resp.StatusCode))
	}
	if resp.ContentLength > limit {
		return nil, fail(fmt.Errorf("%w: Content-Length %d > %d bytes", ErrDownloadTooLarge, resp.ContentLength, limit))
	}
	// 先完整下载（有上限）再交给解析器：半截文件既不能进缓存，也不能被评分。
	dir := s.CacheDir
	if dir == "" {
		dir = os.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("accuracy: cache dir %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, name+".part-*")
	if err != nil {
		return nil, fmt.Errorf("accuracy: cache %s: %w", name, err)
	}
	n, err := io.Copy(tmp, io.LimitReader(resp.Body, limit+1))
	if err == nil && n > limit {
		err = fmt.Errorf("%w: more than %d bytes", ErrDownloadTooLarge, limit)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return nil, fail(err)
	}
	if s.CacheDir == "" {
		f, err := os.Open(tmp.Name())
		os.Remove(tmp.Name()) // 打开的文件在关闭前仍可读
		return f, err
	}
	if err := os.Rename(tmp.Name(), cache); err != nil {
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("accuracy: cache %s: %w", name, err)
	}
	return os.Open(cache)
}

// recorder 包装一个 Source，记录被打开的每个文件并计算其完整内容的 sha256。
// 每个数据集用一个新的 recorder，所以结果里只列出该数据集读过的文件。
type recorder struct {
	src  Source
	desc DataSource
	loc  func(string) string

	mu    sync.Mutex
	files []DataFile
}

// newRecorder 为 src 构造记录器；src 不能说明自己时种类记为 "custom"。
func newRecorder(src Source) *recorder {
	r := &recorder{src: src, desc: DataSource{Kind: "custom", Location: fmt.Sprintf("%T", src)}, loc: func(n string) string { return n }}
	if d, ok := src.(describer); ok {
		r.desc, r.loc = d.Describe(), d.Locate
	}
	return r
}

// Open 打开文件并在关闭时补读剩余内容，使 sha256 覆盖整个文件（解析器可能不读到 EOF）。
func (r *recorder) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	rc, err := r.src.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	df := DataFile{Name: name, Location: r.loc(name)}
	if h, ok := r.src.(*HTTPSource); ok {
		df.Cached = h.cachePath(name)
	}
	return &hashingReader{rc: rc, h: sha256.New(), done: func(sum string, n int64) {
		df.SHA256, df.Bytes = sum, n
		r.mu.Lock()
		r.files = append(r.files, df)
		r.mu.Unlock()
	}}, nil
}

// snapshot 返回截至目前的 DataSource。
func (r *recorder) snapshot() *DataSource {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.desc
	d.Files = slices.Clone(r.files)
	return &d
}

// hashingReader 边读边算 sha256；Close 时读完剩余部分并报告摘要。
type hashingReader struct {
	rc   io.ReadCloser
	h    hash.Hash
	n    int64
	done func(sum string, n int64)
	once sync.Once
}

// Read 读取并累计摘要。
func (h *hashingReader) Read(p []byte) (int, error) {
	n, err := h.rc.Read(p)
	h.h.Write(p[:n])
	h.n += int64(n)
	return n, err
}

// Close 读完剩余内容、报告摘要并关闭底层文件。
func (h *hashingReader) Close() error {
	var err error
	h.once.Do(func() {
		m, cerr := io.Copy(h.h, h.rc)
		h.n += m
		if cerr == nil {
			h.done(hex.EncodeToString(h.h.Sum(nil)), h.n)
		}
		err = errors.Join(cerr, h.rc.Close())
	})
	return err
}
