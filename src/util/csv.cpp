#include "util/csv.h"

#include <fcntl.h>

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "util/error.h"
#include "util/signals.h"

namespace lmx {

std::string csv_num(double v, int digits) { return std::isnan(v) ? "" : fmt::format("{:.{}f}", v, digits); }

std::string csv_escape(const std::string& cell) {
  if (cell.find_first_of(",\"\n") == std::string::npos) return cell;
  std::string out = "\"";
  for (char c : cell) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

namespace {
std::string csv_line(const std::vector<std::string>& cells) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) line += (i ? "," : "") + csv_escape(cells[i]);
  return line + "\n";
}
}  // namespace

std::string Table::csv() const {
  std::string out = csv_line(header);
  for (const auto& r : rows) out += csv_line(r);
  return out;
}

std::string Table::markdown() const {
  std::vector<size_t> width(header.size(), 3);
  auto measure = [&](const std::vector<std::string>& r) {
    for (size_t i = 0; i < r.size() && i < width.size(); ++i) width[i] = std::max(width[i], r[i].size());
  };
  measure(header);
  for (const auto& r : rows) measure(r);
  auto line = [&](const std::vector<std::string>& r) {
    std::string s = "|";
    for (size_t i = 0; i < width.size(); ++i)
      s += " " + fmt::format("{:<{}}", i < r.size() ? r[i] : "", width[i]) + " |";
    return s + "\n";
  };
  std::string out = line(header) + "|";
  for (size_t w : width) out += std::string(w + 2, '-') + "|";
  out += "\n";
  for (const auto& r : rows) out += line(r);
  return out;
}

Table read_csv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read", path));
  std::vector<std::vector<std::string>> lines;
  std::vector<std::string> row;
  std::string cell;
  bool quoted = false, any = false;
  char c;
  while (in.get(c)) {
    any = true;
    if (quoted) {
      if (c == '"') {
        if (in.peek() == '"') cell += static_cast<char>(in.get());
        else quoted = false;
      } else {
        cell += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row.push_back(std::move(cell));
      cell.clear();
    } else if (c == '\n') {
      row.push_back(std::move(cell));
      cell.clear();
      lines.push_back(std::move(row));
      row.clear();
    } else {
      cell += c;
    }
  }
  if (any && (!cell.empty() || !row.empty())) row.push_back(cell), lines.push_back(row);
  if (quoted) throw InputError(fmt::format("{}: unterminated quoted cell", path));
  Table t;
  if (lines.empty()) throw InputError(fmt::format("{}: empty CSV file", path));
  t.header = lines.front();
  t.rows.assign(lines.begin() + 1, lines.end());
  return t;
}

int column(const Table& t, const std::string& name) {
  for (size_t i = 0; i < t.header.size(); ++i)
    if (t.header[i] == name) return static_cast<int>(i);
  return -1;
}

void write_file_atomic(const std::string& path, const std::string& text) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(fmt::format("{}: is a directory, cannot write a file there", path), "name a file");
  const std::string tmp = path + ".tmp";
  const signals::WriteGuard guard(tmp);  // a second Ctrl-C waits for the rename
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f && errno == ENAMETOOLONG) throw InputError(fmt::format("{}: file name too long", path));
  if (!f) throw RuntimeError(fmt::format("cannot write {}: {}", tmp, std::strerror(errno)));
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = (std::fflush(f) == 0) && ok;
  ok = (::fsync(fileno(f)) == 0) && ok;  // on disk before the rename makes it visible
  int saved = errno;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    throw RuntimeError(fmt::format("cannot write {}: {}", path, std::strerror(saved ? saved : EIO)),
                       "check free disk space and permissions of the output directory");
  }
  rename_durably(tmp, path);
}

void rename_durably(const std::string& tmp, const std::string& path) {
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);  // no half-written .tmp left behind
    throw RuntimeError(fmt::format("cannot rename {} to {}: {}", tmp, path, ec.message()));
  }
  // The directory entry: best effort (some file systems refuse fsync on directories).
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

CsvAppender::CsvAppender(const std::string& path, const std::vector<std::string>& header, bool append)
    : path_(path) {
  if (append && std::filesystem::exists(path)) return;
  const signals::WriteGuard guard;
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw RuntimeError(fmt::format("cannot write {}", path));
  out << csv_line(header);
}

void CsvAppender::row(const std::vector<std::string>& cells) {
  const signals::WriteGuard guard;  // whole lines only, even on a second Ctrl-C
  std::ofstream out(path_, std::ios::app);
  out << csv_line(cells);
  out.flush();
  if (!out) throw RuntimeError(fmt::format("cannot append to {}", path_), "is the disk full?");
}

}  // namespace lmx
