// lmx export --reference FILE: what lmx computes, as JSON, for engines we did not write to be
// compared with (scripts/interop/check.sh): for the first test-split documents (at most 64
// tokens each) the next-token probabilities at every position (float32 forward, softmax in
// float64), 64 greedy tokens after a prompt (argmax, <eos> not stopping: llama.cpp's side does
// the same), and a test text with its ids (encode, no <bos>) for tokenizers to be checked.
#pragma once
#include <string>

#include "data/corpus.h"
#include "formats/checkpoint.h"

namespace lmx::cli {

void write_export_reference(const Checkpoint& ckpt, const data::Corpus& corpus, const std::string& path);

}  // namespace lmx::cli
