// lmx plot (experiments/plot.h): the numbers a figure draws are the runs' own (recomputed here
// from each seed's metrics.csv and from summary.csv), the PNG decodes (libpng) to the size asked
// for and is not blank, the SVG is one; a sweep says where it stands while it runs.
#include "catch.h"

#include <png.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "helpers.h"
#include "config/config.h"
#include "data/baselines.h"
#include "data/corpus.h"
#include "util/csv.h"

using namespace lmx;
using lmx::test::TempDir;
namespace fs = std::filesystem;

namespace {

// A .dat file's blocks (separated by two blank lines), each a list of tab-separated rows;
// comment lines are skipped.
std::vector<std::vector<std::vector<std::string>>> dat_blocks(const std::string& path) {
  std::istringstream in(lmx::test::read_file(path));
  std::vector<std::vector<std::vector<std::string>>> blocks(1);
  std::string line;
  int blank = 0;
  while (std::getline(in, line)) {
    if (line.empty()) {
      if (++blank == 2 && !blocks.back().empty()) blocks.emplace_back();
      continue;
    }
    blank = 0;
    if (line[0] == '#') continue;
    std::vector<std::string> cells;
    std::istringstream ls(line);
    for (std::string c; std::getline(ls, c, '\t');) cells.push_back(c);
    blocks.back().push_back(cells);
  }
  if (blocks.back().empty()) blocks.pop_back();
  return blocks;
}

// step -> the values of a metrics.csv column over the seeds, read by hand.
std::map<long long, std::vector<double>> by_step(const std::vector<std::string>& files, const std::string& col) {
  std::map<long long, std::vector<double>> out;
  for (const auto& f : files) {
    Table t = read_csv(f);
    const int s = column(t, "step"), c = column(t, col);
    REQUIRE(s >= 0);
    REQUIRE(c >= 0);
    for (const auto& r : t.rows)
      if (!r[c].empty()) out[std::stoll(r[s])].push_back(std::stod(r[c]));
  }
  return out;
}

// Checks a curve block against the seeds' metrics: step, seeds, mean, min, max.
void check_curve(const std::vector<std::vector<std::string>>& block, const std::vector<std::string>& files,
                 const std::string& col) {
  const auto want = by_step(files, col);
  REQUIRE(block.size() == want.size());
  size_t i = 0;
  for (const auto& [step, values] : want) {
    const auto& row = block[i++];
    REQUIRE(row.size() == 5);
    CHECK(std::stoll(row[0]) == step);
    CHECK(std::stoi(row[1]) == static_cast<int>(values.size()));
    double sum = 0, lo = values[0], hi = values[0];
    for (double v : values) sum += v, lo = std::min(lo, v), hi = std::max(hi, v);
    CHECK(std::stod(row[2]) == Approx(sum / values.size()).epsilon(1e-5));  // written with 6 digits
    CHECK(std::stod(row[3]) == Approx(lo).epsilon(1e-5));
    CHECK(std::stod(row[4]) == Approx(hi).epsilon(1e-5));
  }
}

// Decodes a PNG with libpng: its size, and how many distinct colours its pixels hold.
std::pair<std::pair<int, int>, size_t> decode_png(const std::string& path) {
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  REQUIRE(png_image_begin_read_from_file(&img, path.c_str()) != 0);
  img.format = PNG_FORMAT_RGB;
  std::vector<png_byte> pixels(PNG_IMAGE_SIZE(img));
  REQUIRE(png_image_finish_read(&img, nullptr, pixels.data(), 0, nullptr) != 0);
  std::set<uint32_t> colours;
  for (size_t i = 0; i + 2 < pixels.size(); i += 3)
    colours.insert(pixels[i] << 16 | pixels[i + 1] << 8 | pixels[i + 2]);
  return {{static_cast<int>(img.width), static_cast<int>(img.height)}, colours.size()};
}

std::vector<std::string> seed_files(const std::string& dir, std::initializer_list<int> seeds) {
  std::vector<std::string> out;
  for (int s : seeds) out.push_back(dir + "/seed" + std::to_string(s) + "/metrics.csv");
  return out;
}

}  // namespace

TEST_CASE("lmx plot draws a sweep's curves and its metric from the runs' own numbers", "[plot][cli]") {
  TempDir dir;
  auto spec = dir.write("s.yaml", "base: " + lmx::test::source_path("configs/textbook.yaml") +
                                      "\nseeds: [0, 1]\nset: {train.steps: 8, train.eval_every: 4, data.train_docs: 100, "
                                      "data.val_docs: 20, data.test_docs: 20}\n");
  const std::string out = dir.file("sweep");
  auto sweep = lmx::test::run_lmx("sweep '" + spec + "' --set model.ffn=relu,gelu --jobs 2 --out '" + out + "'");
  INFO(sweep.output);
  REQUIRE(sweep.code == 0);
  // Where it stands, run by run, and the plot command at the end.
  for (const char* done : {"[1/4]", "[2/4]", "[3/4]", "[4/4]"}) CHECK_THAT(sweep.output, Catch::Contains(done));
  CHECK_THAT(sweep.output, Catch::Contains("elapsed, ETA"));
  CHECK_THAT(sweep.output, Catch::Contains("lmx plot " + out));

  auto plot = lmx::test::run_lmx("plot '" + out + "' --size 900 --height 400");
  INFO(plot.output);
  REQUIRE(plot.code == 0);
  const auto train = dat_blocks(out + "/loss_train.dat"), val = dat_blocks(out + "/loss_val.dat");
  REQUIRE(train.size() == 2);  // relu, gelu: in grid order
  REQUIRE(val.size() == 2);
  const std::string relu = out + "/runs/000-model.ffn=relu-s", gelu = out + "/runs/001-model.ffn=gelu-s";
  const std::vector<std::string> relu_files = {relu + "0/seed0/metrics.csv", relu + "1/seed1/metrics.csv"};
  const std::vector<std::string> gelu_files = {gelu + "0/seed0/metrics.csv", gelu + "1/seed1/metrics.csv"};
  check_curve(train[0], relu_files, "train_loss");
  check_curve(train[1], gelu_files, "train_loss");
  check_curve(val[0], relu_files, "val_loss");
  REQUIRE(val[1].size() == 2);  // steps 4 and 8
  check_curve(val[1], gelu_files, "val_loss");

  // The metric per point: summary.csv's seeds, mean and 95% interval.
  const auto metric = dat_blocks(out + "/test_ppl.dat");
  REQUIRE(metric.size() == 2);
  Table summary = read_csv(out + "/summary.csv");
  const int ppl = column(summary, "test_ppl");
  auto cell = [&](const std::string& name, const std::string& seed) {
    for (const auto& r : summary.rows)
      if (r[0] == name && r[1] == seed) return std::stod(r[ppl]);
    FAIL("no row " << name << " " << seed);
    return 0.0;
  };
  REQUIRE(metric[0].size() == 2);
  const char* names[] = {"model.ffn=relu", "model.ffn=gelu"};
  for (int i = 0; i < 2; ++i) {
    const auto& row = metric[0][i];
    CHECK(row[1] == names[i]);
    CHECK(row[2] == "2");
    CHECK(std::stod(row[3]) == Approx(cell(names[i], "mean")).epsilon(1e-5));
    CHECK(std::stod(row[4]) == Approx(cell(names[i], "ci95_lo")).epsilon(1e-5));
    CHECK(std::stod(row[5]) == Approx(cell(names[i], "ci95_hi")).epsilon(1e-5));
    CHECK(std::stod(row[4]) < std::stod(row[3]));
    CHECK(std::stod(row[3]) < std::stod(row[5]));
  }
  REQUIRE(metric[1].size() == 4);
  for (const auto& row : metric[1]) CHECK(std::stod(row[3]) == Approx(cell(row[1], row[2])).epsilon(1e-5));
  // The floor per point: summary.csv's true test perplexity (the same test split for both).
  const int true_ppl = column(summary, "true_test_ppl");
  REQUIRE(true_ppl >= 0);
  for (int i = 0; i < 2; ++i) {
    REQUIRE(metric[0][i].size() == 7);
    for (const auto& r : summary.rows)
      if (r[0] == names[i] && r[1] == "mean") CHECK(std::stod(metric[0][i][6]) == Approx(std::stod(r[true_ppl])).epsilon(1e-5));
  }
  CHECK_THAT(lmx::test::read_file(out + "/test_ppl.gp"), Catch::Contains("(the floor)"));

  // The loss figure's floors: each split's NLL under the truth, as the runs' metrics.csv wrote it.
  const auto floor = dat_blocks(out + "/loss_floor.dat");
  REQUIRE(floor.size() == 1);
  REQUIRE(floor[0].size() == 4);  // train and val, for relu and gelu
  // The training split's: lmx data stats on the same data (its true ppl, the exp of the NLL).
  Config cfg = load_config(relu + "0/seed0/config.yaml");
  data::Corpus corpus = data::load_corpus(cfg.data);
  int64_t tokens = 0;
  const double train_floor = data::true_nll_sum(*corpus.truth, corpus.train, &tokens) / static_cast<double>(tokens);
  for (const auto& row : floor[0]) {
    const auto& files = row[1] == "model.ffn=relu" ? relu_files : gelu_files;
    if (row[0] == "val") {
      const auto values = by_step(files, "val_true_nll");
      REQUIRE(values.size() == 2);  // at the evaluations, steps 4 and 8
      CHECK(std::stod(row[2]) == Approx(values.begin()->second.front()).epsilon(1e-5));
    } else {
      CHECK(std::stod(row[2]) == Approx(train_floor).epsilon(1e-5));
    }
    CHECK(std::stod(row[2]) > 0.5);  // a garden world's floor, nats per token
    CHECK(std::stod(row[2]) < 3.0);
  }
  const std::string loss_gp = lmx::test::read_file(out + "/loss.gp");
  CHECK_THAT(loss_gp, Catch::Contains("true NLL of the training split") && Catch::Contains("true NLL of the validation split"));

  for (const char* png : {"/loss.png", "/test_ppl.png"}) {
    const auto [size, colours] = decode_png(out + png);
    CHECK(size == std::make_pair(900, 400));
    CHECK(colours > 10);  // lines, bands and text, not a blank page
  }
}

TEST_CASE("lmx plot takes train folders side by side, writes SVG, and refuses what holds no runs", "[plot][cli]") {
  TempDir dir;
  const std::string a = dir.file("a"), b = dir.file("b");
  const std::string common = " --set train.steps=6 --set train.eval_every=3 --set data.train_docs=100"
                             " --set data.val_docs=20 --set data.test_docs=20";
  REQUIRE(lmx::test::run_lmx("-q train configs/textbook.yaml --seeds 0,1 --out '" + a + "'" + common).code == 0);
  REQUIRE(lmx::test::run_lmx("-q train configs/llama.yaml --seeds 3 --out '" + b + "'" + common).code == 0);
  const std::string figs = dir.file("figs");
  auto plot = lmx::test::run_lmx("plot '" + a + "' '" + b + "' --format both --out '" + figs + "'", dir.path.string());
  INFO(plot.output);
  REQUIRE(plot.code == 0);
  const auto train = dat_blocks(figs + "/loss_train.dat");
  REQUIRE(train.size() == 2);
  check_curve(train[0], seed_files(a, {0, 1}), "train_loss");
  check_curve(train[1], seed_files(b, {3}), "train_loss");
  CHECK_THAT(lmx::test::read_file(figs + "/loss_train.dat"), Catch::Contains("# textbook") && Catch::Contains("# llama"));
  const auto [size, colours] = decode_png(figs + "/loss.png");
  CHECK(size == std::make_pair(1100, 480));
  CHECK(colours > 10);
  const std::string svg = lmx::test::read_file(figs + "/loss.svg");
  CHECK_THAT(svg, Catch::Contains("<svg") && Catch::Contains("width=\"1100\"") && Catch::Contains("</svg>"));
  // The two configs are two points of the metric figure.
  CHECK(fs::exists(figs + "/test_ppl.png"));
  CHECK(fs::exists(figs + "/test_ppl.svg"));
  // One seed folder alone.
  REQUIRE(lmx::test::run_lmx("-q plot '" + a + "/seed1' --out '" + dir.file("one") + "'").code == 0);
  check_curve(dat_blocks(dir.file("one/loss_train.dat"))[0], seed_files(a, {1}), "train_loss");

  for (const std::string& bad : {dir.file("nothing"), figs, a + " --metric no_such_column", a + " --format gif"}) {
    auto r = lmx::test::run_lmx("-q plot " + bad);
    INFO(bad << ": " << r.output);
    CHECK(r.code == 2);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') <= 2);  // error + hint
  }
}

TEST_CASE("lmx plot draws an extrapolate folder's NLL by position and an ablation's steps in order", "[plot][cli]") {
  TempDir dir;
  const std::string small = " --set data.train_docs=100 --set data.val_docs=20 --set data.test_docs=20";
  const std::string ex = dir.file("ex");
  auto run = lmx::test::run_lmx("-q extrapolate --positions rope,learned --train-len 16 --test-len 64 --steps 4 --seeds 0,1" +
                                small + " --out '" + ex + "'");
  INFO(run.output);
  REQUIRE(run.code == 0);
  auto plot = lmx::test::run_lmx("-q plot '" + ex + "'");
  INFO(plot.output);
  REQUIRE(plot.code == 0);
  // One block per encoding, then the truth: by_position.csv's rows averaged over the seeds.
  const auto blocks = dat_blocks(ex + "/nll_by_position.dat");
  REQUIRE(blocks.size() == 3);
  Table t = read_csv(ex + "/by_position.csv");
  const int pos = column(t, "position"), range = column(t, "range"), nll = column(t, "nll"), truth = column(t, "true_nll");
  const char* encodings[] = {"rope", "learned"};
  for (int k = 0; k < 3; ++k) {
    const std::vector<std::string> ranges = {"0-15", "16-31", "32-63"};
    REQUIRE(blocks[k].size() == ranges.size());
    for (size_t i = 0; i < ranges.size(); ++i) {
      std::vector<double> want;
      for (const auto& r : t.rows)
        if (r[range] == ranges[i] && (k == 2 || r[pos] == encodings[k])) want.push_back(std::stod(r[k == 2 ? truth : nll]));
      REQUIRE(!want.empty());
      double sum = 0;
      for (double v : want) sum += v;
      const auto& row = blocks[k][i];
      CHECK(row[0] + "-" + row[1] == ranges[i]);
      CHECK(std::stoi(row[3]) == static_cast<int>(want.size()));
      CHECK(std::stod(row[4]) == Approx(sum / want.size()).epsilon(1e-5));
    }
  }
  const std::string gp = lmx::test::read_file(ex + "/nll_by_position.gp");
  CHECK_THAT(gp, Catch::Contains("set arrow from 16, graph 0") && Catch::Contains("training length 16") &&
                     Catch::Contains("true NLL (the floor)"));
  const auto [size, colours] = decode_png(ex + "/nll_by_position.png");
  CHECK(size == std::make_pair(1100, 480));
  CHECK(colours > 10);

  // An ablation: the metric per step, in the order of ablation.csv.
  const std::string ab = dir.file("ab");
  run = lmx::test::run_lmx("-q ablate --one-at-a-time --order ffn,norm --jobs 2 --set train.steps=2 --set train.eval_every=0" +
                           small + " --out '" + ab + "'");
  INFO(run.output);
  REQUIRE(run.code == 0);
  plot = lmx::test::run_lmx("-q plot '" + ab + "'");
  INFO(plot.output);
  REQUIRE(plot.code == 0);
  Table steps = read_csv(ab + "/ablation.csv");
  const auto metric = dat_blocks(ab + "/test_ppl.dat");
  REQUIRE(metric.size() == 2);
  REQUIRE(metric[0].size() == steps.rows.size());
  REQUIRE(steps.rows.size() == 3);  // the start, then ffn, then norm
  for (size_t i = 0; i < steps.rows.size(); ++i) CHECK(metric[0][i][1].rfind(steps.rows[i][0] + " ", 0) == 0);
  CHECK_THAT(lmx::test::read_file(ab + "/test_ppl.gp"), Catch::Contains("ablation step, in order"));

  // --out that cannot be created: one line naming the flag and the path, exit 2.
  auto bad = lmx::test::run_lmx("-q plot '" + ab + "' --out /proc/lmx-plot-cannot-be-here");
  INFO(bad.output);
  CHECK(bad.code == 2);
  CHECK_THAT(bad.output, Catch::Contains("--out /proc/lmx-plot-cannot-be-here: cannot create the folder"));
  CHECK(std::count(bad.output.begin(), bad.output.end(), '\n') <= 2);  // error + hint
}
