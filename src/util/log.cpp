#include "util/log.h"

#include <atomic>
#include <string>

#include "util/log_sink.h"

namespace lmx::log {

namespace {
std::atomic<int> g_level{static_cast<int>(Level::Info)};
}  // namespace

void init(int verbosity) {
  set_level(verbosity < 0 ? Level::Warn : verbosity > 0 ? Level::Debug : Level::Info);
}

void set_level(Level l) { g_level.store(static_cast<int>(l)); }
Level level() { return static_cast<Level>(g_level.load()); }
bool quiet() { return level() >= Level::Warn; }
bool verbose() { return level() <= Level::Debug; }

void write(Level l, std::string_view area, std::string_view message) {
  log_sink::write(static_cast<int>(l), fmt::format("[{}] {}", area, message));
}

}  // namespace lmx::log
