// lmx generate CHECKPOINT: a sampled (or greedy) continuation of a prompt, with the KV cache
// unless --no-cache.
#include <fmt/format.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <iostream>

#include "cli/app.h"
#include "cli/common.h"
#include "config/config.h"
#include "data/corpus.h"
#include "formats/checkpoint.h"
#include "train/trainer.h"
#include "util/log.h"

namespace lmx::cli {

struct GenerateOptions {
  std::string ckpt, prompt;
  int max_new = 40, top_k = 0;
  double temperature = 1.0;
  bool no_cache = false;
  bool ignore_eos = false;
};

namespace {

// The next token from the last position's logits (V): greedy at temperature 0, else sampled
// among the top-k (all for 0).
int64_t next_token(torch::Tensor logits, const GenerateOptions& o) {
  if (o.temperature == 0) return logits.argmax().item<int64_t>();
  logits = logits / o.temperature;
  if (o.top_k > 0 && o.top_k < logits.size(0)) {
    auto kth = std::get<0>(logits.topk(o.top_k)).min();
    logits = logits.masked_fill(logits < kth, -INFINITY);
  }
  return torch::multinomial(torch::softmax(logits, -1), 1).item<int64_t>();
}

// Appends up to o.max_new tokens to tokens (stops at <eos> unless --ignore-eos, and at the
// model's max_seq_len).
// Returns the seconds after the first new token (which carries the prompt).
double continue_tokens(ModernLM& model, const GenerateOptions& o, int max_seq_len, int32_t eos, data::Doc& tokens) {
  KVCache cache;
  auto first = std::chrono::steady_clock::now();  // set when the first token (with the prompt) is out
  for (int i = 0; i < o.max_new && static_cast<int>(tokens.size()) < max_seq_len; ++i) {
    torch::Tensor input;
    if (o.no_cache || i == 0) {
      input = torch::tensor(std::vector<int64_t>(tokens.begin(), tokens.end())).unsqueeze(0);
      if (!o.no_cache) cache.clear();
    } else {
      input = torch::tensor({static_cast<int64_t>(tokens.back())}).unsqueeze(0);
    }
    auto logits = model->forward(input, o.no_cache ? nullptr : &cache).select(1, -1).squeeze(0);  // (V)
    const int64_t next = next_token(logits, o);
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
  cmd->add_flag("--ignore-eos", o->ignore_eos,
                "go on past <eos> to --max-new tokens (or max_seq_len), as llama.cpp's --ignore-eos: runs of "
                "equal length for speed comparisons");
  on_run(cmd, g, o, run_generate);
}

}  // namespace lmx::cli
