package kube

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// ManifestError 指出哪个文件的第几个文档（从 0 开始）无法解析。
type ManifestError struct {
	// File 是清单文件名。
	File string
	// Index 是文档序号（按 --- 分隔，从 0 开始，含空文档）。
	Index int
	// Err 是底层原因。
	Err error
}

// Error 实现 error。
func (e *ManifestError) Error() string {
	return fmt.Sprintf("kube: manifest %s: document %d: %v", e.File, e.Index, e.Err)
}

// Unwrap 返回底层原因。
func (e *ManifestError) Unwrap() error { return e.Err }

// object 是清单中的一个对象及其来源，来源用于错误信息与归档。
type object struct {
	obj   *unstructured.Unstructured
	file  string
	index int
	role  string
}

// String 返回 Kind/namespace/name 形式的简短名字。
func (o object) String() string {
	ns := o.obj.GetNamespace()
	if ns != "" {
		ns += "/"
	}
	return o.obj.GetKind() + "/" + ns + o.obj.GetName()
}

// parseManifests 把多文档 YAML（或 JSON）解析成对象；空文档被跳过，
// List 类对象被展开。每个对象必须有 apiVersion、kind 与 metadata.name。
func parseManifests(file string, r io.Reader) ([]object, error) {
	yr := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var out []object
	for index := 0; ; index++ {
		doc, err := yr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, &ManifestError{File: file, Index: index, Err: err}
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		js, err := sigsyaml.YAMLToJSON(doc)
		if err != nil {
			return nil, &ManifestError{File: file, Index: index, Err: err}
		}
		if string(js) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return nil, &ManifestError{File: file, Index: index, Err: err}
		}
		items := []*unstructured.Unstructured{u}
		if u.IsList() {
			list, err := u.ToList()
			if err != nil {
				return nil, &ManifestError{File: file, Index: index, Err: err}
			}
			items = items[:0]
			for i := range list.Items {
				items = append(items, &list.Items[i])
			}
		}
		for _, it := range items {
			if it.GetName() == "" {
				return nil, &ManifestError{File: file, Index: index, Err: fmt.Errorf("%s: metadata.name is required", it.GetKind())}
			}
			out = append(out, object{obj: it, file: file, index: index})
		}
	}
}

// stripComments 去掉只含注释的行，使“只有注释的文档”被当作空文档。
func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}
