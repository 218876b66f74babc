#!/usr/bin/env bash
# Greedy decode speed, lmx generate beside llama.cpp on the same model (docs/PERFORMANCE.md):
#   scripts/interop/speed.sh CKPT GGUF [PROMPT] [N] [ROUNDS] [LMX]
# CKPT: lmx's checkpoint, GGUF: `lmx export CKPT --gguf` of it; N tokens (default 400) after <bos> +
# PROMPT (default "the garden"), batch 1, 1 thread, KV cache, <eos> not met (speed.mjs counts it).
# lmx: its generate's own log line (the N - 1 tokens after the first, which carries the prompt);
# llama.cpp: its llama_perf "eval time" over the same N - 1 steps, and node-llama-cpp's JavaScript
# loop around it (scripts/interop/speed.mjs). ROUNDS (default 5) interleaved rounds; best (least
# time) and median.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
ckpt=$1 gguf=$2 prompt=${3:-the garden} n=${4:-400} rounds=${5:-5}
lmx=$(realpath -m "${6:-$root/build/lmx}")
cd "$root/scripts/interop"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
lmx_tps=() cpp_tps=() loop_tps=()
for ((r = 0; r < rounds; ++r)); do
  out=$("$lmx" --threads 1 generate "$ckpt" --prompt "$prompt" --temperature 0 --max-new "$n" 2>&1 >/dev/null)
  grep -q "\[generate\] $((n - 1)) tokens after the first" <<< "$out" ||
    { echo "lmx generate did not make $n tokens: $out" >&2; exit 1; }
  lmx_tps+=("$(sed -n 's/.* s: \([0-9.]*\) tokens\/s.*/\1/p' <<< "$out")")
  out=$(node speed.mjs "$gguf" "$prompt" "$n" 2>&1)
  read -r _ tps count eos < <(grep '^node-loop' <<< "$out")
  [ "$count" = "$n" ] && [ "$eos" = 0 ] || echo "warning: llama.cpp generated $count tokens, $eos of them <eos>"
  loop_tps+=("$tps")
  cpp_tps+=("$(grep ' eval time' <<< "$out" | grep -v prompt | sed 's/.*, *\([0-9.]*\) tokens per second.*/\1/')")
done
# best = the round of least time (max tokens/s), and the median
stats() { printf '%s\n' "$@" | sort -gr | awk '{ v[NR] = $1 } END { printf "best %.0f, median %.0f tokens/s", v[1], v[int((NR + 1) / 2)] }'; }
echo "lmx generate:              $(stats "${lmx_tps[@]}")  ($rounds interleaved rounds, $((n - 1)) tokens each)"
echo "llama.cpp (llama_perf):    $(stats "${cpp_tps[@]}")"
echo "node-llama-cpp's JS loop:  $(stats "${loop_tps[@]}")"
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
