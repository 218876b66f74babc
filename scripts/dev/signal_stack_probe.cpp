// Where is a thread's stack pointer when a signal interrupts oneDNN's sgemm? (issue 26)
// A signal handler runs on the interrupted thread's stack, at its rsp. This probe runs
// dnnl_sgemm on lmx's linear-layer shapes while another thread sends SIGUSR1 at random
// intervals; the handler runs on an alternate stack and records the interrupted rsp, which is
// then classified against each thread's own stack and /proc/self/maps. Measured on the
// project's machine (oneDNN 2.6.3, 2 OpenMP threads, 5 s): 295 of 2790 signals found rsp in
// [heap], not on a stack; with 1 thread 5062 of 7726. Without the alternate stack the probe
// dies with glibc's "corrupted size vs. prev_size while consolidating", as lmx did.
//   g++ -O2 -std=c++17 -fopenmp scripts/dev/signal_stack_probe.cpp -o /tmp/probe -ldnnl
//   OMP_NUM_THREADS=2 /tmp/probe [ROWS=2048] [SECONDS=10]
#include <dnnl.h>
#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <thread>
#include <mutex>
#include <chrono>
#include <vector>
#include <fstream>
#include <string>
#include <sstream>

struct Hit { uintptr_t sp; pthread_t self; };
static Hit hits[1 << 16];
static std::atomic<int> nhits{0};
#include <ucontext.h>
#include <sys/mman.h>
static void handler(int, siginfo_t*, void* uc) {
  // On an alternate stack: read the interrupted thread's rsp from the saved context.
  const auto rsp = static_cast<ucontext_t*>(uc)->uc_mcontext.gregs[REG_RSP];
  int i = nhits.fetch_add(1);
  if (i < (1 << 16)) hits[i] = {static_cast<uintptr_t>(rsp), pthread_self()};
}
static void altstack() {
  stack_t ss{}; ss.ss_size = 1 << 16; ss.ss_sp = mmap(nullptr, ss.ss_size, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0);
  sigaltstack(&ss, nullptr);
}

int main(int argc, char** argv) {
  const int rows_arg = argc > 1 ? atoi(argv[1]) : 2048;
  const double seconds = argc > 2 ? atof(argv[2]) : 10;
  struct sigaction sa {};
  sa.sa_sigaction = handler; sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigaction(SIGUSR1, &sa, nullptr);
  std::map<pthread_t, std::pair<uintptr_t, uintptr_t>> bounds;
  std::mutex mu;
  auto record = [&] {
    pthread_attr_t a; pthread_getattr_np(pthread_self(), &a);
    void* addr; size_t size; pthread_attr_getstack(&a, &addr, &size);
    std::lock_guard<std::mutex> l(mu);
    bounds[pthread_self()] = {reinterpret_cast<uintptr_t>(addr), reinterpret_cast<uintptr_t>(addr) + size};
  };
  record(); altstack();
#pragma omp parallel
  { record(); altstack(); }
  // llama-ish shapes: rows x d, weights d_ff x d
  const int rows = rows_arg, d = 64, f = 192;
  std::vector<float> x(rows * f, 1.f), w(f * f, 0.5f), y(rows * f), dw(f * f);
  std::atomic<bool> stop{false};
  std::thread sender([&] {
    sigset_t s; sigemptyset(&s); sigaddset(&s, SIGUSR1); pthread_sigmask(SIG_BLOCK, &s, nullptr);
    unsigned r = 1;
    while (!stop) { r = r * 1103515245 + 12345; usleep(50 + r % 500); kill(getpid(), SIGUSR1); }
  });
  const auto t0 = std::chrono::steady_clock::now();
  long calls = 0;
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds) {
    // forward y = x W^T (row-major via column-major swap), and the weight gradient dW = dy^T x
    dnnl_sgemm('N', 'T', rows, f, d, 1.f, x.data(), d, w.data(), d, 0.f, y.data(), f);
    dnnl_sgemm('T', 'N', f, d, rows, 1.f, y.data(), f, x.data(), d, 0.f, dw.data(), d);
    dnnl_sgemm('N', 'N', rows, d, f, 1.f, y.data(), f, w.data(), d, 0.f, x.data(), d);
    calls += 3;
  }
  stop = true; sender.join();
  int n = std::min(nhits.load(), 1 << 16), off = 0;
  std::map<std::string,int> where;
  for (int i = 0; i < n; ++i) {
    auto it = bounds.find(hits[i].self);
    bool on = it != bounds.end() && hits[i].sp >= it->second.first && hits[i].sp < it->second.second;
    if (!on) {
      ++off;
      // which mapping holds it?
      std::ifstream maps("/proc/self/maps"); std::string line; std::string name = "?";
      while (std::getline(maps, line)) {
        unsigned long lo, hi; sscanf(line.c_str(), "%lx-%lx", &lo, &hi);
        if (hits[i].sp >= lo && hits[i].sp < hi) { auto p = line.find_last_of(' '); name = line.substr(p + 1); if (name.empty()) name = "[anon]"; break; }
      }
      where[name]++;
    }
  }
  printf("rows=%d calls=%ld signals=%d interrupted with rsp off the thread's stack=%d\n", rows, calls, n, off);
  for (auto& [k, v] : where) printf("  in %s: %d\n", k.c_str(), v);
}
