package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vllm-cibench/cibench/internal/pagecheck"
	"github.com/vllm-cibench/cibench/report"
	"github.com/vllm-cibench/cibench/report/compare"
)

// copyConfigs 把仓库自带的 configs/ 复制到 dst（测试改其中的场景文件，不动仓库）。
func copyConfigs(t *testing.T, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS("../../configs")); err != nil {
		t.Fatal(err)
	}
}

// setEmulator 在 configs 副本的 emulator 场景里设置调度参数（docs/report.md "A real red gate" 的配方）。
func setEmulator(t *testing.T, dir string, maxNumSeqs string) {
	t.Helper()
	p := filepath.Join(dir, "scenarios", "emulator.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := regexp.MustCompile(`(?m)^  (max_num_seqs|enable_prefix_caching|num_kv_blocks): .*\n`).ReplaceAllString(string(b), "")
	s = strings.Replace(s, "emulator:\n", "emulator:\n  max_num_seqs: "+maxNumSeqs+"\n  enable_prefix_caching: true\n  num_kv_blocks: 8192\n", 1)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkPage 在 Chromium 里读一页并断言一个人读到的东西：第一段文字是 wantFirst 开头、没有重复
// 的文字块、没有落在自己区间外的数、每张图的基线可分辨。返回读到的页面供调用方再查。
func checkPage(t *testing.T, bin, file, wantFirst string) *pagecheck.Page {
	t.Helper()
	p, err := pagecheck.Probe(context.Background(), bin, file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.FirstText, wantFirst) {
		t.Errorf("%s: first visible text\n  %q\nwant it to start with\n  %q", filepath.Base(file), p.FirstText, wantFirst)
	}
	if d := p.Duplicates(40); len(d) > 0 {
		t.Errorf("%s: text blocks shown more than once:\n  %s", filepath.Base(file), strings.Join(d, "\n  "))
	}
	if c := p.Contradictions(); len(c) > 0 {
		t.Errorf("%s: numbers outside the interval printed after them:\n  %s", filepath.Base(file), strings.Join(c, "\n  "))
	}
	if u := p.Undistinguished(); len(u) > 0 {
		t.Errorf("%s: charts whose baseline is neither dashed nor hollow: %s", filepath.Base(file), strings.Join(u, "; "))
	}
	return p
}

// TestRedPRPageInChromium 按 docs/report.md "A real red gate" 的配方经参考驱动走一遍：`-stages perf`
// 的每日运行（max_num_seqs 8），再一次 `-stages perf` 的 PR 运行（max_num_seqs 4，退出码 1）。
// 然后在真实的 Chromium 里打开 PR 的 report.html 与这一对的比较页，断言一个人读到的：
//   - 结论与第一个失败门禁的一行原因是页面的第一段文字（比较页与报告是同一行）；
//   - 没有数字落在它后面的区间外、没有文字块出现两次、每张图的基线都是虚线或空心；
//   - TTFT、TPOT、ITL、E2E 的均值、中位数与 P99 都在页上；
//   - 比较的图（时延、QPS、吞吐、按分位的分布、阶段堆叠）都画了基线。
func TestRedPRPageInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("two perf runs and a browser: skipped in -short mode")
	}
	bin, err := pagecheck.Lookup()
	if errors.Is(err, pagecheck.ErrNoChromium) {
		if os.Getenv("CIBENCH_REQUIRE_INTEGRATION") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	cfg, root := t.TempDir(), t.TempDir()
	copyConfigs(t, cfg)
	setEmulator(t, cfg, "8")
	var out, errb bytes.Buffer
	if code := run([]string{"-config", cfg, "-artifacts", root, "-run-type", "daily", "-stages", "perf", "-run-id", "daily-1"}, &out, &errb, env); code != 0 {
		t.Fatalf("daily: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	setEmulator(t, cfg, "4")
	out.Reset()
	errb.Reset()
	if code := run([]string{"-config", cfg, "-artifacts", root, "-run-type", "pr", "-stages", "perf", "-run-id", "pr-1"}, &out, &errb, env); code != 1 {
		t.Fatalf("pr: exit %d, want 1 (red gates)\n%s\n%s", code, out.String(), errb.String())
	}
	prDir, dailyDir := filepath.Join(root, "pr", "pr-1"), filepath.Join(root, "daily", "daily-1")
	// 只跑了 perf 的运行是不完整的，report.Load 不沿用它的门禁：直接读 summary.json（页面画的就是它）。
	raw, err := os.ReadFile(filepath.Join(prDir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res report.Result
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	var failed []string
	total, queueNamed := 0, false
	for _, g := range res.Gates {
		total++
		if g.Verdict == "fail" {
			failed = append(failed, report.Headline(g))
			// 忙碌的机器可能把没变的 c4 也推过阈值（那时归因如实点名客户端）；c8 的 TTFT 必须因排队而红。
			if g.Key != nil && g.Key.Concurrency == 8 && g.Metric == "ttft_p99_seconds" && strings.Contains(report.Headline(g), "— queue +") {
				queueNamed = true
			}
		}
	}
	if len(failed) == 0 || !queueNamed {
		t.Fatalf("want the c8 TTFT gate red and naming the queue; failed gates:\n%s", strings.Join(failed, "\n"))
	}

	page := checkPage(t, bin, filepath.Join(prDir, "report.html"), "FAIL")
	// 第一段文字之后紧跟的就是 "n of m gates failed — 第一个失败门禁的一行"，然后是不完整的原因。
	if !strings.Contains(page.Text, failed[0]) {
		t.Errorf("the first failed gate's line %q is not on the page", failed[0])
	}
	// 第一行就是结论与第一个失败门禁的一行，紧接着是为什么不完整（只跑了 perf）。
	if !strings.Contains(page.FirstText, "gates failed — "+failed[0]) {
		t.Errorf("the first line %q is not the verdict and the first failed gate %q", page.FirstText, failed[0])
	}
	if head := page.Text[:min(len(page.Text), 600)]; !strings.Contains(head, "Incomplete: only perf ran") {
		t.Errorf("the page does not say near the top why it is incomplete:\n%s", head)
	}
	if !strings.Contains(page.Text, "TTFT\tTPOT\tITL\tE2E") || !strings.Contains(page.Text, "mean\tmedian\tP99\tmean\tmedian\tP99\tmean\tmedian\tP99\tmean\tmedian\tP99") {
		t.Errorf("the latency table does not show mean, median and P99 of TTFT, TPOT, ITL and E2E")
	}
	compares := map[string]bool{}
	for _, c := range page.Charts {
		if c.Baseline > 0 {
			for _, kind := range []string{"TTFT P99 vs", "E2E P99 vs", "QPS vs", "Output token throughput", "TTFT by percentile", "E2E by percentile", "by phase"} {
				if strings.Contains(c.Title, kind) {
					compares[kind] = true
				}
			}
		}
	}
	for _, kind := range []string{"TTFT P99 vs", "E2E P99 vs", "QPS vs", "Output token throughput", "TTFT by percentile", "E2E by percentile", "by phase"} {
		if !compares[kind] {
			t.Errorf("no %q chart draws the baseline", kind)
		}
	}

	c, err := compare.Dirs(context.Background(), dailyDir, prDir, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cmpFile := filepath.Join(t.TempDir(), "compare.html")
	var b bytes.Buffer
	if err := c.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cmpFile, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cp := checkPage(t, bin, cmpFile, "FAIL ")
	if !strings.Contains(cp.FirstText, "combinations failed — "+failed[0]) {
		t.Errorf("compare page opens with\n  %q\nnot the report's first failed gate\n  %q", cp.FirstText, failed[0])
	}
	phase := 0
	for _, ch := range cp.Charts {
		if strings.Contains(ch.Title, "by phase") && ch.Baseline > 0 {
			phase++
		}
	}
	if phase == 0 {
		t.Error("the compare page's phase charts draw no baseline")
	}
}
