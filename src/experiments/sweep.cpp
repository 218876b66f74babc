#include "experiments/sweep.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include "train/summary.h"
#include "util/error.h"
#include "util/log.h"
#include "util/signals.h"

extern char** environ;

namespace fs = std::filesystem;

namespace lmx {

int spawn_self(const std::vector<std::string>& args, const std::string& log_path) {
  std::vector<std::string> argv_s = {fs::read_symlink("/proc/self/exe").string()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
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
    write_file_atomic(cfg_path, "# grid point: " + points[i].name + "\n" + to_yaml(points[i].config));
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
  while (done < runs.size()) {
    while (static_cast<int>(running.size()) < jobs && next < runs.size() && !signals::interrupted()) {
      const Run& r = runs[next];
      std::vector<std::string> args = {"-q", "--threads", std::to_string(threads), "train", r.config,
                                       "--seeds", std::to_string(r.seed), "--out", r.dir};
      running[spawn_self(args, r.log)] = next;
      log::debug("sweep", "started {} seed {}", r.name, r.seed);
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
    const size_t i = it->second;
    running.erase(it);
    ++done;
    status[i] = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
    const Run& r = runs[i];
    const std::string summary = (fs::path(r.dir) / "summary.csv").string();
    if (fs::exists(summary)) {
      Table t = read_seed_rows(summary);
      for (auto& row : t.rows) {
        row[0] = r.name;
        res.seeds.add(row);
      }
      if (res.seeds.header.empty()) res.seeds.header = t.header;
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
