// A run's status: what result.csv, summary.csv and a checkpoint's metadata say of a seed.
// The names are the files' vocabulary; code holds the enum and compares values.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace lmx {

enum class RunStatus {
  Ok,           // trained to the last step and tested
  Diverged,     // stopped at a non-finite loss (the message says where)
  Interrupted,  // stopped by a signal; resumable from its checkpoint
  Running,      // a periodic checkpoint of a run still training; resumable
};

// "ok", "diverged", "interrupted", "running".
const std::string& status_name(RunStatus s);
// The status a name stands for; nullopt for an empty or unknown one (a cell of a foreign file).
std::optional<RunStatus> parse_status(std::string_view name);

// Trained to its end (ok) or stopped for good (diverged): a checkpoint with no optimizer state.
inline bool finished(RunStatus s) { return s == RunStatus::Ok || s == RunStatus::Diverged; }
// A checkpoint that holds optimizer state and continues with --resume.
inline bool resumable(RunStatus s) { return s == RunStatus::Interrupted || s == RunStatus::Running; }
// A cell that names `s`.
inline bool is_status(std::string_view cell, RunStatus s) { return parse_status(cell) == s; }

}  // namespace lmx
