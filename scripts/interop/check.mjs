// Compares engines we did not write with lmx (scripts/interop/check.sh runs this):
//   node check.mjs --ref REF.json --gguf MODEL.gguf [--text] [--hf DIR] [--tol 1e-4]
// REF.json is `lmx export --reference`: lmx's next-token probabilities on test-split sequences,
// 64 greedy tokens after a prompt, a test text and its ids. llama.cpp (node-llama-cpp's prebuilt
// CPU binaries, F32 KV cache, no flash attention) evaluates the same ids from the GGUF; --text also checks that
// llama.cpp tokenizes and detokenizes the text as lmx does; --hf checks DIR/tokenizer.json with
// Hugging Face's Rust tokenizers library (@anush008/tokenizers). Exit 1 on any disagreement.
import fs from "node:fs";
import path from "node:path";
import {createRequire} from "node:module";
import {getLlama, GgmlType, LlamaLogLevel} from "node-llama-cpp";

const require = createRequire(import.meta.url);
const args = process.argv.slice(2);
const opt = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const ref = JSON.parse(fs.readFileSync(opt("--ref"), "utf8"));
const tol = Number(opt("--tol", "1e-4"));
const name = path.basename(opt("--gguf"));
const failures = [];
const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

// Full next-token distributions after each of ids (a fresh sequence), as dense arrays.
async function distributions(sequence, ids) {
  await sequence.clearHistory();
  const out = await sequence.controlledEvaluate(ids.map((t) => [t, {generateNext: {probabilities: true}}]));
  return out.map((r) => {
    const p = new Float64Array(ref.vocab_size);
    for (const [token, prob] of r.next.probabilities) p[token] = prob;
    return p;
  });
}

async function checkProbabilities(sequence) {
  let maxDiff = 0, positions = 0;
  for (const s of ref.sequences) {
    const got = await distributions(sequence, s.ids);
    got.forEach((p, t) => p.forEach((x, v) => (maxDiff = Math.max(maxDiff, Math.abs(x - s.probs[t][v])))));
    positions += got.length;
  }
  console.log(`${name}: next-token probabilities at ${positions} positions of ${ref.sequences.length} test ` +
              `sequences: max |llama.cpp - lmx| = ${maxDiff.toExponential(2)} (tolerance ${tol})`);
  if (!(maxDiff <= tol)) failures.push(`probabilities differ by ${maxDiff}`);
}

async function checkGreedy(sequence) {
  const tokens = [...ref.greedy.prompt];
  const got = [];
  for (let i = 0; i < ref.greedy.tokens.length; ++i) {
    const p = (await distributions(sequence, tokens)).at(-1);
    const next = p.reduce((best, x, v) => (x > p[best] ? v : best), 0);
    got.push(next);
    tokens.push(next);
  }
  const ok = same(got, ref.greedy.tokens);
  const at = got.findIndex((t, i) => t !== ref.greedy.tokens[i]);
  console.log(`${name}: ${got.length} greedy tokens after a ${ref.greedy.prompt.length}-token prompt: ` +
              (ok ? "identical" : `differ from token ${at} (lmx's top-2 margin there ${ref.greedy.margins[at]})`));
  if (!ok) failures.push("greedy tokens differ");
}

function checkTokenizer(label, ids, text) {
  const ok = same(ids, ref.text.ids) && text === ref.text.text;
  console.log(`${label}: ${ref.text.ids.length} ids of a ${ref.text.text.length}-character test text: ` +
              (ok ? "same ids and text as lmx" : `differ (ids ${same(ids, ref.text.ids)}, text ${text === ref.text.text})`));
  if (!ok) failures.push(`${label} tokenizes differently`);
}

async function checkHf(dir) {
  const {Tokenizer} = require("@anush008/tokenizers");
  const tok = Tokenizer.fromFile(path.join(dir, "tokenizer.json"));
  const enc = await tok.encode(ref.text.text, null, {addSpecialTokens: false});
  const ids = enc.getIds();
  checkTokenizer(`${path.basename(dir)}/tokenizer.json (HF tokenizers)`, ids, await tok.decode(ids, true));
  const withBos = (await tok.encode(ref.text.text, null, {addSpecialTokens: true})).getIds();
  if (withBos[0] !== ref.bos || !same(withBos.slice(1), ids)) failures.push("tokenizer.json does not add <bos> first");
}

const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error, progressLogs: false});
const model = await llama.loadModel({modelPath: opt("--gguf"), gpuLayers: 0});
const context = await model.createContext({
  contextSize: Math.max(...ref.sequences.map((s) => s.ids.length), ref.greedy.prompt.length + ref.greedy.tokens.length),
  threads: 1,
  // llama.cpp's defaults are an F16 KV cache and, on the CPU, flash attention (F16 inside): each moves
  // probabilities by 1e-4..3e-4 on these models; F32 without flash attention agrees to ~1e-6.
  // (The types must be GgmlType values: a name string is silently ignored.)
  flashAttention: false, experimentalKvCacheKeyType: GgmlType.F32, experimentalKvCacheValueType: GgmlType.F32});
const sequence = context.getSequence();
await checkProbabilities(sequence);
await checkGreedy(sequence);
if (args.includes("--text"))
  checkTokenizer(`${name} (llama.cpp tokenizer)`, model.tokenize(ref.text.text, false),
                 model.detokenize(model.tokenize(ref.text.text, false), false));
if (opt("--hf")) await checkHf(opt("--hf"));
await context.dispose();
await model.dispose();
if (failures.length) {
  console.log(`${name}: FAILED: ${failures.join("; ")}`);
  process.exit(1);
}
