package main

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-cibench/cibench/loadgen"
)

// options 是 prof（以及不带子命令时）的全部参数。
type options struct {
	provider, providerID, savePath, perfProfile string
	selftest                                    bool
	selftestRequests                            int
	selftestOnly                                string
	cpuProfile                                  string
	chunkTimes, quiet                           bool
	emuTTFT, emuITL                             time.Duration
	emuTokensPerChunk                           int
	emuMaxNumSeqs                               int // 容量扫描演示：模拟器同时执行的请求上限
	p                                           loadgen.Profile
	inputPath, tokenizer                        string     // 只属于命令行层的两项，见 benchProfile
	gen                                         genOptions // 仅 generate dataset 使用
	shard                                       shardOptions
}

// 不支持的选项的拒绝原因（--help 与 docs/loadgen.md 引用同样的文字）。
const (
	whyHFHub      = "only a local tokenizer.json (or its directory) is read; nothing is downloaded from Hugging Face"
	whyProcesses  = "one process drives all concurrency with goroutines; processing-pool is not implemented"
	whyPD         = "only with --request-mode pd_dynamic, which is not implemented"
	whySpecTokens = "the acceptance rate is read from the server's vllm:spec_decode_* counters, not derived from token counts"
)

// profDefs 返回 prof 子命令的选项表：acs-bench 选项（docs/requirements.md 附录 A.2–A.5） 的全部选项（短名与长名），
// 以及 cibench 自己的几个长选项。prof 中 -ra/-rb 是输出长度的抖动比例、-pl 是
// profile level（acs-bench 的含义）；随机数据集的输入长度抖动与公共前缀用
// --input-range-ratio-above/below 与 --prefix-length。表按附录的小节分成几个函数，
// 顺序即 --help 的顺序；容量扫描与真实负载的选项见 sweep.go、workload.go。
func profDefs() []*optDef {
	return slices.Concat(datasetDefs(), concurrencyDefs(), metricDefs(), servingDefs(), ownDefs(), shardDefs(), selftestDefs(),
		sweepDefs(), workloadDefs())
}

// profOf 返回选项要写入的压测档位（各选项表的 setter 共用）。
func profOf(o *options) *loadgen.Profile { return &o.p }

// datasetDefs 是附录 A.2 Dataset Options。
func datasetDefs() []*optDef {
	p := profOf
	return []*optDef{
		{short: "dt", long: "dataset-type", kind: kString, field: "dataset_type",
			help:   "custom (prompts from -i), random (built-in text, the default without -i), mooncake_trace or azure_trace (trace from -i, replayed on its schedule), shared_prefix, prefix_repetition, sharegpt (ShareGPT JSON from -i)",
			setStr: func(o *options, v string) error { p(o).DatasetType = loadgen.DatasetType(v); return nil }},
		{short: "cfg", long: "config-option", kind: kStrList, field: "image_width/image_height",
			help:    "multimodal KEY:VALUE, keys image_width and image_height",
			setStrs: func(o *options, v []string) error { return setConfigOptions(p(o), v) }},
		{short: "mt", long: "modal-type", kind: kString, def: string(loadgen.ModalText), field: "modal_type", help: "text or image-text",
			setStr: func(o *options, v string) error { p(o).ModalType = loadgen.ModalType(v); return nil }},
		{short: "i", long: "input-path", kind: kString, field: "input_path",
			help:   "custom dataset: a JSONL file or the directory written by 'generate dataset'; the trace (JSONL/CSV) or ShareGPT JSON file of those datasets",
			setStr: func(o *options, v string) error { o.inputPath = v; return nil }},
		{short: "il", long: "input-length", kind: kIntList, field: "input_length", min: 1, max: loadgen.MaxTokens,
			help:    "input lengths in tokens (default 128 for the random dataset; must match the custom dataset's lengths)",
			setInts: func(o *options, v []int) { p(o).InputLength = v }},
		{short: "n", long: "num-requests", kind: kIntList, field: "num_requests", min: 1, max: loadgen.MaxRequests,
			help:    "requests per group: one value, or one per concurrency (default concurrency × 16)",
			setInts: func(o *options, v []int) { p(o).NumRequests = v }},
		{short: "t", long: "tokenizer", kind: kString, field: "tokenizer",
			help:   "local HuggingFace tokenizer.json (or its directory): sizes prompts when the server has no /tokenize",
			setStr: func(o *options, v string) error { o.tokenizer = v; return nil }},
		{short: "rv", long: "revision", kind: kString, def: "master", reject: whyHFHub},
		{short: "seed", long: "random-seed", kind: kInt, field: "seed", help: "random seed (dataset and arrivals)",
			setInt: func(o *options, v int) { p(o).Seed = int64(v) }},
		{short: "trc", long: "trust-remote-code", kind: kBool, def: "false", reject: whyHFHub},
	}
}

// concurrencyDefs 是附录 A.3 Concurrency Options（含爬坡）。
func concurrencyDefs() []*optDef {
	p := profOf
	return []*optDef{
		{short: "c", long: "concurrency", kind: kIntList, field: "concurrency", min: 0, max: loadgen.MaxConcurrency,
			help: "concurrency groups (default 1; 0 = unbounded, only with -r)", setInts: func(o *options, v []int) { p(o).Concurrency = v }},
		{short: "nc", long: "num-process", kind: kInt, def: "1", reject: whyProcesses},
		{short: "r", long: "request-rate", kind: kString, def: "inf", field: "request_rate",
			help: "open-loop arrival rate in req/s (inf = closed loop)", setStr: func(o *options, v string) error { return setRequestRate(p(o), v) }},
		{short: "rm", long: "request-mode", kind: kString, def: "normal", reject: "only normal is implemented (pd_dynamic is not)"},
		{short: "pc", long: "prefill-concurrency", kind: kInt, reject: whyPD},
		{short: "dc", long: "decoder-concurrency", kind: kInt, reject: whyPD},
		{short: "burst", long: "burstiness", kind: kFloat, def: "1.0", field: "burstiness", min: 0, max: loadgen.MaxBurstiness,
			help: "gamma shape of arrival gaps (1 = Poisson; > 0)", setFloat: func(o *options, v float64) error {
				if v <= 0 {
					return fmt.Errorf("must be > 0")
				}
				p(o).Burstiness = v
				return nil
			}},
		{short: "cb", long: "concurrency-backend", kind: kString, def: loadgen.ConcurrencyBackend, reject: "only threading-pool (goroutines) is implemented"},
		{short: "ub", long: "use-climb", kind: kBool, def: "false", field: "control_method", help: "climb mode",
			setBool: func(o *options, v bool) {
				p(o).ControlMethod = loadgen.ControlNormal
				if v {
					p(o).ControlMethod = loadgen.ControlClimb
				}
			}},
		{short: "gr", long: "growth-rate", kind: kInt, def: "0", field: "growth_rate", min: 0, max: loadgen.MaxConcurrency,
			help: "climb: concurrency added per step", setInt: func(o *options, v int) { p(o).GrowthRate = v }},
		{short: "gi", long: "growth-interval", kind: kFloat, def: "1000", field: "growth_interval", min: 1e-3, max: float64(loadgen.MaxGrowthInterval / time.Millisecond),
			help: "climb: step interval in ms", setFloat: func(o *options, v float64) error {
				p(o).GrowthInterval = time.Duration(v * float64(time.Millisecond))
				return nil
			}},
		{short: "ic", long: "init-concurrency", kind: kIntList, field: "init_concurrency", min: 1, max: loadgen.MaxConcurrency,
			help:    "climb: initial concurrency, one value or one per concurrency (default = concurrency)",
			setInts: func(o *options, v []int) { p(o).InitConcurrency = v }},
		{short: "cm", long: "climb-mode", kind: kString, def: string(loadgen.ClimbStatic), field: "climb_mode", help: "climb: static or linear",
			setStr: func(o *options, v string) error { p(o).ClimbMode = loadgen.ClimbMode(v); return nil }},
	}
}

// metricDefs 是附录 A.4 Metrics Options。
func metricDefs() []*optDef {
	p := profOf
	return []*optDef{
		{short: "g", long: "goodput", kind: kStrList, field: "goodput", help: "SLO name:ms (ttft, tpot, e2e), e.g. -g ttft:50 -g e2e:1000",
			setStrs: func(o *options, v []string) error {
				if _, err := loadgen.ParseGoodput(v); err != nil {
					return err
				}
				p(o).Goodput = v
				return nil
			}},
		{short: "bi", long: "bucket-interval", kind: kFloat, def: "0", field: "bucket_interval", min: 0, max: float64(loadgen.MaxGrowthInterval / time.Millisecond),
			help: "live timeline interval in ms: one row per interval in timeline_*.csv (0 = off, else >= 10)", setFloat: func(o *options, v float64) error {
				d := time.Duration(v * float64(time.Millisecond))
				if d != 0 && d < loadgen.MinBucketInterval {
					return fmt.Errorf("must be 0 (off) or >= 10")
				}
				p(o).BucketInterval = d
				return nil
			}},
	}
}

// servingDefs 是附录 A.5 Serving Options。
func servingDefs() []*optDef {
	p := profOf
	return []*optDef{
		{short: "b", long: "backend", kind: kString, def: string(loadgen.BackendChat), field: "backend", help: "openai-chat or openai",
			setStr: func(o *options, v string) error { p(o).Backend = loadgen.Backend(v); return nil }},
		{short: "p", long: "provider", kind: kString, help: "providers.yaml (acs-bench format); not given = benchmark the in-process emulator",
			setStr: func(o *options, v string) error { o.provider = v; return nil }},
		{short: "pid", long: "provider-id", kind: kString, help: "provider id in providers.yaml (default: the first)",
			setStr: func(o *options, v string) error { o.providerID = v; return nil }},
		{short: "ol", long: "output-length", kind: kIntList, field: "output_length", min: 1, max: loadgen.MaxTokens,
			help: "output lengths in tokens (max_tokens; default 128)", setInts: func(o *options, v []int) { p(o).OutputLength = v }},
		{short: "ra", long: "range-ratio-above", kind: kFloat, def: "0.0", field: "output_range_ratio_above", min: 0, max: 1,
			help: "output length jitter above: max_tokens uniform in [L×(1−rb), L×(1+ra)]", setFloat: func(o *options, v float64) error {
				p(o).OutputRangeRatioAbove = v
				return nil
			}},
		{short: "rb", long: "range-ratio-below", kind: kFloat, def: "0.0", field: "output_range_ratio_below", min: 0, max: 1,
			help: "output length jitter below, [0, 1)", setFloat: func(o *options, v float64) error {
				if v >= 1 {
					return fmt.Errorf("must be < 1")
				}
				p(o).OutputRangeRatioBelow = v
				return nil
			}},
		{short: "w", long: "warmup", kind: kInt, def: "0", field: "warmup", min: 0, max: loadgen.MaxRequests,
			help: "warm-up requests per group (not counted)", setInt: func(o *options, v int) { p(o).Warmup = v }},
		{short: "e", long: "epochs", kind: kInt, def: "1", field: "epochs", min: 1, max: loadgen.MaxEpochs,
			help: "rounds per group", setInt: func(o *options, v int) { p(o).Epochs = v }},
		{short: "tk", long: "top-k", kind: kInt, def: "8", field: "top_k", min: -1, max: loadgen.MaxTopK,
			help: "top_k (-1 = not sent)", setInt: func(o *options, v int) { p(o).TopK = &v }},
		{short: "tp", long: "top-p", kind: kFloat, def: "1.0", field: "top_p", min: 0, max: 1,
			help: "top_p, (0, 1]", setFloat: func(o *options, v float64) error {
				if v <= 0 {
					return fmt.Errorf("must be > 0")
				}
				p(o).TopP = &v
				return nil
			}},
		{short: "temper", long: "temperature", kind: kFloat, def: "0.6", field: "temperature", min: 0, max: loadgen.MaxTemperature,
			help: "sampling temperature", setFloat: func(o *options, v float64) error { p(o).Temperature = &v; return nil }},
		{short: "cs", long: "chunk-size", kind: kInt, def: "1024", reject: "SSE events are read whole; there is no client chunk size"},
		{short: "usd", long: "use-spec-decode", kind: kBool, def: "false",
			help: "no effect: the speculative acceptance rate is always reported when the server exposes its counters"},
		{short: "nst", long: "num-spec-tokens", kind: kInt, def: "-1", reject: whySpecTokens},
		{short: "umar", long: "use-mtp-accept-rate", kind: kBool, def: "true", reject: whySpecTokens},
		{short: "nss", long: "num-scheduler-steps", kind: kInt, def: "1", reject: "multi-step scheduling does not change how the client measures; only 1 is accepted"},
		{short: "timeout", long: "timeout", kind: kFloat, def: "1000", field: "timeout", min: 1e-3, max: loadgen.MaxTimeout.Seconds(),
			help: "request timeout in seconds", setFloat: func(o *options, v float64) error {
				p(o).Timeout = time.Duration(v * float64(time.Second))
				return nil
			}},
		{short: "ie", long: "ignore-eos", kind: kBool, def: "true", field: "ignore_eos", help: "send ignore_eos",
			setBool: func(o *options, v bool) { p(o).IgnoreEOS = &v }},
		{short: "cus", long: "continuous-usage-stats", kind: kBool, def: "true", field: "continuous_usage_stats",
			help: "ask for usage in every chunk", setBool: func(o *options, v bool) { p(o).ContinuousUsageStats = &v }},
		{short: "pf", long: "profile", kind: kBool, def: "false", reject: "the service profiler is not implemented"},
		{short: "pl", long: "profile-level", kind: kString, def: "Level0", reject: "the service profiler is not implemented"},
		{short: "trace", long: "trace", kind: kBool, def: "false", reject: "concurrency tracing is not implemented (the per-request CSV has every request's timestamps)"},
		{short: "s", long: "benchmark-save-path", kind: kString, def: "./benchmark_output", help: "artifact directory",
			setStr: func(o *options, v string) error { o.savePath = v; return nil }},
	}
}

// ownDefs 是 cibench 自己的选项（只有长名）：YAML 档位、随机数据集的输入长度抖动与前缀、超时与上限、输出。
func ownDefs() []*optDef {
	p := profOf
	return []*optDef{
		{long: "perf-profile", kind: kString, help: "YAML profile (configs/tests/perf/profiles/pr.yaml); options given on the command line override it",
			setStr: func(o *options, v string) error { o.perfProfile = v; return nil }},
		{long: "prefix-length", kind: kInt, def: "0", field: "prefix_length", min: 0, max: loadgen.MaxTokens,
			help: "random dataset: shared prefix tokens", setInt: func(o *options, v int) { p(o).PrefixLength = v }},
		{long: "input-range-ratio-above", kind: kFloat, def: "0.0", field: "range_ratio_above", min: 0, max: 1,
			help: "random dataset: input length jitter above", setFloat: func(o *options, v float64) error { p(o).RangeRatioAbove = v; return nil }},
		{long: "input-range-ratio-below", kind: kFloat, def: "0.0", field: "range_ratio_below", min: 0, max: 1,
			help: "random dataset: input length jitter below, [0, 1)", setFloat: func(o *options, v float64) error {
				if v >= 1 {
					return fmt.Errorf("must be < 1")
				}
				p(o).RangeRatioBelow = v
				return nil
			}},
		{long: "requests-per-concurrency", kind: kInt, def: "16", field: "requests_per_concurrency", min: 1, max: loadgen.MaxRequests,
			help: "requests per group = concurrency × this, when -n is not given", setInt: func(o *options, v int) { p(o).RequestsPerConcurrency = v }},
		{long: "idle-timeout", kind: kFloat, def: "120", field: "idle_timeout", min: 1e-3, max: loadgen.MaxTimeout.Seconds(),
			help: "seconds a stream may stay silent between two events before it is cut (class idle_timeout)",
			setFloat: func(o *options, v float64) error {
				p(o).IdleTimeout = time.Duration(v * float64(time.Second))
				return nil
			}},
		{long: "max-event-bytes", kind: kInt, def: "67108864", field: "max_event_bytes", min: 1024, max: 1 << 40,
			help:   "largest SSE event or response body accepted, in bytes (overflow: class too_large)",
			setInt: func(o *options, v int) { p(o).MaxEventBytes = v }},
		{long: "timestamps", kind: kString, def: string(loadgen.TimestampsKernel), field: "timestamps",
			help:   "arrival times: kernel (socket receive timestamps) or read (when the client read the data)",
			setStr: func(o *options, v string) error { p(o).Timestamps = loadgen.TimestampMode(v); return nil }},
		{long: "chunk-times", kind: kBool, def: "false", help: "write every chunk's arrival time into the per-request CSV",
			setBool: func(o *options, v bool) { o.chunkTimes = v }},
		{long: "quiet", kind: kBool, def: "false", help: "no progress line", setBool: func(o *options, v bool) { o.quiet = v }},
	}
}

// shardDefs 是分片的选项（docs/loadgen.md "Sharding"）：本机多进程与 Kubernetes Indexed Job。
func shardDefs() []*optDef {
	return []*optDef{
		{long: "shards", kind: kInt, def: "0", min: 0, max: loadgen.MaxShards,
			help: "split the profile over N local shard processes and merge their results (0 = one process)", setInt: func(o *options, v int) { o.shard.local = v }},
		{long: "shard-index", kind: kInt, def: "-1", min: -1, max: loadgen.MaxShards - 1,
			help: "run only shard I of --shard-count and print its result line on stdout (used by --shards)", setInt: func(o *options, v int) { o.shard.index = v }},
		{long: "shard-count", kind: kInt, def: "0", min: 0, max: loadgen.MaxShards,
			help: "number of shards for --shard-index", setInt: func(o *options, v int) { o.shard.count = v }},
		{long: "shard-start", kind: kString, help: "shared start time of all shards (RFC 3339)",
			setStr: func(o *options, v string) error { return o.shard.setStart(v) }},
		{long: "shard-from-env", kind: kBool, def: "false",
			help:    "take shard index, count, start (and the one group to run) from JOB_COMPLETION_INDEX, CIBENCH_SHARD_COUNT, CIBENCH_SHARD_START, CIBENCH_SHARD_GROUP (Indexed Job pods); per-request records go to stdout before the result line unless --shard-records is given",
			setBool: func(o *options, v bool) { o.shard.fromEnv = v }},
		{long: "shard-records", kind: kString, help: "shard runs: write this shard's per-request records (JSON Lines of loadgen.Record) to this file ('bench merge --records' replays them into the per-request and session CSVs; --shards sets it)",
			setStr: func(o *options, v string) error { o.shard.records = v; return nil }},
		{long: "kube-shards", kind: kInt, def: "0", min: 0, max: loadgen.MaxShards,
			help: "run N shards as Kubernetes Indexed Jobs, one Job per group in turn (needs --kube-image), and merge their results", setInt: func(o *options, v int) { o.shard.kube = v }},
		{long: "kube-image", kind: kString, help: "image with this bench program for --kube-shards", setStr: func(o *options, v string) error { o.shard.image = v; return nil }},
		{long: "kube-start-delay", kind: kDuration, def: "60s", help: "--kube-shards: time from creating each Job to the shards' shared start (covers image pull, scheduling and warm-up)",
			setDur: func(o *options, v time.Duration) { o.shard.startDelay = v }},
		{long: "kube-namespace", kind: kString, def: "default", help: "namespace of the shard Job", setStr: func(o *options, v string) error { o.shard.namespace = v; return nil }},
		{long: "kube-cpu", kind: kString, help: "CPU request and limit of each shard pod (e.g. 2)", setStr: func(o *options, v string) error { o.shard.cpu = v; return nil }},
		{long: "kube-memory", kind: kString, help: "memory request and limit of each shard pod (e.g. 4Gi)", setStr: func(o *options, v string) error { o.shard.memory = v; return nil }},
		{long: "kube-spread", kind: kBool, def: "false", help: "at most one shard pod per node (required pod anti-affinity)",
			setBool: func(o *options, v bool) { o.shard.spread = v }},
	}
}

// selftestDefs 是性能自检、CPU 剖析与进程内模拟器的选项。
func selftestDefs() []*optDef {
	return []*optDef{
		{long: "perf-selftest", kind: kBool, def: "false", help: "run the performance self-test against the in-process emulator and exit",
			setBool: func(o *options, v bool) { o.selftest = v }},
		{long: "selftest-only", kind: kString, help: "comma list of self-test parts: throughput,client,streams,fidelity,memory (default all)",
			setStr: func(o *options, v string) error { o.selftestOnly = v; return nil }},
		{long: "selftest-requests", kind: kInt, def: "1000000", min: 1, max: loadgen.MaxRequests, help: "requests in the self-test's memory run",
			setInt: func(o *options, v int) { o.selftestRequests = v }},
		{long: "cpuprofile", kind: kString, help: "write a CPU profile (pprof) of the whole run to this file",
			setStr: func(o *options, v string) error { o.cpuProfile = v; return nil }},
		{long: "emu-ttft", kind: kDuration, def: "0s", help: "in-process emulator (no -p): time to first token", setDur: func(o *options, v time.Duration) { o.emuTTFT = v }},
		{long: "emu-itl", kind: kDuration, def: "0s", help: "in-process emulator (no -p): inter-token latency", setDur: func(o *options, v time.Duration) { o.emuITL = v }},
		{long: "emu-tokens-per-chunk", kind: kInt, def: "1", min: 1, max: 1 << 16, help: "in-process emulator (no -p): tokens per SSE chunk",
			setInt: func(o *options, v int) { o.emuTokensPerChunk = v }},
	}
}

// setRequestRate 解析 -r：inf（闭环）或正数（请求/秒）。
func setRequestRate(p *loadgen.Profile, v string) error {
	if strings.EqualFold(v, "inf") {
		p.RequestRate = 0
		return nil
	}
	r, err := strconv.ParseFloat(v, 64)
	if err != nil || !(r > 0) || r > loadgen.MaxRequestRate {
		return fmt.Errorf("want inf or a number in (0, %d]", loadgen.MaxRequestRate)
	}
	p.RequestRate = r
	return nil
}

// setConfigOptions 解析 -cfg KEY:VALUE（image_width、image_height）。
func setConfigOptions(p *loadgen.Profile, items []string) error {
	for _, kv := range items {
		k, v, ok := strings.Cut(kv, ":")
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
			return fmt.Errorf("%q is not KEY:INT", kv)
		}
		if n < 1 || n > loadgen.MaxImageSide {
			return fmt.Errorf("%q: must be in [1, %d]", kv, loadgen.MaxImageSide)
		}
		switch k {
		case "image_width":
			p.ImageWidth = n
		case "image_height":
			p.ImageHeight = n
		default:
			return fmt.Errorf("unknown key %q (image_width, image_height)", k)
		}
	}
	return nil
}

// profSynopsis 是 prof 的用法行。
const profSynopsis = "bench [prof] [-p providers.yaml] -c 1,2,4 -il 128 -ol 128 [-n 16,32,64] [-ub True -gr 2 -gi 5000] [-s out] ...\n" +
	"       bench generate dataset -o DIR -il 128 -n 100 [-t tokenizer.json] ...   (see: bench generate dataset --help)\n" +
	"       bench merge [-s DIR] [--records FILE,...] RESULT...   (merge hand-started shards; see: bench merge --help)"

// parseFlags 解析 prof（及不带子命令时）的参数，读入 --perf-profile 与 custom 数据集，
// 在任何请求发出之前完成全部校验；错误点名选项（或 文件:行）与取值。
func parseFlags(args []string, stderr io.Writer) (*options, error) {
	t := newTable("prof", profDefs())
	occ, err := t.tokenize(args)
	if err == errHelp {
		t.usage(stderr, profSynopsis)
		return nil, errHelp
	}
	if err != nil {
		return nil, err
	}
	o := &options{savePath: "./benchmark_output", selftestRequests: 1_000_000, emuTokensPerChunk: 1, shard: shardOptions{index: -1, namespace: "default"}}
	var py *profileYAML
	for _, oc := range occ {
		if oc.def.long == "perf-profile" {
			o.perfProfile = oc.value
		}
	}
	if o.perfProfile != "" {
		var bp benchProfile
		if bp, py, err = loadProfileYAML(o.perfProfile); err != nil {
			return nil, err
		}
		o.p, o.inputPath, o.tokenizer = bp.Profile, bp.InputPath, bp.Tokenizer
	}
	set, err := t.apply(o, occ)
	if err != nil {
		return nil, err
	}
	if err := o.finish(set, py); err != nil {
		return nil, err
	}
	if err := o.shard.check(&o.p); err != nil {
		return nil, err
	}
	return o, nil
}

// finish 读取 custom 数据集、补上命令行的默认长度，并对填好默认值的 Profile 做完整校验。
func (o *options) finish(set map[string]string, py *profileYAML) error {
	p := &o.p
	if handled, err := readWorkloadInput(flagOr(set, "input_path", "-i/--input-path"), o.inputPath, p); handled {
		if err != nil {
			return err
		}
	} else if o.inputPath != "" {
		if p.DatasetType == "" {
			p.DatasetType = loadgen.DatasetCustom
		}
		if p.DatasetType != loadgen.DatasetCustom {
			return fmt.Errorf("%s %q: -i/--input-path is only read by the custom dataset", flagOr(set, "dataset_type", "--dataset-type"), p.DatasetType)
		}
		ps, err := readDataset(flagOr(set, "input_path", "--input-path"), o.inputPath)
		if err != nil {
			return err
		}
		p.Prompts = ps
	} else if p.DatasetType == loadgen.DatasetCustom {
		return fmt.Errorf("%s custom: needs -i/--input-path (a JSONL file or a 'generate dataset' directory)", flagOr(set, "dataset_type", "--dataset-type"))
	}
	if len(p.InputLength) == 0 && p.DatasetType != loadgen.DatasetCustom && !ownLengths(p.DatasetType) {
		p.InputLength = []int{128}
	}
	if len(p.OutputLength) == 0 && !ownLengths(p.DatasetType) {
		p.OutputLength = []int{128}
	}
	if err := p.WithDefaults().Validate(); err != nil {
		return locate(err, set, py)
	}
	return nil
}

// flagOr 返回设置了字段 f 的选项写法，没有时返回 def。
func flagOr(set map[string]string, f, def string) string {
	if s, ok := set[f]; ok {
		return s
	}
	return def
}

// helpText 返回一个子命令的完整帮助文本（供测试与文档核对）。
func helpText(args []string) string {
	var b bytes.Buffer
	_ = dispatch(args, &b)
	return b.String()
}
