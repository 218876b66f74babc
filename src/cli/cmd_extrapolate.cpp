// lmx extrapolate: packed training at a short length, evaluation at a long one, mean NLL
// by position range per position encoding, with the true distribution's NLL as reference.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/app.h"
#include "cli/common.h"
#include "config/config.h"
#include "config/registry.h"
#include "data/corpus.h"
#include "formats/checkpoint.h"
#include "train/evaluate.h"
#include "train/summary.h"
#include "train/trainer.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/log.h"
#include "util/progress.h"
#include "util/signals.h"
#include "util/strings.h"

namespace fs = std::filesystem;

namespace lmx::cli {

struct ExtrapolateOptions {
  std::string config = std::string(LMX_SOURCE_DIR) + "/configs/textbook.yaml";
  std::string positions;  // set when the verb is added: every position row, in table order
  std::string seeds;
  std::vector<std::string> sets;
  int train_len = 64, test_len = 512, steps = 600;
};

namespace {

// --positions: registry names, each once, at least one.
std::vector<std::string> parse_positions(const std::string& list) {
  std::vector<std::string> positions;
  std::stringstream ss(list);
  std::string p;
  const auto valid = registry::names(registry::Kind::Position);
  while (std::getline(ss, p, ','))
    if (std::find(valid.begin(), valid.end(), p) == valid.end())
      throw InputError(fmt::format("--positions: unknown encoding '{}'; valid: {}", p, join(valid)));
    else if (std::find(positions.begin(), positions.end(), p) != positions.end())
      throw InputError(fmt::format("--positions: '{}' is given twice", p));
    else
      positions.push_back(p);
  if (positions.empty()) throw InputError("--positions is empty: give at least one encoding", "valid: " + join(valid));
  return positions;
}

// One config per position encoding: packed rows of --train-len, --steps steps, a context
// that holds --test-len. Every config is built and validated before anything trains.
std::vector<Config> extrapolation_configs(const ExtrapolateOptions& o, const std::vector<std::string>& positions) {
  std::vector<Config> configs;
  for (const auto& p : positions) {
    std::vector<std::string> sets = o.sets;
    for (const std::string& kv : std::vector<std::string>{"model.position=" + p, "data.layout=packed",
                           "data.seq_len=" + std::to_string(o.train_len),
                           "train.steps=" + std::to_string(o.steps),
                           "model.max_seq_len=" + std::to_string(std::max(o.test_len, o.train_len))})
      sets.push_back(kv);
    Config c = load_config(o.config, sets);
    c.name = p;
    configs.push_back(c);
  }
  return configs;
}

// The trained checkpoint in dir on packed test rows of --test-len: its rows of the
// by-position table.
void add_by_position(Table& table, const ExtrapolateOptions& o, const data::Corpus& corpus, const std::string& name,
                     uint64_t seed, const std::string& dir, const std::vector<int>& starts) {
  Checkpoint ck = read_checkpoint((fs::path(dir) / "model.safetensors").string());
  ModernLM model = load_model(ck);
  EvalOptions opt;
  opt.split = data::Split::Test;
  opt.layout = data::Layout::Packed;
  opt.seq_len = o.test_len;
  opt.batch_size = 8;
  opt.by_position = starts;
  EvalResult e = evaluate(model, corpus, opt);
  for (const auto& range : e.ranges)
    table.add({name, std::to_string(seed), fmt::format("{}-{}", range.lo, range.hi < 0 ? o.test_len - 1 : range.hi - 1),
               std::to_string(range.tokens), fmt::format("{:.4f}", range.nll), fmt::format("{:.4f}", range.true_nll),
               fmt::format("{:.4f}", range.nll - range.true_nll)});
}

}  // namespace

int run_extrapolate(const ExtrapolateOptions& o, const Globals& g) {
  const std::vector<std::string> positions = parse_positions(o.positions);
  if (o.test_len < o.train_len)
    throw InputError(fmt::format("--test-len {} is shorter than --train-len {}", o.test_len, o.train_len));
  const auto seeds = parse_seeds(o.seeds, 1, g.seed);
  const std::vector<Config> configs = extrapolation_configs(o, positions);
  const std::string out = g.out.empty() ? default_out_dir("extrapolate") : g.out;
  prepare_out_dir(out);
  data::Corpus corpus = data::load_corpus(configs.front().data);
  signals::install();
  const bool tty = isatty(STDERR_FILENO) && !log::quiet();

  // Ranges: [0, L), [L, 2L), [2L, 4L), [4L, 8L) ... up to the test length.
  std::vector<int> starts = {0};
  for (int s = o.train_len; s < o.test_len; s *= 2) starts.push_back(s);

  Table table;
  table.header = {"position", "seed", "range", "tokens", "nll", "true_nll", "gap"};
  std::vector<SummaryRow> rows;
  const int total = static_cast<int>(configs.size() * seeds.size());
  RunProgress progress(total, total);
  for (const auto& cfg : configs) {
    for (uint64_t seed : seeds) {
      const std::string dir = (fs::path(out) / cfg.name / fmt::format("seed{}", seed)).string();
      fs::create_directories(dir);
      RunResult r = train_run(cfg, corpus, RunOptions{seed, dir, tty});
      rows.push_back({cfg.name, resolve_for_corpus(cfg, corpus), r});
      if (r.status == RunStatus::Interrupted) break;
      add_by_position(table, o, corpus, cfg.name, seed, dir, starts);
      write_file_atomic((fs::path(out) / "by_position.csv").string(), table.csv());
      const std::string times = progress.ended();
      log::info("extrapolate", "{} {} seed {}: {}; {}", progress.counter(), cfg.name, seed, status_name(r.status), times);
    }
    if (signals::interrupted()) break;
  }
  write_file_atomic((fs::path(out) / "summary.csv").string(), with_aggregates(seed_rows(rows)).csv());
  write_file_atomic((fs::path(out) / "by_position.md").string(), table.markdown());
  std::cout << table.markdown();
  log::info("extrapolate", "results in {} (figures: lmx plot {})", out, out);
  return signals::interrupted() ? 130 : 0;
}

void add_extrapolate_command(CLI::App& app, Globals& g) {
  auto o = std::make_shared<ExtrapolateOptions>();
  o->positions = join(registry::names(registry::Kind::Position), ",");
  auto* cmd = app.add_subcommand("extrapolate", "Train at --train-len (packed), test at --test-len: NLL by position per encoding");
  cmd->add_option("config", o->config, "base config (default configs/textbook.yaml)");
  cmd->add_option("--positions", o->positions, "comma-separated position encodings (default: every one, in `lmx list` order)");
  cmd->add_option("--train-len", o->train_len, "training chunk length (default 64)")->check(Positive);
  cmd->add_option("--test-len", o->test_len, "test sequence length (default 512)")->check(Positive);
  cmd->add_option("--steps", o->steps, "training steps per encoding (default 600)")->check(Positive);
  add_seeds_option(cmd, o->seeds, "comma-separated seeds (default 0)");
  add_set_option(cmd, o->sets, "override a field of the base config (repeatable)");
  on_run(cmd, g, o, run_extrapolate);
}

}  // namespace lmx::cli
