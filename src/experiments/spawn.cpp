// Child lmx processes (sweep runs, lmx launch's workers): spawn_self and exit_code, declared in
// experiments/sweep.h.
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "experiments/sweep.h"
#include "util/error.h"
#include "util/fork_server.h"
#include "util/log.h"
#include "util/process.h"
#include "util/runtime.h"
#include "util/signals.h"

namespace lmx {

int spawn_self(const std::vector<std::string>& args, const std::string& log_path, bool append,
               const std::vector<std::string>& env, fork_server::Client* server) {
  // Until the child is registered (add_child), a second interrupt waits before exiting: it then
  // waits for this child too, which got the signals as every registered one did.
  signals::SpawnGuard starting;
  // argv[0] names the binary for ps and logs; the program comes from the file opened at start.
  std::vector<std::string> argv_s = {runtime::self_path()};
  const std::string exec_path = runtime::self_exec_path();
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  const std::vector<std::string> env_s = process::environment_with(env);
  if (server) {
    std::string why;
    const int pid = server->spawn(exec_path, argv_s, env_s, log_path, append, &why);
    if (pid > 0) {
      signals::add_child(pid);
      log::debug("sweep", "a run forked by the fork server: pid {}", pid);
      return pid;
    }
    if (!why.empty()) log::warn("sweep", "fork server: {}; starting each run with exec instead", why);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!log_path.empty()) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(),
                                     O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  }
  // The child starts with SIGINT / SIGTERM unblocked; its own main blocks them again for its
  // signal thread.
  pid_t pid = 0;
  const int rc = process::spawn_in_own_group(exec_path, argv_s, env_s, &actions, &pid);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw RuntimeError(fmt::format("cannot start {}: {}", argv_s[0], std::strerror(rc)));
  signals::add_child(pid);
  return pid;
}

int exit_code(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return 1;
}

}  // namespace lmx
