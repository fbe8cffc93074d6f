package loadgen

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// ErrProviderNotFound 表示 providers.yaml 中没有指定的 provider id。
var ErrProviderNotFound = errors.New("loadgen: provider not found")

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
	return Target{BaseURLs: append([]string(nil), p.BaseURLs...), Model: p.ModelName, APIKey: key, Provider: p.ID}
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

// ParseProviders 严格解析 acs-bench 格式的 providers.yaml（未知字段报错），
// 并校验每项都有 id、base_url 与 model_name。
func ParseProviders(r io.Reader) ([]Provider, error) {
	dec := yaml.NewDecoder(r)
	dec.KnownFields(true)
	var doc struct {
		Providers []providerYAML `yaml:"providers"`
	}
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("loadgen: providers.yaml: %w", err)
	}
	if len(doc.Providers) == 0 {
		return nil, errors.New("loadgen: providers.yaml: no providers")
	}
	out := make([]Provider, 0, len(doc.Providers))
	for i, py := range doc.Providers {
		p := Provider{ID: py.ID, Name: py.Name, APIKey: py.APIKey, ModelName: py.ModelName, ModelCategory: py.ModelCategory}
		switch py.BaseURL.Kind {
		case yaml.ScalarNode:
			p.BaseURLs = []string{py.BaseURL.Value}
		case yaml.SequenceNode:
			if err := py.BaseURL.Decode(&p.BaseURLs); err != nil {
				return nil, fmt.Errorf("loadgen: providers.yaml: providers[%d].base_url: %w", i, err)
			}
		}
		switch {
		case p.ID == "":
			return nil, fmt.Errorf("loadgen: providers.yaml: providers[%d].id is empty", i)
		case len(p.BaseURLs) == 0 || p.BaseURLs[0] == "":
			return nil, fmt.Errorf("loadgen: providers.yaml: providers[%d] (%s).base_url is empty", i, p.ID)
		case p.ModelName == "":
			return nil, fmt.Errorf("loadgen: providers.yaml: providers[%d] (%s).model_name is empty", i, p.ID)
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
