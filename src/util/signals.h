// SIGINT / SIGTERM: the first asks the running job to stop at the next step boundary (it
// then checkpoints and writes its results); a second one exits at once with code 130.
// Child processes registered with add_child (sweep runs, in their own process group so a
// terminal's Ctrl-C reaches only the parent) get every signal forwarded.
//
// The signals are blocked in every thread and taken by one thread of their own (sigwait), so
// no handler ever runs on a compute thread's stack (signals.cpp says why that matters).
#pragma once

#include <string>

namespace lmx::signals {

void install();        // idempotent
// Until install(): SIGINT and SIGTERM end the process at once with exit code 130 (nothing is
// being written that an atomic write would not protect), so both read the same to a caller.
// Call first thing in main, before any other thread exists: threads inherit the mask.
void install_early();
bool interrupted();    // a first signal has arrived
void reset();          // for tests
void raise_interrupt();  // fault injection: as if a first signal had arrived (no message)
// A descriptor that becomes readable at the first signal (poll it beside a blocking wait);
// -1 before install_early / install.
int wake_fd();

// Forward SIGINT / SIGTERM to this process from now on, and the ones forwarded before it was
// added (it started while they came) now.
void add_child(int pid);
void remove_child(int pid);

// Held around every result or checkpoint write: a second signal exits only when no write is
// in progress (waiting at most 2 s), and removes `tmp` (the write's temporary file) if the
// write is still going then. So an interrupt never leaves a half line or a .tmp file behind.
class WriteGuard {
 public:
  explicit WriteGuard(std::string tmp = "");
  ~WriteGuard();
  WriteGuard(const WriteGuard&) = delete;
  WriteGuard& operator=(const WriteGuard&) = delete;

 private:
  std::string tmp_;
};

// Held while a child is being started, until add_child has registered it: a second signal then
// waits for the start (at most 10 s, not a write's 2 s: a fork server's reply can take longer on
// a loaded machine), so the new child gets the signals (add_child replays them) and is waited
// for like every registered one. With a write's 2 s the sweep could exit first, and a run
// started after it would never be signalled.
class SpawnGuard {
 public:
  SpawnGuard();
  ~SpawnGuard();
  SpawnGuard(const SpawnGuard&) = delete;
  SpawnGuard& operator=(const SpawnGuard&) = delete;
};

}  // namespace lmx::signals
