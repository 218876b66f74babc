// Shared job slots (util/jobserver.h): the slot pipe itself, and lmx sweep under it.
#include "catch.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "helpers.h"
#include "util/error.h"
#include "util/jobserver.h"

using namespace lmx;
using lmx::test::TempDir;
namespace fs = std::filesystem;

namespace {

// A slot pipe holding `slots` bytes, kept open (so its bytes stay) while the object lives.
struct SlotPipe {
  std::string path;
  int fd = -1;
  SlotPipe(const TempDir& dir, int slots) : path(dir.file("slots")) {
    REQUIRE(mkfifo(path.c_str(), 0600) == 0);
    fd = open(path.c_str(), O_RDWR | O_NONBLOCK);
    REQUIRE(fd >= 0);
    for (int i = 0; i < slots; ++i) REQUIRE(write(fd, "+", 1) == 1);
  }
  ~SlotPipe() { close(fd); }
  // Takes every free byte out and puts them back; returns how many there were.
  int free_slots() const {
    char c;
    int n = 0;
    while (read(fd, &c, 1) == 1) ++n;
    for (int i = 0; i < n; ++i) REQUIRE(write(fd, "+", 1) == 1);
    return n;
  }
};

}  // namespace

TEST_CASE("jobserver: slots are taken while free, given back on release and at destruction", "[jobserver]") {
  TempDir dir;
  SlotPipe pipe(dir, 2);
  {
    Jobserver js(pipe.path);
    CHECK(js.try_acquire());
    CHECK(js.try_acquire());
    CHECK_FALSE(js.try_acquire());  // both taken: does not block
    CHECK(js.held() == 2);
    js.release();
    CHECK(pipe.free_slots() == 1);
    CHECK(js.try_acquire());
    CHECK(pipe.free_slots() == 0);
  }  // still holds 2
  CHECK(pipe.free_slots() == 2);
}

TEST_CASE("jobserver: LMX_JOBSERVER unset is no jobserver, a path that is no pipe is an input error", "[jobserver]") {
  TempDir dir;
  unsetenv("LMX_JOBSERVER");
  CHECK_FALSE(Jobserver::from_env().has_value());
  CHECK_THROWS_WITH(Jobserver(dir.file("missing")), Catch::Contains("LMX_JOBSERVER=") && Catch::Contains("No such file"));
  CHECK_THROWS_AS(Jobserver(dir.write("plain", "++")), InputError);
  CHECK_THROWS_WITH(Jobserver(dir.file("plain")), Catch::Contains("not a named pipe"));
}

TEST_CASE("lmx sweep under a one-slot jobserver runs one run at a time and gives the slot back", "[jobserver][sweep][cli]") {
  TempDir dir;
  SlotPipe pipe(dir, 1);
  auto spec = dir.write("s.yaml", "base: " + lmx::test::source_path("configs/textbook.yaml") +
                                      "\nseeds: [0, 1, 2]\nset: {train.steps: 150, train.eval_every: 0, data.train_docs: 100, "
                                      "data.val_docs: 20, data.test_docs: 20, train.batch_size: 8}\n");
  const std::string out = dir.file("out");
  // --jobs 3 would start all three at once; the single shared slot holds them to one.
  auto r = lmx::test::run_lmx("--threads 1 sweep '" + spec + "' --jobs 3 --out '" + out + "'");
  INFO(r.output);
  REQUIRE(r.code == 0);  // (without LMX_JOBSERVER: the control below)
  auto shared = lmx::test::run_shell("cd '" + out + "/..' && LMX_JOBSERVER='" + pipe.path + "' '" + LMX_BINARY +
                                     "' --threads 1 sweep '" + spec + "' --jobs 3 --out '" + out + "-shared' 2>&1");
  INFO(shared.output);
  REQUIRE(shared.code == 0);
  CHECK(shared.output.find("sharing job slots through LMX_JOBSERVER=") != std::string::npos);
  CHECK(pipe.free_slots() == 1);
  // Each run's interval: its config written at the start of training, its summary at the end.
  // 150 steps keep that interval (~0.5 s) longer than the jitter of the processes' start-up
  // (loading LibTorch), so that the control below does not depend on that jitter: at 4 steps
  // it once failed on a busy machine.
  auto intervals = [](const std::string& sweep_out) {
    std::vector<std::pair<fs::file_time_type, fs::file_time_type>> iv;
    for (int seed = 0; seed < 3; ++seed) {
      const fs::path run_dir = sweep_out + "/runs/000-textbook-s" + std::to_string(seed);
      REQUIRE(fs::exists(run_dir));
      iv.emplace_back(fs::last_write_time(run_dir / ("seed" + std::to_string(seed)) / "config.yaml"),
                      fs::last_write_time(run_dir / "summary.csv"));
    }
    std::sort(iv.begin(), iv.end());
    return iv;
  };
  auto overlaps = [](const auto& iv) {
    int n = 0;
    for (size_t i = 1; i < iv.size(); ++i) n += iv[i].first < iv[i - 1].second;
    return n;
  };
  CHECK(overlaps(intervals(out)) > 0);            // control: --jobs 3 alone overlaps
  CHECK(overlaps(intervals(out + "-shared")) == 0);  // one slot: one after the other
}
