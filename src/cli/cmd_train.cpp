// lmx train | eval | generate
#include <fmt/format.h>
#include <torch/torch.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/app.h"
#include "cli/common.h"
#include "config/config.h"
#include "data/baselines.h"
#include "data/corpus.h"
#include "model/checkpoint.h"
#include "train/evaluate.h"
#include "train/summary.h"
#include "train/trainer.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/log.h"
#include "util/signals.h"

namespace fs = std::filesystem;

namespace lmx::cli {

namespace {

std::string num(double v, int d = 4) { return std::isnan(v) ? "" : fmt::format("{:.{}f}", v, d); }

}  // namespace

void add_train_commands(CLI::App& app, Globals& g) {
  // ---- train ----
  struct TrainArgs {
    std::string config;
    std::string seeds;
    int n_seeds = 1;
    std::vector<std::string> sets;
  };
  auto ta = std::make_shared<TrainArgs>();
  auto* train = app.add_subcommand("train", "Train a config with one or more seeds; writes metrics, checkpoints, summary.csv");
  train->add_option("config", ta->config, "config file (YAML)")->required();
  train->add_option("--seeds", ta->seeds, "comma-separated seeds, e.g. 0,1,2 (each: init and data order)");
  train->add_option("--n-seeds", ta->n_seeds, "run seeds seed..seed+N-1 (default 1)")->check(CLI::PositiveNumber);
  train->add_option("--set", ta->sets, "override a field: section.key=value (repeatable)");
  train->callback([&g, ta] {
    g.run = [&g, ta] {
      Config cfg = load_config(ta->config, ta->sets);
      if (g.device_given) cfg.train.device = g.device;
      auto seeds = parse_seeds(ta->seeds, ta->n_seeds, g.seed);
      std::string out = g.out.empty() ? default_out_dir(cfg.name) : g.out;
      prepare_out_dir(out);
      log::info("train", "{} -> {} (seeds {})", cfg.source, out, fmt::join(seeds, ","));
      data::Corpus corpus = data::load_corpus(cfg.data);
      const double unigram_test = data::split_stats(corpus, data::Split::Test).unigram_ppl();
      signals::install();
      const bool tty = isatty(STDERR_FILENO) && !log::quiet();
      std::vector<SummaryRow> rows;
      int code = 0;
      for (uint64_t seed : seeds) {
        std::string run_dir = (fs::path(out) / fmt::format("seed{}", seed)).string();
        fs::create_directories(run_dir);
        RunResult r = train_run(cfg, corpus, RunOptions{seed, run_dir, tty});
        r.unigram_test_ppl = unigram_test;
        rows.push_back({cfg.name, resolve_for_corpus(cfg, corpus), r});
        write_file_atomic((fs::path(out) / "summary.csv").string(), with_aggregates(seed_rows(rows)).csv());
        if (r.status == "interrupted") {
          code = 130;
          break;
        }
      }
      std::string md = summary_markdown(seed_rows(rows));
      write_file_atomic((fs::path(out) / "summary.md").string(), md);
      std::cout << md;
      log::info("train", "results in {}", out);
      return code;
    };
  });

  // ---- eval ----
  struct EvalArgs {
    std::string ckpt, split = "test", layout, by_position, csv;
    int seq_len = 0;
  };
  auto ea = std::make_shared<EvalArgs>();
  auto* eval = app.add_subcommand("eval", "Evaluate a checkpoint: loss, perplexity, true perplexity, pronoun accuracy");
  eval->add_option("checkpoint", ea->ckpt, "model.safetensors written by lmx train")->required();
  eval->add_option("--split", ea->split, "val or test (default test)");
  eval->add_option("--layout", ea->layout, "doc or packed (default: the training layout)");
  eval->add_option("--seq-len", ea->seq_len, "packed: row length (default: the training seq_len)");
  eval->add_option("--by-position", ea->by_position, "range starts for mean NLL by position, e.g. 0,64,128,256");
  eval->add_option("--csv", ea->csv, "also write the results as CSV");
  eval->callback([&g, ea] {
    g.run = [ea] {
      Checkpoint ck = read_checkpoint(ea->ckpt);
      ModernLM model = load_model(ck);
      data::Corpus corpus = data::load_corpus(ck.config.data);
      EvalOptions opt;
      opt.split = data::parse_split(ea->split);
      opt.layout = data::parse_layout(ea->layout.empty() ? ck.config.data.layout : ea->layout);
      opt.seq_len = opt.layout == data::Layout::Packed ? (ea->seq_len > 0 ? ea->seq_len : ck.config.data.seq_len) : 0;
      opt.pronoun_window = ck.config.data.pronoun_window;
      if (opt.seq_len > ck.config.model.max_seq_len)
        throw InputError(fmt::format("--seq-len {} exceeds the model's max_seq_len {}", opt.seq_len,
                                     ck.config.model.max_seq_len));
      if (!ea->by_position.empty()) opt.by_position = parse_int_list("--by-position", ea->by_position);
      EvalResult r = evaluate(model, corpus, opt);
      Table t;
      t.header = {"split", "layout", "tokens", "loss", "ppl", "true_nll", "true_ppl", "far_pronoun_acc",
                  "far_sites", "near_pronoun_acc", "near_sites"};
      t.add({ea->split, opt.layout == data::Layout::Packed ? "packed" : "doc", std::to_string(r.tokens),
             num(r.loss), num(r.ppl), num(r.true_nll), num(r.true_ppl), num(r.far_acc), std::to_string(r.far_sites),
             num(r.near_acc), std::to_string(r.near_sites)});
      std::cout << t.markdown();
      Table pos;
      pos.header = {"positions", "tokens", "nll", "true_nll"};
      for (const auto& range : r.ranges)
        pos.add({fmt::format("{}-{}", range.lo, range.hi < 0 ? std::string("end") : std::to_string(range.hi - 1)),
                 std::to_string(range.tokens), num(range.nll), num(range.true_nll)});
      if (!r.ranges.empty()) std::cout << "\n" << pos.markdown();
      if (!ea->csv.empty()) write_file_atomic(ea->csv, t.csv() + (r.ranges.empty() ? "" : "\n" + pos.csv()));
      return 0;
    };
  });

  // ---- generate ----
  struct GenArgs {
    std::string ckpt, prompt;
    int max_new = 40, top_k = 0;
    double temperature = 1.0;
    bool no_cache = false;
  };
  auto ga = std::make_shared<GenArgs>();
  auto* gen = app.add_subcommand("generate", "Sample a continuation from a checkpoint (KV cache by default)");
  gen->add_option("checkpoint", ga->ckpt, "model.safetensors")->required();
  gen->add_option("--prompt", ga->prompt, "prompt words (garden) or text; <bos> is prepended");
  gen->add_option("--max-new", ga->max_new, "tokens to generate (stops early at <eos>)")->check(CLI::PositiveNumber);
  gen->add_option("--temperature", ga->temperature, "sampling temperature; 0 = greedy")->check(CLI::NonNegativeNumber);
  gen->add_option("--top-k", ga->top_k, "sample among the k most likely tokens; 0 = all")->check(CLI::NonNegativeNumber);
  gen->add_flag("--no-cache", ga->no_cache, "recompute the whole prefix at every step");
  gen->callback([&g, ga] {
    g.run = [&g, ga] {
      torch::NoGradGuard no_grad;
      Checkpoint ck = read_checkpoint(ga->ckpt);
      ModernLM model = load_model(ck);
      model->eval();
      data::Corpus corpus = data::load_corpus(ck.config.data);
      data::Doc tokens = {corpus.vocab.bos};
      if (!ga->prompt.empty()) {
        data::Doc p = corpus.vocab.encode(ga->prompt);
        tokens.insert(tokens.end(), p.begin(), p.end());
      }
      torch::manual_seed(g.seed >= 0 ? g.seed : 0);
      KVCache cache;
      const size_t prompt_len = tokens.size();
      for (int i = 0; i < ga->max_new && static_cast<int>(tokens.size()) < ck.config.model.max_seq_len; ++i) {
        torch::Tensor input;
        if (ga->no_cache || i == 0) {
          input = torch::tensor(std::vector<int64_t>(tokens.begin(), tokens.end())).unsqueeze(0);
          if (!ga->no_cache) cache.clear();
        } else {
          input = torch::tensor({static_cast<int64_t>(tokens.back())}).unsqueeze(0);
        }
        auto logits = model->forward(input, ga->no_cache ? nullptr : &cache).select(1, -1).squeeze(0);  // (V)
        int64_t next;
        if (ga->temperature == 0) {
          next = logits.argmax().item<int64_t>();
        } else {
          logits = logits / ga->temperature;
          if (ga->top_k > 0 && ga->top_k < logits.size(0)) {
            auto kth = std::get<0>(logits.topk(ga->top_k)).min();
            logits = logits.masked_fill(logits < kth, -INFINITY);
          }
          next = torch::multinomial(torch::softmax(logits, -1), 1).item<int64_t>();
        }
        tokens.push_back(static_cast<int32_t>(next));
        if (next == corpus.vocab.eos) break;
      }
      data::Doc prompt(tokens.begin(), tokens.begin() + prompt_len);
      data::Doc cont(tokens.begin() + prompt_len, tokens.end());
      std::cout << corpus.vocab.decode(prompt) << " | " << corpus.vocab.decode(cont) << "\n";
      return 0;
    };
  });
}

}  // namespace lmx::cli
