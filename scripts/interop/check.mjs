// Compares engines we did not write with lmx (scripts/interop/check.sh runs this):
//   node check.mjs --ref REF.json --gguf MODEL.gguf [--text] [--hf DIR] [--tol 1e-4] [--control]
// REF.json is `lmx export --reference`: lmx's next-token probabilities on test-split sequences,
// 64 greedy tokens after a prompt, a test text and its ids. llama.cpp (node-llama-cpp's prebuilt
// CPU binaries, F32 KV cache, no flash attention) evaluates the same ids from the GGUF; --text also checks that
// llama.cpp tokenizes and detokenizes the text as lmx does; --hf checks DIR/tokenizer.json with
// Hugging Face's Rust tokenizers library (@anush008/tokenizers). --control: a negative control,
// the same GGUF with its q/k rows put back in lmx's half RoPE layout (no permutation) must differ
// by more than 1e-2 (the check can see a wrong layout). Exit 1 on any disagreement.
import fs from "node:fs";
import path from "node:path";
import {createRequire} from "node:module";
import os from "node:os";
import {getLlama, GgmlType, LlamaLogLevel, readGgufFileInfo} from "node-llama-cpp";

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

// The largest |p_llama.cpp - p_lmx| over every position of the reference sequences.
async function maxDifference(sequence) {
  let maxDiff = 0, positions = 0;
  for (const s of ref.sequences) {
    const got = await distributions(sequence, s.ids);
    got.forEach((p, t) => p.forEach((x, v) => (maxDiff = Math.max(maxDiff, Math.abs(x - s.probs[t][v])))));
    positions += got.length;
  }
  return {maxDiff, positions};
}

// A context as the comparison needs it: 1 thread, F32 KV cache, no flash attention.
function createContext(model, contextSize) {
  // llama.cpp's defaults are an F16 KV cache and, on the CPU, flash attention (F16 inside): each moves
  // probabilities by 1e-4..3e-4 on these models; F32 without flash attention agrees to ~1e-6.
  // (The types must be GgmlType values: a name string is silently ignored.)
  return model.createContext({contextSize, threads: 1, flashAttention: false,
    experimentalKvCacheKeyType: GgmlType.F32, experimentalKvCacheValueType: GgmlType.F32});
}

async function checkProbabilities(sequence) {
  const {maxDiff, positions} = await maxDifference(sequence);
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

// A copy of the GGUF whose attn_q / attn_k rows are un-permuted (interleaved pairs back to halves).
async function unpermuted(file) {
  const info = await readGgufFileInfo(file, {readTensorInfo: true});
  const buf = fs.readFileSync(file);
  const D = info.metadata.llama.rope.dimension_count;
  for (const t of info.fullTensorInfo.filter((t) => /attn_[qk]\.weight$/.test(t.name))) {
    const [C, rows] = t.dimensions.map(Number), at = Number(t.fileOffset);
    const rowsIn = Buffer.from(buf.subarray(at, at + rows * C * 4));
    for (let r = 0; r < rows; ++r) {  // row (h, 2i + b) -> (h, b·D/2 + i)
      const to = Math.floor(r / D) * D + ((r % D) % 2) * (D / 2) + Math.floor((r % D) / 2);
      rowsIn.copy(buf, at + to * C * 4, r * C * 4, (r + 1) * C * 4);
    }
  }
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "lmx-control-")), "unpermuted.gguf");
  fs.writeFileSync(out, buf);
  return out;
}

const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error, progressLogs: false});
const model = await llama.loadModel({modelPath: opt("--gguf"), gpuLayers: 0});
const contextSize = Math.max(...ref.sequences.map((s) => s.ids.length), ref.greedy.prompt.length + ref.greedy.tokens.length);
const context = await createContext(model, contextSize);
const sequence = context.getSequence();
await checkProbabilities(sequence);
await checkGreedy(sequence);
if (args.includes("--text"))
  checkTokenizer(`${name} (llama.cpp tokenizer)`, model.tokenize(ref.text.text, false),
                 model.detokenize(model.tokenize(ref.text.text, false), false));
if (opt("--hf")) await checkHf(opt("--hf"));
await context.dispose();
await model.dispose();
if (args.includes("--control")) {
  const file = await unpermuted(opt("--gguf"));
  const wrong = await llama.loadModel({modelPath: file, gpuLayers: 0});
  const wrongContext = await createContext(wrong, contextSize);
  const diff = (await maxDifference(wrongContext.getSequence())).maxDiff;
  await wrongContext.dispose();
  await wrong.dispose();
  fs.rmSync(path.dirname(file), {recursive: true});
  console.log(`${name} with q/k rows not permuted (negative control): max |llama.cpp - lmx| = ` +
              `${diff.toExponential(2)} (must be > 1e-2)`);
  if (!(diff > 1e-2)) failures.push("the negative control agrees: the check cannot see the RoPE layout");
}
if (failures.length) {
  console.log(`${name}: FAILED: ${failures.join("; ")}`);
  process.exit(1);
}
