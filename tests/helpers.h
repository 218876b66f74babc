// Shared test helpers: temporary files and running the lmx binary as a user would.
#pragma once
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

namespace lmx::test {

// A fresh temporary directory, removed at scope exit.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::random_device rd;
    path = std::filesystem::temp_directory_path() / ("lmx-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::error_code ec; std::filesystem::remove_all(path, ec); }
  std::string write(const std::string& name, const std::string& text) const {
    auto p = path / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

struct RunResult {
  int code = -1;
  std::string output;  // stdout and stderr together
};

// Runs a shell command line; stdout and stderr must be redirected by the caller as wanted.
inline RunResult run_shell(const std::string& cmd) {
  RunResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// Runs build/lmx with the given shell-quoted arguments from `dir` (default: the source root).
inline RunResult run_lmx(const std::string& args, const std::string& dir = LMX_SOURCE_DIR) {
  return run_shell("cd '" + dir + "' && '" + LMX_BINARY + "' " + args + " 2>&1");
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// metrics.csv without its tokens_per_s column (wall-clock dependent), for exact comparisons.
inline std::string metrics_without_speed(const std::string& path) {
  std::stringstream in(read_file(path)), out;
  std::string line;
  int speed = -1;
  for (bool header = true; std::getline(in, line); header = false) {
    std::stringstream ls(line);
    std::string c;
    for (int i = 0; std::getline(ls, c, ','); ++i) {
      if (header && c == "tokens_per_s") speed = i;
      if (i != speed) out << c << ",";
    }
    out << "\n";
  }
  return out.str();
}

inline std::string source_path(const std::string& rel) { return std::string(LMX_SOURCE_DIR) + "/" + rel; }

}  // namespace lmx::test
