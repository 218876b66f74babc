// Shared test helpers: temporary files, running the lmx binary as a user would, and spawning
// it as a separate process to signal (interrupt and resume tests).
#pragma once
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <thread>
#include <vector>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "util/fork_server.h"
#include "util/process.h"

namespace lmx::test {

// n floats drawn from N(0, scale²) by std::mt19937(seed): the kernels' tests' inputs.
inline std::vector<float> normal_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

// A fresh temporary directory, removed at scope exit.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::random_device rd;
    path = std::filesystem::temp_directory_path() / ("lmx-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::error_code ec; std::filesystem::remove_all(path, ec); }
  std::string write(const std::string& name, const std::string& text) const {
    auto p = path / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

struct RunResult {
  int code = -1;
  std::string output;  // stdout and stderr together
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs a shell command line; stdout and stderr must be redirected by the caller as wanted.
inline RunResult run_shell(const std::string& cmd) {
  RunResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// The words of a shell command line as sh splits them, where it holds only words, blanks and
// quotes ('...', "..." without $, ` or \, a backslash outside quotes); false for anything else
// (redirections, pipes, variables, globs), which only a shell runs as written.
inline bool shell_words(const std::string& s, std::vector<std::string>& out) {
  out.clear();
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == ' ' || c == '\t') {
      if (in_word) out.push_back(word);
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      const size_t j = s.find('\'', i + 1);
      if (j == std::string::npos) return false;
      word += s.substr(i + 1, j - i - 1);
      i = j;
    } else if (c == '"') {
      size_t j = i + 1;
      for (; j < s.size() && s[j] != '"'; ++j)
        if (s[j] == '$' || s[j] == '`' || s[j] == '\\') return false;
      if (j == s.size()) return false;
      word += s.substr(i + 1, j - i - 1);
      i = j;
    } else if (c == '\\') {
      if (++i == s.size()) return false;
      word += s[i];
    } else if (std::strchr("|&;<>()$`*?[]{}~#!\n", c)) {
      return false;
    } else {
      word += c;
    }
  }
  if (in_word) out.push_back(word);
  return true;
}

// The fork server (util/fork_server.h) this test process starts lmx runs from: each run_lmx
// then costs what the command does, not lmx's ~0.7 s of loading LibTorch as well.
inline lmx::fork_server::Client& lmx_runs() {
  static lmx::fork_server::Client client;
  return client;
}

// Runs build/lmx with the given shell-quoted arguments from `dir` (default: the source root).
// env: "KEY=VALUE ..." set for this command only. Forked from the fork server (as a sweep starts
// its runs) where the arguments are plain words, else (or with LMX_FORK_SERVER=0) through sh.
inline RunResult run_lmx(const std::string& args, const std::string& dir = LMX_SOURCE_DIR, const std::string& env = "") {
  std::vector<std::string> words, sets;
  if (shell_words(args, words) && shell_words(env, sets)) {
    const std::vector<std::string> environment = lmx::process::environment_with(sets);
    std::string log = (std::filesystem::temp_directory_path() / "lmx-run-XXXXXX").string();
    const int fd = mkstemp(log.data());
    if (fd >= 0) {
      close(fd);
      words.insert(words.begin(), LMX_BINARY);
      std::string why;
      const pid_t pid = lmx_runs().spawn(LMX_BINARY, words, environment, log, false, &why, dir);
      if (pid > 0) {
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        RunResult r;
        r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        r.output = read_file(log);
        std::filesystem::remove(log);
        return r;
      }
      std::filesystem::remove(log);
    }
  }
  return run_shell("cd '" + dir + "' && " + env + (env.empty() ? "'" : " '") + LMX_BINARY + "' " + args + " 2>&1");
}


// metrics.csv without its tokens_per_s column (wall-clock dependent), for exact comparisons.
inline std::string metrics_without_speed(const std::string& path) {
  std::stringstream in(read_file(path)), out;
  std::string line;
  int speed = -1;
  for (bool header = true; std::getline(in, line); header = false) {
    std::stringstream ls(line);
    std::string c;
    for (int i = 0; std::getline(ls, c, ','); ++i) {
      if (header && c == "tokens_per_s") speed = i;
      if (i != speed) out << c << ",";
    }
    out << "\n";
  }
  return out.str();
}

inline std::string source_path(const std::string& rel) { return std::string(LMX_SOURCE_DIR) + "/" + rel; }

// Lines (newlines) in a file.
inline size_t lines(const std::string& path) {
  const std::string s = read_file(path);
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

// Starts build/lmx with args (no shell), output to log; returns the pid.
inline pid_t spawn_lmx(const std::vector<std::string>& args, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    // Not Catch's handlers: a signal before the exec must not make this copy of the test
    // binary report a failure of its own.
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    if (chdir(LMX_SOURCE_DIR) != 0) _exit(127);
    std::vector<char*> argv = {const_cast<char*>(LMX_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(LMX_BINARY, argv.data());
    _exit(127);
  }
  return pid;
}

// Exit code of a spawned process (128 + signal when killed).
inline int wait_exit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Whether a spawned process has ended, without reaping it (wait_exit still gets its status).
inline bool ended(pid_t pid) {
  siginfo_t info{};
  return waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

// Waits until `path` has at least n lines (or the process ended); false on timeout / exit. The
// limit is ctest's per-test one: a loaded machine is slow, not stuck.
inline bool wait_for_lines(const std::string& path, size_t n, pid_t pid, double timeout_s = 600) {
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < timeout_s) {
    if (std::filesystem::exists(path) && lines(path) >= n) return true;
    if (ended(pid)) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Children of pid (through /proc/<pid>/task/<tid>/children).
inline std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path() / "children");
    for (pid_t child; in >> child;) out.push_back(child);
  }
  return out;
}

// Sends sig to pid and every process below it, each before its children are listed: with
// SIGSTOP none of them can start another meanwhile.
inline void signal_tree(pid_t pid, int sig) {
  kill(pid, sig);
  for (pid_t child : children_of(pid)) signal_tree(child, sig);
}

// Freezes a running lmx and the runs it started (SIGSTOP) while a test checks what must hold as
// long as it runs (its lock): the check cannot race with the run's end, however fast the
// machine. thaw() continues them; a signal sent in between (kill(pid, SIGINT)) is delivered then.
inline void freeze(pid_t pid) { signal_tree(pid, SIGSTOP); }
inline void thaw(pid_t pid) { signal_tree(pid, SIGCONT); }

// Waits until lmx's main() has set up its signal handling (after the exec, which resets the
// test binary's: the executable is lmx and SigCgt has SIGTERM); false on timeout.
inline bool wait_for_signal_setup(pid_t pid, double timeout_s = 600) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string proc = "/proc/" + std::to_string(pid);
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < timeout_s) {
    std::error_code ec;
    const bool exec_done = std::filesystem::equivalent(std::filesystem::read_symlink(proc + "/exe", ec), LMX_BINARY, ec);
    std::ifstream st(proc + "/status");
    std::string line;
    while (exec_done && std::getline(st, line))
      if (line.rfind("SigCgt:", 0) == 0 && ((std::stoull(line.substr(7), nullptr, 16) >> (SIGTERM - 1)) & 1))
        return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

// Splits a command line at spaces (no quoting) into argv entries for spawn_lmx.
inline std::vector<std::string> split_args(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string a;
  while (ss >> a) out.push_back(a);
  return out;
}

}  // namespace lmx::test
