#include "train/run_plan.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/baselines.h"
#include "formats/checkpoint.h"
#include "train/summary.h"
#include "train/train_state.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/log.h"
#include "util/runtime.h"
#include "util/signals.h"

namespace fs = std::filesystem;

namespace lmx {

void write_train_json(const TrainPlan& plan) {
  nlohmann::ordered_json j;
  j["name"] = plan.cfg.name;
  j["source"] = plan.cfg.source;
  j["seeds"] = plan.seeds;
  j["threads"] = runtime::threads();
  j["config"] = to_yaml(plan.cfg);
  if (!plan.init_from.empty()) j["init_from"] = plan.init_from;
  write_file_atomic((fs::path(plan.out) / "train.json").string(), j.dump(2) + "\n");
}

TrainPlan read_train_json(const std::string& out) {
  const std::string path = (fs::path(out) / "train.json").string();
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(fmt::format("{}: cannot read: not an lmx train output directory", path),
                     "give the directory `lmx train` wrote (the one holding seed<k>/ and train.json)");
  std::stringstream ss;
  ss << in.rdbuf();
  TrainPlan plan;
  plan.out = out;
  plan.resume = true;
  try {
    auto j = nlohmann::json::parse(ss.str());
    plan.cfg = parse_config(j.at("config").get<std::string>(), path + " (config)");
    plan.cfg.name = j.at("name").get<std::string>();
    plan.cfg.source = j.at("source").get<std::string>();
    plan.seeds = j.at("seeds").get<std::vector<uint64_t>>();
    plan.init_from = j.value("init_from", std::string());
    const int threads = j.at("threads").get<int>();
    if (threads != runtime::threads())
      log::warn("train", "{}: the run used --threads {}, now {}: resumed results may differ in the last bits", path,
                threads, runtime::threads());
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: {}", path, e.what()), "the file is written by lmx train; do not edit it");
  }
  if (plan.seeds.empty()) throw InputError(fmt::format("{}: no seeds", path));
  return plan;
}

namespace {

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
bool result_matches(const std::string& result_csv, RunStatus status, const std::string& steps) {
  if (!fs::exists(result_csv)) return false;
  try {
    Table t = read_seed_rows(result_csv);
    const int st = column(t, "status"), sp = column(t, "steps");
    return t.rows.size() == 1 && st >= 0 && sp >= 0 && is_status(t.rows[0][st], status) && t.rows[0][sp] == steps;
  } catch (const Error&) {
    return false;
  }
}

// --resume: a seed that finished before keeps its result rows (true). Otherwise ro.resume
// says whether a checkpoint continues the seed (interrupted) or finishes it (finished
// without its result).
bool kept_from_before(const fs::path& run_dir, uint64_t seed, Table& rows, RunOptions& ro) {
  const std::string result_csv = (run_dir / "result.csv").string();
  const auto [status, steps] = checkpoint_status((run_dir / "model.safetensors").string());
  const std::optional<RunStatus> saved = parse_status(status);
  if (saved && !resumable(*saved) && result_matches(result_csv, *saved, steps)) {
    Table done = read_seed_rows(result_csv);
    add_rows(rows, done);
    log::info("train", "seed {}: finished before ({}), kept", seed, status);
    return true;
  }
  ro.resume = !status.empty();
  return false;
}

// Every seed diverged: the results are written, but nothing trained (exit 1, not 0).
bool none_finished(const Table& rows) {
  if (rows.rows.empty()) return false;
  const int status = column(rows, "status");
  for (const auto& r : rows.rows)
    if (is_status(r[status], RunStatus::Ok)) return false;
  log::warn("train", "no seed finished: every seed diverged (see the message column of summary.csv)");
  return true;
}

}  // namespace

int train_seeds(const TrainPlan& plan, const data::Corpus& corpus, const Config& resolved, bool writer, Table& rows) {
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
    add_rows(rows, one);
    if (writer) write_file_atomic((fs::path(plan.out) / "summary.csv").string(), with_aggregates(rows).csv());
    if (r.status == RunStatus::Interrupted) return 130;
  }
  return none_finished(rows) ? 1 : 0;
}

bool train_out_finished(const std::string& out, Table& rows) {
  const std::string summary = (fs::path(out) / "summary.csv").string();
  if (!fs::exists(summary)) return false;
  try {
    rows = read_seed_rows(summary);
  } catch (const InputError&) {
    return false;
  }
  return all_status(rows, {RunStatus::Ok, RunStatus::Diverged});
}

bool train_out_resumable(const std::string& out) { return fs::exists(fs::path(out) / "train.json"); }

}  // namespace lmx
