#include "experiments/sweep.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <thread>

#include "train/summary.h"
#include "util/error.h"
#include "util/log.h"
#include "util/signals.h"

extern char** environ;

namespace fs = std::filesystem;

namespace lmx {

int spawn_self(const std::vector<std::string>& args, const std::string& log_path, bool append) {
  std::vector<std::string> argv_s = {fs::read_symlink("/proc/self/exe").string()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc == 0) signals::add_child(pid);
  if (rc != 0) throw RuntimeError(fmt::format("cannot start {}: {}", argv_s[0], std::strerror(rc)));
  return pid;
}

SweepResult run_sweep(const std::vector<GridPoint>& points, const std::vector<uint64_t>& seeds,
                      const SweepOptions& opt) {
  const fs::path out(opt.out);
  fs::create_directories(out / "configs");
  fs::create_directories(out / "runs");
  fs::create_directories(out / "logs");
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  const int jobs = std::max(1, opt.jobs);
  const int threads = opt.threads > 0 ? opt.threads : std::max(1, cores / jobs);

  struct Run {
    std::string name, config, dir, log;
    uint64_t seed;
  };
  std::vector<Run> runs;
  for (size_t i = 0; i < points.size(); ++i) {
    std::string slug;
    for (char c : points[i].name) slug += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '=' || c == '_') ? c : '_';
    const std::string cfg_path = (out / "configs" / fmt::format("{:03d}-{}.yaml", i, slug)).string();
    const std::string cfg_text = "# grid point: " + points[i].name + "\n" + to_yaml(points[i].config);
    if (opt.resume && fs::exists(cfg_path)) {
      std::ifstream in(cfg_path, std::ios::binary);
      std::stringstream old;
      old << in.rdbuf();
      if (old.str() != cfg_text)
        throw InputError(fmt::format("{}: the spec's grid point {} differs from the one of the sweep to resume", cfg_path,
                                     points[i].name),
                         "resume with the same spec, --set and --seeds (or start a new sweep with another --out)");
    }
    write_file_atomic(cfg_path, cfg_text);
    for (uint64_t seed : seeds) {
      const std::string id = fmt::format("{:03d}-{}-s{}", i, slug, seed);
      runs.push_back({points[i].name, cfg_path, (out / "runs" / id).string(), (out / "logs" / (id + ".log")).string(), seed});
    }
  }
  log::info("sweep", "{} grid points x {} seeds = {} runs, {} at once, {} thread(s) each -> {}", points.size(),
            seeds.size(), runs.size(), jobs, threads, opt.out);

  SweepResult res;
  std::map<int, size_t> running;  // pid -> run index
  size_t next = 0, done = 0;
  std::vector<int> status(runs.size(), -1);
  // Resume: a run whose summary says ok / diverged is kept as it is.
  auto finished = [](const std::string& dir, Table& rows) {
    const std::string summary = (fs::path(dir) / "summary.csv").string();
    if (!fs::exists(summary)) return false;
    try {
      rows = read_seed_rows(summary);
    } catch (const InputError&) {
      return false;
    }
    const int st = column(rows, "status");
    if (rows.rows.empty() || st < 0) return false;
    for (const auto& row : rows.rows)
      if (st >= static_cast<int>(row.size()) || (row[st] != "ok" && row[st] != "diverged")) return false;
    return true;
  };
  auto collect = [&res](const Run& r, Table t) {
    for (auto& row : t.rows) {
      row[0] = r.name;
      res.seeds.add(row);
    }
    if (res.seeds.header.empty()) res.seeds.header = t.header;
  };
  while (done < runs.size()) {
    while (static_cast<int>(running.size()) < jobs && next < runs.size() && !signals::interrupted()) {
      const Run& r = runs[next];
      std::vector<std::string> args = {"-q", "--threads", std::to_string(threads), "train"};
      bool append_log = false;
      if (opt.resume) {
        Table kept;
        if (finished(r.dir, kept)) {
          collect(r, kept);
          status[next] = 0;
          ++res.skipped;
          ++done;
          log::info("sweep", "[{}/{}] {} seed {}: finished before, kept", done, runs.size(), r.name, r.seed);
          ++next;
          continue;
        }
        if (fs::exists(fs::path(r.dir) / "train.json")) {
          args.insert(args.end(), {"--resume", r.dir});
          append_log = true;
          ++res.resumed;
        } else {
          std::error_code ec;
          fs::remove_all(r.dir, ec);  // never got going: start it afresh
        }
      }
      if (args.back() == "train") args.insert(args.end(), {r.config, "--seeds", std::to_string(r.seed), "--out", r.dir});
      running[spawn_self(args, r.log, append_log)] = next;
      log::debug("sweep", "started {} seed {}{}", r.name, r.seed, append_log ? " (resume)" : "");
      ++next;
    }
    if (running.empty()) break;  // interrupted before starting the rest
    int wstatus = 0;
    const pid_t pid = waitpid(-1, &wstatus, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw RuntimeError(fmt::format("waiting for sweep runs: {}", std::strerror(errno)));
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;
    signals::remove_child(pid);
    const size_t i = it->second;
    running.erase(it);
    ++done;
    status[i] = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
    const Run& r = runs[i];
    const std::string summary = (fs::path(r.dir) / "summary.csv").string();
    if (fs::exists(summary)) {
      try {
        collect(r, read_seed_rows(summary));
      } catch (const InputError& e) {
        log::warn("sweep", "{}", e.what());
      }
    }
    if (status[i] == 130) res.interrupted = true;
    else if (status[i] != 0) ++res.failed;
    log::info("sweep", "[{}/{}] {} seed {}: {}", done, runs.size(), r.name, r.seed,
              status[i] == 0 ? "done" : fmt::format("exit {} (see {})", status[i], r.log));
  }
  if (signals::interrupted()) res.interrupted = true;
  return res;
}

}  // namespace lmx
