#!/usr/bin/env bash
# Greedy decode speed, lmx generate beside llama.cpp on the same model (docs/PERFORMANCE.md):
#   scripts/interop/speed.sh CKPT GGUF [PROMPT] [N] [ROUNDS] [LMX]
# CKPT: lmx's checkpoint, GGUF: `lmx export CKPT --gguf` of it; N tokens (default 400) after <bos> +
# PROMPT (default "the garden"), batch 1, 1 thread, KV cache, <eos> does not stop either side (lmx
# generate --ignore-eos; speed.mjs counts the <eos> it meets).
# lmx: its generate's own log line (the N - 1 tokens after the first, which carries the prompt);
# llama.cpp: its llama_perf "eval time" over the same N - 1 steps, and node-llama-cpp's JavaScript
# loop around it (scripts/interop/speed.mjs). ROUNDS (default 5) interleaved rounds; best (least
# time) and median. Paths may be relative to the working directory; the script says why it stops.
set -euo pipefail
trap 'echo "speed.sh: stopped at line $LINENO (exit $?): $BASH_COMMAND" >&2' ERR
root=$(cd "$(dirname "$0")/../.." && pwd)
if (($# < 2)); then
  echo "usage: scripts/interop/speed.sh CKPT GGUF [PROMPT] [N] [ROUNDS] [LMX]" >&2
  exit 2
fi
# Absolute before the cd below (node-llama-cpp is installed in scripts/interop).
ckpt=$(realpath -m "$1") gguf=$(realpath -m "$2") prompt=${3:-the garden} n=${4:-400} rounds=${5:-5}
lmx=$(realpath -m "${6:-$root/build/lmx}")
for f in "$ckpt" "$gguf"; do
  [[ -e "$f" ]] || { echo "speed.sh: $f: no such file" >&2; exit 2; }
done
[[ -x "$lmx" ]] || { echo "speed.sh: $lmx is not an executable lmx; build it or give its path as the 6th argument" >&2; exit 2; }
command -v node > /dev/null || { echo "speed.sh: node is not installed (apt-get install nodejs npm)" >&2; exit 2; }
cd "$root/scripts/interop"
if ! npm ls --depth=0 > /dev/null 2>&1; then
  echo "speed.sh: node-llama-cpp is not installed here: run scripts/interop/check.sh once (npm ci)" >&2
  exit 2
fi
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
lmx_tps=() cpp_tps=() loop_tps=()
for ((r = 0; r < rounds; ++r)); do
  out=$("$lmx" --threads 1 generate "$ckpt" --prompt "$prompt" --temperature 0 --max-new "$n" --ignore-eos 2>&1 >/dev/null) ||
    { echo "speed.sh: lmx generate failed: $out" >&2; exit 1; }
  grep -q "\[generate\] $((n - 1)) tokens after the first" <<< "$out" ||
    { echo "speed.sh: lmx generate did not make $n tokens (the model's max_seq_len may be shorter): $out" >&2; exit 1; }
  lmx_tps+=("$(sed -n 's/.* s: \([0-9.]*\) tokens\/s.*/\1/p' <<< "$out")")
  out=$(node speed.mjs "$gguf" "$prompt" "$n" 2>&1) || { echo "speed.sh: node speed.mjs failed: $out" >&2; exit 1; }
  grep -q '^node-loop' <<< "$out" || { echo "speed.sh: speed.mjs printed no node-loop line: $out" >&2; exit 1; }
  read -r _ tps count eos < <(grep '^node-loop' <<< "$out")
  [ "$count" = "$n" ] || echo "warning: llama.cpp generated $count tokens, not $n ($eos of them <eos>)"
  loop_tps+=("$tps")
  cpp_tps+=("$(grep ' eval time' <<< "$out" | grep -v prompt | sed 's/.*, *\([0-9.]*\) tokens per second.*/\1/')")
done
# best = the round of least time (max tokens/s), and the median
stats() { printf '%s\n' "$@" | sort -gr | awk '{ v[NR] = $1 } END { printf "best %.0f, median %.0f tokens/s", v[1], v[int((NR + 1) / 2)] }'; }
echo "lmx generate:              $(stats "${lmx_tps[@]}")  ($rounds interleaved rounds, $((n - 1)) tokens each)"
echo "llama.cpp (llama_perf):    $(stats "${cpp_tps[@]}")"
echo "node-llama-cpp's JS loop:  $(stats "${loop_tps[@]}")"
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
