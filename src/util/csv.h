// CSV tables written atomically (temporary name, then rename), and a Markdown view.
#pragma once
#include <string>
#include <vector>

namespace lmx {

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;

  void add(std::vector<std::string> row) { rows.push_back(std::move(row)); }
  std::string csv() const;
  std::string markdown() const;
};

// Writes `text` to `path` via `path.tmp` + rename, so readers never see half a file.
// Throws RuntimeError naming the path when the directory is not writable or the disk is full.
void write_file_atomic(const std::string& path, const std::string& text);

// Renames tmp (already fsynced) over path, then fsyncs path's directory so that the rename
// itself survives a crash or power loss. Throws RuntimeError when the rename fails.
void rename_durably(const std::string& tmp, const std::string& path);

// Appends lines to a CSV file, flushed after every row (metrics.csv during training).
class CsvAppender {
 public:
  CsvAppender() = default;
  CsvAppender(const std::string& path, const std::vector<std::string>& header, bool append = false);
  void row(const std::vector<std::string>& cells);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string csv_escape(const std::string& cell);

// A number as a CSV cell with `digits` decimals; "" for NaN (a value not measured).
std::string csv_num(double v, int digits = 4);

// Reads a CSV file written by Table::csv (quoted cells allowed); InputError if unreadable.
Table read_csv(const std::string& path);

// Column index by name, or -1.
int column(const Table& t, const std::string& name);

}  // namespace lmx
