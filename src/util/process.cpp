#include "util/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

extern char** environ;

namespace lmx::process {

std::vector<std::string> environment_with(const std::vector<std::string>& overrides) {
  std::vector<std::string> env = overrides;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const std::string key = entry.substr(0, entry.find('=') + 1);
    if (std::none_of(overrides.begin(), overrides.end(), [&](const std::string& x) { return x.rfind(key, 0) == 0; }))
      env.push_back(entry);
  }
  return env;
}

int spawn_in_own_group(const std::string& path, const std::vector<std::string>& argv,
                       const std::vector<std::string>& env, const posix_spawn_file_actions_t* actions, pid_t* pid) {
  // Built here, not between fork and exec.
  std::vector<std::string> argv_s = argv, env_s = env;
  std::vector<char*> argv_p, env_p;
  for (auto& a : argv_s) argv_p.push_back(a.data());
  argv_p.push_back(nullptr);
  for (auto& e : env_s) env_p.push_back(e.data());
  env_p.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attr, 0);
  const int rc = posix_spawn(pid, path.c_str(), actions, &attr, argv_p.data(), env_p.data());
  posix_spawnattr_destroy(&attr);
  return rc;
}

bool wait_until_unlocked(const std::string& dir, double seconds) {
  const std::string path = dir + "/" + kOutLockFile;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;  // no lock file: nobody wrote there
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  bool free = false;
  while (!(free = flock(fd, LOCK_EX | LOCK_NB) == 0) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (free) flock(fd, LOCK_UN);
  ::close(fd);
  return free;
}

}  // namespace lmx::process
