#include "util/fork_server.h"

#include "util/env.h"
#include "util/error.h"
#include "util/process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace lmx::fork_server {

namespace {

constexpr const char* kFdVar = "LMX_FORK_SERVER_FD";
// The reply when the middle process ended without saying whether the run started.
constexpr int32_t kNoAnswer = INT32_MIN;

// To the socket (send: a closed peer is an error, not SIGPIPE) or a pipe (write).
bool write_all(int fd, const void* data, size_t n, bool socket = true) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = socket ? ::send(fd, p, n, MSG_NOSIGNAL) : ::write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool read_all(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t k = ::read(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// A request: its strings, each as its length (uint32) and bytes, after their count.
bool send_strings(int fd, const std::vector<std::string>& items) {
  std::string buf;
  auto put = [&](uint32_t v) { buf.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(static_cast<uint32_t>(items.size()));
  for (const auto& s : items) {
    put(static_cast<uint32_t>(s.size()));
    buf += s;
  }
  return write_all(fd, buf.data(), buf.size());
}

bool recv_strings(int fd, std::vector<std::string>& items) {
  uint32_t n = 0;
  if (!read_all(fd, &n, sizeof n)) return false;
  items.assign(n, {});
  for (auto& s : items) {
    uint32_t len = 0;
    if (!read_all(fd, &len, sizeof len)) return false;
    s.resize(len);
    if (len > 0 && !read_all(fd, s.data(), len)) return false;
  }
  return true;
}

// The run, in the process forked for it: its own process group, output, environment and an
// empty signal mask (as spawn_self's posix_spawn gives it), then main_fn as main() would run.
// sock and pipe_fd: the server's socket and the middle process's pipe, which the run does not keep.
[[noreturn]] void run_forked(int (*main_fn)(int, char**), std::vector<std::string>& args,
                             const std::vector<std::string>& env, int log_fd, int sock, int pipe_fd) {
  setpgid(0, 0);
  if (log_fd >= 0) {
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    if (log_fd > STDERR_FILENO) close(log_fd);
  }
  close(sock);
  close(pipe_fd);
  clearenv();
  // putenv keeps the pointers: the strings live as long as the process.
  static std::vector<std::string> env_store;
  env_store = env;
  for (auto& e : env_store) putenv(e.data());
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  static std::vector<char*> argv;
  argv.clear();
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int code = main_fn(static_cast<int>(args.size()), argv.data());
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  std::exit(code);  // the sanitizers' checks at exit (LeakSanitizer's) run as in any lmx process
#else
  // Not exit(): its static destructors (LibTorch deregisters every operator, frees its tables)
  // write to pages this process shares with the server, which copies each: they took ~0.6 s of
  // CPU a run (more than the run itself in a small sweep) against ~0.07 s in an exec'd process.
  // What they would flush is flushed here (std::cout writes through stdio; the log sinks flush
  // every line); the kernel closes the files.
  std::fflush(nullptr);
  _exit(code);
#endif
}

// One request: [append, log_path, cwd, argc, argv..., env...]. Forks a middle process that
// changes to cwd (when given), opens the log, forks the run and exits, so that the run is
// reparented to the client (its subreaper). Replies with the run's pid, or -errno.
void serve_one(int sock, int (*main_fn)(int, char**), std::vector<std::string>& req) {
  int32_t reply = -EINVAL;
  int pipe_fds[2];
  if (req.size() < 4 || pipe2(pipe_fds, O_CLOEXEC) != 0) {
    write_all(sock, &reply, sizeof reply);
    return;
  }
  const bool append = req[0] == "1";
  const std::string log_path = req[1], cwd = req[2];
  const size_t argc = std::strtoul(req[3].c_str(), nullptr, 10);
  std::vector<std::string> args(req.begin() + 4, req.begin() + 4 + std::min(argc, req.size() - 4));
  const std::vector<std::string> env(req.begin() + 4 + args.size(), req.end());
  const pid_t middle = fork();
  if (middle == 0) {
    close(pipe_fds[0]);
    int log_fd = -1;
    int32_t result = 0;
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) result = -errno;
    if (result == 0 && !log_path.empty()) {
      log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0644);
      if (log_fd < 0) result = -errno;
    }
    if (result == 0) {
      const pid_t run = fork();
      if (run == 0) run_forked(main_fn, args, env, log_fd, sock, pipe_fds[1]);
      if (run > 0) setpgid(run, run);  // set on both sides: no window where a kill(-pid) misses it
      result = run > 0 ? run : -errno;
    }
    write_all(pipe_fds[1], &result, sizeof result, /*socket=*/false);
    _exit(0);
  }
  close(pipe_fds[1]);
  if (middle < 0) {
    reply = -errno;
  } else {
    if (!read_all(pipe_fds[0], &reply, sizeof reply)) reply = kNoAnswer;
    int status = 0;
    while (waitpid(middle, &status, 0) < 0 && errno == EINTR) {
    }
  }
  close(pipe_fds[0]);
  write_all(sock, &reply, sizeof reply);
}

}  // namespace

void serve_if_asked(int (*main_fn)(int, char**)) {
  const char* var = env::get("LMX_FORK_SERVER_FD");
  if (!var) return;
  const int sock = std::atoi(var);
  unsetenv(kFdVar);
  struct stat st {};
  if (sock <= STDERR_FILENO || fstat(sock, &st) != 0 || !S_ISSOCK(st.st_mode)) return;  // not ours
  std::vector<std::string> req;
  while (recv_strings(sock, req)) serve_one(sock, main_fn, req);
  _exit(0);  // the client is gone (it closed the connection, or exited)
}

bool wanted() {
  const std::string v = env::text("LMX_FORK_SERVER");
  if (!v.empty() && v != "0" && v != "1")
    throw InputError("LMX_FORK_SERVER=" + v + ": expected 0 or 1", "unset it for the default (runs forked)");
  return v != "0";
}

Client::Client() : failed_(!wanted()) {}

Client::~Client() { stop(); }

void Client::stop() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  if (pid_ > 0) {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = -1;
}

bool Client::start(const std::string& exec_path, std::string* why) {
#ifdef PR_SET_CHILD_SUBREAPER
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    *why = std::string("cannot become the runs' subreaper: ") + std::strerror(errno);
    return false;
  }
#else
  *why = "no PR_SET_CHILD_SUBREAPER on this system";
  return false;
#endif
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    *why = std::string("socketpair: ") + std::strerror(errno);
    return false;
  }
  const std::vector<std::string> env =
      process::environment_with({std::string(kFdVar) + "=" + std::to_string(sv[1])});
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, sv[1], sv[1]);  // the same descriptor, without O_CLOEXEC
  // Its own process group: a terminal's Ctrl-C reaches the client, which forwards it to the runs.
  pid_t pid = 0;
  const int rc = process::spawn_in_own_group(exec_path, {"lmx-fork-server"}, env, &actions, &pid);
  posix_spawn_file_actions_destroy(&actions);
  close(sv[1]);
  if (rc != 0) {
    close(sv[0]);
    *why = std::string("cannot start it: ") + std::strerror(rc);
    return false;
  }
  fd_ = sv[0];
  pid_ = pid;
  return true;
}

int Client::spawn(const std::string& exec_path, const std::vector<std::string>& argv,
                  const std::vector<std::string>& env, const std::string& log_path, bool append, std::string* why,
                  const std::string& cwd) {
  if (failed_) return -1;
  if (fd_ < 0 && !start(exec_path, why)) {
    failed_ = true;
    return -1;
  }
  std::vector<std::string> req = {append ? "1" : "0", log_path, cwd, std::to_string(argv.size())};
  req.insert(req.end(), argv.begin(), argv.end());
  req.insert(req.end(), env.begin(), env.end());
  int32_t reply = 0;
  if (!send_strings(fd_, req) || !read_all(fd_, &reply, sizeof reply) || reply == kNoAnswer) {
    *why = "it stopped answering";
    failed_ = true;
    stop();
    return -1;
  }
  if (reply < 0) return -1;  // this run only (its log cannot be opened): the caller's own start says why
  return reply;
}

}  // namespace lmx::fork_server
