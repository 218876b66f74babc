// LD_PRELOAD library for scripts/dev/startup_cost.sh: every process that loads it and whose
// executable's name starts with "lmx" (lmx, lmx_tests) appends a line to $LMX_COUNT_FILE with
// that name and its pid, when it starts (so processes that are killed count too). A line is
// one write(2) of a few bytes to a file opened with O_APPEND: lines of processes running side
// by side never interleave.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

__attribute__((constructor)) void count_start() {
  const char* file = std::getenv("LMX_COUNT_FILE");
  if (!file) return;
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return;
  exe[n] = '\0';
  const char* base = std::strrchr(exe, '/');
  base = base ? base + 1 : exe;
  if (std::strncmp(base, "lmx", 3) != 0) return;
  char line[128];
  const int len = std::snprintf(line, sizeof line, "%.64s %d\n", base, static_cast<int>(getpid()));
  const int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (write(fd, line, static_cast<size_t>(len)) < 0) {
  }
  close(fd);
}

}  // namespace
