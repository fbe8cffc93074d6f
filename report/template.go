package report

// htmlTemplate 是报告页面。样式与脚本全部内联；脚本只做两件事：把页面上
// 的 JS 错误写进 #js-errors（无头浏览器测试据此断言），以及"仅显示失败"筛选。
const htmlTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Verdict.Word}} — cibench {{.Res.RunType}} {{.Res.RunID}}</title>
<script>
window.__cibenchErrors = [];
window.addEventListener("error", function (e) {
  window.__cibenchErrors.push(String(e.message || e));
  var el = document.getElementById("js-errors");
  if (el) { el.textContent = window.__cibenchErrors.join("\n"); el.hidden = false; }
});
</script>
<style>
body{font-family:-apple-system,"Segoe UI",Roboto,"DejaVu Sans",Arial,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
header{padding:18px 28px;background:#fff;border-bottom:1px solid #ddd}
main{padding:8px 28px 40px}
h1{margin:0 0 6px;font-size:22px}
h2{margin-top:30px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{margin-top:22px;font-size:16px}
.meta span{margin-right:18px;color:#555;font-size:13px}
.badge{display:inline-block;padding:3px 10px;border-radius:4px;color:#fff;font-weight:bold;font-size:13px;vertical-align:middle}
.b-pass{background:#1a7f37}.b-fail{background:#cf222e}.b-partial{background:#9a6700}
header.h-b-fail{background:#ffebe9;border-bottom:3px solid #cf222e}
header.h-b-partial{background:#fff8c5;border-bottom:3px solid #9a6700}
header.h-b-pass{border-bottom:3px solid #1a7f37}
h1 .badge{font-size:18px;margin-right:6px}
#verdict-line{font-size:18px}
.partial{margin:4px 0 6px;font-size:14px}
table{border-collapse:collapse;margin:8px 0 14px;background:#fff;font-size:13px}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.v-pass,.s-pass{color:#1a7f37;font-weight:bold}
.v-fail,.s-fail{color:#cf222e;font-weight:bold}
.v-no_baseline{color:#9a6700;font-weight:bold}
.v-warn{color:#bc4c00;font-weight:bold}
.v-skipped,.s-skip{color:#6e7781}
.v-interrupted{color:#9a6700;font-weight:bold}
tr.row-fail{background:#fff0f0}
.cards{display:flex;gap:12px;flex-wrap:wrap;margin:12px 0}
.card{background:#fff;border:1px solid #ddd;border-radius:6px;padding:10px 16px;min-width:110px}
.card b{display:block;font-size:22px}
.charts{display:flex;flex-wrap:wrap;gap:10px}
.charts svg{background:#fff;border:1px solid #ddd;border-radius:4px}
pre{white-space:pre-wrap;word-break:break-all;background:#f6f8fa;padding:6px;margin:0;font-size:12px;max-height:240px;overflow:auto}
#js-errors{color:#cf222e;white-space:pre-wrap}
.only-fail tr.row-ok{display:none}
.only-fail .charts,.only-fail details.timeline{display:none}
.note{color:#555;font-size:13px}
</style>
</head>
<body>
<header class="h-{{.Verdict.Class}}">
<h1><span class="badge {{.Verdict.Class}}" id="verdict">{{.Verdict.Word}}</span>{{if .Verdict.Headline}} <span id="verdict-line">{{.Verdict.Headline}}</span>{{end}}</h1>
{{if .Verdict.Partial}}<p class="partial" id="partial">{{.Verdict.Partial}}</p>{{end}}
<div class="meta">
<span>cibench report — {{.Res.RunType}} run {{.Res.RunID}}</span>
<span>commit {{if .Res.Commit}}{{.Res.Commit}}{{else}}—{{end}}</span>
<span>branch {{if .Res.Branch}}{{.Res.Branch}}{{else}}—{{end}}</span>
<span>started {{ts .Res.Started}}</span>
<span>finished {{ts .Res.Finished}}</span>
<span>exit code {{.Res.ExitCode}}</span>
</div>
</header>
<main>
<pre id="js-errors" hidden></pre>
<div class="cards">
<div class="card">gates<b>{{.Total}}</b></div>
<div class="card v-pass">passed<b>{{.Pass}}</b></div>
<div class="card v-fail">failed<b id="failed-count">{{.Fail}}</b></div>
<div class="card v-no_baseline">no baseline<b>{{.NoBaseline}}</b></div>
<div class="card v-skipped">skipped<b>{{.Skip}}</b></div>
{{if .Interrupted}}<div class="card v-interrupted">interrupted<b>{{.Interrupted}}</b></div>{{end}}
{{if .Warn}}<div class="card v-warn">warn<b>{{.Warn}}</b></div>{{end}}
<div class="card">scenarios<b>{{len .Scenarios}}</b></div>
</div>
<p class="note">Exit code 0: no gate failed (gates without a daily baseline are listed as "no baseline" and are not judged).
Exit code 1: at least one gate failed. Performance gates compare with the most recent daily run of the same scenario and combination:
TTFT/E2E P99 more than the limit worse, QPS more than the limit lower, or fail rate above its absolute limit fails.</p>
<label><input type="checkbox" id="only-fail"> show only failures</label>

<h2 id="failed-gates">Failed gates</h2>
{{if .Failed}}
<table class="gates"><tr><th>gate</th><th>current</th><th>baseline</th><th>in one line</th></tr>
{{range .Failed}}<tr class="row-fail"><td>{{.Scenario}} {{.Name}}</td><td class="num">{{.Current}}</td><td class="num">{{.Baseline}}</td><td>{{.Headline}}<details class="reason"><summary>method, interval, samples, caveats</summary>{{if ne .Interval "—"}}<p>interval {{.Interval}}; samples {{.Samples}}</p>{{end}}<pre>{{.Reason}}</pre></details></td></tr>
{{end}}</table>
{{range .Failed}}{{if .ShowWhy}}<div class="why"><h3>Where the time went: {{.Scenario}} {{.Name}}</h3>
{{if .Chart}}{{.Chart}}{{end}}<p class="note">{{.Attribution}}</p></div>
{{end}}{{end}}
<p class="note">Where the time went: means from the server's phase histograms (_sum/_count over the combination's windows) beside the client's mean; the gate itself judges P99. The interval is the client's mean difference (Welch); the server histograms carry no per-request variance. One block per combination: E2E and QPS share theirs.</p>
{{else}}<p>No gate failed.</p>{{end}}
{{with .Trend}}<h3>Daily trend: {{len .NewChangePoints}} new change point(s)</h3>
<p class="note">E-divisive means over the last {{.Runs}} daily results (window {{.Window}}) of {{.Series}} tracked series.</p>
{{if .ChangePoints}}<table class="trend"><tr><th>series</th><th>first run after the change</th><th>before</th><th>after</th><th>change</th><th>p</th><th>new</th><th>where the time went</th></tr>
{{range .ChangePoints}}<tr class="{{if .New}}row-fail{{else}}row-ok{{end}}"><td>{{.Series}}</td><td>{{.RunID}}</td><td class="num">{{printf "%.4g" .Before}}</td><td class="num">{{printf "%.4g" .After}}</td><td class="num">{{delta .DeltaPct}}</td><td class="num">{{printf "%.3f" .PValue}}</td><td>{{if .New}}NEW{{else}}no{{end}}</td><td>{{or .Attribution "—"}}</td></tr>
{{end}}</table>{{end}}
{{if .Retried}}<table class="trend"><tr><th>daily run</th><th>scenario</th><th>functional cases passed after retry</th><th>cases</th></tr>
{{range .Retried}}<tr class="row-fail"><td>{{.RunID}}</td><td>{{.Scenario}}</td><td class="num">{{.PassedAfterRetry}}</td><td>{{range $i, $c := .Cases}}{{if $i}}, {{end}}{{$c}}{{end}}</td></tr>
{{end}}</table>{{else}}<p class="note">No functional case needed a retry in these daily runs.</p>{{end}}{{end}}
{{if .NoBase}}<h3>Gates without a baseline ({{len .NoBase}})</h3>
<details><summary>show</summary><table><tr><th>scenario</th><th>gate</th><th>current</th><th>reason</th></tr>
{{range .NoBase}}<tr><td>{{.Scenario}}</td><td>{{.Name}}</td><td class="num">{{.Current}}</td><td>{{.Reason}}</td></tr>
{{end}}</table></details>{{end}}

<h2>Scenarios</h2>
<table><tr><th>scenario</th><th>model</th><th>quant</th><th>deploy</th><th>hardware</th>{{range .Columns}}<th>{{.}}</th>{{end}}<th>stage errors</th><th>failed gates</th></tr>
{{range .Scenarios}}<tr class="{{if or .GateFailed .Errors}}row-fail{{else}}row-ok{{end}}"><td><a href="#{{.Anchor}}">{{.Name}}</a></td><td>{{or .Model "not recorded"}}</td><td>{{or .Quant "not recorded"}}</td><td>{{or .Deploy "not recorded"}}</td><td>{{if .Hardware}}{{.Hardware}}{{else}}not recorded{{end}}</td>
{{range .Cells}}<td{{if .Num}} class="num"{{end}}>{{.Text}}</td>{{end}}<td class="num">{{len .Errors}}</td><td class="num">{{.GateFailed}}</td></tr>
{{end}}</table>

{{range .Scenarios}}
<section class="scenario" id="{{.Anchor}}">
<h2>Scenario {{.Name}}</h2>
<div class="meta"><span>model {{.Model}}</span><span>quant {{.Quant}}</span><span>deploy {{.Deploy}}</span><span>hardware {{if .Hardware}}{{.Hardware}}{{else}}not recorded{{end}}</span><span>backend {{.Backend}}</span></div>
{{if .Errors}}<h3>Stage errors</h3><table><tr><th>stage</th><th>message</th></tr>
{{range .Errors}}<tr class="row-fail"><td>{{.Stage}}</td><td><pre>{{.Message}}</pre></td></tr>{{end}}</table>{{end}}

{{range .Parts}}{{.}}
{{end}}
<h3>Gates</h3>
{{if .Gates}}
<table class="gates"><tr><th>gate</th><th>kind</th><th>current</th><th>baseline</th><th>delta</th><th title="bootstrap confidence interval of the relative change, from per-request samples of both runs; for QPS it comes from the gaps between completions and is wide (often ±40 %) at 100–200 requests">interval</th><th title="samples per run (current / baseline) and how many the compared quantile needs">samples</th><th>limit</th><th>verdict</th><th>reason</th></tr>
{{range .Gates}}<tr class="{{if eq .Verdict "fail"}}row-fail{{else}}row-ok{{end}}"><td>{{.Name}}</td><td>{{.Kind}}</td><td class="num">{{.Current}}</td><td class="num">{{.Baseline}}</td><td class="num">{{.Delta}}</td><td class="num">{{.Interval}}</td><td>{{.Samples}}</td><td>{{.Limit}}</td><td class="{{verdictClass .Verdict}}">{{verdictText .Verdict}}</td><td>{{if eq .Verdict "fail"}}{{.Headline}} (details under Failed gates){{else}}{{.Reason}}{{end}}</td></tr>
{{end}}</table>
{{else}}<p class="note">No gates evaluated yet.</p>{{end}}
{{if .Files}}<h3>Artifacts</h3>
<details><summary>{{len .Files}} files</summary><ul class="files">{{range .Files}}<li><a href="{{.}}">{{.}}</a></li>{{end}}</ul></details>{{end}}
</section>
{{end}}
<p class="note">Generated {{.Generated}} by cibench. Self-contained: no external resources.</p>
</main>
<script>
(function () {
  var box = document.getElementById("only-fail");
  box.addEventListener("change", function () { document.body.classList.toggle("only-fail", box.checked); });
  var svgs = document.querySelectorAll("svg.chart"), drawn = 0;
  for (var i = 0; i < svgs.length; i++) {
    var bb = svgs[i].getBBox();
    if (bb.width > 0 && bb.height > 0) { drawn++; }
  }
  document.body.setAttribute("data-charts", String(svgs.length));
  document.body.setAttribute("data-charts-drawn", String(drawn));
  // 渲染自检：页面可见文本的开头（浏览器测试据此断言结论是第一段文字）。
  document.body.setAttribute("data-first-text", document.body.innerText.trim().replace(/\s+/g, " ").slice(0, 300));
  document.body.setAttribute("data-js-ok", "1");
})();
</script>
</body>
</html>
`
