# 交叉验证用的 Python 评分器：只用标准库 re/json，按 simple-evals 的规则
# （正则取自 reference/simple_evals_prompts.json）独立实现答案抽取与 DROP 归一化，
# 让 Go 测试能对同一批回复比较两边的结果。输入/输出均为 stdin/stdout 上的 JSON。
import json, re, string, sys

ref = json.load(open(sys.argv[1], encoding="utf-8"))
MC = ref["ANSWER_PATTERN_MULTICHOICE"]
ANS = ref["ANSWER_PATTERN"]
TEMPLATE = ref["MULTILINGUAL_ANSWER_PATTERN_TEMPLATE"]
ML = ref["MULTILINGUAL_ANSWER_REGEXES"]

def norm_resp(s):
    for old in ["**", "$\\boxed{", "}$", "\\$", "$\\text{", "$", "\\mathrm{", "\\{", "\\text", "\\(", "\\mathbf{", "{", "\\boxed"]:
        s = s.replace(old, "")
    return s

def norm_extracted(s):
    for a, b in [("أ", " A"), ("ب", " B"), ("ج", " C"), ("د", " D"), ("অ", " A"), ("ব", " B"), ("ড", " C"), ("ঢ", " D"), ("Ａ", " A"), ("Ｂ", " B"), ("Ｃ", " C"), ("Ｄ", " D")]:
        s = s.replace(a, b)
    return s.strip()

def mmlu(resp):
    r = norm_resp(resp)
    for rx in ML:
        m = re.search(TEMPLATE.format(rx), r)
        if m:
            return norm_extracted(m.group(1))
    return None

def gpqa(resp):
    m = re.search(MC, resp)
    return m.group(1) if m else None

def mgsm(resp, prefix):
    if prefix not in resp:
        return ""
    t = resp.split(prefix)[-1].strip()
    nums = re.findall(r"\d+\.?\d*", t.replace(",", ""))
    return nums[-1].rstrip(".") if nums else ""

def is_num(t):
    try:
        float(t)
        return True
    except ValueError:
        return False

def norm_answer(text):
    parts = []
    for tok in re.split(" |-", text):
        t = tok.lower()
        if not is_num(t):
            t = "".join(c for c in t if c not in set(string.punctuation))
        if is_num(t):
            t = str(float(t))
        t = re.sub(re.compile(r"\b(a|an|the)\b", re.UNICODE), " ", t)
        t = " ".join(t.split())
        if t.strip():
            parts.append(t)
    return " ".join(parts).strip()

def f1(pred, gold):
    inter = len(gold & pred)
    p = 1.0 if not pred else inter / float(len(pred))
    r = 1.0 if not gold else inter / float(len(gold))
    return ((2 * p * r) / (p + r) if not (p == 0.0 and r == 0.0) else 0.0) * 100

def drop_one(pred, gold):
    pn, gn = norm_answer(pred), norm_answer(gold)
    pb, gb = set(pn.split()), set(gn.split())
    gnum = {w for w in gb if is_num(w)}
    pnum = {w for w in pb if is_num(w)}
    s = f1(pb, gb) if (not gnum or gnum & pnum) else 0.0
    return (1.0 if pn == gn else 0.0), s

def fuzzy_norm(s):
    s = s.lower()
    s = "".join(c for c in s if c not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())

def fuzzy(a, b):
    a, b = fuzzy_norm(a), fuzzy_norm(b)
    if a == "" or b == "":
        return a == b
    return a in b or b in a

def drop(resp, refs):
    m = re.search(ANS, resp)
    ext = m.group(1) if m else resp
    ems, f1s = [], []
    for r in refs:
        if r.strip() != "":
            e, f = drop_one(ext, r)
            ems.append(e)
            f1s.append(f)
    return {"extracted": ext, "em": max(ems) if ems else 0.0, "f1_unrounded": max(f1s) if f1s else 0.0,
            "fuzzy": any(fuzzy(ext, r) for r in refs), "norm": norm_answer(ext)}

PREFIX = {"en": "Answer", "bn": "উত্তর", "de": "Antwort", "es": "Respuesta", "fr": "Réponse", "ja": "答え",
          "ru": "Ответ", "sw": "Jibu", "te": "సమాధానం", "th": "คำตอบ", "zh": "答案"}

def score_mgsm(target, prediction):
    if "." in prediction:
        prediction = prediction.rstrip("0").rstrip(".")
    return target.replace(",", "") == prediction.replace(",", "")

def rescore(dataset, rec):
    """按 simple-evals 的规则为一条 JSONL 记录重新评分，返回 (score, metrics)。"""
    r = rec["responses"][0]
    if dataset == "gpqa":
        return (1.0 if gpqa(r) == rec["correct_answer"] else 0.0), {"chars": len(r)}
    if dataset == "mmlu":
        s = 1.0 if mmlu(r) == rec["correct_answer"] else 0.0
        return s, None
    if dataset == "mgsm":
        lang = rec["id"].split("/")[1]
        s = 1.0 if score_mgsm(rec["correct_answer"], mgsm(r, PREFIX[lang])) else 0.0
        return s, {lang: s}
    if dataset == "drop":
        refs = json.loads(rec["correct_answer"])
        d = drop(r, refs)
        return (1.0 if d["fuzzy"] else 0.0), {"em_score": d["em"], "f1_unrounded": d["f1_unrounded"]}
    raise ValueError(dataset)

if len(sys.argv) > 2 and sys.argv[2] == "--rescore":
    out = []
    for line in sys.stdin:
        dataset, rec = json.loads(line)
        s, m = rescore(dataset, rec)
        out.append({"score": s, "metrics": m})
    json.dump(out, sys.stdout, ensure_ascii=False)
    sys.exit(0)

cases = json.load(sys.stdin)
out = []
for c in cases:
    r = c["response"]
    out.append({"mmlu": mmlu(r), "gpqa": gpqa(r), "mgsm": {p: mgsm(r, p) for p in c["prefixes"]}, "drop": drop(r, c["refs"])})
json.dump(out, sys.stdout, ensure_ascii=False)
