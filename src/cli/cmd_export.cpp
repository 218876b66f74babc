// lmx export: a checkpoint as a Hugging Face Llama folder (formats/hf_llama.h) and / or a GGUF file
// for llama.cpp (formats/gguf.h); --reference writes what lmx itself computes, for
// scripts/interop/check.sh to compare the other engines with (cli/export_reference.h).
#include <fmt/format.h>

#include <filesystem>

#include "cli/app.h"
#include "cli/common.h"
#include "cli/export_reference.h"
#include "data/corpus.h"
#include "formats/checkpoint.h"
#include "formats/gguf.h"
#include "formats/hf_llama.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/log.h"

namespace lmx::cli {

struct ExportOptions {
  std::string checkpoint, hf, gguf, gguf_type = "f32", reference;
};

namespace {

// Everything that can refuse, checked before the first file is written.
void check_export(const ExportOptions& o, const Checkpoint& ck) {
  // GGUF takes what Hugging Face's Llama / Qwen 3 take, and Mixtral's experts
  for (const auto& [asked, format, blocker] :
       {std::tuple{!o.gguf.empty(), "GGUF", gguf_blocker(ck.config.model)},
        std::tuple{!o.hf.empty(), "Hugging Face Llama", hf_llama_blocker(ck.config.model)}})
    if (asked && !blocker.empty())
      throw InputError(fmt::format("{}: cannot export as {}: {}", ck.path, format, blocker),
                       "only pre-norm RMSNorm, SwiGLU, RoPE, MHA/GQA/MQA models without biases are Llama (Qwen 3 "
                       "with model.qk_norm; Mixtral with model.ffn moe, GGUF only)");
  std::error_code ec;
  if (!o.hf.empty() && std::filesystem::exists(o.hf, ec) && !std::filesystem::is_empty(o.hf, ec))
    throw InputError(fmt::format("{}: exists and is not empty", o.hf), "give a new or empty directory to --hf");
}

}  // namespace

int run_export(const ExportOptions& o, const Globals&) {
  if (o.hf.empty() && o.gguf.empty() && o.reference.empty())
    throw InputError("export: nothing to write", "give --hf DIR, --gguf FILE and / or --reference FILE");
  Checkpoint ck = read_checkpoint(o.checkpoint);
  // The documents only for --reference (its test-split probabilities); else the vocabulary alone.
  data::Corpus corpus = o.reference.empty() ? data::load_vocabulary(ck.config.data) : data::load_corpus(ck.config.data);
  ck.config = resolve_for_corpus(ck.config, corpus);  // the vocabulary fits the model
  check_tokenizer(ck, corpus);
  check_export(o, ck);
  const GgufVocab vocab = o.gguf.empty() ? GgufVocab{} : gguf_vocab(corpus.vocab);
  if (!o.gguf.empty()) {
    export_gguf(ck, vocab, o.gguf, o.gguf_type);
    log::info("export", "{} -> {} (GGUF, {})", o.checkpoint, o.gguf, o.gguf_type);
    if (vocab.spm_type == "unigram")
      log::warn("export", "{}: a SentencePiece unigram model: llama.cpp splits text by its BPE-style merge, so "
                "its ids for a text can differ from lmx's (by id the model is the same; a bpe tokenizer "
                "tokenizes identically)", o.gguf);
  }
  if (!o.hf.empty()) {
    export_hf_llama(ck, o.hf, &corpus.vocab);
    log::info("export", "{} -> {} (config.json, model.safetensors, tokenizer, generation_config.json)",
              o.checkpoint, o.hf);
  }
  if (!o.reference.empty()) {
    write_export_reference(ck, corpus, o.reference);
    log::info("export", "{} -> {} (lmx's reference probabilities)", o.checkpoint, o.reference);
  }
  return 0;
}

void add_export_command(CLI::App& app, Globals& g) {
  auto o = std::make_shared<ExportOptions>();
  auto* cmd = app.add_subcommand("export", "Write a checkpoint as a Hugging Face Llama folder and / or a GGUF file "
                                           "(llama.cpp)");
  cmd->add_option("checkpoint", o->checkpoint, "model.safetensors written by lmx train (or an HF Llama folder)")->required();
  cmd->add_option("--hf", o->hf, "output folder (new or empty) for LlamaForCausalLM, with its tokenizer");
  cmd->add_option("--gguf", o->gguf, "output GGUF v3 file (llama.cpp architecture llama), with the vocabulary");
  cmd->add_option("--gguf-type", o->gguf_type, "tensor type of the GGUF's weight matrices: f32 (default), f16, bf16");
  cmd->add_option("--reference", o->reference,
                  "write lmx's next-token probabilities on test-split documents, a greedy continuation and a "
                  "tokenized text as JSON (what scripts/interop/check.sh compares llama.cpp with)");
  on_run(cmd, g, o, run_export);
}

}  // namespace lmx::cli
