# 交叉验证用：只用 Python 标准库（csv/gzip/json/random），按 simple-evals 的规则
# 独立构造各数据集在 debug/全量模式下的样本顺序与提示文本，输出 JSON：
# {"<dataset>_<mode>": [prompt, ...]}。Go 测试逐字节比较。
# pandas 在这里用 csv 模块代替：对样例数据而言两者读出的字符串相同
# （唯一的 NA 字符串 "None" 按 pandas 规则替换为 "nan"）。
import csv, gzip, json, random, sys

data = sys.argv[1]
ref = json.load(open(sys.argv[2], encoding="utf-8"))
TEMPLATE = ref["QUERY_TEMPLATE_MULTICHOICE"]
NA = {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"}

def read_csv(name):
    with open(f"{data}/{name}", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return [{k: ("nan" if v in NA else v) for k, v in r.items()} for r in rows]

def gpqa(n_repeats, num_examples):
    examples = read_csv("gpqa_diamond.csv")
    rng = random.Random(0)
    if num_examples:
        examples = rng.sample(examples, num_examples)
    examples = examples * n_repeats
    examples = [e | {"permutation": rng.sample(range(4), 4)} for e in examples]
    out = []
    for row in examples:
        choices = [row["Correct Answer"], row["Incorrect Answer 1"], row["Incorrect Answer 2"], row["Incorrect Answer 3"]]
        choices = [choices[i] for i in row["permutation"]]
        out.append(TEMPLATE.format(A=choices[0], B=choices[1], C=choices[2], D=choices[3], Question=row["Question"]))
    return out

def mmlu(num_examples):
    examples = read_csv("mmlu.csv")
    if num_examples:
        examples = random.Random(0).sample(examples, num_examples)
    return [TEMPLATE.format(**r) for r in examples]

def jsonl_gz(name):
    with gzip.open(f"{data}/{name}", "rb") as f:
        return list(map(json.loads, f.readlines()))

def drop(num_examples):
    train = jsonl_gz("drop_v0_train.jsonl.gz")
    test = jsonl_gz("drop_v0_dev.jsonl.gz")
    if num_examples:
        test = random.Random(42).sample(test, num_examples)
    rng = random.Random(42)
    out = []
    for example in test:
        stuffing = rng.sample(train, 3)
        prompt = "You will be asked to read a passage and answer a question. Some examples of passages and Q&A are provided below."
        prompt += "\n\n# Examples"
        samples = stuffing + [example]
        for i, sample in enumerate(samples):
            is_test = i == len(stuffing)
            prompt += "\n# Your Task\n" if is_test else ""
            prompt += "\n---\n" + sample["context"] + " "
            if not is_test:
                prompt += sample["completion"] + "\n"
            else:
                prompt += "\n\nThink step by step, then write a line of the form \"Answer: $ANSWER\" at the end of your response.\n" + " " * 20
                out.append(prompt)
    return out

def humaneval(num_examples):
    probs = {p["task_id"]: p for p in jsonl_gz("HumanEval.jsonl.gz")}
    examples = list(probs.values())
    if num_examples:
        examples = random.Random(0).sample(examples, num_examples)
    instruction = "Read the following function signature and docstring, and fully implement the function described. Your response should only contain the code for this function.\n"
    return [instruction + p["prompt"] for p in examples]

def mgsm(n):
    out = []
    for lang in ["bn", "de", "en", "es", "fr", "ja", "ru", "sw", "te", "th", "zh"]:
        with open(f"{data}/mgsm_{lang}.tsv", "rb") as f:
            for raw in list(f)[:n]:
                inputs, targets = raw.decode("utf-8").strip().split("\t")
                out.append((lang, inputs))
    return out

print(json.dumps({
    "gpqa_debug": gpqa(1, 5), "gpqa_full": gpqa(10, None), "gpqa_examples7": gpqa(1, 7),
    "mmlu_debug": mmlu(1), "mmlu_full": mmlu(None),
    "drop_debug": drop(10), "drop_full": drop(None),
    "humaneval_debug": humaneval(10), "humaneval_full": humaneval(None),
    "mgsm_inputs": mgsm(10),
}, ensure_ascii=False))
