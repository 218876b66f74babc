// lmx launch --nproc N -- train CONFIG ...: N local data-parallel workers on loopback, with
// the environment torchrun sets (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT).
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

#include "cli/app.h"
#include "distributed/dist.h"
#include "experiments/sweep.h"
#include "util/error.h"
#include "util/log.h"
#include "util/signals.h"

namespace lmx::cli {

struct LaunchOptions {
  int nproc = 2;
  int master_port = 0;
  std::vector<std::string> command;
};

namespace {

// A TCP port that is free now on 127.0.0.1 (the kernel's pick).
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw RuntimeError("lmx launch: cannot open a socket to find a free port");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    throw RuntimeError("lmx launch: cannot bind a loopback port", "pass --master-port P");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

std::string describe(int wstatus) {
  if (WIFEXITED(wstatus)) return fmt::format("exit code {}", WEXITSTATUS(wstatus));
  if (WIFSIGNALED(wstatus)) return fmt::format("signal {} ({})", WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)));
  return "unknown status";
}

// The workers of one launch, by rank, while they run: after the first failure the others get
// the rendezvous timeout (plus a margin) to fail on their own with their message, then they
// are terminated.
struct Workers {
  std::vector<pid_t> pids;  // by rank; -1 once it exited
  int alive = 0;
  int code = 0;
  bool failed = false;  // a worker exited non-zero other than by an interrupt
  std::optional<std::chrono::steady_clock::time_point> deadline;
  std::chrono::milliseconds grace{0};
  bool terminated = false;

  // A worker's exit (pid of another child: ignored).
  void exited(pid_t pid, int wstatus) {
    int r = 0;
    const int n = static_cast<int>(pids.size());
    while (r < n && pids[r] != pid) ++r;
    if (r == n) return;
    signals::remove_child(pid);
    pids[r] = -1;
    --alive;
    // Exit status 130: the worker stopped on an interrupt after a checkpoint (lmx train's
    // own exit, not death by SIGINT); the others stop after the same step by themselves.
    const bool interrupted = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 130;
    const int status = exit_code(wstatus);
    if (status != 0 && (code == 0 || !failed)) code = status;
    if (status != 0 && !interrupted) {
      failed = true;
      if (!signals::interrupted())
        log::warn("launch", "rank {} failed ({}){}", r, describe(wstatus),
                  deadline || alive == 0
                      ? ""
                      : fmt::format("; the others get {:.0f}s to exit", std::chrono::duration<double>(grace).count()));
      if (!deadline) deadline = std::chrono::steady_clock::now() + grace;
    }
  }

  // Past the deadline: SIGTERM to the workers still running, SIGKILL 5 s later.
  void stop_stragglers() {
    if (!deadline || std::chrono::steady_clock::now() <= *deadline) return;
    for (size_t r = 0; r < pids.size(); ++r)
      if (pids[r] > 0) {
        log::warn("launch", "rank {} did not exit after a worker failed: {}", r,
                  terminated ? "killing it" : "terminating it");
        kill(pids[r], terminated ? SIGKILL : SIGCONT);
        if (!terminated) kill(pids[r], SIGTERM);
      }
    deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    terminated = true;
  }
};

// Starts nproc workers with torchrun's environment and waits for all of them.
Workers run_workers(const std::vector<std::string>& args, int nproc, int port) {
  Workers w;
  w.pids.assign(nproc, -1);
  w.alive = nproc;
  for (int r = 0; r < nproc; ++r) {
    const std::string rank = std::to_string(r), n = std::to_string(nproc);
    w.pids[r] = spawn_self(args, "", false,
                           {"RANK=" + rank, "LOCAL_RANK=" + rank, "WORLD_SIZE=" + n, "LOCAL_WORLD_SIZE=" + n,
                            "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port)});
  }
  w.grace = dist::timeout_from_env() + std::chrono::seconds(10);
  while (w.alive > 0) {
    int wstatus = 0;
    const pid_t pid = waitpid(-1, &wstatus, WNOHANG);
    if (pid > 0) {
      w.exited(pid, wstatus);
      continue;
    }
    if (pid < 0 && errno != EINTR) break;
    w.stop_stragglers();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return w;
}

}  // namespace

int run_launch(const LaunchOptions& o, const Globals& g) {
  if (o.command.empty() || o.command.front() != "train")
    throw InputError("lmx launch runs `train` only (the data-parallel verb)",
                     "lmx launch --nproc 2 -- train configs/textbook.yaml");
  const char* rank_set = std::getenv("RANK");
  if (rank_set && *rank_set)
    throw InputError("lmx launch: RANK is already set (inside torchrun or srun?)",
                     "run lmx train directly under the other launcher, or unset RANK and WORLD_SIZE");
  const int port = o.master_port > 0 ? o.master_port : free_port();
  std::vector<std::string> args = global_args(g);  // the global options reach every worker
  args.insert(args.end(), o.command.begin(), o.command.end());

  log::info("launch", "{} workers, rendezvous at 127.0.0.1:{}", o.nproc, port);
  signals::install();
  const Workers w = run_workers(args, o.nproc, port);
  // 130: the workers stopped on an interrupt (this launcher's, or one a scheduler sent to a
  // worker) and left a resumable checkpoint; not a failure.
  if (w.failed && !signals::interrupted())
    throw RuntimeError(fmt::format("lmx launch: a worker failed (exit code {}); see the rank errors above", w.code),
                       "with LMX_DIST_TIMEOUT=S the others give up after S seconds");
  return w.code;
}

void add_launch_command(CLI::App& app, Globals& g) {
  auto o = std::make_shared<LaunchOptions>();
  auto* cmd = app.add_subcommand(
      "launch", "Start N local data-parallel workers (as torchrun does): lmx launch --nproc 2 -- train CONFIG");
  cmd->add_option("--nproc", o->nproc, "worker processes (default 2)")->check(CLI::Range(1, 1024));
  cmd->add_option("--master-port", o->master_port, "rendezvous port on 127.0.0.1 (default: a free one)")
      ->check(CLI::Range(1, 65535));
  cmd->add_option("command", o->command, "the lmx verb and its arguments, after --")->required();
  on_run(cmd, g, o, run_launch);
}

}  // namespace lmx::cli
