// lmx generate CHECKPOINT: a sampled (or greedy) continuation of a prompt, on the inference
// engine (infer/decoder.h) where it runs the model, else through the modules with the KV cache
// (--no-cache: recomputing the prefix at every token).
#include <fmt/format.h>
#include "torch_api.h"

#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>

#include "cli/app.h"
#include "cli/common.h"
#include "config/config.h"
#include "data/corpus.h"
#include "formats/checkpoint.h"
#include "infer/decoder.h"
#include "train/trainer.h"
#include "util/log.h"

namespace lmx::cli {

struct GenerateOptions {
  std::string ckpt, prompt;
  int max_new = 40, top_k = 0;
  double temperature = 1.0;
  bool no_cache = false;
  bool ignore_eos = false;
  bool module_path = false;
};

namespace {

// The next token from the last position's logits (V floats): greedy at temperature 0, else
// sampled among the top-k (all for 0).
int64_t next_token(const float* row, int64_t V, const GenerateOptions& o) {
  if (o.temperature == 0) return infer::argmax(row, V);
  auto logits = torch::from_blob(const_cast<float*>(row), {V}, torch::kFloat32) / o.temperature;
  if (o.top_k > 0 && o.top_k < logits.size(0)) {
    auto kth = std::get<0>(logits.topk(o.top_k)).min();
    logits = logits.masked_fill(logits < kth, -INFINITY);
  }
  return torch::multinomial(torch::softmax(logits, -1), 1).item<int64_t>();
}

// Appends up to o.max_new tokens to tokens (stops at <eos> unless --ignore-eos, and at the
// model's max_seq_len): on the inference engine (infer/decoder.h) where it runs the model, else
// (or with --module-path / --no-cache) through the modules, a KVCache or full recomputation.
// Returns the seconds after the first new token (which carries the prompt).
double continue_tokens(ModernLM& model, const GenerateOptions& o, int max_seq_len, int32_t eos, data::Doc& tokens) {
  const int64_t V = model->head_weight().size(0);
  std::unique_ptr<infer::Decoder> engine;
  if (!o.no_cache && !o.module_path) {
    if (const auto why = infer::Decoder::unsupported(model); why.empty())
      engine = std::make_unique<infer::Decoder>(
          model, std::min<int64_t>(max_seq_len, static_cast<int64_t>(tokens.size()) + o.max_new));
    else
      log::info("generate", "decoding through the modules: {}", why);
  }
  KVCache cache;
  torch::Tensor row;  // the module path's logits, kept alive while read
  auto first = std::chrono::steady_clock::now();  // set when the first token (with the prompt) is out
  for (int i = 0; i < o.max_new && static_cast<int>(tokens.size()) < max_seq_len; ++i) {
    const float* logits = nullptr;
    if (engine) {
      logits = i == 0 ? engine->prefill(std::vector<int64_t>(tokens.begin(), tokens.end())) : engine->step(tokens.back());
    } else {
      torch::Tensor input;
      if (o.no_cache || i == 0) {
        input = torch::tensor(std::vector<int64_t>(tokens.begin(), tokens.end())).unsqueeze(0);
        if (!o.no_cache) cache.clear();
      } else {
        input = torch::tensor({static_cast<int64_t>(tokens.back())}).unsqueeze(0);
      }
      row = model->forward(input, o.no_cache ? nullptr : &cache).select(1, -1).squeeze(0).contiguous();  // (V)
      logits = row.data_ptr<float>();
    }
    const int64_t next = next_token(logits, V, o);
    tokens.push_back(static_cast<int32_t>(next));
    if (i == 0) first = std::chrono::steady_clock::now();
    if (next == eos && !o.ignore_eos) break;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - first).count();
}

}  // namespace

int run_generate(const GenerateOptions& o, const Globals& g) {
  torch::NoGradGuard no_grad;
  Checkpoint ck = read_checkpoint(o.ckpt);
  ModernLM model = load_model(ck);
  model->eval();
  data::Corpus corpus = data::load_vocabulary(ck.config.data);  // no documents: a text run's text may be elsewhere
  resolve_for_corpus(ck.config, corpus);
  check_tokenizer(ck, corpus);
  data::Doc tokens = {corpus.vocab.bos};
  if (!o.prompt.empty()) {
    data::Doc p = corpus.vocab.encode(o.prompt);
    tokens.insert(tokens.end(), p.begin(), p.end());
  }
  torch::manual_seed(g.seed >= 0 ? g.seed : 0);
  const size_t prompt_len = tokens.size();
  const double seconds = continue_tokens(model, o, ck.config.model.max_seq_len, corpus.vocab.eos, tokens);
  if (const size_t n = tokens.size() - prompt_len; n > 1)  // scripts/interop/speed.sh reads this line
    log::info("generate", "{} tokens after the first in {:.4f} s: {:.1f} tokens/s", n - 1, seconds,
              static_cast<double>(n - 1) / seconds);
  // Where and why it stopped, when before --max-new tokens.
  if (const int n = static_cast<int>(tokens.size() - prompt_len); n < o.max_new) {
    if (n > 0 && tokens.back() == corpus.vocab.eos && !o.ignore_eos)
      log::info("generate", "stopped at <eos> after {} of --max-new {} tokens (--ignore-eos goes on past it)", n, o.max_new);
    else
      log::warn("generate", "stopped after {} of --max-new {} tokens: the context is full ({} tokens with the prompt's {}, "
                "the model's max_seq_len)", n, o.max_new, tokens.size(), prompt_len);
  }
  data::Doc prompt(tokens.begin(), tokens.begin() + prompt_len);
  data::Doc cont(tokens.begin() + prompt_len, tokens.end());
  std::cout << corpus.vocab.decode(prompt) << " | " << corpus.vocab.decode(cont) << "\n";
  return 0;
}

void add_generate_command(CLI::App& app, Globals& g) {
  auto o = std::make_shared<GenerateOptions>();
  auto* cmd = app.add_subcommand("generate", "Sample a continuation from a checkpoint (KV cache by default)");
  cmd->add_option("checkpoint", o->ckpt, "model.safetensors, or a Hugging Face Llama folder")->required();
  cmd->add_option("--prompt", o->prompt, "prompt words (garden) or text; <bos> is prepended");
  cmd->add_option("--max-new", o->max_new, "tokens to generate (stops early at <eos>, unless --ignore-eos)")
      ->check(Positive);
  cmd->add_option("--temperature", o->temperature, "sampling temperature; 0 = greedy")->check(NonNegative);
  cmd->add_option("--top-k", o->top_k, "sample among the k most likely tokens; 0 = all")->check(NonNegative);
  cmd->add_flag("--no-cache", o->no_cache, "recompute the whole prefix at every step");
  cmd->add_flag("--module-path", o->module_path,
                "decode through the model's modules with a KVCache (the reference the inference engine matches "
                "bit for bit) instead of the engine");
  cmd->add_flag("--ignore-eos", o->ignore_eos,
                "go on past <eos> to --max-new tokens (or max_seq_len), as llama.cpp's --ignore-eos: runs of "
                "equal length for speed comparisons");
  on_run(cmd, g, o, run_generate);
}

}  // namespace lmx::cli
