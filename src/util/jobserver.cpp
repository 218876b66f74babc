#include "util/jobserver.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "util/env.h"
#include "util/error.h"
#include "util/signals.h"

namespace lmx {

std::optional<Jobserver> Jobserver::from_env() {
  const char* path = env::get("LMX_JOBSERVER");
  if (!path || !*path) return std::nullopt;
  return std::optional<Jobserver>(std::in_place, path);
}

Jobserver::Jobserver(const std::string& path) : path_(path) {
  struct stat st {};
  const bool exists = stat(path.c_str(), &st) == 0;
  if (!exists || !S_ISFIFO(st.st_mode))
    throw InputError(fmt::format("LMX_JOBSERVER={}: {}", path, exists ? "not a named pipe" : std::strerror(errno)),
                     "unset LMX_JOBSERVER, or point it at a pipe made by mkfifo holding one byte per slot");
  // Read-write: opening never blocks, and the pipe keeps its bytes while this process runs.
  fd_ = open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0)
    throw InputError(fmt::format("LMX_JOBSERVER={}: cannot open: {}", path, std::strerror(errno)));
}

Jobserver::Jobserver(Jobserver&& other) noexcept : path_(std::move(other.path_)), fd_(other.fd_), held_(other.held_) {
  other.fd_ = -1;
  other.held_ = 0;
}

Jobserver::~Jobserver() {
  while (held_ > 0) release();
  if (fd_ >= 0) close(fd_);
}

bool Jobserver::try_acquire() {
  char token;
  for (;;) {
    const ssize_t n = read(fd_, &token, 1);
    if (n == 1) {
      ++held_;
      return true;
    }
    if (n < 0 && errno == EINTR) continue;
    return false;  // EAGAIN: none free now
  }
}

void Jobserver::wait(int timeout_ms) {
  // The interrupt's descriptor too: SIGINT no longer interrupts poll (it is blocked in this
  // thread and taken by the signal thread), so the first one must end the wait this way.
  pollfd p[2] = {{fd_, POLLIN, 0}, {signals::wake_fd(), POLLIN, 0}};
  poll(p, signals::wake_fd() >= 0 ? 2 : 1, timeout_ms);
}

void Jobserver::release() {
  if (held_ <= 0) return;
  const char token = '+';
  for (;;) {
    const ssize_t n = write(fd_, &token, 1);
    if (n == 1 || (n < 0 && errno != EINTR)) break;
  }
  --held_;
}

}  // namespace lmx
