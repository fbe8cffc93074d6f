# 生成 accuracy/simpleevals/sampledata 下的合成数据集（不是任何真实基准的数据）。
# 文件名与格式沿用 simple-evals 的参考文件，以便 Go 实现按同样的方式读取。
# 运行：python3 gen_sampledata.py（输出确定，gzip 的 mtime 固定为 0）。
import csv, gzip, io, json

def gz(name, rows):
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="") as f:
        for r in rows:
            f.write((json.dumps(r, ensure_ascii=False) + "\n").encode("utf-8"))
    open(name, "wb").write(buf.getvalue())

# GPQA：12 道合成题，含逗号、引号、换行与一个 NA 字符串，覆盖 CSV 解析。
colors = ["red", "blue", "green", "amber", "violet", "cyan", "ochre", "teal", "plum", "jade", "rust", "sand"]
with open("gpqa_diamond.csv", "w", newline="", encoding="utf-8") as f:
    w = csv.writer(f)
    w.writerow(["Record ID", "Question", "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3", "Subdomain"])
    for i in range(12):
        q = f"[synthetic #{i}] In the cibench fixture world, lamp {i} glows {colors[i]}. Which colour does lamp {i} glow?"
        if i == 3:
            q += '\nNote: "glow" means steady light, not flashing.'
        wrong = [colors[(i + k) % 12] for k in (1, 2, 3)]
        if i == 7:
            wrong[2] = "None"  # pandas 读成 NaN，格式化为 "nan"
        w.writerow([f"syn{i:03d}", q, colors[i], wrong[0], wrong[1], wrong[2] + (", dim" if i == 5 else ""), "fixture"])

# MMLU：16 道合成题，首列为无名索引列（与真实 mmlu.csv 相同），含一个未知学科。
subjects = ["abstract_algebra", "anatomy", "formal_logic", "econometrics", "virology", "made_up_subject"]
with open("mmlu.csv", "w", newline="", encoding="utf-8") as f:
    w = csv.writer(f)
    w.writerow(["", "Question", "A", "B", "C", "D", "Answer", "Subject"])
    for i in range(16):
        a = (i * 7 + 3) % 4
        opts = [f"{i * 10 + k}" for k in range(4)]
        w.writerow([i, f"[synthetic] What is {i * 10} + {a}?", *opts, "ABCD"[a], subjects[i % len(subjects)]])

# MGSM：11 种语言各 4 题（题目只用英文模板 + 语言标记，答案为整数，允许千分位逗号）。
for lang in ["bn", "de", "en", "es", "fr", "ja", "ru", "sw", "te", "th", "zh"]:
    with open(f"mgsm_{lang}.tsv", "w", encoding="utf-8") as f:
        for i in range(4):
            x, y = 3 + i, 4 * i + 5
            target = str(x * y) if i != 3 else "1,200"
            q = f"[synthetic {lang}] A box holds {x} rows of {y} beads. How many beads are there?"
            if i == 3:
                q = f"[synthetic {lang}] A shelf has 12 rows of 100 tiles. How many tiles are there?"
            f.write(f"{q}\t{target}\n")

# DROP：训练 6 条、开发 12 条，context/completion/ref_text 与参考 jsonl 相同的字段。
def drop_row(i, split):
    team = ["Owls", "Foxes", "Bears", "Hawks"][i % 4]
    passage = f"Passage: [synthetic {split} {i}] The {team} scored {i + 2} goals in the first half and {i + 5} in the second half."
    if i % 3 == 0:
        q, ans = "How many goals did they score in total?", str(2 * i + 7)
    elif i % 3 == 1:
        q, ans = "Which team scored?", f"the {team}"
    else:
        q, ans = "How many goals in the first half?", f"{i + 2}|{['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve', 'thirteen'][i + 2]}"
    return {"context": f"{passage}\nQuestion: {q}\nAnswer:", "completion": " " + ans.split("|")[0], "ref_text": ans}

gz("drop_v0_train.jsonl.gz", [drop_row(i, "train") for i in range(6)])
gz("drop_v0_dev.jsonl.gz", [drop_row(i, "dev") for i in range(12)])

# HumanEval：12 道合成题（整数运算小函数）。
problems = []
ops = [("add_one", "x + 1"), ("double", "x * 2"), ("square", "x * x"), ("negate", "-x"), ("half", "x // 2"),
       ("triple", "x * 3"), ("minus_two", "x - 2"), ("mod_seven", "x % 7"), ("cube", "x ** 3"),
       ("is_even", "x % 2 == 0"), ("abs_val", "abs(x)"), ("inc_ten", "x + 10")]
for i, (name, expr) in enumerate(ops):
    prompt = f'\n\ndef {name}(x: int):\n    """[synthetic] Return {expr} for the integer x.\n    >>> {name}(3)\n    {eval(expr, {"x": 3})}\n    """\n'
    test = f"\n\nMETADATA = {{}}\n\n\ndef check(candidate):\n" + "".join(
        f"    assert candidate({v}) == {eval(expr, {'x': v})!r}\n" for v in (0, 3, -4, 11))
    problems.append({"task_id": f"Synthetic/{i}", "prompt": prompt, "canonical_solution": f"    return {expr}\n", "test": test, "entry_point": name})
gz("HumanEval.jsonl.gz", problems)
