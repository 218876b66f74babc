// Child lmx processes (sweep runs, lmx launch's workers): spawn_self and exit_code, declared in
// experiments/sweep.h.
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "experiments/sweep.h"
#include "util/error.h"
#include "util/fork_server.h"
#include "util/log.h"
#include "util/runtime.h"
#include "util/signals.h"

extern char** environ;

namespace lmx {

int spawn_self(const std::vector<std::string>& args, const std::string& log_path, bool append,
               const std::vector<std::string>& env, fork_server::Client* server) {
  // Until the child is registered (add_child), a second interrupt waits before exiting: it then
  // waits for this child too, which got the signals as every registered one did.
  signals::WriteGuard starting;
  // argv[0] names the binary for ps and logs; the program comes from the file opened at start.
  std::vector<std::string> argv_s = {runtime::self_path()};
  const std::string exec_path = runtime::self_exec_path();
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  // This environment, with env's keys replaced; built here, not between fork and exec.
  std::vector<std::string> env_s = env;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const std::string key = entry.substr(0, entry.find('=') + 1);
    if (std::none_of(env.begin(), env.end(), [&](const std::string& x) { return x.rfind(key, 0) == 0; }))
      env_s.push_back(entry);
  }
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
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
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!log_path.empty()) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(),
                                     O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // The child starts with SIGINT / SIGTERM unblocked (this process blocks them in every
  // thread, and exec keeps the mask); its own main blocks them again for its signal thread.
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exec_path.c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
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
