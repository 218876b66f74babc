#include "cli/common.h"

#include <fmt/format.h>

#include <ctime>
#include <filesystem>
#include <sstream>

#include "util/csv.h"
#include "util/error.h"
#include "util/log_sink.h"

namespace fs = std::filesystem;

namespace lmx::cli {

std::vector<std::string> parse_list(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<int> parse_int_list(const std::string& flag, const std::string& list) {
  std::vector<int> out;
  for (const auto& item : parse_list(list)) {
    try {
      size_t used = 0;
      const int v = std::stoi(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      throw InputError(fmt::format("{} {}: '{}' is not an integer", flag, list, item), "example: " + flag + " 0,1,2");
    }
  }
  return out;
}

std::vector<uint64_t> parse_seeds(const std::string& list, int n_seeds, long long global_seed) {
  std::vector<uint64_t> seeds;
  if (!list.empty()) {
    for (int v : parse_int_list("--seeds", list)) {
      if (v < 0) throw InputError(fmt::format("--seeds {}: seeds are non-negative", list));
      seeds.push_back(static_cast<uint64_t>(v));
    }
  } else {
    const uint64_t base = global_seed >= 0 ? static_cast<uint64_t>(global_seed) : 0;
    for (int i = 0; i < std::max(1, n_seeds); ++i) seeds.push_back(base + i);
  }
  return seeds;
}

std::string default_out_dir(const std::string& name) {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::localtime(&now));
  return (fs::path("runs") / name / buf).string();
}

void check_writable(const std::string& dir) {
  const fs::path probe = fs::path(dir) / ".lmx-write-check";
  try {
    write_file_atomic(probe.string(), "ok\n");
  } catch (const Error& e) {
    throw InputError(fmt::format("{}: output directory is not writable ({})", dir, e.what()),
                     "choose another --out or fix its permissions / free space");
  }
  std::error_code ec;
  fs::remove(probe, ec);
}

void open_folder_log(const std::string& dir) {
  const std::string path = (fs::path(dir) / "lmx.log").string();
  const std::string why = log_sink::open_file(path, true);
  if (!why.empty()) throw InputError(fmt::format("{}: cannot open the log file: {}", path, why));
}

void check_free_space(const std::string& dir, double needed_bytes, const std::string& what) {
  std::error_code ec;
  const auto info = fs::space(dir, ec);
  if (ec) return;  // unknown: the atomic writes still report a full disk
  const double free = static_cast<double>(info.available);
  if (free >= needed_bytes) return;
  throw InputError(fmt::format("{}: {} need about {:.1f} MiB but only {:.1f} MiB are free", dir, what,
                               needed_bytes / (1024.0 * 1024), free / (1024.0 * 1024)),
                   "free some disk space or choose another --out");
}

void prepare_out_dir(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_empty(dir, ec))
    throw InputError(fmt::format("{}: output directory exists and is not empty", dir),
                     "choose another --out or remove it (an interrupted run continues with --resume)");
  fs::create_directories(dir, ec);
  if (ec)
    throw InputError(fmt::format("{}: cannot create the output directory: {}", dir, ec.message()),
                     "choose another --out or fix its permissions");
  check_writable(dir);
  open_folder_log(dir);
}

std::string sweep_out_dir(const std::string& resume, const std::string& out, const std::string& default_name) {
  if (resume.empty()) {
    const std::string dir = out.empty() ? default_out_dir(default_name) : out;
    prepare_out_dir(dir);
    return dir;
  }
  if (!out.empty() && fs::path(out) != fs::path(resume))
    throw InputError("--resume DIR and --out name different directories", "give only --resume DIR");
  if (!fs::is_directory(fs::path(resume) / "runs"))
    throw InputError(fmt::format("{}: not an lmx sweep output directory (no runs/)", resume),
                     "give the --out directory of the interrupted run");
  check_writable(resume);
  open_folder_log(resume);
  return resume;
}

}  // namespace lmx::cli
