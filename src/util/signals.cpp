#include "util/signals.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace lmx::signals {

// Why a thread of its own: a signal handler runs on the stack of whichever thread the kernel
// picks, at that thread's stack pointer. oneDNN's JIT sgemm kernels run with rsp pointing into
// heap memory (scripts/dev/signal_stack_probe.cpp: 295 of 2790 random signals during
// dnnl_sgemm found rsp in [heap]), so a handler landing there writes its frame, and its message
// array, over malloc's blocks: glibc's "corrupted size vs. prev_size" after Ctrl-C under load
// (issue 26). SIGINT / SIGTERM are blocked in every thread started from main() on, and one
// thread takes them with sigwait(), so no handler runs on a compute thread's stack.

namespace {
std::atomic<int> g_count{0};
std::atomic<bool> g_installed{false};
constexpr int kMaxChildren = 256;
std::atomic<int> g_children[kMaxChildren];  // 0 = free slot
int g_wake[2] = {-1, -1};                    // gets a byte at the first interrupt

// Writes in progress (WriteGuard) and the .tmp files they may leave, so that a second signal
// exits only between writes and removes what a write it waited too long for left behind.
std::mutex g_write_mutex;
std::condition_variable g_write_cv;
int g_writes = 0;
int g_spawns = 0;  // SpawnGuard: children being started
bool g_exiting = false;
std::vector<std::string> g_tmp_files;

void say(const char* msg) { (void)!write(STDERR_FILENO, msg, std::strlen(msg)); }

// The signals forwarded so far (their count and the last one), under the same lock as the
// forwarding and add_child: a child registered after a signal went out gets it then, exactly
// once (a sweep's run started while the signal came: a fork server's answer takes a few ms).
std::mutex g_children_mutex;
int g_forwarded = 0;
int g_last_signal = 0;

void forward(int sig) {
  std::lock_guard<std::mutex> lock(g_children_mutex);
  ++g_forwarded;
  g_last_signal = sig;
  for (auto& c : g_children) {
    const int pid = c.load();
    if (pid > 0) kill(pid, sig);
  }
}

// The registered children (sweep runs) got the same signals (forward) and leave the same way,
// each within its own 2 s. Waits for them, at most 3 s, without reaping them (WNOWAIT: the
// sweep's own wait does that), so that once this process has exited, no child is still
// writing: a sweep stopped by a second Ctrl-C leaves no .tmp behind.
void wait_for_children() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  for (auto& c : g_children) {
    const int pid = c.load();
    if (pid <= 0) continue;
    for (;;) {
      siginfo_t info{};
      if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == pid) break;
      if (std::chrono::steady_clock::now() > deadline) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

// Exit 130 once no write is in progress (at most 2 s: a write stuck on a dead disk does not
// keep Ctrl-C from working) and the children have exited, holding the lock so that no new
// write starts.
[[noreturn]] void exit_now(const char* msg) {
  std::unique_lock<std::mutex> lock(g_write_mutex);
  g_exiting = true;
  g_write_cv.wait_for(lock, std::chrono::seconds(2), [] { return g_writes == 0; });
  g_write_cv.wait_for(lock, std::chrono::seconds(10), [] { return g_spawns == 0; });
  wait_for_children();
  for (const auto& tmp : g_tmp_files) ::unlink(tmp.c_str());
  say(msg);
  _exit(130);
}

void on_signal(int sig) {
  forward(sig);
  if (!g_installed.load()) exit_now("\nlmx: interrupt before the job started: exiting\n");
  if (g_count.fetch_add(1) >= 1)
    exit_now("\nlmx: second interrupt: exiting now (results written so far are intact)\n");
  say("\nlmx: interrupt: finishing the current step, then saving (Ctrl-C again to quit now)\n");
  const char byte = 1;
  (void)!write(g_wake[1], &byte, 1);
}

pthread_t g_signal_thread;

// Runs only on a thread that was started before main() and so does not block the signals
// (OpenBLAS starts its pool in its library constructor): it hands the signal on to the signal
// thread (pthread_kill is async-signal-safe), whose sigwait takes it. It also makes the
// disposition something other than SIG_IGN: a shell starts background jobs with SIGINT
// ignored, and an ignored signal is discarded before sigwait could take it.
void relay(int sig) { pthread_kill(g_signal_thread, sig); }

// The first moments of the process, before main(): from the executable's .preinit_array (run
// after the dynamic loader has mapped and relocated the libraries, before any library's
// constructor), SIGINT and SIGTERM end the process with exit code 130 as they do until
// install() (nothing is being written yet). Only the loader's own work before this point
// (~0.2 s on the 2-core VM mapping and relocating the ~290 libraries Debian's LibTorch pulls in)
// still ends with the signal's default status: 143 for SIGTERM (130 for SIGINT, as a shell reads it).
void exit_while_starting(int) {
  say("\nlmx: interrupt while starting: exiting\n");
  _exit(130);
}

void preinit_handlers(int, char**, char**) {
  struct sigaction sa {};
  sa.sa_handler = exit_while_starting;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

void start() {
  static std::once_flag once;
  std::call_once(once, [] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    // In the calling thread (main, before any pool exists); every thread started later
    // (OpenMP, oneDNN, Gloo, this one) inherits the mask.
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    if (pipe2(g_wake, O_CLOEXEC | O_NONBLOCK) != 0) g_wake[0] = g_wake[1] = -1;
    std::thread waiter([set] {
      for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) == 0) on_signal(sig);
      }
    });
    g_signal_thread = waiter.native_handle();
    waiter.detach();
    struct sigaction sa {};
    sa.sa_handler = relay;
    sa.sa_mask = set;  // no nesting while relaying
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
  });
}
}  // namespace

// In lmx's executable only (a .preinit_array entry in a shared library is ignored).
__attribute__((section(".preinit_array"), used)) void (*const lmx_preinit_signals)(int, char**, char**) = preinit_handlers;

void install_early() { start(); }

void install() {
  start();
  g_installed = true;
}

bool interrupted() { return g_count.load() > 0; }

void reset() { g_count = 0; }

void raise_interrupt() { g_count.fetch_add(1); }

int wake_fd() { return g_wake[0]; }

void add_child(int pid) {
  std::lock_guard<std::mutex> lock(g_children_mutex);
  for (auto& c : g_children) {
    int expected = 0;
    if (c.compare_exchange_strong(expected, pid)) break;
  }
  // Started while the signals came: what the registered children got (a second one at most).
  for (int i = 0; i < std::min(g_forwarded, 2); ++i) kill(pid, g_last_signal);
}

void remove_child(int pid) {
  for (auto& c : g_children) {
    int expected = pid;
    if (c.compare_exchange_strong(expected, 0)) return;
  }
}

WriteGuard::WriteGuard(std::string tmp) : tmp_(std::move(tmp)) {
  std::unique_lock<std::mutex> lock(g_write_mutex);
  g_write_cv.wait(lock, [] { return !g_exiting; });  // exiting: this write never starts
  ++g_writes;
  if (!tmp_.empty()) g_tmp_files.push_back(tmp_);
}

WriteGuard::~WriteGuard() {
  std::lock_guard<std::mutex> lock(g_write_mutex);
  --g_writes;
  if (!tmp_.empty())
    for (auto it = g_tmp_files.begin(); it != g_tmp_files.end(); ++it)
      if (*it == tmp_) {
        g_tmp_files.erase(it);
        break;
      }
  g_write_cv.notify_all();
}

SpawnGuard::SpawnGuard() {
  std::unique_lock<std::mutex> lock(g_write_mutex);
  g_write_cv.wait(lock, [] { return !g_exiting; });  // exiting: no child starts
  ++g_spawns;
}

SpawnGuard::~SpawnGuard() {
  std::lock_guard<std::mutex> lock(g_write_mutex);
  --g_spawns;
  g_write_cv.notify_all();
}

}  // namespace lmx::signals
