// Where log lines go: stderr and log files, by spdlog. Built as its own library (lmxlog,
// CMakeLists.txt) that links Debian's spdlog and never sees LibTorch's include folders, so a
// LibTorch that bundles another fmt cannot clash with the fmt spdlog was built with. Only
// strings cross this interface; util/log.h formats with whatever fmt lmx's layers see.
#pragma once
#include <string>

namespace lmx::log_sink {

// One line: level 0..3 (debug, info, warning, error) and the text after the level letter and
// time, e.g. "[train] seed 0: ...". stderr shows "L HH:MM:SS text" (the letter colored on a
// terminal); every open log file "YYYY-mm-dd HH:MM:SS.mmm L text". Thread-safe; flushed per line.
void write(int level, const std::string& text);

// Opens (appends to) a log file; every later line is also written there, with the date.
// "" on success, else why it cannot be opened. run_folder: the log of the current output
// folder, which replaces the previous run folder's (--log-file is not replaced).
std::string open_file(const std::string& path, bool run_folder);

}  // namespace lmx::log_sink
