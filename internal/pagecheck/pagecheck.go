// Package pagecheck 在真实的无头 Chromium 里打开一份 HTML 报告，读回一个人看这页时看到的东西，
// 供报告与比较页的浏览器测试断言：
//
//   - 第一段可见文字（布局之后的 innerText：折叠的 <details> 里的内容不算可见）；
//   - 文字块（段落、单元格、标题、摘要……各自“自己的”文字，折叠的也算）：同一段 40 字以上的
//     文字出现两次就是重复；
//   - 数字与区间：一个带符号的数后面跟着的区间（"[+9.5%, +41.9%]" 或 "+109.1 ms…+113.3 ms"）必须
//     包含它（同一单位；限值 "limit +10%"、"≤ +10%" 与置信水平 "@95%" 不算）；
//   - 图表：每张图里代表基线的图元（提示文字含 "baseline"）必须是虚线或空心，按浏览器算出的样式判断。
//
// 做法是把一段探针脚本追加到页面副本的末尾，用 --dump-dom 取回脚本写下的 JSON；判定在 Go 里做，
// 所以每条规则都能在没有浏览器的单元测试里用构造的页面证明它会失败。页面本身不被修改。
// 本包只供测试使用（不导入 testing，调用方决定失败时怎么报）。
package pagecheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ErrNoChromium 表示找不到无头浏览器（CIBENCH_CHROMIUM 没设、PATH 上也没有）。
var ErrNoChromium = errors.New("pagecheck: chromium not found (set CIBENCH_CHROMIUM or run scripts/setup.d/40-chromium.sh)")

// Lookup 返回无头浏览器的路径：CIBENCH_CHROMIUM 优先，其次 PATH 上的 chromium、chromium-browser、
// google-chrome；都没有时返回 ErrNoChromium。
func Lookup() (string, error) {
	if p := os.Getenv("CIBENCH_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", ErrNoChromium
}

// Chart 是页面里的一张图（svg.chart）：Title 是图名，Baseline 是代表基线的图元个数，
// Undistinguished 是其中既不是虚线也不是空心的个数，Legend 报告图例是否提到基线。
type Chart struct {
	Title           string `json:"title"`
	Baseline        int    `json:"baseline"`
	Undistinguished int    `json:"undistinguished"`
	Legend          bool   `json:"legend"`
}

// Block 是一个文字块：Text 是它自己的文字，Where 是它所在的表格列（"表格序号:列序号"；不在表格里为空）。
type Block struct {
	Text  string `json:"text"`
	Where string `json:"where"`
}

// Page 是探针从浏览器读回的页面。
type Page struct {
	// FirstText 是页面第一段可见文字（innerText 的第一行非空文字）。
	FirstText string `json:"first"`
	// Text 是页面的全部可见文字（innerText）。
	Text string `json:"text"`
	// Blocks 是各文字块自己的文字（空白已归一，含折叠内容，不含 SVG 与脚本）。
	Blocks []Block `json:"blocks"`
	// Rows 是各表格行的单元格文字，以 " | " 相接（区间与它前面的数常常在同一行的不同列里）。
	Rows []string `json:"rows"`
	// Charts 是页面里的图。
	Charts []Chart `json:"charts"`
	// Elapsed 是从开始导航到探针运行（页面已解析、脚本已执行、布局已完成）的毫秒数。
	Elapsed float64 `json:"elapsed_ms"`
}

// probe 是追加到页面末尾的脚本：读回上面的各项，写进 <pre id="pagecheck-result">。
const probe = `<script>
(function () {
  var BLOCK = {P:1,LI:1,TD:1,TH:1,PRE:1,SUMMARY:1,H1:1,H2:1,H3:1,H4:1,CAPTION:1,DT:1,DD:1,FIGCAPTION:1,BLOCKQUOTE:1,DIV:1,DETAILS:1,TABLE:1,TR:1,UL:1,OL:1,SECTION:1,BODY:1};
  function norm(s) { return s.replace(/\s+/g, " ").trim(); }
  function own(el) {
    var out = "";
    el.childNodes.forEach(function (n) {
      if (n.nodeType === 3) { out += n.nodeValue; return; }
      if (n.nodeType !== 1) return;
      var t = n.tagName.toUpperCase();
      if (BLOCK[t] || t === "SVG" || t === "SCRIPT" || t === "STYLE") { out += " "; return; }
      out += own(n);
    });
    return out;
  }
  var res = {blocks: [], rows: [], charts: []};
  var text = document.body.innerText || "";
  res.text = text;
  res.first = "";
  var lines = text.split("\n");
  for (var i = 0; i < lines.length; i++) { var l = norm(lines[i]); if (l) { res.first = l; break; } }
  var tables = Array.prototype.slice.call(document.querySelectorAll("table"));
  document.body.querySelectorAll("*").forEach(function (el) {
    var t = el.tagName.toUpperCase();
    if (!BLOCK[t] || el.closest("svg") || el.id === "pagecheck-result") return;
    var s = norm(own(el));
    if (!s) return;
    // 表格同一列里的相同文字是数据（不同的行、不同的对象），不是重复：记下列的位置。
    var cell = el.closest("td,th"), where = "";
    if (cell) where = tables.indexOf(cell.closest("table")) + ":" + cell.cellIndex;
    res.blocks.push({text: s, where: where});
  });
  document.querySelectorAll("tr").forEach(function (tr) {
    var cells = [];
    tr.querySelectorAll("td,th").forEach(function (c) { cells.push(norm(c.textContent)); });
    res.rows.push(cells.join(" | "));
  });
  document.querySelectorAll("svg.chart").forEach(function (svg) {
    var c = {title: "", baseline: 0, undistinguished: 0, legend: false};
    var tt = svg.querySelector(":scope > title");
    c.title = norm(svg.getAttribute("aria-label") || (tt ? tt.textContent : ""));
    svg.querySelectorAll("text").forEach(function (x) { if (/baseline/i.test(x.textContent) && x.classList.contains("legend")) c.legend = true; });
    svg.querySelectorAll("*").forEach(function (el) {
      var ti = null;
      for (var k = 0; k < el.children.length; k++) { if (el.children[k].tagName.toLowerCase() === "title") ti = el.children[k]; }
      var isBase = (ti && /baseline/i.test(ti.textContent)) || (el.tagName.toLowerCase() === "path" && el.getAttribute("stroke-dasharray"));
      if (!isBase || el === svg) return;
      c.baseline++;
      var cs = getComputedStyle(el);
      var dashed = cs.strokeDasharray && cs.strokeDasharray !== "none";
      var hollow = cs.fill === "none" || cs.fill === "rgb(255, 255, 255)";
      if (!dashed && !hollow) c.undistinguished++;
    });
    res.charts.push(c);
  });
  res.elapsed_ms = performance.now();
  var pre = document.createElement("pre");
  pre.id = "pagecheck-result";
  pre.hidden = true;
  pre.textContent = JSON.stringify(res);
  document.body.appendChild(pre);
})();
</script>`

// resultRE 找出探针写下的 JSON（--dump-dom 输出里已做 HTML 转义）。
var resultRE = regexp.MustCompile(`(?s)<pre id="pagecheck-result" hidden="">(.*?)</pre>`)

// Probe 在 bin（无头 Chromium）中打开 file 的一个副本（末尾追加探针脚本）并读回 Page。
// 浏览器带着测试机上必需的参数启动（无沙箱、无后台联网、一次性用户目录），ctx 约束整个过程。
func Probe(ctx context.Context, bin, file string) (*Page, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("pagecheck: %w", err)
	}
	dir, err := os.MkdirTemp("", "pagecheck")
	if err != nil {
		return nil, fmt.Errorf("pagecheck: %w", err)
	}
	defer os.RemoveAll(dir)
	page := filepath.Join(dir, "page.html")
	body := src
	if i := bytes.LastIndex(body, []byte("</body>")); i >= 0 {
		body = append(append(append([]byte(nil), src[:i]...), probe...), src[i:]...)
	} else {
		body = append(append([]byte(nil), src...), probe...)
	}
	if err := os.WriteFile(page, body, 0o600); err != nil {
		return nil, fmt.Errorf("pagecheck: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--window-size=1400,1000", "--user-data-dir="+filepath.Join(dir, "profile"), "--dump-dom", "file://"+page)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("pagecheck: chromium on %s: %w\n%s", file, err, stderr.String())
	}
	m := resultRE.FindSubmatch(stdout.Bytes())
	if m == nil {
		return nil, fmt.Errorf("pagecheck: the probe did not run on %s (a script error before it?)", file)
	}
	var p Page
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &p); err != nil {
		return nil, fmt.Errorf("pagecheck: probe result of %s: %w", file, err)
	}
	return &p, nil
}

// Duplicates 返回出现不止一次、至少 minLen 个字符的文字块（每段只列一次）。同一张表同一列里的相同
// 文字不算重复（那是不同行的数据）；同一段文字出现在两张表、表与正文、或正文的两处才算。
func (p *Page) Duplicates(minLen int) []string {
	where := map[string]map[string]int{}
	var order []string
	for _, b := range p.Blocks {
		if len([]rune(b.Text)) < minLen {
			continue
		}
		if where[b.Text] == nil {
			where[b.Text] = map[string]int{}
			order = append(order, b.Text)
		}
		where[b.Text][b.Where]++
	}
	var out []string
	for _, text := range order {
		w := where[text]
		if len(w) > 1 || w[""] > 1 {
			out = append(out, text)
		}
	}
	return out
}

// texts 返回文字块的文字。
func (p *Page) texts() []string {
	out := make([]string, len(p.Blocks))
	for i, b := range p.Blocks {
		out[i] = b.Text
	}
	return out
}

// Contradictions 返回文字块与表格行里落在自己后面区间之外的数字（"−1.0% … [+9.5%, +41.9%]"）。
func (p *Page) Contradictions() []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range append(p.texts(), p.Rows...) {
		for _, c := range Contradictions(s) {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out
}

// Undistinguished 返回基线图元里有既不是虚线也不是空心的那些图的名字。
func (p *Page) Undistinguished() []string {
	var out []string
	for _, c := range p.Charts {
		if c.Undistinguished > 0 {
			out = append(out, fmt.Sprintf("%s (%d of %d baseline marks solid)", c.Title, c.Undistinguished, c.Baseline))
		}
	}
	return out
}

// numRE 是一个数加单位：可带符号（"+"、"-" 或 U+2212）、千位分隔与小数，单位是 %、ms 或 s。
const numRE = `([+\-−]?\d[\d,]*(?:\.\d+)?)\s?(%|ms|s)`

var (
	// bracketRE 是 "[lo, hi]" 形式的区间。
	bracketRE = regexp.MustCompile(`\[\s*` + numRE + `\s*,\s*` + numRE + `\s*\]`)
	// ellipsisRE 是 "lo…hi" 形式的区间（原因与归因里的写法）。
	ellipsisRE = regexp.MustCompile(numRE + `\s*…\s*` + numRE)
	// signedRE 是带符号的数（变化）；不带符号的数是水平、份额或绝对值，不与区间比较。
	signedRE = regexp.MustCompile(`(^|[^\w.])([+\-−]\d[\d,]*(?:\.\d+)?)\s?(%|ms\b|s\b)`)
	// limitRE 认出限值：紧挨在数前面的 "limit "、"≤ "、"≥ "、"@"。
	limitRE = regexp.MustCompile(`(limit|≤|≥|@|<|>)\s*$`)
)

// parseNum 把带 U+2212 与千位分隔的数字文字转成 float64。
func parseNum(s string) float64 {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "−", "-"), ",", "")
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// Contradictions 检查一段文字：每个区间之前最近的一个同单位、带符号、不是限值的数必须落在区间里
// （按印出来的精度，容差是最后一位的一半）。返回每处矛盾的描述；没有时为 nil。
func Contradictions(s string) []string {
	type iv struct {
		start      int
		lo, hi     float64
		unit, text string
		prec       float64
	}
	var ivs []iv
	for _, re := range []*regexp.Regexp{bracketRE, ellipsisRE} {
		for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
			lo, hi := s[m[2]:m[3]], s[m[6]:m[7]]
			u1, u2 := s[m[4]:m[5]], s[m[8]:m[9]]
			if u1 != u2 {
				continue
			}
			ivs = append(ivs, iv{start: m[0], lo: parseNum(lo), hi: parseNum(hi), unit: u1, text: s[m[0]:m[1]], prec: math.Max(precision(lo), precision(hi))})
		}
	}
	var out []string
	for _, v := range ivs {
		before := s[:v.start]
		var last string
		var lastPrec float64
		for _, m := range signedRE.FindAllStringSubmatchIndex(before, -1) {
			num, unit := before[m[4]:m[5]], before[m[6]:m[7]]
			if unit != v.unit || limitRE.MatchString(before[:m[4]]) {
				continue
			}
			last, lastPrec = num, precision(num)
		}
		if last == "" {
			continue
		}
		x := parseNum(last)
		tol := math.Max(lastPrec, v.prec) / 2
		if x < math.Min(v.lo, v.hi)-tol-1e-9 || x > math.Max(v.lo, v.hi)+tol+1e-9 {
			out = append(out, fmt.Sprintf("%s%s outside %s in %q", last, v.unit, v.text, clip(s, 200)))
		}
	}
	return out
}

// precision 返回数字文字最后一位的大小（"1.25" 为 0.01，"12" 为 1）。
func precision(num string) float64 {
	if i := strings.IndexByte(num, '.'); i >= 0 {
		return math.Pow(10, -float64(len(num)-i-1))
	}
	return 1
}

// clip 把 s 截到 n 个字符以内（失败信息不至于太长）。
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
