#include "util/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace lmx::log {

void init(int verbosity) {
  auto logger = spdlog::stderr_color_mt("lmx");
  logger->set_pattern("%^%L%$ %H:%M:%S %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(verbosity < 0 ? spdlog::level::warn
                    : verbosity > 0 ? spdlog::level::debug
                                    : spdlog::level::info);
}

bool quiet() { return spdlog::get_level() >= spdlog::level::warn; }

bool verbose() { return spdlog::get_level() <= spdlog::level::debug; }

}  // namespace lmx::log
