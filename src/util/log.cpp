#include "util/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <string>

namespace lmx::log {

namespace {
std::atomic<int> g_level{static_cast<int>(Level::Info)};
std::mutex g_mutex;
}  // namespace

void init(int verbosity) {
  set_level(verbosity < 0 ? Level::Warn : verbosity > 0 ? Level::Debug : Level::Info);
}

void set_level(Level l) { g_level.store(static_cast<int>(l)); }
Level level() { return static_cast<Level>(g_level.load()); }
bool quiet() { return level() >= Level::Warn; }
bool verbose() { return level() <= Level::Debug; }

void write(Level l, std::string_view area, std::string_view message) {
  static const bool color = ::isatty(STDERR_FILENO) == 1;
  static const char* letters = "DIWE";
  static const char* colors[] = {"\033[36m", "\033[32m", "\033[33m\033[1m", "\033[31m\033[1m"};
  const int i = static_cast<int>(l);
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  std::string line = color ? fmt::format("{}{}\033[m", colors[i], letters[i]) : std::string(1, letters[i]);
  line += fmt::format(" {:02}:{:02}:{:02} [{}] {}\n", tm.tm_hour, tm.tm_min, tm.tm_sec, area, message);
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace lmx::log
