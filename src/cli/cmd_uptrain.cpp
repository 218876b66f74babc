// lmx uptrain: MHA -> GQA / MQA conversion of a trained checkpoint (formats/convert.h),
// evaluated right after conversion and after each continued-training length, next to the
// same GQA / MQA models trained from scratch with the checkpoint's full budget.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include "torch_api.h"
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <numeric>

#include "cli/app.h"
#include "cli/common.h"
#include "config/config.h"
#include "data/corpus.h"
#include "data/metrics.h"
#include "formats/checkpoint.h"
#include "formats/convert.h"
#include "train/evaluate.h"
#include "train/trainer.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/log.h"
#include "util/progress.h"
#include "util/signals.h"

namespace fs = std::filesystem;

namespace lmx::cli {

struct UptrainOptions {
  std::string checkpoint, kv_heads = "2,1", inits = "mean,first,random", steps, seeds;
  std::vector<std::string> sets;
  bool no_scratch = false;
};

namespace {

EvalResult test_eval(ModernLM& model, const data::Corpus& corpus, const Config& cfg) {
  return evaluate(model, corpus, eval_options(cfg, data::Split::Test));
}

// Optimizer steps of the checkpoint's training run: its "steps" metadata, else the config's.
int64_t original_budget(const Checkpoint& ck, const data::Corpus& corpus) {
  auto it = ck.metadata.find("steps");
  if (it != ck.metadata.end()) {
    try {
      return std::stoll(it->second);
    } catch (const std::exception&) {
    }
  }
  return planned_steps(ck.config, corpus);
}

// The continued-training lengths: --steps, else 5% and 20% of the checkpoint's budget.
std::vector<int> uptrain_lengths(const UptrainOptions& o, int64_t budget) {
  std::vector<int> steps = o.steps.empty() ? std::vector<int>{static_cast<int>(std::max<int64_t>(1, budget / 20)),
                                                             static_cast<int>(std::max<int64_t>(1, budget / 5))}
                                           : parse_int_list("--steps", o.steps);
  if (steps.empty() || *std::min_element(steps.begin(), steps.end()) < 1)
    throw InputError(fmt::format("--steps {}: every length must be >= 1", o.steps), "e.g. --steps 50,200");
  return steps;
}

// One uptrain invocation: the checkpoint, the config it trains with, the corpus, and the
// table uptrain.csv receives row by row.
struct Uptrain {
  const UptrainOptions& o;
  const Checkpoint& ck;
  const Config& base;
  const data::Corpus& corpus;
  std::string out;
  bool tty = false;
  Table table;
  RunProgress* progress = nullptr;  // training runs done / total, weighted by their steps
  std::vector<data::MetricColumn> headline;  // the corpus's headline metric columns (data/metrics.h)

  // One row of the table, written to uptrain.csv at once.
  void add(int k, const std::string& init, const std::string& steps_label, const std::string& seed,
           const EvalResult& e, int64_t params, RunStatus status) {
    std::vector<std::string> cells = {std::to_string(k), init, steps_label, seed, fmt::format("{:.4f}", e.loss),
                                      fmt::format("{:.4f}", e.ppl)};
    for (const auto& m : headline) cells.push_back(csv_num(e.metrics.get(m.name), m.short_decimals));
    for (auto cell : {std::to_string(params), std::to_string(2 * k * base.model.dim_head()), status_name(status)}) cells.push_back(cell);
    table.add(cells);
    write_file_atomic((fs::path(out) / "uptrain.csv").string(), table.csv());
  }

  RunResult train(const Config& cfg, uint64_t seed, const std::string& dir, const std::string& init_from) const {
    fs::create_directories(dir);
    RunOptions ro{seed, dir, tty};
    ro.init_from = init_from;
    RunResult r = train_run(cfg, corpus, ro);
    const std::string times = progress->ended(cfg.train.steps);
    log::info("uptrain", "{} {} ({} steps): {}; {}", progress->counter(), fs::path(dir).lexically_relative(out).string(),
              cfg.train.steps, status_name(r.status), times);
    return r;
  }
};

// Converted to k KV heads by init: evaluated as converted, then after each training length.
void uptrain_converted(Uptrain& u, int k, const std::string& init, uint64_t seed, const std::vector<int>& steps) {
  torch::manual_seed(seed);  // the random init
  ModernLM converted = convert_kv_heads(u.ck, k, init);
  Config cfg = u.base;
  cfg.model.n_kv_heads = k;
  const std::string dir = (fs::path(u.out) / fmt::format("kv{}-{}-s{}", k, init, seed)).string();
  fs::create_directories(dir);
  const std::string conv_path = (fs::path(dir) / "converted.safetensors").string();
  save_checkpoint(conv_path, converted, cfg, {}, {{"converted_from", u.o.checkpoint}, {"init", init}});
  u.add(k, init, "0", std::to_string(seed), test_eval(converted, u.corpus, cfg), count_parameters(converted), RunStatus::Ok);
  for (int n : steps) {
    Config c = cfg;
    c.train.steps = n;
    c.train.warmup_steps = std::min(c.train.warmup_steps, std::max(1, n / 5));
    c.train.eval_every = 0;
    RunResult r = u.train(c, seed, (fs::path(dir) / fmt::format("steps{}", n)).string(), conv_path);
    u.add(k, init, std::to_string(n), std::to_string(seed), r.test, r.params, r.status);
    if (r.status == RunStatus::Interrupted) break;
  }
}

// The same k KV heads trained from scratch with the checkpoint's whole budget.
void uptrain_scratch(Uptrain& u, int k, uint64_t seed, int64_t budget) {
  Config c = u.base;
  c.model.n_kv_heads = k;
  c.train.steps = static_cast<int>(budget);
  RunResult r = u.train(c, seed, (fs::path(u.out) / fmt::format("kv{}-scratch-s{}", k, seed)).string(), "");
  u.add(k, "scratch", std::to_string(budget), std::to_string(seed), r.test, r.params, r.status);
}

}  // namespace

int run_uptrain(const UptrainOptions& o, const Globals& g) {
  Checkpoint ck = read_checkpoint(o.checkpoint);
  Config base = ck.config;
  for (const auto& kv : o.sets) apply_override(base, kv);
  validate(base);
  const auto kv_heads = parse_int_list("--kv-heads", o.kv_heads);
  const auto inits = parse_list(o.inits);
  const auto seeds = parse_seeds(o.seeds, 1, g.seed);
  // Validate every conversion before anything trains.
  for (int k : kv_heads)
    for (const auto& init : inits) check_kv_conversion(ck, k, init);

  data::Corpus corpus = data::load_corpus(base.data);
  const int64_t budget = original_budget(ck, corpus);
  const std::vector<int> steps = uptrain_lengths(o, budget);
  Uptrain u{o, ck, base, corpus, g.out.empty() ? default_out_dir("uptrain") : g.out, false, {}, nullptr, {}};
  const double per_conversion = std::accumulate(steps.begin(), steps.end(), 0.0);
  const size_t conversions = kv_heads.size() * inits.size() * seeds.size();
  const size_t scratch_runs = o.no_scratch ? 0 : kv_heads.size() * seeds.size();
  RunProgress progress(static_cast<int>(conversions * steps.size() + scratch_runs),
                       conversions * per_conversion + scratch_runs * static_cast<double>(budget));
  u.progress = &progress;
  prepare_out_dir(u.out);
  signals::install();
  u.tty = isatty(STDERR_FILENO) && !log::quiet();
  log::info("uptrain", "{}: {} KV heads, trained {} steps; continuing for {} steps", o.checkpoint,
            base.model.kv_heads(), budget, fmt::join(steps, ", "));
  u.table.header = {"kv_heads", "init", "steps", "seed", "test_loss", "test_ppl"};
  if (corpus.metric)
    for (const auto& m : corpus.metric->columns())
      if (m.tables & data::kHeadline) u.headline.push_back(m), u.table.header.push_back(m.short_name);
  for (auto name : {"params", "kv_per_token_layer", "status"}) u.table.header.push_back(name);
  {
    ModernLM source = load_model(ck);
    u.add(base.model.kv_heads(), "source", std::to_string(budget), "", test_eval(source, corpus, base),
          count_parameters(source), RunStatus::Ok);
  }
  for (int k : kv_heads) {
    for (const auto& init : inits)
      for (uint64_t seed : seeds) {
        if (signals::interrupted()) break;
        uptrain_converted(u, k, init, seed, steps);
      }
    if (o.no_scratch) continue;
    for (uint64_t seed : seeds) {
      if (signals::interrupted()) break;
      uptrain_scratch(u, k, seed, budget);
    }
  }
  write_file_atomic((fs::path(u.out) / "uptrain.md").string(), u.table.markdown());
  std::cout << u.table.markdown();
  log::info("uptrain", "results in {}", u.out);
  return signals::interrupted() ? 130 : 0;
}

void add_uptrain_command(CLI::App& app, Globals& g) {
  auto o = std::make_shared<UptrainOptions>();
  auto* cmd = app.add_subcommand(
      "uptrain", "Convert a trained MHA checkpoint to GQA/MQA, continue training, compare with from-scratch runs");
  cmd->add_option("checkpoint", o->checkpoint, "trained MHA checkpoint (a run's model.safetensors)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--kv-heads", o->kv_heads, "comma-separated KV-head counts to convert to (default 2,1)");
  cmd->add_option("--init", o->inits, "comma-separated K/V initializations: mean, first, random (default all)");
  cmd->add_option("--steps", o->steps,
                  "comma-separated continued-training lengths in steps (default: 5% and 20% of the "
                  "checkpoint's budget)");
  add_seeds_option(cmd, o->seeds, "comma-separated seeds for continued and from-scratch training (default 0)");
  add_set_option(cmd, o->sets, "override a field of the checkpoint's config for training (repeatable)");
  cmd->add_flag("--no-scratch", o->no_scratch, "skip the from-scratch GQA/MQA runs");
  on_run(cmd, g, o, run_uptrain);
}

}  // namespace lmx::cli
