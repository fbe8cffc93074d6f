package kube_test

import (
	"errors"
	"fmt"
	"testing/fstest"

	"github.com/vllm-cibench/cibench/deploy/kube"
)

// ExampleNew 展示构造时就能发现的清单错误：错误指出文件与文档序号，
// 不需要连接集群。
func ExampleNew() {
	fsys := fstest.MapFS{"svc.yaml": {Data: []byte(`apiVersion: v1
kind: Service
metadata: {name: qwen3-32b}
---
apiVersion: apps/v1
metadata: {name: qwen3-32b}
`)}}
	_, err := kube.New(kube.Config{
		Manifests:   []string{"svc.yaml"},
		ServiceName: "qwen3-32b",
	}, kube.WithFS(fsys))
	var me *kube.ManifestError
	if errors.As(err, &me) {
		fmt.Println(me.File, me.Index)
	}
	// Output: svc.yaml 1
}
