#include "cli/common.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include "config/fields.h"
#include "data/corpus.h"
#include "data/tokenizer.h"
#include "formats/checkpoint.h"
#include "train/summary.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/fork_server.h"
#include "util/log_sink.h"
#include "util/process.h"

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
    const auto v = strict_integer(item);
    if (!v || *v < INT_MIN || *v > INT_MAX)
      throw InputError(fmt::format("{} {}: '{}' is not a decimal integer (32-bit, no leading zeros)", flag, list, item),
                       "example: " + flag + " 0,1,2");
    out.push_back(static_cast<int>(*v));
  }
  return out;
}

std::vector<uint64_t> parse_seeds(const std::string& list, int n_seeds, long long global_seed) {
  std::vector<uint64_t> seeds;
  if (!list.empty()) {
    for (int v : parse_int_list("--seeds", list)) {
      if (v < 0) throw InputError(fmt::format("--seeds {}: seeds are non-negative", list));
      if (std::find(seeds.begin(), seeds.end(), static_cast<uint64_t>(v)) != seeds.end())
        throw InputError(fmt::format("--seeds {}: seed {} is given twice", list, v), "each seed runs once");
      seeds.push_back(static_cast<uint64_t>(v));
    }
    if (seeds.empty()) throw InputError(fmt::format("--seeds '{}': no seed given", list), "example: --seeds 0,1,2");
  } else {
    if (n_seeds > 10000) throw InputError(fmt::format("--n-seeds {}: at most 10000 seeds", n_seeds));
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
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw InputError(fmt::format("{}: is a file, not an output directory", dir), "choose another --out");
  const fs::path probe = fs::path(dir) / ".lmx-write-check";
  try {
    write_file_atomic(probe.string(), "ok\n");
  } catch (const Error& e) {
    throw InputError(fmt::format("{}: output directory is not writable ({})", dir, e.what()),
                     "choose another --out or fix its permissions / free space");
  }
  fs::remove(probe, ec);
}

namespace {
constexpr const char* kLockFile = process::kOutLockFile;
}  // namespace

void lock_out_dir(const std::string& dir) {
  static std::map<std::string, int> held;  // canonical directory -> open lock file (never closed)
  const std::string canon = fs::weakly_canonical(dir).string();
  if (held.count(canon)) return;
  const std::string path = (fs::path(dir) / kLockFile).string();
  // O_CLOEXEC: a sweep's child runs must not inherit (and so prolong) the sweep's lock.
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw InputError(fmt::format("{}: output directory is not writable ({}: {})", dir, kLockFile, std::strerror(errno)),
                     "choose another --out or fix its permissions / free space");
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {};
    const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    std::string pid(buf, n > 0 ? static_cast<size_t>(n) : 0);
    pid.erase(std::remove_if(pid.begin(), pid.end(), [](char c) { return c < '0' || c > '9'; }), pid.end());
    throw InputError(fmt::format("{}: in use by another lmx process{}", dir, pid.empty() ? "" : " (pid " + pid + ")"),
                     "two processes must not write one output folder: wait for it to end, or choose another --out");
  }
  const std::string me = std::to_string(getpid()) + "\n";
  // The pid is for the message above only; the flock is what excludes.
  if (ftruncate(fd, 0) == 0) (void)!pwrite(fd, me.data(), me.size(), 0);
  held[canon] = fd;
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
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw InputError(fmt::format("{}: --out names a file, not a directory", dir), "choose another --out");
  fs::create_directories(dir, ec);
  if (ec)
    throw InputError(fmt::format("{}: cannot create the output directory: {}", dir, ec.message()),
                     "choose another --out or fix its permissions");
  lock_out_dir(dir);  // before the emptiness check: of two processes started together, one wins
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().filename() != kLockFile)
      throw InputError(fmt::format("{}: output directory exists and is not empty", dir),
                       "choose another --out or remove it (an interrupted run continues with --resume)");
  check_writable(dir);
  open_folder_log(dir);
}

std::string sweep_out_dir(const std::string& resume, const std::string& out, const std::string& default_name) {
  fork_server::wanted();  // a bad LMX_FORK_SERVER fails before the folder is made
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
  lock_out_dir(resume);
  check_writable(resume);
  open_folder_log(resume);
  return resume;
}

void write_summary(const std::string& out, const Table& seeds) {
  write_file_atomic((fs::path(out) / "summary.csv").string(), with_aggregates(seeds).csv());
  const std::string md = summary_markdown(seeds);
  write_file_atomic((fs::path(out) / "summary.md").string(), md);
  std::cout << md;
}

void check_tokenizer(const Checkpoint& ck, const data::Corpus& corpus) {
  auto it = ck.metadata.find("tokenizer_hash");
  if (it == ck.metadata.end() || !corpus.vocab.tokenizer) return;
  if (it->second != corpus.vocab.tokenizer->hash())
    throw InputError(fmt::format("{}: the tokenizer file {} has changed since the checkpoint was written (hash {}, "
                                 "now {})", ck.path, corpus.vocab.tokenizer->path(), it->second,
                                 corpus.vocab.tokenizer->hash()),
                     "restore the tokenizer model the run was trained with");
}

}  // namespace lmx::cli
