// lmx train | eval | generate
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <iostream>
#include <sstream>

#include "cli/app.h"
#include "cli/common.h"
#include "config/config.h"
#include "data/baselines.h"
#include "data/corpus.h"
#include "data/tokenizer.h"
#include "dist/dist.h"
#include "model/checkpoint.h"
#include "model/memory.h"
#include "train/evaluate.h"
#include "train/summary.h"
#include "train/train_state.h"
#include "train/trainer.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/log.h"
#include "util/runtime.h"
#include "util/signals.h"

namespace fs = std::filesystem;

namespace lmx::cli {

namespace {

// train.json in a train output directory: what `lmx train --resume` needs to continue it.
struct TrainInvocation {
  Config config;  // as loaded (vocab_size may be auto)
  std::vector<uint64_t> seeds;
  std::string init_from;  // --init-from: checkpoint or HF Llama folder ("" = fresh init)
};

void write_invocation(const std::string& out, const TrainInvocation& inv) {
  nlohmann::ordered_json j;
  j["name"] = inv.config.name;
  j["source"] = inv.config.source;
  j["seeds"] = inv.seeds;
  j["threads"] = runtime::threads();
  j["config"] = to_yaml(inv.config);
  if (!inv.init_from.empty()) j["init_from"] = inv.init_from;
  write_file_atomic((fs::path(out) / "train.json").string(), j.dump(2) + "\n");
}

TrainInvocation read_invocation(const std::string& out) {
  const std::string path = (fs::path(out) / "train.json").string();
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(fmt::format("{}: cannot read: not an lmx train output directory", path),
                     "give the directory `lmx train` wrote (the one holding seed<k>/ and train.json)");
  std::stringstream ss;
  ss << in.rdbuf();
  TrainInvocation inv;
  try {
    auto j = nlohmann::json::parse(ss.str());
    inv.config = parse_config(j.at("config").get<std::string>(), path + " (config)");
    inv.config.name = j.at("name").get<std::string>();
    inv.config.source = j.at("source").get<std::string>();
    inv.seeds = j.at("seeds").get<std::vector<uint64_t>>();
    inv.init_from = j.value("init_from", std::string());
    const int threads = j.at("threads").get<int>();
    if (threads != runtime::threads())
      log::warn("train", "{}: the run used --threads {}, now {}: resumed results may differ in the last bits", path,
                threads, runtime::threads());
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: {}", path, e.what()), "the file is written by lmx train; do not edit it");
  }
  if (inv.seeds.empty()) throw InputError(fmt::format("{}: no seeds", path));
  return inv;
}

// The status and steps in a checkpoint's metadata (status "" when there is no readable checkpoint).
std::pair<std::string, std::string> checkpoint_status(const std::string& path) {
  if (!fs::exists(path)) return {};
  try {
    Checkpoint ck = read_checkpoint(path);
    auto it = ck.metadata.find("status");
    auto steps = ck.metadata.find("steps");
    if (it == ck.metadata.end()) return {};
    return {it->second, steps == ck.metadata.end() ? "" : steps->second};
  } catch (const InputError& e) {
    log::warn("train", "{}; the seed starts again", e.what());
    return {};
  }
}

// A seed is finished only when its result.csv is written and agrees with its checkpoint
// (status and steps): a kill during the final test evaluation leaves an older result.
bool result_matches(const std::string& result_csv, const std::string& status, const std::string& steps) {
  if (!fs::exists(result_csv)) return false;
  try {
    Table t = read_seed_rows(result_csv);
    const int st = column(t, "status"), sp = column(t, "steps");
    return t.rows.size() == 1 && st >= 0 && sp >= 0 && t.rows[0][st] == status && t.rows[0][sp] == steps;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

void add_train_commands(CLI::App& app, Globals& g) {
  // ---- train ----
  struct TrainArgs {
    std::string config;
    std::string seeds;
    int n_seeds = 1;
    std::vector<std::string> sets;
    std::string resume;
    std::string init_from;
    bool no_memory_check = false;
  };
  auto ta = std::make_shared<TrainArgs>();
  auto* train = app.add_subcommand("train", "Train a config with one or more seeds; writes metrics, checkpoints, summary.csv");
  train->add_option("config", ta->config, "config file (YAML)");
  train->add_option("--seeds", ta->seeds, "comma-separated seeds, e.g. 0,1,2 (each: init and data order)");
  train->add_option("--n-seeds", ta->n_seeds, "run seeds seed..seed+N-1 (default 1)")->check(Positive);
  train->add_option("--set", ta->sets, "override a field: section.key=value (repeatable)");
  train->add_option("--resume", ta->resume,
                    "continue an interrupted `lmx train` in this output directory (finished seeds are kept)");
  train->add_option("--init-from", ta->init_from,
                    "start from these weights instead of a fresh init: a model.safetensors or a Hugging Face Llama "
                    "folder (lmx export --hf); the config must build the same shapes");
  train->add_flag("--no-memory-check", ta->no_memory_check, "train even when the memory estimate exceeds MemAvailable");
  train->callback([&g, ta] {
    g.run = [&g, ta] {
      // Data-parallel when launched by torchrun / srun / lmx launch (docs/SCALING.md).
      const bool writer = dist::read_env().rank == 0;  // only rank 0 writes (the group connects below)
      if (!writer) log::set_level(log::Level::Warn);
      Config cfg;
      std::vector<uint64_t> seeds;
      std::string out, init_from = ta->init_from;
      const bool resume = !ta->resume.empty();
      if (resume) {
        if (!ta->config.empty() || !ta->sets.empty() || !ta->seeds.empty() || !ta->init_from.empty())
          throw InputError("--resume takes no config, --set, --seeds or --init-from: the run continues with its own",
                           "lmx train --resume RUN_DIR");
        if (!g.out.empty() && fs::path(g.out).lexically_normal() != fs::path(ta->resume).lexically_normal())
          throw InputError("--resume DIR and --out name different directories", "give only --resume DIR");
        out = ta->resume;
        TrainInvocation inv = read_invocation(out);
        cfg = inv.config;
        seeds = inv.seeds;
        init_from = inv.init_from;
      } else {
        if (ta->config.empty()) throw InputError("train needs a config file (or --resume RUN_DIR)", "lmx train configs/textbook.yaml");
        cfg = load_config(ta->config, ta->sets);
        seeds = parse_seeds(ta->seeds, ta->n_seeds, g.seed);
        out = g.out.empty() ? default_out_dir(cfg.name) : g.out;
      }
      if (g.device_given) cfg.train.device = g.device;
      dist::Group* group = dist::init_from_env(cfg.train.device);
      data::Corpus corpus = data::load_corpus(cfg.data);
      const Config resolved = resolve_for_corpus(cfg, corpus);
      if (group && resolved.train.batch_size < group->world())
        throw InputError(fmt::format("train.batch_size {} is smaller than the {} data-parallel processes",
                                     resolved.train.batch_size, group->world()),
                         "each rank needs at least one row of every global batch: raise train.batch_size");
      // Resource guard and output checks, before any model is allocated.
      if (!ta->no_memory_check) check_training_memory(resolved, available_memory_bytes());
      if (!init_from.empty()) {  // names and shapes checked before any output is written
        ModernLM probe(resolved.model);
        load_weights(*probe, read_checkpoint(init_from));
      }
      if (writer) {
        if (resume) {
          lock_out_dir(out);  // two `train --resume DIR` at once: the second gets exit 2
          check_writable(out);
          open_folder_log(out);
        } else {
          prepare_out_dir(out);
        }
        const double ckpt_bytes = 16.0 * static_cast<double>(estimate_training_memory(resolved).params);
        check_free_space(out, 2 * ckpt_bytes + 4e6, "checkpoints (weights and AdamW state, written atomically)");
        if (!resume) write_invocation(out, {cfg, seeds, init_from});
      }
      if (group) out = group->broadcast_string("train/out", out);  // rank 0's (timestamped) directory
      log::info("train", "{} -> {} (seeds {}{})", cfg.source, out, fmt::join(seeds, ","), resume ? ", resuming" : "");
      const double unigram_test = data::split_stats(corpus, data::Split::Test).unigram_ppl();
      signals::install();
      const bool tty = writer && isatty(STDERR_FILENO) && !log::quiet();
      Table rows;
      int code = 0;
      for (uint64_t seed : seeds) {
        const fs::path run_dir = fs::path(out) / fmt::format("seed{}", seed);
        const std::string result_csv = (run_dir / "result.csv").string();
        RunOptions ro{seed, run_dir.string(), tty};
        ro.check_memory = false;  // checked above, once for all seeds
        ro.init_from = init_from;
        // Fault injection for tests: LMX_FAULT_NAN_STEP=N poisons the loss at step N of every seed.
        if (const char* nan_step = std::getenv("LMX_FAULT_NAN_STEP")) ro.inject_nan_at_step = std::atoll(nan_step);
        if (resume) {
          const auto [status, steps] = checkpoint_status((run_dir / "model.safetensors").string());
          if (!resumable_status(status) && !status.empty() && result_matches(result_csv, status, steps)) {
            Table done = read_seed_rows(result_csv);
            if (rows.header.empty()) rows.header = done.header;
            for (auto& r : done.rows) rows.add(r);
            log::info("train", "seed {}: finished before ({}), kept", seed, status);
            continue;
          }
          ro.resume = !status.empty();  // interrupted: continue; finished without its result: finish
        }
        if (writer) fs::create_directories(run_dir);
        RunResult r = train_run(cfg, corpus, ro);
        r.unigram_test_ppl = unigram_test;
        Table one = seed_rows({{cfg.name, resolved, r}});
        if (writer) write_file_atomic(result_csv, one.csv());
        if (rows.header.empty()) rows.header = one.header;
        rows.add(one.rows.at(0));
        if (writer) write_file_atomic((fs::path(out) / "summary.csv").string(), with_aggregates(rows).csv());
        if (r.status == "interrupted") {
          code = 130;
          break;
        }
      }
      // Every seed diverged: the results are written, but nothing trained (exit 1, not 0).
      if (code == 0 && !rows.rows.empty()) {
        const int status = column(rows, "status");
        if (std::none_of(rows.rows.begin(), rows.rows.end(), [&](const auto& r) { return r[status] == "ok"; })) {
          log::warn("train", "no seed finished: every seed diverged (see the message column of summary.csv)");
          code = 1;
        }
      }
      if (group)
        log::info("dist", "rank 0 of {}: {:.2f} s in {} all-reduces (waiting for the other ranks included)",
                  group->world(), group->collective_seconds(), group->collectives());
      dist::shutdown();
      if (!writer) return code;
      write_file_atomic((fs::path(out) / "summary.csv").string(), with_aggregates(rows).csv());
      std::string md = summary_markdown(rows);
      write_file_atomic((fs::path(out) / "summary.md").string(), md);
      std::cout << md;
      if (code == 130) log::warn("train", "interrupted: continue with  lmx train --resume {}", out);
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
  eval->add_option("checkpoint", ea->ckpt, "model.safetensors written by lmx train, or a Hugging Face Llama folder")
      ->required();
  eval->add_option("--split", ea->split, "train, val or test (default test)");
  eval->add_option("--layout", ea->layout, "doc or packed (default: the training layout)");
  eval->add_option("--seq-len", ea->seq_len, "packed: row length (default: the training seq_len)")
      ->check(Positive);
  eval->add_option("--by-position", ea->by_position, "range starts for mean NLL by position, e.g. 0,64,128,256");
  eval->add_option("--csv", ea->csv, "also write the results as CSV");
  eval->callback([&g, ea] {
    g.run = [ea] {
      Checkpoint ck = read_checkpoint(ea->ckpt);
      ModernLM model = load_model(ck);
      data::Corpus corpus = data::load_corpus(ck.config.data);
      resolve_for_corpus(ck.config, corpus);  // the vocabulary fits the model (an HF folder may come from elsewhere)
      check_tokenizer(ck, corpus);
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
      for (const auto& range : r.ranges)  // a mean over no token is no number: refuse the range
        if (range.tokens == 0)
          throw InputError(fmt::format("--by-position {}: no {} target at positions {}{}", ea->by_position, ea->split,
                                       range.lo, range.hi < 0 ? " or later" : fmt::format("-{}", range.hi - 1)),
                           "give range starts that the split's rows reach (lmx data stats shows document lengths)");
      Table t;
      t.header = {"split", "layout", "tokens", "loss", "ppl", "true_nll", "true_ppl", "far_pronoun_acc",
                  "far_sites", "near_pronoun_acc", "near_sites"};
      t.add({ea->split, opt.layout == data::Layout::Packed ? "packed" : "doc", std::to_string(r.tokens),
             csv_num(r.loss), csv_num(r.ppl), csv_num(r.true_nll), csv_num(r.true_ppl), csv_num(r.far_acc), std::to_string(r.far_sites),
             csv_num(r.near_acc), std::to_string(r.near_sites)});
      std::cout << t.markdown();
      Table pos;
      pos.header = {"positions", "tokens", "nll", "true_nll"};
      for (const auto& range : r.ranges)
        pos.add({fmt::format("{}-{}", range.lo, range.hi < 0 ? std::string("end") : std::to_string(range.hi - 1)),
                 std::to_string(range.tokens), csv_num(range.nll), csv_num(range.true_nll)});
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
  gen->add_option("checkpoint", ga->ckpt, "model.safetensors, or a Hugging Face Llama folder")->required();
  gen->add_option("--prompt", ga->prompt, "prompt words (garden) or text; <bos> is prepended");
  gen->add_option("--max-new", ga->max_new, "tokens to generate (stops early at <eos>)")->check(Positive);
  gen->add_option("--temperature", ga->temperature, "sampling temperature; 0 = greedy")
      ->check(NonNegative);
  gen->add_option("--top-k", ga->top_k, "sample among the k most likely tokens; 0 = all")->check(NonNegative);
  gen->add_flag("--no-cache", ga->no_cache, "recompute the whole prefix at every step");
  gen->callback([&g, ga] {
    g.run = [&g, ga] {
      torch::NoGradGuard no_grad;
      Checkpoint ck = read_checkpoint(ga->ckpt);
      ModernLM model = load_model(ck);
      model->eval();
      data::Corpus corpus = data::load_corpus(ck.config.data);
      resolve_for_corpus(ck.config, corpus);
      check_tokenizer(ck, corpus);
      data::Doc tokens = {corpus.vocab.bos};
      if (!ga->prompt.empty()) {
        data::Doc p = corpus.vocab.encode(ga->prompt);
        tokens.insert(tokens.end(), p.begin(), p.end());
      }
      torch::manual_seed(g.seed >= 0 ? g.seed : 0);
      KVCache cache;
      const size_t prompt_len = tokens.size();
      auto first = std::chrono::steady_clock::now();  // set when the first token (with the prompt) is out
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
        if (i == 0) first = std::chrono::steady_clock::now();
        if (next == corpus.vocab.eos) break;
      }
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - first).count();
      if (const size_t n = tokens.size() - prompt_len; n > 1)  // scripts/interop/speed.sh reads this line
        log::info("generate", "{} tokens after the first in {:.4f} s: {:.1f} tokens/s", n - 1, seconds,
                  static_cast<double>(n - 1) / seconds);
      data::Doc prompt(tokens.begin(), tokens.begin() + prompt_len);
      data::Doc cont(tokens.begin() + prompt_len, tokens.end());
      std::cout << corpus.vocab.decode(prompt) << " | " << corpus.vocab.decode(cont) << "\n";
      return 0;
    };
  });
}

}  // namespace lmx::cli
