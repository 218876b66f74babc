// Log files (util/log_sink.h, spdlog): --log-file and every output folder's lmx.log hold the
// stderr lines with the date added.
#include "catch.h"

#include <regex>
#include <sstream>

#include "helpers.h"

using lmx::test::TempDir;

namespace {

// The lines of a log file that look like "YYYY-mm-dd HH:MM:SS.mmm I [area] message".
std::vector<std::string> dated_lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string line;
  const std::regex dated(R"(^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} [DIWE] \[[a-z]+\] .+$)");
  while (std::getline(ss, line))
    if (std::regex_match(line, dated)) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("log files: --log-file and the output folder's lmx.log get the log lines with date and time", "[log][cli]") {
  TempDir dir;
  const std::string tiny = "--set data.train_docs=100 --set data.val_docs=20 --set data.test_docs=20";
  auto r = lmx::test::run_shell("cd '" LMX_SOURCE_DIR "' && '" LMX_BINARY "' --log-file '" + dir.file("all.log") +
                                "' train configs/textbook.yaml --set train.steps=2 " + tiny + " --out '" +
                                dir.file("run") + "' 2>'" + dir.file("stderr") + "' >/dev/null");
  REQUIRE(r.code == 0);
  const std::string stderr_text = lmx::test::read_file(dir.file("stderr"));
  const auto file = dated_lines(lmx::test::read_file(dir.file("all.log")));
  const auto folder = dated_lines(lmx::test::read_file(dir.file("run/lmx.log")));
  REQUIRE(!file.empty());
  REQUIRE(!folder.empty());
  // every line of the run folder's log is on stderr too, without the date: "I HH:MM:SS [train] ..."
  for (const auto& line : folder) {
    const std::string level = line.substr(24, 1), time = line.substr(11, 8), rest = line.substr(26);
    CHECK(stderr_text.find(level + " " + time + " " + rest) != std::string::npos);
  }
  CHECK(folder.back() == file.back());
  CHECK_THAT(lmx::test::read_file(dir.file("run/lmx.log")), Catch::Contains("[train] results in"));

  dir.write("plain", "a file, not a folder");
  auto bad = lmx::test::run_lmx("--log-file " + dir.file("plain/x.log") + " config show configs/llama.yaml");
  CHECK(bad.code == 2);
  CHECK_THAT(bad.output, Catch::Contains("--log-file"));
}
