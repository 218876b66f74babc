// Logging on stderr, every line "L HH:MM:SS [area] message" (L: D, I, W or E; the letter
// colored when stderr is a terminal), and in log files with the date (--log-file, lmx.log in
// every output folder). Results go to stdout. The messages are formatted here with the fmt
// lmx's layers see; spdlog writes them behind a string-only interface in a library of its own
// (util/log_sink.h), so a LibTorch that bundles another fmt (pip wheels of torch 2.x) never
// meets the fmt Debian's spdlog was built with.
#pragma once
#include <fmt/format.h>

#include <string_view>

namespace lmx::log {

enum class Level { Debug = 0, Info = 1, Warn = 2, Error = 3 };

// verbosity: -1 quiet (warnings and errors), 0 normal, 1 verbose (debug).
void init(int verbosity);
void set_level(Level level);
Level level();
bool verbose();
bool quiet();

// One whole line to stderr (thread-safe).
void write(Level level, std::string_view area, std::string_view message);

template <class... A>
void debug(std::string_view area, fmt::format_string<A...> f, A&&... a) {
  if (level() <= Level::Debug) write(Level::Debug, area, fmt::format(f, std::forward<A>(a)...));
}
template <class... A>
void info(std::string_view area, fmt::format_string<A...> f, A&&... a) {
  if (level() <= Level::Info) write(Level::Info, area, fmt::format(f, std::forward<A>(a)...));
}
template <class... A>
void warn(std::string_view area, fmt::format_string<A...> f, A&&... a) {
  if (level() <= Level::Warn) write(Level::Warn, area, fmt::format(f, std::forward<A>(a)...));
}

}  // namespace lmx::log
