// The lmxcore side of the fmt isolation check: compiled with the fake LibTorch's fmt.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "util/log_sink.h"

static_assert(FMT_VERSION == 990000, "core_side must see the fake LibTorch's fmt");

int main(int argc, char** argv) {
  const std::string file = argc > 1 ? argv[1] : "fmt_isolation.log";
  std::remove(file.c_str());
  const std::string error = lmx::log_sink::open_file(file, true);
  if (!error.empty()) return 1;
  lmx::log_sink::write(1, fmt::format("[isolation] {}", std::string("formatted with another fmt")));
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  // "YYYY-mm-dd HH:MM:SS.mmm I [isolation] formatted with another fmt"
  const std::string line = ss.str();
  const bool ok = line.size() > 24 && line[4] == '-' && line[19] == '.' &&
                  line.find(" I [isolation] formatted with another fmt\n") == 23;
  std::printf("%s", ok ? "fmt isolation: ok\n" : ("fmt isolation: unexpected log line: " + line).c_str());
  return ok ? 0 : 1;
}
