package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/vllm-cibench/cibench/loadgen"
	"github.com/vllm-cibench/cibench/loadgen/dataset"
)

// genOptions 是 generate dataset 的参数（acs-bench 选项（docs/requirements.md 附录 A.1））。
type genOptions struct {
	outDir    string
	tokenizer string
	quiet     bool
	spec      dataset.Spec
	given     map[string]bool
}

// genDefs 返回 generate dataset 的选项表。这里 -ra/-rb 是输入长度的抖动比例、
// -pl 是公共前缀长度（acs-bench 的含义，与 prof 不同）。
func genDefs() []*optDef {
	s := func(o *options) *dataset.Spec { return &o.gen.spec }
	return []*optDef{
		{short: "dt", long: "dataset-type", kind: kString, def: string(loadgen.DatasetRandom), reject: "only the random dataset is generated (LongBench and other sources are not implemented)"},
		{short: "i", long: "input-path", kind: kString, reject: "filtering an existing dataset (LongBench …) is not implemented"},
		{short: "mt", long: "modal-type", kind: kString, def: string(loadgen.ModalText), reject: "datasets are text only; prof -mt image-text attaches a generated image to every request"},
		{short: "cfg", long: "config-option", kind: kStrList, reject: "datasets are text only; give -cfg image_width:W,image_height:H to prof"},
		{short: "o", long: "output-path", kind: kString, help: "output directory (required); the file is random_input{L}_num{N}[_prefix{P}].jsonl",
			setStr: func(o *options, v string) error { o.gen.outDir = v; return nil }},
		{short: "il", long: "input-length", kind: kInt, min: 1, max: loadgen.MaxTokens, help: "prompt length in tokens (required, one value)",
			setInt: func(o *options, v int) { s(o).InputLength = v }},
		{short: "pl", long: "prefix-length", kind: kInt, def: "0", min: 0, max: loadgen.MaxTokens, help: "shared prefix tokens",
			setInt: func(o *options, v int) { s(o).PrefixLength = v }},
		{short: "n", long: "num-requests", kind: kInt, min: 1, max: dataset.MaxRequests, help: "number of prompts (required, one value)",
			setInt: func(o *options, v int) { s(o).NumRequests = v }},
		{short: "t", long: "tokenizer", kind: kString,
			help:   "local HuggingFace tokenizer.json (or its directory) the lengths are measured in; without it, cibench's built-in counting rule",
			setStr: func(o *options, v string) error { o.gen.tokenizer = v; return nil }},
		{short: "rv", long: "revision", kind: kString, def: "master", reject: whyHFHub},
		{short: "ra", long: "range-ratio-above", kind: kFloat, def: "0.0", min: 0, max: 1, help: "input length jitter above: length uniform in [L×(1−rb), L×(1+ra)]",
			setFloat: func(o *options, v float64) error { s(o).RangeRatioAbove = v; return nil }},
		{short: "rb", long: "range-ratio-below", kind: kFloat, def: "0.0", min: 0, max: 1, help: "input length jitter below, [0, 1)",
			setFloat: func(o *options, v float64) error {
				if v >= 1 {
					return fmt.Errorf("must be < 1")
				}
				s(o).RangeRatioBelow = v
				return nil
			}},
		{short: "seed", long: "random-seed", kind: kInt, def: "0", help: "random seed (same seed, same prompts as prof's random dataset)",
			setInt: func(o *options, v int) { s(o).Seed = int64(v) }},
		{short: "trc", long: "trust-remote-code", kind: kBool, def: "false", reject: whyHFHub},
		{long: "quiet", kind: kBool, def: "false", help: "do not print the written file", setBool: func(o *options, v bool) { o.gen.quiet = v }},
	}
}

// genSynopsis 是 generate dataset 的用法行。
const genSynopsis = "bench generate dataset -o DIR -il 128 -n 100 [-pl 32] [-ra 0.1 -rb 0.1] [-t tokenizer.json] [--seed 0]\n" +
	"       then: bench prof -dt custom -i DIR -il 128 ..."

// parseGen 解析 generate dataset 的参数；-o、-il、-n 必须给出。
func parseGen(args []string, stderr io.Writer) (*genOptions, error) {
	t := newTable("generate dataset", genDefs())
	occ, err := t.tokenize(args)
	if err == errHelp {
		t.usage(stderr, genSynopsis)
		return nil, errHelp
	}
	if err != nil {
		return nil, err
	}
	o := &options{gen: genOptions{given: map[string]bool{}}}
	for _, oc := range occ {
		o.gen.given[oc.def.long] = true
	}
	if _, err := t.apply(o, occ); err != nil {
		return nil, err
	}
	for _, req := range []string{"output-path", "input-length", "num-requests"} {
		if !o.gen.given[req] {
			return nil, fmt.Errorf("generate dataset: %s is required", t.by[req].names())
		}
	}
	if err := o.gen.spec.Validate(); err != nil {
		return nil, fmt.Errorf("generate dataset: %w", err)
	}
	return &o.gen, nil
}

// runGen 生成数据集文件：先写临时文件再改名，中断或出错时不留下半个数据集。
func runGen(ctx context.Context, args []string, stderr io.Writer) error {
	g, err := parseGen(args, stderr)
	if err != nil {
		return err
	}
	var counter dataset.TokenCounter
	if g.tokenizer != "" {
		tok, err := loadTokenizer(g.tokenizer)
		if err != nil {
			return err
		}
		counter = tok
	}
	if err := os.MkdirAll(g.outDir, 0o755); err != nil {
		return fmt.Errorf("-o/--output-path: %w", err)
	}
	final := filepath.Join(g.outDir, g.spec.FileName())
	tmp, err := os.CreateTemp(g.outDir, ".dataset-*.tmp")
	if err != nil {
		return fmt.Errorf("-o/--output-path: %w", err)
	}
	defer os.Remove(tmp.Name())
	n, err := dataset.Generate(ctx, tmp, g.spec, counter)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return err
	}
	if !g.quiet {
		fmt.Fprintf(stderr, "wrote %s (%d prompts, input length %d)\n", final, n, g.spec.InputLength)
	}
	return nil
}
