// lmx ablate --one-at-a-time: from one recipe to another, one change at a time (each step
// keeps the previous changes), every step trained with the same seeds.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "cli/app.h"
#include "cli/common.h"
#include "config/config.h"
#include "config/registry.h"
#include "config/fields.h"
#include "data/corpus.h"
#include "data/metrics.h"
#include "experiments/sweep.h"
#include "model/sizes.h"
#include "train/summary.h"
#include "util/error.h"
#include "util/log.h"
#include "util/signals.h"

namespace fs = std::filesystem;

namespace lmx::cli {

struct AblateOptions {
  std::string from = std::string(LMX_SOURCE_DIR) + "/configs/original.yaml";
  std::string to = std::string(LMX_SOURCE_DIR) + "/configs/llama.yaml";
  std::string order = "norm_placement,norm,ffn,position,kv_heads,bias";
  std::string seeds;
  std::string resume;
  std::vector<std::string> sets;
  bool one_at_a_time = false;
  bool no_match = false;
  double tolerance = 0.01;
  int jobs = 1;
};

namespace {

// The changes, in lecture order; each groups the keys that move together (the FFN's width
// is re-matched with it, a position scheme's settings with the position: the keys its registry
// row names, RoPE's and T5's).
struct Change {
  std::string name;
  std::vector<std::string> keys;
};
// The component's key, then the keys its rows read, each once, in row order.
std::vector<std::string> component_keys(const std::string& key, registry::Kind kind) {
  std::vector<std::string> keys = {key};
  for (const auto& e : registry::entries(kind))
    for (const auto& k : e.traits.keys)
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  return keys;
}
const std::vector<Change>& known_changes() {
  static const std::vector<Change> changes = {
      {"norm_placement", {"model.norm_placement"}},
      {"norm", {"model.norm", "model.norm_eps"}},
      {"ffn", {"model.ffn", "model.swish_beta", "model.d_ff", "model.d_ff_plain", "model.d_ff_multiple"}},
      {"position", component_keys("model.position", registry::Kind::Position)},
      {"kv_heads", {"model.n_kv_heads"}},
      {"bias", {"model.bias"}},
  };
  return changes;
}

const Change& find_change(const std::string& name) {
  auto it = std::find_if(known_changes().begin(), known_changes().end(), [&](const Change& c) { return c.name == name; });
  if (it == known_changes().end()) {
    std::vector<std::string> valid;
    for (const auto& c : known_changes()) valid.push_back(c.name);
    throw InputError(fmt::format("--order: unknown change '{}'; valid: {}", name, join(valid)));
  }
  return *it;
}

// The grid points of the ablation: the start config, then one point per change of --order
// that moves anything, each keeping the changes before it.
std::vector<GridPoint> ablation_steps(const AblateOptions& o, const Config& from, const Config& to) {
  std::vector<GridPoint> points;
  Config current = from;
  points.push_back({"0 " + from.name, {}, current, {}});
  // The dataset's vocabulary sizes the parameter counts; needed only for re-matching d_ff.
  const int vocab = o.no_match                ? 0
                    : from.model.vocab_size > 0 ? from.model.vocab_size
                                                : data::load_vocabulary(from.data).vocab.size();
  const int64_t start_params = o.no_match ? 0 : params_of(from.model, vocab);
  for (const auto& n : parse_list(o.order)) {
    const Change& change = find_change(n);
    std::vector<std::string> moved;
    for (const auto& key : change.keys) {
      const Field* f = find_field(key);
      if (f->get(current) != f->get(to)) {
        apply_override(current, key + "=" + f->get(to));
        moved.push_back(key.substr(key.find('.') + 1) + "=" + f->get(to));
      }
    }
    if (moved.empty()) continue;
    validate(current);
    // Keep the parameter count about equal: a change that moves it by more than the
    // tolerance (GQA drops K/V weights, no biases drops biases) widens or narrows the FFN.
    if (!o.no_match && std::llabs(params_of(current.model, vocab) - start_params) > o.tolerance * start_params) {
      const int f = match_d_ff(current.model, vocab, start_params);
      current.model.d_ff = f;
      moved.push_back(fmt::format("d_ff={}", f));
      validate(current);
    }
    current.name = fmt::format("{} +{}", points.size(), n);
    points.push_back({current.name, moved, current, {}});
  }
  // Whatever else differs (sizes, other keys) is reported, not silently dropped.
  for (const auto& f : config_fields())
    if (f.key.rfind("model.", 0) == 0 && f.get(current) != f.get(to) && (o.no_match || f.key != "model.d_ff"))
      log::warn("ablate", "{} still differs after all steps ({} vs {}); add it to --set", f.key, f.get(current), f.get(to));
  return points;
}

// The lecture's table: per step, parameter count, test perplexity and the corpus's headline
// metric (data/metrics.h; the garden: far-pronoun accuracy), mean ± std over the seeds.
Table ablation_table(const std::vector<GridPoint>& points, const Table& seeds) {
  Table table;
  table.header = {"step", "change", "params", "test ppl"};
  std::vector<int> metrics;  // the headline columns the seeds' table holds
  for (const auto& m : data::known_metric_columns())
    if ((m.tables & data::kHeadline) && column(seeds, m.name) >= 0) {
      metrics.push_back(column(seeds, m.name));
      std::string title = m.name;
      std::replace(title.begin(), title.end(), '_', ' ');
      table.header.push_back(title);
    }
  table.header.push_back("seeds");
  const int ppl = column(seeds, "test_ppl"), params = column(seeds, "params"), status = column(seeds, "status");
  auto mean_std = [](const Stats& s) { return s.n ? fmt::format("{:.3f} ± {:.3f}", s.mean, s.std) : ""; };
  for (const auto& p : points) {
    std::vector<double> v_ppl;
    std::vector<std::vector<double>> v_metric(metrics.size());
    std::string n_params;
    for (const auto& row : seeds.rows) {
      if (row[0] != p.name || !is_status(row[status], RunStatus::Ok)) continue;
      v_ppl.push_back(std::stod(row[ppl]));
      for (size_t k = 0; k < metrics.size(); ++k)
        v_metric[k].push_back(row[metrics[k]].empty() ? NAN : std::stod(row[metrics[k]]));
      n_params = row[params];
    }
    const Stats sp = stats(v_ppl);
    std::vector<std::string> cells = {p.name.substr(0, p.name.find(' ')),
                                      p.overrides.empty() ? "(start)" : join(p.overrides, " "), n_params, mean_std(sp)};
    for (const auto& v : v_metric) cells.push_back(mean_std(stats(v)));
    cells.push_back(std::to_string(sp.n));
    table.add(cells);
  }
  return table;
}

void ablate_resume_hint(const SweepResult& r, const std::string& out) {
  if (r.interrupted) log::warn("ablate", "interrupted: continue with the same command and --resume {}", out);
}

}  // namespace

int run_ablate(const AblateOptions& o, const Globals& g) {
  const Config from = load_config(o.from, o.sets);
  const Config to = load_config(o.to, o.sets);
  const std::vector<GridPoint> points = ablation_steps(o, from, to);
  const auto seeds = parse_seeds(o.seeds, 1, g.seed);
  const std::string out = sweep_out_dir(o.resume, g.out, "ablate");
  signals::install();
  SweepOptions so{out, o.jobs, g.threads, g.quiet};
  so.child_args = train_child_args;
  so.resume = !o.resume.empty();
  so.spec = "ablate";
  SweepResult r = run_sweep(points, seeds, so);
  if (so.resume) log::info("ablate", "resume: {} finished run(s) kept, {} continued", r.skipped, r.resumed);
  if (r.seeds.header.empty()) {  // no run got as far as a result (e.g. Ctrl-C in the first one)
    ablate_resume_hint(r, out);
    return r.interrupted ? 130 : 1;
  }
  write_file_atomic((fs::path(out) / "summary.csv").string(), with_aggregates(r.seeds).csv());
  const Table table = ablation_table(points, r.seeds);
  write_file_atomic((fs::path(out) / "ablation.csv").string(), table.csv());
  write_file_atomic((fs::path(out) / "ablation.md").string(), table.markdown());
  std::cout << table.markdown();
  log::info("ablate", "results in {} (figures: lmx plot {})", out, out);
  ablate_resume_hint(r, out);
  return r.interrupted ? 130 : r.failed ? 1 : 0;
}

void add_ablate_command(CLI::App& app, Globals& g) {
  auto o = std::make_shared<AblateOptions>();
  auto* cmd = app.add_subcommand("ablate", "Train from one recipe to another, one change at a time");
  cmd->add_flag("--one-at-a-time", o->one_at_a_time, "apply the differences one by one (the only mode)")->required();
  cmd->add_option("--from", o->from, "start config (default configs/original.yaml)");
  cmd->add_option("--to", o->to, "end config (default configs/llama.yaml)");
  cmd->add_option("--order", o->order, "order of the changes: names from norm_placement,norm,ffn,position,kv_heads,bias");
  add_seeds_option(cmd, o->seeds, "comma-separated seeds (default 0)");
  add_set_option(cmd, o->sets, "override applied to every step, e.g. train.steps=300 (repeatable)");
  cmd->add_option("--jobs", o->jobs, "runs at once")->check(Positive);
  cmd->add_option("--resume", o->resume,
                  "continue the interrupted ablation in this directory (same options): finished runs are kept, "
                  "interrupted ones resumed");
  cmd->add_flag("--no-match-params", o->no_match,
                "keep each step's d_ff as the configs give it (default: re-match d_ff so every step's parameter "
                "count stays within --tolerance of the start)");
  cmd->add_option("--tolerance", o->tolerance, "relative parameter-count tolerance for re-matching (default 0.01)")
      ->check(Positive);
  on_run(cmd, g, o, run_ablate);
}

}  // namespace lmx::cli
