#include "experiments/sweep.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <initializer_list>
#include <map>
#include <optional>
#include <string_view>
#include <nlohmann/json.hpp>

#include "config/fields.h"
#include "train/run_plan.h"
#include "train/summary.h"
#include "util/error.h"
#include "util/jobserver.h"
#include "util/log.h"
#include "util/process.h"
#include "util/progress.h"
#include "util/runtime.h"
#include "util/signals.h"

namespace fs = std::filesystem;

namespace lmx {

namespace {

std::string slug(const std::string& name) {
  std::string out;
  for (char c : name)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '=' || c == '_') ? c : '_';
  return out;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read", path.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::pair<int, int> parse_shard(const std::string& text) {
  // Strict decimal (no sscanf: it overflows silently); at most 1e6 shards.
  const auto slash = text.find('/');
  const auto i_v = slash == std::string::npos ? std::nullopt : strict_integer(text.substr(0, slash));
  const auto n_v = slash == std::string::npos ? std::nullopt : strict_integer(text.substr(slash + 1));
  const long long i = i_v.value_or(-1), n = n_v.value_or(0);
  if (n < 1 || n > 1000000 || i < 0 || i >= n)
    throw InputError(fmt::format("--shard {}: expected I/N with 0 <= I < N <= 1000000", text),
                     "e.g. --shard 0/4 ... --shard 3/4 (Slurm: --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT)");
  return {static_cast<int>(i), static_cast<int>(n)};
}

std::string run_id(size_t point_index, const std::string& point_name, uint64_t seed) {
  return fmt::format("{:03d}-{}-s{}", point_index, slug(point_name), seed);
}

Table merge_shards(const std::vector<std::string>& dirs, std::string* spec) {
  if (dirs.empty()) throw InputError("--merge needs the shards' output directories");
  struct Entry {
    int64_t index;
    std::string name, dir;
  };
  std::vector<Entry> entries;
  std::vector<std::string> owner;  // shard index -> directory
  nlohmann::json first;
  std::map<std::string, std::string> configs;  // configs/<file> -> text, same in every shard
  for (const auto& dir : dirs) {
    const fs::path meta_path = fs::path(dir) / "shard.json";
    if (!fs::exists(meta_path))
      throw InputError(fmt::format("{}: no shard.json: not the output of `lmx sweep`", dir),
                       "give the --out directories of lmx sweep SPEC --shard I/N");
    nlohmann::json meta;
    try {
      meta = nlohmann::json::parse(read_text(meta_path));
      const int shard = meta.at("shard").get<int>(), shards = meta.at("shards").get<int>();
      if (shards < 1 || shards > 1000000) throw InputError(fmt::format("{}: shard count {} is not in 1..1000000", dir, shards));
      if (first.is_null()) {
        first = meta;
        owner.assign(shards, "");
      } else if (shards != first.at("shards").get<int>() ||
                 meta.at("seeds") != first.at("seeds") || meta.at("total_runs") != first.at("total_runs")) {
        throw InputError(fmt::format("{}: a shard of another sweep than {} (seeds, runs or shard count differ)", dir,
                                     dirs.front()),
                         "merge the shards of one `lmx sweep SPEC --shard I/N` invocation");
      }
      if (shard < 0 || shard >= static_cast<int>(owner.size()))
        throw InputError(fmt::format("{}: shard {} is outside 0..{}", dir, shard, owner.size() - 1));
      if (!owner[shard].empty())
        throw InputError(fmt::format("shard {}/{} given twice: {} and {}", shard, owner.size(), owner[shard], dir));
      owner[shard] = dir;
      for (const auto& run : meta.at("runs"))
        entries.push_back({run.at("index").get<int64_t>(), run.at("point").get<std::string>(),
                           (fs::path(dir) / "runs" / run.at("id").get<std::string>()).string()});
    } catch (const nlohmann::json::exception& e) {
      throw InputError(fmt::format("{}: {}", meta_path.string(), e.what()), "the file is written by lmx sweep");
    }
    for (const auto& f : fs::directory_iterator(fs::path(dir) / "configs")) {
      const std::string text = read_text(f.path());
      auto [it, fresh] = configs.emplace(f.path().filename().string(), text);
      if (!fresh && it->second != text)
        throw InputError(fmt::format("{}: grid point config differs from the other shards'", f.path().string()),
                         "merge the shards of one sweep (same spec, --set and --seeds)");
    }
  }
  for (size_t k = 0; k < owner.size(); ++k)
    if (owner[k].empty())
      throw InputError(fmt::format("shard {}/{} is missing ({} of {} given)", k, owner.size(), dirs.size(), owner.size()),
                       "give every shard's output directory");
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.index < b.index; });
  if (static_cast<int64_t>(entries.size()) != first.at("total_runs").get<int64_t>())
    throw InputError(fmt::format("the shards hold {} runs, the sweep has {}", entries.size(),
                                 first.at("total_runs").get<int64_t>()));
  if (spec) *spec = first.at("spec").get<std::string>();
  Table merged;
  for (const auto& e : entries) {
    const std::string summary = (fs::path(e.dir) / "summary.csv").string();
    if (!fs::exists(summary))
      throw InputError(fmt::format("{}: no summary.csv: the run did not finish", e.dir),
                       "finish that shard (lmx sweep SPEC --shard I/N --resume DIR), then merge");
    Table t = read_seed_rows(summary);
    for (auto& row : t.rows) row[0] = e.name;
    add_rows(merged, t);
  }
  return merged;
}

namespace {

// One run of a sweep: a grid point's config with one seed, in its own directory.
struct SweepRun {
  std::string name, config, dir, log;
  uint64_t seed;
  std::string id;
  int64_t index;  // in the whole sweep (grid point-major, seed-minor)
};

// Resume continues the same sweep: other seeds, points or shards would drop finished runs.
void check_same_sweep(const std::vector<GridPoint>& points, const std::vector<uint64_t>& seeds,
                      const SweepOptions& opt) {
  const fs::path meta_path = fs::path(opt.out) / "shard.json";
  if (!fs::exists(meta_path)) return;
  nlohmann::json before;
  try {
    before = nlohmann::json::parse(read_text(meta_path));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: {}", meta_path.string(), e.what()), "the file is written by lmx sweep");
  }
  const nlohmann::json now = {{"seeds", seeds},
                              {"total_runs", static_cast<int64_t>(points.size() * seeds.size())},
                              {"shard", opt.shard},
                              {"shards", std::max(1, opt.shards)}};
  for (const auto& [key, value] : now.items())
    if (!before.contains(key) || before[key] != value)
      throw InputError(fmt::format("{}: the sweep to resume has {} {}, this invocation {}", opt.out, key,
                                   before.contains(key) ? before[key].dump() : "none", value.dump()),
                       "resume with the same spec, --set, --seeds and --shard (or start a new sweep with another --out)");
}

// This shard's runs, each grid point's config written to configs/ first; total receives the
// number of runs of the whole sweep.
std::vector<SweepRun> plan_runs(const std::vector<GridPoint>& points, const std::vector<uint64_t>& seeds,
                                const SweepOptions& opt, int64_t& total) {
  const fs::path out(opt.out);
  std::vector<SweepRun> runs;
  int64_t index = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string cfg_path = (out / "configs" / fmt::format("{:03d}-{}.yaml", i, slug(points[i].name))).string();
    const std::string cfg_text = "# grid point: " + points[i].name + "\n" + to_yaml(points[i].config);
    if (opt.resume && fs::exists(cfg_path) && read_text(cfg_path) != cfg_text)
      throw InputError(fmt::format("{}: the spec's grid point {} differs from the one of the sweep to resume", cfg_path,
                                   points[i].name),
                       "resume with the same spec, --set and --seeds (or start a new sweep with another --out)");
    write_file_atomic(cfg_path, cfg_text);
    for (uint64_t seed : seeds) {
      const int64_t k = index++;
      if (k % std::max(1, opt.shards) != opt.shard) continue;  // another shard's run
      const std::string id = run_id(i, points[i].name, seed);
      runs.push_back({points[i].name, cfg_path, (out / "runs" / id).string(), (out / "logs" / (id + ".log")).string(),
                      seed, id, k});
    }
  }
  total = index;
  return runs;
}

// shard.json: what `lmx sweep --merge` needs to combine the shards.
void write_shard_meta(const SweepOptions& opt, const std::vector<uint64_t>& seeds, int64_t total,
                      const std::vector<SweepRun>& runs) {
  nlohmann::ordered_json meta;
  meta["spec"] = opt.spec;
  meta["shard"] = opt.shard;
  meta["shards"] = std::max(1, opt.shards);
  meta["seeds"] = seeds;
  meta["total_runs"] = total;
  meta["runs"] = nlohmann::json::array();
  for (const auto& r : runs) meta["runs"].push_back({{"index", r.index}, {"id", r.id}, {"point", r.name}, {"seed", r.seed}});
  write_file_atomic((fs::path(opt.out) / "shard.json").string(), meta.dump(2) + "\n");
}

// Resume: a run whose summary says ok / diverged is kept as it is.
// Runs the runs as child processes, at most `jobs` at once (and each with a shared slot under
// LMX_JOBSERVER), until all have ended or an interrupt stops starting new ones.
class SweepScheduler {
 public:
  SweepScheduler(const std::vector<SweepRun>& runs, const SweepOptions& opt, int jobs, int threads,
                 std::optional<Jobserver>& slots)
      : runs_(runs), opt_(opt), jobs_(jobs), threads_(threads), slots_(slots), status_(runs.size(), -1),
        collected_(runs.size()), progress_(static_cast<int>(runs.size()), static_cast<double>(runs.size())) {}

  SweepResult run() {
    while (static_cast<size_t>(progress_.done()) < runs_.size()) {
      start_ready();
      if (!wait_for_one()) break;  // interrupted before starting the rest
    }
    for (const auto& t : collected_) add_rows(res_.seeds, t);  // joined in run order
    if (signals::interrupted()) res_.interrupted = true;
    return res_;
  }

 private:
  void collect(size_t i, Table t) {
    for (auto& row : t.rows) row[0] = runs_[i].name;
    collected_[i] = std::move(t);
  }

  // Starts runs while a job (and a shared slot) is free; on resume, finished runs are kept.
  void start_ready() {
    while (static_cast<int>(running_.size()) < jobs_ && next_ < runs_.size() && !signals::interrupted()) {
      const SweepRun& r = runs_[next_];
      Table kept;
      if (opt_.resume && !process::wait_until_unlocked(r.dir, 30))
        log::warn("sweep", "{}: still in use by another lmx process after 30 s (a run of the stopped sweep?)", r.dir);
      if (opt_.resume && train_out_finished(r.dir, kept)) {
        collect(next_, kept);
        status_[next_] = 0;
        ++res_.skipped;
        progress_.kept();
        log::info("sweep", "{} {} seed {}: finished before, kept", progress_.counter(), r.name, r.seed);
        ++next_;
        continue;
      }
      if (slots_ && !slots_->try_acquire()) break;  // no shared slot free now
      start(next_);
      ++next_;
    }
  }

  // `lmx train` for run i: resumed (its log appended) when an interrupted run left train.json.
  void start(size_t i) {
    const SweepRun& r = runs_[i];
    TrainChild child{r.config, r.seed, r.dir, threads_, false};
    if (opt_.resume) {
      if (train_out_resumable(r.dir)) {
        child.resume = true;
        ++res_.resumed;
      } else {
        std::error_code ec;
        fs::remove_all(r.dir, ec);  // never got going: start it afresh
      }
    }
    running_[spawn_self(opt_.child_args(child), r.log, /*append=*/child.resume, {}, &server_)] = i;
    log::debug("sweep", "started {} seed {}{}", r.name, r.seed, child.resume ? " (resume)" : "");
  }

  // Waits until a run ends (or, under LMX_JOBSERVER, another process frees a slot); false
  // when nothing runs and nothing more will start.
  bool wait_for_one() {
    const bool want_slot = slots_ && next_ < runs_.size() && static_cast<int>(running_.size()) < jobs_ &&
                           !signals::interrupted();
    if (running_.empty()) {
      if (!want_slot) return false;
      slots_->wait(-1);  // nothing of ours runs: until another process frees a slot
      return true;
    }
    int wstatus = 0;
    // Waiting for a shared slot too: poll both (a run ends, or another process frees a slot).
    const pid_t pid = waitpid(-1, &wstatus, want_slot ? WNOHANG : 0);
    if (pid == 0) {
      slots_->wait(200);
      return true;
    }
    if (pid < 0) {
      if (errno == EINTR) return true;
      throw RuntimeError(fmt::format("waiting for sweep runs: {}", std::strerror(errno)));
    }
    auto it = running_.find(pid);
    if (it == running_.end()) return true;
    signals::remove_child(pid);
    if (slots_) slots_->release();
    const size_t i = it->second;
    running_.erase(it);
    ended(i, wstatus);
    return true;
  }

  // Run i ended: its rows collected, and counted as done, diverged, failed or interrupted.
  void ended(size_t i, int wstatus) {
    const std::string times = progress_.ended();
    status_[i] = exit_code(wstatus);
    const SweepRun& r = runs_[i];
    const std::string summary = (fs::path(r.dir) / "summary.csv").string();
    if (fs::exists(summary)) {
      try {
        collect(i, read_seed_rows(summary));
      } catch (const InputError& e) {
        log::warn("sweep", "{}", e.what());
      }
    }
    // A run whose every seed diverged exits 1 but is a result (status diverged), not a failure.
    const bool diverged = status_[i] == 1 && all_status(collected_[i], {RunStatus::Diverged});
    if (status_[i] == 130) res_.interrupted = true;
    else if (status_[i] != 0 && !diverged) ++res_.failed;
    log::info("sweep", "{} {} seed {}: {}; {}", progress_.counter(), r.name, r.seed,
              status_[i] == 0 ? "done" : diverged ? "diverged" : fmt::format("exit {} (see {})", status_[i], r.log),
              times);
  }

  const std::vector<SweepRun>& runs_;
  const SweepOptions& opt_;
  const int jobs_, threads_;
  std::optional<Jobserver>& slots_;
  SweepResult res_;
  std::map<int, size_t> running_;  // pid -> run index
  size_t next_ = 0;
  std::vector<int> status_;
  std::vector<Table> collected_;  // per run, joined in run order at the end
  RunProgress progress_;           // runs done / total and the ETA, in every run's log line
  fork_server::Client server_;     // starts the runs without paying lmx's start-up each time
};

}  // namespace

SweepResult run_sweep(const std::vector<GridPoint>& points, const std::vector<uint64_t>& seeds,
                      const SweepOptions& opt) {
  const fs::path out(opt.out);
  // LMX_JOBSERVER: every run also holds one of the slots shared with other processes (checked
  // before anything is written).
  std::optional<Jobserver> slots = Jobserver::from_env();
  // A sweep's runs are single processes, also when the sweep itself runs under srun/torchrun.
  setenv("LMX_DIST", "0", 1);
  fs::create_directories(out / "configs");
  fs::create_directories(out / "runs");
  fs::create_directories(out / "logs");
  if (opt.resume) check_same_sweep(points, seeds, opt);
  const int cores = runtime::available_cores();
  const int jobs = std::max(1, opt.jobs);
  const int threads = opt.threads > 0 ? opt.threads : std::max(1, cores / jobs);
  int64_t total = 0;
  const std::vector<SweepRun> runs = plan_runs(points, seeds, opt, total);
  write_shard_meta(opt, seeds, total, runs);
  log::info("sweep", "{} grid points x {} seeds = {} runs{}, {} at once, {} thread(s) each -> {}", points.size(),
            seeds.size(), total,
            opt.shards > 1 ? fmt::format(" (shard {}/{}: {} of them)", opt.shard, opt.shards, runs.size()) : "", jobs,
            threads, opt.out);
  if (slots) log::info("sweep", "sharing job slots through LMX_JOBSERVER={}", slots->path());
  return SweepScheduler(runs, opt, jobs, threads, slots).run();
}

}  // namespace lmx
