#include "log_sink.h"  // no include folder of lmx's layers

#include <spdlog/logger.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <memory>
#include <mutex>

namespace lmx::log_sink {

namespace {

struct Sinks {
  std::mutex mutex;
  std::shared_ptr<spdlog::logger> console, log_file, run_file;
};

Sinks& sinks() {
  static Sinks s;
  return s;
}

std::shared_ptr<spdlog::logger> make(const std::string& name, spdlog::sink_ptr sink, const std::string& pattern) {
  auto logger = std::make_shared<spdlog::logger>(name, std::move(sink));
  logger->set_pattern(pattern);
  logger->set_level(spdlog::level::trace);  // util/log.h filters by level
  logger->flush_on(spdlog::level::trace);   // a killed run keeps every line
  return logger;
}

spdlog::level::level_enum to_spdlog(int level) {
  switch (level) {
    case 0: return spdlog::level::debug;
    case 1: return spdlog::level::info;
    case 2: return spdlog::level::warn;
    default: return spdlog::level::err;
  }
}

}  // namespace

void write(int level, const std::string& text) {
  Sinks& s = sinks();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.console) {
    auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_st>(spdlog::color_mode::automatic);
    sink->set_color(spdlog::level::debug, sink->cyan);
    s.console = make("lmx", sink, "%^%L%$ %H:%M:%S %v");
  }
  const auto l = to_spdlog(level);
  // One time stamp for every sink: a line never reads 12:00:00 on stderr and 12:00:01 in a file.
  const auto now = spdlog::log_clock::now();
  s.console->log(now, spdlog::source_loc{}, l, text);
  for (auto* f : {&s.log_file, &s.run_file})
    if (*f) (*f)->log(now, spdlog::source_loc{}, l, text);
}

std::string open_file(const std::string& path, bool run_folder) {
  std::shared_ptr<spdlog::logger> logger;
  try {
    logger = make(path, std::make_shared<spdlog::sinks::basic_file_sink_st>(path, /*truncate=*/false),
                  "%Y-%m-%d %H:%M:%S.%e %L %v");
  } catch (const spdlog::spdlog_ex& e) {
    return e.what();
  }
  Sinks& s = sinks();
  std::lock_guard<std::mutex> lock(s.mutex);
  (run_folder ? s.run_file : s.log_file) = logger;
  return "";
}

}  // namespace lmx::log_sink
