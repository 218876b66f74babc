#include "util/signals.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <csignal>

namespace lmx::signals {

namespace {
std::atomic<int> g_count{0};
constexpr int kMaxChildren = 256;
std::atomic<int> g_children[kMaxChildren];  // 0 = free slot

void forward(int sig) {
  for (auto& c : g_children) {
    const int pid = c.load();
    if (pid > 0) kill(pid, sig);
  }
}

void handler(int sig) {
  forward(sig);
  if (g_count.fetch_add(1) >= 1) {
    const char msg[] = "\nlmx: second interrupt: exiting now (results written so far are intact)\n";
    (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
    _exit(130);
  }
  const char msg[] = "\nlmx: interrupt: finishing the current step, then saving (Ctrl-C again to quit now)\n";
  (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
}
void early_handler(int) {
  const char msg[] = "\nlmx: interrupt before the job started: exiting\n";
  (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
  _exit(130);
}
}  // namespace

void install_early() {
  struct sigaction sa {};
  sa.sa_handler = early_handler;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

void install() {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool interrupted() { return g_count.load() > 0; }

void reset() { g_count = 0; }

void raise_interrupt() { g_count.fetch_add(1); }

void add_child(int pid) {
  for (auto& c : g_children) {
    int expected = 0;
    if (c.compare_exchange_strong(expected, pid)) return;
  }
}

void remove_child(int pid) {
  for (auto& c : g_children) {
    int expected = pid;
    if (c.compare_exchange_strong(expected, 0)) return;
  }
}

}  // namespace lmx::signals
