package pycompat_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vllm-cibench/cibench/internal/pycompat"
)

// TestFloatReprTable 用手写的 Python repr 结果覆盖定点/指数的边界。
func TestFloatReprTable(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
	}{
		{0, "0.0"}, {math.Copysign(0, -1), "-0.0"}, {1, "1.0"}, {0.5, "0.5"}, {0.1, "0.1"},
		{1e-4, "0.0001"}, {1e-5, "1e-05"}, {1.5e-7, "1.5e-07"}, {1e15, "1000000000000000.0"},
		{1e16, "1e+16"}, {1.25e16, "1.25e+16"}, {123456789.125, "123456789.125"},
		{-2.5, "-2.5"}, {1e100, "1e+100"}, {1.7976931348623157e308, "1.7976931348623157e+308"},
		{5e-324, "5e-324"}, {0.30000000000000004, "0.30000000000000004"},
		{math.NaN(), "nan"}, {math.Inf(1), "inf"}, {math.Inf(-1), "-inf"},
		{0.4898979485566356, "0.4898979485566356"},
	} {
		if got := pycompat.FloatRepr(c.f); got != c.want {
			t.Errorf("FloatRepr(%v)=%q want %q", c.f, got, c.want)
		}
	}
}

// TestDumpsFloatDict 对照 Python json.dumps(indent=2) 的字节输出。
func TestDumpsFloatDict(t *testing.T) {
	got := pycompat.DumpsFloatDict([]pycompat.Item{
		{"chars", 1234.5}, {"chars:std", 0.1}, {"score:std", math.NaN()}, {"é\"x\n\x7f😀", math.Inf(-1)}, {"score", 1},
	}, 2)
	want := "{\n  \"chars\": 1234.5,\n  \"chars:std\": 0.1,\n  \"score:std\": NaN,\n  \"\\u00e9\\\"x\\n\\u007f\\ud83d\\ude00\": -Infinity,\n  \"score\": 1.0\n}"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if pycompat.DumpsFloatDict(nil, 2) != "{}" {
		t.Error("empty dict")
	}
	if got := pycompat.DumpsFloatDict([]pycompat.Item{{"a", 1}, {"b\t\r\b\f\\\x01", 2}}, -1); got != `{"a": 1.0, "b\t\r\b\f\\\u0001": 2.0}` {
		t.Errorf("compact: %s", got)
	}
	if pycompat.JSONFloat(math.Inf(1)) != "Infinity" {
		t.Error("inf")
	}
}

// TestTextHelpers 覆盖空白、strip/split 与 lower 的 Python 特例。
func TestTextHelpers(t *testing.T) {
	if !pycompat.IsSpace(0x1c) || !pycompat.IsSpace(0xa0) || pycompat.IsSpace(0x200b) || !pycompat.IsSpace(0x3000) {
		t.Error("IsSpace set wrong")
	}
	if got := pycompat.Strip("\x1f\u00a0 abc\u3000\n"); got != "abc" {
		t.Errorf("Strip=%q", got)
	}
	if got := pycompat.Fields(" a\u2003b\x1cc  "); strings.Join(got, "|") != "a|b|c" {
		t.Errorf("Fields=%q", got)
	}
	for in, want := range map[string]string{
		"ABC": "abc", "İx": "i\u0307x", "ΟΔΟΣ": "οδος", "ΣΑ": "σα", "Σ": "σ", "ΟΔΟΣ'.": "οδος'.", "Ab.Σ c": "ab.ς c", "ÀÉ": "àé",
	} {
		if got := pycompat.Lower(in); got != want {
			t.Errorf("Lower(%q)=%q want %q", in, got, want)
		}
	}
	if !pycompat.IsWord('_') || !pycompat.IsWord('é') || !pycompat.IsWord('٣') || pycompat.IsWord('-') {
		t.Error("IsWord")
	}
}

// TestParseFloat 覆盖 Python float(str) 的接受与拒绝规则。
func TestParseFloat(t *testing.T) {
	ok := map[string]float64{
		"5": 5, " 5\n": 5, "1_000": 1000, "１２": 12, "١٢.٥": 12.5, "-.5": -0.5, "5.": 5, "1e3": 1000,
		"1E-2": 0.01, "+inf": math.Inf(1), "-Infinity": math.Inf(-1), "1e400": math.Inf(1),
	}
	for in, want := range ok {
		got, good := pycompat.ParseFloat(in)
		if !good || got != want {
			t.Errorf("ParseFloat(%q)=%v,%v want %v", in, got, good, want)
		}
	}
	if v, good := pycompat.ParseFloat("NaN"); !good || !math.IsNaN(v) {
		t.Error("nan")
	}
	for _, in := range []string{"", " ", "1_", "_1", "1__0", "1._5", "0x10", "1e", "abc", "1,000", "--1", "in f", "5a", "½"} {
		if _, good := pycompat.ParseFloat(in); good {
			t.Errorf("ParseFloat(%q) accepted", in)
		}
	}
	if pycompat.DigitValue('x') != -1 || pycompat.DigitValue('7') != 7 || pycompat.DigitValue('\U0001D7D9') != 1 {
		t.Error("DigitValue")
	}
}

// TestRound 区分 numpy 与 Python 内置 round 的差别。
func TestRound(t *testing.T) {
	if got := pycompat.RoundNumpy(1.115, 2); got != 1.12 {
		t.Errorf("numpy round 1.115 = %v", got)
	}
	if got := pycompat.RoundPython(1.115, 2); got != 1.11 {
		t.Errorf("python round 1.115 = %v", got)
	}
	if got := pycompat.RoundNumpy(66.66666666666667, 2); got != 66.67 {
		t.Errorf("got %v", got)
	}
	if !math.IsNaN(pycompat.RoundNumpy(math.NaN(), 2)) || !math.IsInf(pycompat.RoundPython(math.Inf(1), 2), 1) {
		t.Error("non-finite")
	}
}

// TestTranslateRegex 检查翻译结果与 Unicode 行为。
func TestTranslateRegex(t *testing.T) {
	re := regexp.MustCompile(mustTranslate(t, `(?i)Answer\s*:\s*(\d+)`))
	if m := re.FindStringSubmatch("ANSWER\u00a0:\u3000١٢"); m == nil || m[1] != "١٢" {
		t.Fatalf("unicode \\s/\\d failed: %q", m)
	}
	re = regexp.MustCompile(mustTranslate(t, `[\s\d]+x\S\D\W\w[^a]\.`))
	if !re.MatchString("\u2003٣xab!_b.") {
		t.Error("class translation")
	}
	if got := mustTranslate(t, `[]a][\b]`); got != `[\]a][\x08]` {
		t.Errorf("got %q", got)
	}
	for _, bad := range []string{`\bthe\b`, `(?=x)`, `(a)\1`, `[\S]`} {
		if _, err := pycompat.TranslateRegex(bad); err == nil {
			t.Errorf("%q should be rejected", bad)
		}
	}
}

// mustTranslate 翻译正则，失败即终止测试。
func mustTranslate(t *testing.T, p string) string {
	t.Helper()
	s, err := pycompat.TranslateRegex(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// python3 返回 python3 路径；缺失时跳过（CIBENCH_REQUIRE_INTEGRATION=1 时失败）。
func python3(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CIBENCH_REQUIRE_INTEGRATION") == "1" {
			t.Fatal("python3 not on PATH but CIBENCH_REQUIRE_INTEGRATION=1")
		}
		t.Skip("python3 not on PATH: CPython cross-check skipped")
	}
	return p
}

// runPy 运行一段 Python 代码，把 stdin 传入并返回 stdout。
func runPy(t *testing.T, script, stdin string) []byte {
	t.Helper()
	cmd := exec.Command(python3(t), "-c", script)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	return out
}

// TestCharClassesAgainstCPython 对全部码点比较 \s \d \w、数字值与 lower。
// Python 把属性相同的连续码点压缩成区间输出（未分配码点被排除，避免 Unicode
// 版本差异造成误报），数字值与非平凡的小写映射逐个列出。
func TestCharClassesAgainstCPython(t *testing.T) {
	out := runPy(t, `
import re, unicodedata, json, sys
runs, digits, lowers = [], {}, {}
cur = None
for c in range(0x110000):
    ch = chr(c)
    if unicodedata.category(ch) in ('Cn', 'Cs'):
        key = None
    else:
        d = re.match(r'\d', ch) is not None
        if d:
            digits[c] = unicodedata.decimal(ch)
        if ch.lower() != ch:
            lowers[c] = ch.lower()
        key = (ch.isspace(), d, re.match(r'\w', ch) is not None)
    if cur is not None and key == cur[2] and c == cur[1] + 1:
        cur[1] = c
        continue
    if cur is not None and cur[2] is not None:
        runs.append([cur[0], cur[1]] + list(cur[2]))
    cur = [c, c, key]
if cur[2] is not None:
    runs.append([cur[0], cur[1]] + list(cur[2]))
json.dump({"runs": runs, "digits": digits, "lowers": lowers}, sys.stdout)
`, "")
	var py struct {
		Runs   [][5]any          `json:"runs"`
		Digits map[string]int    `json:"digits"`
		Lowers map[string]string `json:"lowers"`
	}
	if err := json.Unmarshal(out, &py); err != nil {
		t.Fatal(err)
	}
	digits := map[rune]int{}
	for k, v := range py.Digits {
		c, _ := strconv.Atoi(k)
		digits[rune(c)] = v
	}
	lowers := map[rune]string{}
	for k, v := range py.Lowers {
		c, _ := strconv.Atoi(k)
		lowers[rune(c)] = v
	}
	bad, checked := 0, 0
	for _, run := range py.Runs {
		lo, hi := rune(run[0].(float64)), rune(run[1].(float64))
		sp, dg, wd := run[2].(bool), run[3].(bool), run[4].(bool)
		for r := lo; r <= hi; r++ {
			checked++
			wantLower, ok := lowers[r]
			if !ok {
				wantLower = string(r)
			}
			wantDV := -1
			if dg {
				wantDV = digits[r]
			}
			gotDV := -1
			if pycompat.IsDecimal(r) {
				gotDV = pycompat.DigitValue(r)
			}
			if pycompat.IsSpace(r) != sp || gotDV != wantDV || pycompat.IsWord(r) != wd || pycompat.Lower(string(r)) != wantLower {
				bad++
				if bad < 10 {
					t.Errorf("U+%04X: space %v/%v digit %d/%d word %v/%v lower %q/%q", r, pycompat.IsSpace(r), sp, gotDV, wantDV, pycompat.IsWord(r), wd, pycompat.Lower(string(r)), wantLower)
				}
			}
		}
	}
	if checked < 100000 || bad > 0 {
		t.Errorf("checked %d code points, %d differ", checked, bad)
	}
}

// TestFloatsAgainstCPython 用随机与边界浮点比较 repr、json.dumps、round 与 float(str)。
func TestFloatsAgainstCPython(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var vals []float64
	for i := 0; i < 3000; i++ {
		switch i % 4 {
		case 0:
			vals = append(vals, math.Float64frombits(rng.Uint64()))
		case 1:
			vals = append(vals, rng.Float64()*math.Pow(10, float64(rng.IntN(40)-20)))
		case 2:
			vals = append(vals, float64(rng.IntN(1000))/float64(1+rng.IntN(999)))
		default:
			vals = append(vals, math.Round(rng.Float64()*1e6)/100)
		}
	}
	var in strings.Builder
	for _, v := range vals {
		in.WriteString(strconv.FormatUint(math.Float64bits(v), 10) + "\n")
	}
	out := runPy(t, `
import sys, struct, json
for line in sys.stdin:
    b = int(line)
    f = struct.unpack('<d', struct.pack('<Q', b))[0]
    r = round(f, 2) if f == f and abs(f) != float('inf') else f
    print(repr(f), json.dumps(f), struct.unpack('<Q', struct.pack('<d', r))[0])
`, in.String())
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(vals) {
		t.Fatalf("python returned %d lines for %d values", len(lines), len(vals))
	}
	for i, v := range vals {
		f := strings.Fields(lines[i])
		if got := pycompat.FloatRepr(v); got != f[0] {
			t.Errorf("repr(%b): got %s want %s", math.Float64bits(v), got, f[0])
		}
		if got := pycompat.JSONFloat(v); got != f[1] {
			t.Errorf("json(%v): got %s want %s", v, got, f[1])
		}
		rb, _ := strconv.ParseUint(f[2], 10, 64)
		if got := pycompat.RoundPython(v, 2); math.Float64bits(got) != rb && !math.IsNaN(v) {
			t.Errorf("round(%v,2): got %v want %v", v, got, math.Float64frombits(rb))
		}
	}
	// float(str) 与 str(float(...))
	cases := []string{"5", "05", "5.0", "1_000.5", "１２", "٣.٥", " 7 ", "1e5", "1E+20", "-0", ".5", "5.", "inf", "-iNF", "nan", "1e400", "1__0", "0x1p3", "1.2.3", "", "½", "12abc", "Infinity", "+1_0e1_0"}
	pyIn, _ := json.Marshal(cases)
	out = runPy(t, `
import sys, json
for s in json.loads(sys.stdin.read()):
    try:
        print(json.dumps([True, str(float(s))]))
    except ValueError:
        print(json.dumps([False, ""]))
`, string(pyIn))
	for i, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var want []any
		if err := json.Unmarshal([]byte(line), &want); err != nil {
			t.Fatal(err)
		}
		v, ok := pycompat.ParseFloat(cases[i])
		if ok != want[0].(bool) {
			t.Errorf("float(%q): ok=%v want %v", cases[i], ok, want[0])
			continue
		}
		if ok && pycompat.FloatRepr(v) != want[1].(string) {
			t.Errorf("str(float(%q))=%s want %s", cases[i], pycompat.FloatRepr(v), want[1])
		}
	}
	if !utf8.ValidString(pycompat.QuoteASCII("\xff")) {
		t.Error("invalid utf8 must be escaped")
	}
}
