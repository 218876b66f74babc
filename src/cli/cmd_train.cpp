// lmx train: a config with one or more seeds (data-parallel under lmx launch / torchrun / srun),
// continued after an interruption with --resume.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>
#include <unistd.h>

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
#include "formats/checkpoint.h"
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

struct TrainOptions {
  std::string config;
  std::string seeds;
  int n_seeds = 1;
  std::vector<std::string> sets;
  std::string resume;
  std::string init_from;
  bool no_memory_check = false;
};

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

// What one `lmx train` runs: from the command line, or from train.json with --resume.
struct TrainPlan {
  Config cfg;  // as loaded (vocab_size may be auto)
  std::vector<uint64_t> seeds;
  std::string out;
  std::string init_from;
  bool resume = false;
};

// --resume DIR: the run's own config, seeds and initial weights from its train.json.
TrainPlan resumed_plan(const TrainOptions& o, const Globals& g) {
  if (!o.config.empty() || !o.sets.empty() || !o.seeds.empty() || !o.init_from.empty())
    throw InputError("--resume takes no config, --set, --seeds or --init-from: the run continues with its own",
                     "lmx train --resume RUN_DIR");
  if (!g.out.empty() && fs::path(g.out).lexically_normal() != fs::path(o.resume).lexically_normal())
    throw InputError("--resume DIR and --out name different directories", "give only --resume DIR");
  TrainInvocation inv = read_invocation(o.resume);
  return {inv.config, inv.seeds, o.resume, inv.init_from, true};
}

TrainPlan fresh_plan(const TrainOptions& o, const Globals& g) {
  if (o.config.empty()) throw InputError("train needs a config file (or --resume RUN_DIR)", "lmx train configs/textbook.yaml");
  TrainPlan plan;
  plan.cfg = load_config(o.config, o.sets);
  plan.seeds = parse_seeds(o.seeds, o.n_seeds, g.seed);
  plan.out = g.out.empty() ? default_out_dir(plan.cfg.name) : g.out;
  plan.init_from = o.init_from;
  return plan;
}

// Resource guard and initial-weight checks, before any model is allocated or output written.
void check_before_training(const TrainPlan& plan, const Config& resolved, const dist::Group* group,
                           bool memory_check) {
  if (group && resolved.train.batch_size < group->world())
    throw InputError(fmt::format("train.batch_size {} is smaller than the {} data-parallel processes",
                                 resolved.train.batch_size, group->world()),
                     "each rank needs at least one row of every global batch: raise train.batch_size");
  if (memory_check) check_training_memory(resolved, available_memory_bytes());
  if (!plan.init_from.empty()) {  // names and shapes checked before any output is written
    ModernLM probe(resolved.model);
    load_weights(*probe, read_checkpoint(plan.init_from));
  }
}

// Rank 0's output folder: locked (resume) or fresh, room for the checkpoints, train.json.
void prepare_train_out(const TrainPlan& plan, const Config& resolved) {
  if (plan.resume) {
    lock_out_dir(plan.out);  // two `train --resume DIR` at once: the second gets exit 2
    check_writable(plan.out);
    open_folder_log(plan.out);
  } else {
    prepare_out_dir(plan.out);
  }
  const double ckpt_bytes = 16.0 * static_cast<double>(estimate_training_memory(resolved).params);
  check_free_space(plan.out, 2 * ckpt_bytes + 4e6, "checkpoints (weights and AdamW state, written atomically)");
  if (!plan.resume) write_invocation(plan.out, {plan.cfg, plan.seeds, plan.init_from});
}

// --resume: a seed that finished before keeps its result rows (true). Otherwise ro.resume
// says whether a checkpoint continues the seed (interrupted) or finishes it (finished
// without its result).
bool kept_from_before(const fs::path& run_dir, uint64_t seed, Table& rows, RunOptions& ro) {
  const std::string result_csv = (run_dir / "result.csv").string();
  const auto [status, steps] = checkpoint_status((run_dir / "model.safetensors").string());
  if (!resumable_status(status) && !status.empty() && result_matches(result_csv, status, steps)) {
    Table done = read_seed_rows(result_csv);
    if (rows.header.empty()) rows.header = done.header;
    for (auto& r : done.rows) rows.add(r);
    log::info("train", "seed {}: finished before ({}), kept", seed, status);
    return true;
  }
  ro.resume = !status.empty();
  return false;
}

// Trains every seed of the plan in turn, each seed's result.csv and the growing summary.csv
// written as it finishes; stops after an interrupted seed. Returns the exit code so far
// (130: interrupted).
int train_seeds(const TrainPlan& plan, const data::Corpus& corpus, const Config& resolved, bool writer,
                Table& rows) {
  const double unigram_test = data::split_stats(corpus, data::Split::Test).unigram_ppl();
  signals::install();
  const bool tty = writer && isatty(STDERR_FILENO) && !log::quiet();
  for (uint64_t seed : plan.seeds) {
    const fs::path run_dir = fs::path(plan.out) / fmt::format("seed{}", seed);
    RunOptions ro{seed, run_dir.string(), tty};
    ro.check_memory = false;  // checked before, once for all seeds
    ro.init_from = plan.init_from;
    if (plan.resume && kept_from_before(run_dir, seed, rows, ro)) continue;
    if (writer) fs::create_directories(run_dir);
    RunResult r = train_run(plan.cfg, corpus, ro);
    r.unigram_test_ppl = unigram_test;
    Table one = seed_rows({{plan.cfg.name, resolved, r}});
    if (writer) write_file_atomic((run_dir / "result.csv").string(), one.csv());
    if (rows.header.empty()) rows.header = one.header;
    rows.add(one.rows.at(0));
    if (writer) write_file_atomic((fs::path(plan.out) / "summary.csv").string(), with_aggregates(rows).csv());
    if (r.status == "interrupted") return 130;
  }
  return 0;
}

// Every seed diverged: the results are written, but nothing trained (exit 1, not 0).
bool none_finished(const Table& rows) {
  if (rows.rows.empty()) return false;
  const int status = column(rows, "status");
  for (const auto& r : rows.rows)
    if (r[status] == "ok") return false;
  log::warn("train", "no seed finished: every seed diverged (see the message column of summary.csv)");
  return true;
}

}  // namespace

int run_train(const TrainOptions& o, const Globals& g) {
  // Data-parallel when launched by torchrun / srun / lmx launch (docs/SCALING.md).
  const bool writer = dist::read_env().rank == 0;  // only rank 0 writes (the group connects below)
  if (!writer) log::set_level(log::Level::Warn);
  TrainPlan plan = o.resume.empty() ? fresh_plan(o, g) : resumed_plan(o, g);
  if (g.device_given) plan.cfg.train.device = g.device;
  dist::Group* group = dist::init_from_env(plan.cfg.train.device);
  data::Corpus corpus = data::load_corpus(plan.cfg.data);
  const Config resolved = resolve_for_corpus(plan.cfg, corpus);
  check_before_training(plan, resolved, group, !o.no_memory_check);
  if (writer) prepare_train_out(plan, resolved);
  if (group) plan.out = group->broadcast_string("train/out", plan.out);  // rank 0's (timestamped) directory
  log::info("train", "{} -> {} (seeds {}{})", plan.cfg.source, plan.out, fmt::join(plan.seeds, ","),
            plan.resume ? ", resuming" : "");
  Table rows;
  int code = train_seeds(plan, corpus, resolved, writer, rows);
  if (code == 0 && none_finished(rows)) code = 1;
  if (group)
    log::info("dist", "rank 0 of {}: {:.2f} s in {} all-reduces (waiting for the other ranks included)",
              group->world(), group->collective_seconds(), group->collectives());
  dist::shutdown();
  if (!writer) return code;
  write_summary(plan.out, rows);
  if (code == 130) log::warn("train", "interrupted: continue with  lmx train --resume {}", plan.out);
  log::info("train", "results in {} (figures: lmx plot {})", plan.out, plan.out);
  return code;
}

void add_train_command(CLI::App& app, Globals& g) {
  auto o = std::make_shared<TrainOptions>();
  auto* cmd = app.add_subcommand("train", "Train a config with one or more seeds; writes metrics, checkpoints, summary.csv");
  cmd->add_option("config", o->config, "config file (YAML)");
  add_seeds_option(cmd, o->seeds, "comma-separated seeds, e.g. 0,1,2 (each: init and data order)");
  cmd->add_option("--n-seeds", o->n_seeds, "run seeds seed..seed+N-1 (default 1)")->check(Positive);
  add_set_option(cmd, o->sets);
  cmd->add_option("--resume", o->resume,
                  "continue an interrupted `lmx train` in this output directory (finished seeds are kept)");
  cmd->add_option("--init-from", o->init_from,
                  "start from these weights instead of a fresh init: a model.safetensors or a Hugging Face Llama "
                  "folder (lmx export --hf); the config must build the same shapes");
  cmd->add_flag("--no-memory-check", o->no_memory_check, "train even when the memory estimate exceeds MemAvailable");
  on_run(cmd, g, o, run_train);
}

}  // namespace lmx::cli
