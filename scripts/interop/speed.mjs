// llama.cpp's greedy decode speed on a GGUF (scripts/interop/speed.sh runs it beside lmx generate):
//   node speed.mjs MODEL.gguf "PROMPT TEXT" N
// <bos> + the prompt's tokens, then N greedy tokens (<eos> does not stop), 1 thread, batch 1, the
// F32 KV cache without flash attention (check.mjs's settings). Prints "node-loop" with the tokens per
// second of the JavaScript loop from the first generated token to the N-th (model load and prompt
// excluded), the tokens generated and how many were <eos> (neither side stops at one: speed.sh runs
// lmx generate with --ignore-eos); then llama.cpp's own timings (llama_perf_context_print: "eval time" = the
// N - 1 decode steps after the prompt) among its info log lines.
import {getLlama, GgmlType, LlamaLogLevel} from "node-llama-cpp";

const [file, prompt, n] = [process.argv[2], process.argv[3], Number(process.argv[4])];
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.info, progressLogs: false});
const model = await llama.loadModel({modelPath: file, gpuLayers: 0});
const context = await model.createContext({contextSize: n + 64, threads: 1, flashAttention: false, performanceTracking: true,
  experimentalKvCacheKeyType: GgmlType.F32, experimentalKvCacheValueType: GgmlType.F32});
const sequence = context.getSequence();
const tokens = [model.tokens.bos, ...model.tokenize(prompt, false)];
let count = 0, eos = 0, t0 = 0n;
for await (const token of sequence.evaluate(tokens, {temperature: 0, yieldEogToken: true})) {
  if (++count === 1) t0 = process.hrtime.bigint();
  if (token === model.tokens.eos) ++eos;
  if (count === n) break;
}
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
console.log(`node-loop ${((n - 1) / seconds).toFixed(1)} ${count} ${eos}`);
await context.printTimings();  // llama.cpp's own llama_perf_context_print (info log level)
await context.dispose();
await model.dispose();
