#include "catch.h"

#include <cmath>

#include "train/schedule.h"
#include "util/csv.h"
#include "helpers.h"
#include "util/error.h"

using namespace lmx;

TEST_CASE("learning-rate schedules at chosen steps", "[train]") {
  TrainConfig t;
  t.lr = 1e-3;
  t.min_lr = 1e-4;
  t.warmup_steps = 10;
  const int64_t total = 110;  // 10 warm-up + 100 decay steps (steps 10..109)
  SECTION("linear warm-up from 0") {
    CHECK(lr_at(t, 0, total) == Approx(1e-4));
    CHECK(lr_at(t, 4, total) == Approx(5e-4));
    CHECK(lr_at(t, 9, total) == Approx(1e-3));
  }
  SECTION("cosine reaches min_lr at the last step, lr + min_lr over 2 half way") {
    t.schedule = Schedule::Cosine;
    CHECK(lr_at(t, 10, total) == Approx(1e-3));
    const double mid = 10 + 99 / 2.0;  // progress 0.5 at step 59.5: check the two neighbours bracket it
    CHECK(lr_at(t, static_cast<int64_t>(mid), total) > 5.5e-4);
    CHECK(lr_at(t, static_cast<int64_t>(mid) + 1, total) < 5.5e-4);
    CHECK(lr_at(t, 109, total) == Approx(1e-4));
    // closed form at a quarter: min + (max-min)·(1+cos(π/4))/2
    const int64_t q = 10 + 99 / 4;  // progress = 24/99
    CHECK(lr_at(t, q, total) == Approx(1e-4 + 9e-4 * 0.5 * (1 + std::cos(M_PI * 24.0 / 99.0))));
  }
  SECTION("linear decay") {
    t.schedule = Schedule::Linear;
    CHECK(lr_at(t, 10, total) == Approx(1e-3));
    CHECK(lr_at(t, 109, total) == Approx(1e-4));
    CHECK(lr_at(t, 10 + 33, total) == Approx(1e-3 - 9e-4 * 33.0 / 99.0));
  }
  SECTION("constant after warm-up, no warm-up starts at lr") {
    t.schedule = Schedule::Constant;
    CHECK(lr_at(t, 50, total) == Approx(1e-3));
    t.warmup_steps = 0;
    CHECK(lr_at(t, 0, total) == Approx(1e-3));
  }
}

TEST_CASE("warm-up as a fraction of the run, and the decay placed by a time budget", "[train]") {
  TrainConfig t;
  t.lr = 1e-3;
  t.min_lr = 1e-4;
  t.warmup_steps = 10;
  t.warmup_frac = 0.05;  // of 200 steps: 10 (rounded), of 90: round(4.5) = 5 (half away from zero)
  CHECK(warmup_steps(t, 200) == 10);
  CHECK(warmup_steps(t, 90) == 5);
  CHECK(lr_at(t, 4, 90) == Approx(1e-3));
  CHECK(lr_at(t, 3, 90) == Approx(0.8e-3));
  t.warmup_frac = 0;
  CHECK(warmup_steps(t, 90) == 10);
  // train.max_time: after warm-up the decay follows the time fraction, whatever the step
  t.schedule = Schedule::Cosine;
  CHECK(lr_at(t, 50, 1000, 0.0) == Approx(1e-3));
  CHECK(lr_at(t, 50, 1000, 0.5) == Approx(5.5e-4));
  CHECK(lr_at(t, 11, 1000, 1.0) == Approx(1e-4));
  CHECK(lr_at(t, 11, 1000, 7.0) == Approx(1e-4));  // clamped past the budget
  CHECK(lr_at(t, 5, 1000, 0.9) == Approx(0.6e-3));  // warm-up stays in steps
  t.schedule = Schedule::Linear;
  CHECK(lr_at(t, 50, 1000, 0.25) == Approx(1e-3 - 9e-4 * 0.25));
}

TEST_CASE("tables: CSV escaping and Markdown alignment", "[train]") {
  Table t;
  t.header = {"a", "b"};
  t.add({"x,y", "say \"hi\""});
  CHECK(t.csv() == "a,b\n\"x,y\",\"say \"\"hi\"\"\"\n");
  auto md = t.markdown();
  CHECK(md.find("| a   | b        |") != std::string::npos);
}

TEST_CASE("atomic writes leave no temporary file and fail clearly", "[train]") {
  lmx::test::TempDir dir;
  auto p = dir.file("out.csv");
  write_file_atomic(p, "one\n");
  write_file_atomic(p, "two\n");
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  CHECK(s == "two");
  CHECK_FALSE(std::filesystem::exists(p + ".tmp"));
  CHECK_THROWS_AS(write_file_atomic(dir.file("no/such/dir/x.csv"), "x"), lmx::RuntimeError);
}
