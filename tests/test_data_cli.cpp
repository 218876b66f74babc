// `lmx data stats` and `lmx data sample` as a user runs them, from outside the sources too.
#include "catch.h"

#include <array>
#include <cstdio>

#include "helpers.h"

using lmx::test::TempDir;

namespace {

lmx::test::RunResult run_in(const std::string& dir, const std::string& args) { return lmx::test::run_lmx(args, dir); }

const std::string kSmallData = "--set data.train_docs=300 --set data.val_docs=100 --set data.test_docs=100";

}  // namespace

TEST_CASE("lmx data stats works from any directory with the built-in grammar", "[data]") {
  TempDir dir;
  auto r = run_in(dir.path.string(), "data stats " + kSmallData);
  INFO(r.output);
  REQUIRE(r.code == 0);
  for (const char* part : {"vocabulary", "train", "val", "test", "true ppl", "uni ppl", "possessive pronouns", "nearest subject",
                           "sample documents (train):\n  <bos> "})
    CHECK(r.output.find(part) != std::string::npos);
}

TEST_CASE("lmx data sample prints each token's probability", "[data]") {
  auto r = lmx::test::run_lmx("data sample --n 2");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("<bos> ") != std::string::npos);
  CHECK(r.output.find(" the(") != std::string::npos);
  CHECK(r.output.find("<eos>(") != std::string::npos);
  CHECK(r.output.find("mean nll") != std::string::npos);
}

TEST_CASE("lmx data: a broken grammar or text path is an input error naming it", "[data]") {
  TempDir dir;
  auto grammar = dir.write("bad.yaml", "start: S\nslots:\n  poss: {he: his}\nrules:\n  S:\n    - 1 the Dgo\n  Dog:\n    - 1 dog @he\n");
  auto r = lmx::test::run_lmx("data stats --set data.grammar=" + grammar);
  INFO(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("bad.yaml:6:7: rules.S[0]: unknown rule 'Dgo'") != std::string::npos);
  auto t = lmx::test::run_lmx("data stats --set data.kind=text --set data.text_path=" + dir.file("none.txt"));
  CHECK(t.code == 2);
  CHECK(t.output.find("none.txt") != std::string::npos);
}
