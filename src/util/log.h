// Logging: spdlog on stderr, every line tagged with its [area]. Results go to stdout.
#pragma once
#include <spdlog/spdlog.h>
#include <string_view>

namespace lmx::log {

// verbosity: -1 quiet (warnings and errors), 0 normal, 1 verbose (debug).
void init(int verbosity);
bool verbose();
bool quiet();

template <class... A>
void info(std::string_view area, fmt::format_string<A...> f, A&&... a) {
  spdlog::info("[{}] {}", area, fmt::format(f, std::forward<A>(a)...));
}
template <class... A>
void debug(std::string_view area, fmt::format_string<A...> f, A&&... a) {
  spdlog::debug("[{}] {}", area, fmt::format(f, std::forward<A>(a)...));
}
template <class... A>
void warn(std::string_view area, fmt::format_string<A...> f, A&&... a) {
  spdlog::warn("[{}] {}", area, fmt::format(f, std::forward<A>(a)...));
}

}  // namespace lmx::log
