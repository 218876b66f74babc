// lmx train: a config with one or more seeds (data-parallel under lmx launch / torchrun / srun),
// continued after an interruption with --resume.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include "torch_api.h"

#include <filesystem>

#include "cli/app.h"
#include "cli/common.h"
#include "config/config.h"
#include "data/corpus.h"
#include "distributed/dist.h"
#include "formats/checkpoint.h"
#include "model/memory.h"
#include "train/run_plan.h"
#include "train/trainer.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/log.h"

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

// --resume DIR: the run's own config, seeds and initial weights from its train.json.
TrainPlan resumed_plan(const TrainOptions& o, const Globals& g) {
  if (!o.config.empty() || !o.sets.empty() || !o.seeds.empty() || !o.init_from.empty())
    throw InputError("--resume takes no config, --set, --seeds or --init-from: the run continues with its own",
                     "lmx train --resume RUN_DIR");
  if (!g.out.empty() && fs::path(g.out).lexically_normal() != fs::path(o.resume).lexically_normal())
    throw InputError("--resume DIR and --out name different directories", "give only --resume DIR");
  return read_train_json(o.resume);
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
  if (!plan.resume) write_train_json(plan);
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
  const int code = train_seeds(plan, corpus, resolved, writer, rows);
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

std::vector<std::string> train_child_args(const TrainChild& c) {
  Globals child;
  child.quiet = true;
  child.threads = c.threads;
  std::vector<std::string> args = global_args(child);
  args.push_back("train");
  if (c.resume) args.insert(args.end(), {"--resume", c.out});
  else args.insert(args.end(), {c.config, "--seeds", std::to_string(c.seed), "--out", c.out});
  return args;
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
