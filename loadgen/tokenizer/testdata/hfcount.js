// hfcount.js 用 Hugging Face 自己的 tokenizers（Node 绑定，Rust 实现）给语料计数，
// 作为 loadgen/tokenizer 参考测试的标准答案：计数由参考库产生，不是手写的。
//
// 输入（标准输入，JSON）：{"files": ["a/tokenizer.json", ...], "texts": ["...", ...], "repeat": 1}
// 输出（标准输出，JSON）：{"version": "0.23.2", "counts": {"<file>": [n, ...]}, "ns": {"<file>": 纳秒}}
// 计数与 cibench 的 BPE.CountTokens 同义：encode(text, addSpecialTokens=false) 的长度，
// 即不加 BOS/EOS 等后处理器的特殊 token；文本里出现的 added token 照常按一个 token 计。
// ns 是对整个语料做 repeat 遍串行 encode 的耗时，供速度对比（BenchmarkVsReference）。
// 由 NODE_PATH 指向 scripts/setup.d/60-tokenizers.sh 安装的 node_modules。
const { Tokenizer } = require('tokenizers');

async function main() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  const req = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  const out = { version: require('tokenizers/package.json').version, counts: {}, ns: {} };
  for (const file of req.files) {
    const tok = Tokenizer.fromFile(file);
    // 这些文件的 truncation 与 padding 都是 null，encode 不截断不填充（测试里另行检查）。
    const counts = [];
    for (const t of req.texts) {
      const e = await tok.encode(t, null, { addSpecialTokens: false });
      counts.push(e.getLength());
    }
    out.counts[file] = counts;
    const repeat = req.repeat || 0;
    if (repeat > 0) {
      const start = process.hrtime.bigint();
      for (let r = 0; r < repeat; r++) {
        for (const t of req.texts) await tok.encode(t, null, { addSpecialTokens: false });
      }
      out.ns[file] = Number(process.hrtime.bigint() - start);
    }
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack || e) + '\n');
  process.exit(1);
});
