package loadgen

import (
	"errors"
	"fmt"
	"github.com/vllm-cibench/cibench/field"
	"io"
	"net/url"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/vllm-cibench/cibench/endpoint"
	"github.com/vllm-cibench/cibench/internal/yamlstrict"
)

// ErrProviderNotFound 表示 providers.yaml 中没有指定的 provider id。
var ErrProviderNotFound = errors.New("loadgen: provider not found")

// ErrInvalidProviders 被 providers.yaml 的语义错误（没有 provider、缺 id/base_url/model_name、
// base_url 不是 http(s) 地址）包装；这些错误是 *field.Error，带文件、行列与字段路径。
var ErrInvalidProviders = errors.New("loadgen: invalid providers")

// Provider 是 acs-bench providers.yaml 中的一项。base_url 可以是一个字符串，
// 也可以是列表（每卡一个实例时轮询）；APIKey 不会被打印。
type Provider struct {
	ID            string   `yaml:"id"`
	Name          string   `yaml:"name"`
	APIKey        string   `yaml:"api_key"`
	BaseURLs      []string `yaml:"-"`
	ModelName     string   `yaml:"model_name"`
	ModelCategory string   `yaml:"model_category"`
}

// String 输出不含密钥的描述。
func (p Provider) String() string {
	return fmt.Sprintf("Provider{id=%s model=%s base_urls=%s}", p.ID, p.ModelName, strings.Join(p.BaseURLs, ","))
}

// Target 把 provider 转成 Run 使用的 Target。API key 为 "EMPTY"（acs-bench 的惯例）时不发送。
func (p Provider) Target() Target {
	key := p.APIKey
	if key == "EMPTY" {
		key = ""
	}
	return Target{Endpoint: endpoint.Endpoint{BaseURLs: append([]string(nil), p.BaseURLs...), Model: p.ModelName, APIKey: key}, Provider: p.ID}
}

// providerYAML 是 YAML 中的原始形态：base_url 既可是字符串也可是列表。
type providerYAML struct {
	ID            string    `yaml:"id"`
	Name          string    `yaml:"name"`
	APIKey        string    `yaml:"api_key"`
	BaseURL       yaml.Node `yaml:"base_url"`
	ModelName     string    `yaml:"model_name"`
	ModelCategory string    `yaml:"model_category"`
}

// maxProvidersBytes 是 providers.yaml 的大小上限（真实文件只有几百字节）。
const maxProvidersBytes = 1 << 20

// ParseProviders 等同于 ReadProviders(r, "providers.yaml")。
func ParseProviders(r io.Reader) ([]Provider, error) { return ReadProviders(r, "providers.yaml") }

// ReadProviders 严格解析 acs-bench 格式的 providers.yaml（未知字段报错），
// 并校验每项都有 id、http(s) 的 base_url 与 model_name。name 是文件名（通常是
// 用户给出的路径），出现在每条错误的开头（"name:行: 原因"）。
func ReadProviders(r io.Reader, name string) ([]Provider, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxProvidersBytes+1))
	if err != nil {
		return nil, fmt.Errorf("loadgen: %s: %w", name, err)
	}
	if len(data) > maxProvidersBytes {
		return nil, fmt.Errorf("loadgen: %s: larger than %d bytes", name, maxProvidersBytes)
	}
	var doc struct {
		Providers []providerYAML `yaml:"providers"`
	}
	// 与矩阵、档位等一切用户 YAML 同一个严格解码器：错误是 "name:行:列: 字段路径: 原因"。
	if err := yamlstrict.Unmarshal(name, data, &doc); err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	// 再解码一次成节点树，只为取每项的行号（严格解码已保证结构正确）。
	var lines struct {
		Providers []yaml.Node `yaml:"providers"`
	}
	_ = yaml.Unmarshal(data, &lines)
	// 以下语义错误与解码错误同一形状：*field.Error（文件、行列、字段路径、取值）。
	bad := func(n *yaml.Node, path, value, reason string) error {
		e := &field.Error{File: name, Field: path, Value: value, Reason: reason, Err: ErrInvalidProviders}
		if n != nil {
			e.Line, e.Col = n.Line, n.Column
		}
		return e
	}
	if len(doc.Providers) == 0 {
		return nil, bad(nil, "providers", "", "no providers")
	}
	out := make([]Provider, 0, len(doc.Providers))
	for i, py := range doc.Providers {
		p := Provider{ID: py.ID, Name: py.Name, APIKey: py.APIKey, ModelName: py.ModelName, ModelCategory: py.ModelCategory}
		var item *yaml.Node
		if i < len(lines.Providers) {
			item = &lines.Providers[i]
		}
		path := fmt.Sprintf("providers[%d]", i)
		switch py.BaseURL.Kind {
		case yaml.ScalarNode:
			p.BaseURLs = []string{py.BaseURL.Value}
		case yaml.SequenceNode:
			if err := py.BaseURL.Decode(&p.BaseURLs); err != nil {
				return nil, bad(&py.BaseURL, path+".base_url", "", err.Error())
			}
		}
		switch {
		case p.ID == "":
			return nil, bad(item, path+".id", "", "is empty")
		case len(p.BaseURLs) == 0:
			return nil, bad(item, path+".base_url", "", fmt.Sprintf("is empty (provider %s)", p.ID))
		case p.ModelName == "":
			return nil, bad(item, path+".model_name", "", fmt.Sprintf("is empty (provider %s)", p.ID))
		}
		for j, raw := range p.BaseURLs {
			if u, err := url.Parse(raw); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, bad(&py.BaseURL, fmt.Sprintf("%s.base_url[%d]", path, j), raw, fmt.Sprintf("want an http(s)://host[:port]/v1 URL (provider %s)", p.ID))
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// FindProvider 按 id 查找；id 为空时返回第一项（acs-bench 的 --provider-id 缺省行为）。
func FindProvider(ps []Provider, id string) (Provider, error) {
	if id == "" && len(ps) > 0 {
		return ps[0], nil
	}
	for _, p := range ps {
		if p.ID == id {
			return p, nil
		}
	}
	return Provider{}, fmt.Errorf("%w: %q", ErrProviderNotFound, id)
}
