// Starting child processes: the environment a child gets, and posix_spawn into a process group
// of its own (a terminal's Ctrl-C then reaches only the parent, which forwards it: util/signals.h).
#pragma once

#include <spawn.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace lmx::process {

// This process's environment with the "KEY=VALUE" entries of `overrides` added or replacing
// the same keys.
std::vector<std::string> environment_with(const std::vector<std::string>& overrides);

// posix_spawn of path in a new process group, with the signal mask empty (this process blocks
// SIGINT / SIGTERM in every thread, and exec keeps the mask). Returns posix_spawn's code.
int spawn_in_own_group(const std::string& path, const std::vector<std::string>& argv,
                       const std::vector<std::string>& env, const posix_spawn_file_actions_t* actions, pid_t* pid);

// The lock file every lmx process holds (flock) in the run or sweep folder it writes
// (cli/common.h lock_out_dir).
inline constexpr const char* kOutLockFile = ".lmx.lock";

// Waits until no process holds dir's lock file, at most `seconds` (polling): true when it is
// free or there is none. A sweep resumed right after a second Ctrl-C can find a run of the
// stopped sweep still ending (a run that took both interrupts as one finishes its step, or its
// last evaluation, and writes its results), and must not clear or restart its folder meanwhile.
bool wait_until_unlocked(const std::string& dir, double seconds);

}  // namespace lmx::process
