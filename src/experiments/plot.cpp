#include "experiments/plot.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "config/config.h"
#include "config/registry.h"
#include "data/baselines.h"
#include "data/corpus.h"
#include "train/summary.h"
#include "util/csv.h"
#include "util/error.h"

extern char** environ;

namespace fs = std::filesystem;

namespace lmx {

namespace {

// seed<k> folders holding a metrics.csv, by seed number.
std::vector<std::string> seed_metrics(const fs::path& dir) {
  std::vector<std::pair<uint64_t, std::string>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name.rfind("seed", 0) != 0 || name.size() == 4 ||
        name.find_first_not_of("0123456789", 4) != std::string::npos)
      continue;
    const fs::path m = e.path() / "metrics.csv";
    if (fs::is_regular_file(m, ec)) found.emplace_back(std::stoull(name.substr(4)), m.string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

// The name a train folder was run as (train.json's "name"), else the folder's name.
std::string run_name(const fs::path& dir) {
  std::ifstream in(dir / "train.json");
  if (in) {
    try {
      const auto j = nlohmann::json::parse(in);
      if (j.contains("name") && j["name"].is_string()) return j["name"].get<std::string>();
    } catch (const nlohmann::json::exception&) {
    }
  }
  return fs::path(dir).lexically_normal().filename().string();
}

std::vector<fs::path> sorted_subdirs(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The series of one path: a seed folder, a train folder (seed*/), a sweep or ablate folder
// (runs/NNN-<point>-s<seed>/seed<seed>/), or a folder of train-like folders (extrapolate).
std::vector<Series> series_of(const std::string& path) {
  const fs::path dir(path);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw InputError(fmt::format("{}: not a folder", path), "give a run, sweep, ablate or extrapolate output folder");
  if (fs::is_regular_file(dir / "metrics.csv", ec)) {
    const fs::path parent = fs::absolute(dir, ec).lexically_normal().parent_path();
    return {{run_name(parent), {(dir / "metrics.csv").string()}}};
  }
  if (auto seeds = seed_metrics(dir); !seeds.empty()) return {{run_name(dir), seeds}};
  std::vector<Series> out;
  if (fs::is_directory(dir / "runs", ec)) {  // a sweep: group its runs by grid point, in grid order
    static const std::regex id(R"(^(\d+)-(.*)-s\d+$)");
    std::map<std::string, size_t> at;  // NNN -> index in out
    for (const auto& run : sorted_subdirs(dir / "runs")) {
      std::smatch m;
      const std::string name = run.filename().string();
      if (!std::regex_match(name, m, id)) continue;
      auto seeds = seed_metrics(run);
      if (seeds.empty()) continue;
      auto [it, fresh] = at.emplace(m[1].str(), out.size());
      if (fresh) out.push_back({m[2].str(), {}});
      auto& s = out[it->second].metrics;
      s.insert(s.end(), seeds.begin(), seeds.end());
    }
  } else {
    for (const auto& sub : sorted_subdirs(dir))
      if (auto seeds = seed_metrics(sub); !seeds.empty()) out.push_back({sub.filename().string(), seeds});
  }
  if (out.empty())
    throw InputError(fmt::format("{}: no metrics.csv in it or its seed folders", path),
                     "give the folder lmx train, sweep, ablate or extrapolate wrote");
  return out;
}

double number(const std::string& cell) {
  if (cell.empty()) return std::nan("");
  char* end = nullptr;
  const double v = std::strtod(cell.c_str(), &end);
  return end == cell.c_str() ? std::nan("") : v;
}

std::string clean(std::string label) {
  std::replace(label.begin(), label.end(), '\t', ' ');
  std::replace(label.begin(), label.end(), '\n', ' ');
  return label;
}

// A gnuplot string literal in single quotes ('' is a quote).
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// Ten distinct colours (the lines of a figure cycle through them), readable on white.
const char* const kColours = "set linetype 1 lc rgb '#1f77b4'\nset linetype 2 lc rgb '#d62728'\n"
                             "set linetype 3 lc rgb '#2ca02c'\nset linetype 4 lc rgb '#9467bd'\n"
                             "set linetype 5 lc rgb '#ff7f0e'\nset linetype 6 lc rgb '#8c564b'\n"
                             "set linetype 7 lc rgb '#e377c2'\nset linetype 8 lc rgb '#17becf'\n"
                             "set linetype 9 lc rgb '#7f7f7f'\nset linetype 10 lc rgb '#bcbd22'\n"
                             "set linetype cycle 10\n";

std::string terminal(const PlotOptions& o, const std::string& format) {
  if (format == "svg")
    return fmt::format("set terminal svg size {},{} dynamic font 'sans,11' background rgb 'white'", o.width, o.height);
  return fmt::format("set terminal pngcairo size {},{} font 'sans,10'", o.width, o.height);
}

// Runs `gnuplot SCRIPT` in the script's folder; its messages are in the error when it fails.
void run_gnuplot(const fs::path& script) {
  int err[2];
  if (pipe2(err, O_CLOEXEC) != 0) throw RuntimeError(fmt::format("gnuplot: pipe: {}", std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addchdir_np(&actions, script.parent_path().c_str());
  posix_spawn_file_actions_adddup2(&actions, err[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;  // lmx blocks SIGINT / SIGTERM in every thread (util/signals); gnuplot need not
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  std::string prog = "gnuplot", file = script.filename().string();
  char* argv[] = {prog.data(), file.data(), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "gnuplot", &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(err[1]);
  std::string messages;
  char buf[4096];
  for (ssize_t n; (n = ::read(err[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR);)
    if (n > 0) messages.append(buf, static_cast<size_t>(n));
  ::close(err[0]);
  if (rc != 0)
    throw RuntimeError(fmt::format("cannot run gnuplot: {}", std::strerror(rc)),
                       fmt::format("install it (apt-get install gnuplot-nox); the data is in {}", script.parent_path().string()));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::replace(messages.begin(), messages.end(), '\n', ' ');
    throw RuntimeError(fmt::format("gnuplot {} failed: {}", script.string(), messages));
  }
}

// One curve block of a .dat file: step, seeds, mean, min, max.
std::string curve_block(const std::string& label, const std::vector<CurvePoint>& c) {
  std::string out = fmt::format("# {}\n", clean(label));
  for (const auto& p : c) out += fmt::format("{}\t{}\t{:.6g}\t{:.6g}\t{:.6g}\n", p.step, p.seeds, p.mean, p.min, p.max);
  return out + "\n\n";  // gnuplot: two blank lines end a data block (index)
}

std::string seeds_text(size_t n) { return n == 1 ? "1 seed" : fmt::format("{} seeds", n); }

// The validation panel's floor: per series, the split's NLL under the truth (metrics.csv's
// val_true_nll at each evaluation, the same at every one) averaged over its seeds; NaN where the
// runs have none (a text corpus, or runs written before the column).
std::vector<double> val_floors(const std::vector<Series>& series) {
  std::vector<double> out;
  for (const auto& s : series) {
    std::vector<double> means;
    try {
      for (const auto& p : curve(s, "val_true_nll")) means.push_back(p.mean);
    } catch (const InputError&) {  // runs written before the column: no floor drawn
    }
    out.push_back(means.empty() ? std::nan("") : stats(means).mean);
  }
  return out;
}

// The training panel's floor: per series, the training split's per-token NLL under the truth,
// computed from the corpus its first run's config.yaml builds (the garden world: generated, not
// read; one corpus per distinct data config); NaN without a truth or a config.yaml.
std::vector<double> train_floors(const std::vector<Series>& series) {
  std::map<std::string, double> by_data;
  std::vector<double> out;
  for (const auto& s : series) {
    double floor = std::nan("");
    std::error_code ec;
    const fs::path cfg_file = s.metrics.empty() ? fs::path() : fs::path(s.metrics.front()).parent_path() / "config.yaml";
    if (!cfg_file.empty() && fs::is_regular_file(cfg_file, ec)) {
      try {
        const Config cfg = load_config(cfg_file.string());
        if (registry::corpus(cfg.data).has_truth) {
          Config data_only;  // the corpus depends on the data fields alone
          data_only.data = cfg.data;
          const std::string key = to_yaml(data_only);
          auto it = by_data.find(key);
          if (it == by_data.end()) {
            const data::Corpus corpus = data::load_corpus(cfg.data);
            int64_t tokens = 0;
            const double sum = corpus.truth ? data::true_nll_sum(*corpus.truth, corpus.train, &tokens) : 0;
            it = by_data.emplace(key, tokens > 0 ? sum / static_cast<double>(tokens) : std::nan("")).first;
          }
          floor = it->second;
        }
      } catch (const Error&) {  // a config this lmx cannot read: no floor drawn
      }
    }
    out.push_back(floor);
  }
  return out;
}

// Whether every finite value is the same (to the 6 digits metrics.csv writes) and one is finite.
bool one_value(const std::vector<double>& v) {
  double first = std::nan("");
  for (double x : v) {
    if (!std::isfinite(x)) continue;
    if (std::isnan(first)) first = x;
    else if (std::fabs(x - first) > 1e-6 * std::max(1.0, std::fabs(first))) return false;
  }
  return std::isfinite(first);
}

// A floor every line shares (the same split), as one black dashed line titled with its value;
// "" when the lines' floors differ or there is none.
std::string shared_floor(const std::vector<double>& floor, const std::string& what) {
  if (!one_value(floor)) return "";
  const double v = *std::find_if(floor.begin(), floor.end(), [](double x) { return std::isfinite(x); });
  return fmt::format("{:.6g} with lines dt 2 lw 1.4 lc rgb 'black' title {}", v,
                     quoted(fmt::format("{} {:.4f} (the floor)", what, v)));
}

// The floor lines of a panel: the shared one, else a dashed line per series in its colour.
std::vector<std::string> floor_lines(const std::vector<Series>& series, const std::vector<double>& floor,
                                     const std::string& what) {
  if (std::string line = shared_floor(floor, what); !line.empty()) return {line};
  std::vector<std::string> parts;
  for (size_t k = 0; k < series.size(); ++k)
    if (std::isfinite(floor[k]))
      parts.push_back(fmt::format("{:.6g} with lines dt 2 lw 1.2 lc {} title {}", floor[k], k + 1,
                                  quoted(fmt::format("{}: {} {:.4f}", clean(series[k].label), what, floor[k]))));
  return parts;
}

// A panel of curves (index k of the data file = series k), with its min-max band and the floor.
std::string curve_plot(const std::string& data, const std::vector<Series>& series, const std::vector<bool>& has,
                       bool points, const std::vector<double>& floor, const std::string& what) {
  std::vector<std::string> parts;
  for (size_t k = 0; k < series.size(); ++k) {
    if (!has[k]) continue;
    const std::string label = fmt::format("{} ({})", clean(series[k].label), seeds_text(series[k].metrics.size()));
    parts.push_back(fmt::format("{} index {} using 1:4:5 with filledcurves fs transparent solid 0.18 noborder lc {} notitle",
                                quoted(data), k, k + 1));
    parts.push_back(fmt::format("{} index {} using 1:3 with {} lw 1.6 lc {} title {}", quoted(data), k,
                                points ? "linespoints pt 7 ps 0.5" : "lines", k + 1, quoted(label)));
  }
  for (auto& line : floor_lines(series, floor, what)) parts.push_back(std::move(line));
  return "plot " + fmt::format("{}", fmt::join(parts, ", \\\n     ")) + "\n";
}

struct Figure {
  std::string stem;    // loss, test_ppl, ...
  std::string script;  // gnuplot commands after the terminal and output lines
};

std::string title_of(const std::vector<Series>& series, const PlotOptions& o) {
  if (o.paths.size() == 1) return run_name(fs::absolute(o.paths[0]).lexically_normal());
  std::vector<std::string> names;
  for (const auto& p : o.paths) names.push_back(run_name(fs::absolute(p).lexically_normal()));
  return fmt::format("{}", fmt::join(names, ", "));
}

// loss: training loss (and validation loss, where the runs measured it) against step.
Figure loss_figure(const std::vector<Series>& series, const PlotOptions& o, const fs::path& out) {
  std::string train_dat, val_dat;
  std::vector<bool> has_train, has_val;
  for (const auto& s : series) {
    const auto t = curve(s, "train_loss"), v = curve(s, "val_loss");
    train_dat += curve_block(s.label, t), val_dat += curve_block(s.label, v);
    has_train.push_back(!t.empty()), has_val.push_back(!v.empty());
  }
  const std::string header = "# step\tseeds\tmean\tmin\tmax (one block per line of the figure)\n";
  write_file_atomic((out / "loss_train.dat").string(), header + train_dat);
  write_file_atomic((out / "loss_val.dat").string(), header + val_dat);
  // The floors drawn: the training and validation splits' per-token NLL under the truth.
  const std::vector<double> train_floor = train_floors(series), val_floor = val_floors(series);
  std::string floor_dat = "# panel\tline\ttrue_nll (the split's NLL under the truth, mean over the seeds)\n";
  for (size_t k = 0; k < series.size(); ++k)
    for (const auto& [panel, f] : {std::pair{"train", &train_floor}, std::pair{"val", &val_floor}})
      if (std::isfinite((*f)[k])) floor_dat += fmt::format("{}\t{}\t{:.6g}\n", panel, clean(series[k].label), (*f)[k]);
  write_file_atomic((out / "loss_floor.dat").string(), floor_dat);
  const bool any_val = std::find(has_val.begin(), has_val.end(), true) != has_val.end();
  std::string gp = std::string(kColours) + "set datafile separator '\\t'\nset termoption noenhanced\nset grid\nset key top right\n";
  gp += any_val ? fmt::format("set multiplot layout 1,2 title {}\n",
                              quoted(title_of(series, o) + ": loss against step, mean over seeds (band: min to max)"))
                : fmt::format("set title {}\n", quoted(title_of(series, o) + ": training loss, mean over seeds (band: min to max)"));
  gp += "set xlabel 'step'\nset ylabel 'loss (nats per token)'\n";
  if (any_val) gp += "set title 'training loss (per step)'\n";
  gp += curve_plot("loss_train.dat", series, has_train, false, train_floor, "true NLL of the training split");
  if (any_val) {
    gp += "set title 'validation loss'\n";
    gp += curve_plot("loss_val.dat", series, has_val, true, val_floor, "true NLL of the validation split");
    gp += "unset multiplot\n";
  }
  return {"loss", gp};
}

// A summary.csv's per-seed values and its mean / ci95 rows of one metric, per point.
struct PointValues {
  std::string name;
  std::vector<std::pair<std::string, double>> seeds;  // seed, value
  double mean = std::nan(""), lo = std::nan(""), hi = std::nan("");
  double truth = std::nan("");  // the metric's floor (true_test_ppl's mean; its log for test_loss)
};

// The summary.csv column holding a metric's floor and how it maps onto the metric: the true
// perplexity of the test split for test_ppl, its log for test_loss; none for the others.
std::pair<std::string, bool> floor_column(const std::string& metric) {
  if (metric == "test_ppl") return {"true_test_ppl", false};
  if (metric == "test_loss") return {"true_test_ppl", true};
  return {"", false};
}

std::vector<PointValues> summary_points(const std::vector<std::string>& paths, const std::string& metric) {
  std::vector<PointValues> points;
  for (const auto& path : paths) {
    const fs::path summary = fs::path(path) / "summary.csv";
    std::error_code ec;
    if (!fs::is_regular_file(summary, ec)) continue;
    const Table t = read_csv(summary.string());
    const int col = column(t, metric), status = column(t, "status");
    const auto [floor_name, floor_log] = floor_column(metric);
    const int floor_col = floor_name.empty() ? -1 : column(t, floor_name);
    if (col < 0) throw InputError(fmt::format("{}: no column '{}'", summary.string(), metric), "see the header of summary.csv");
    auto point = [&](const std::string& name) -> PointValues& {
      for (auto& p : points)
        if (p.name == name) return p;
      points.push_back({name, {}});
      return points.back();
    };
    for (const auto& r : t.rows) {
      if (r.size() <= static_cast<size_t>(std::max(col, status)) || r.size() < 2) continue;
      PointValues& p = point(r[0]);
      const double v = number(r[col]);
      if (r[1] == "mean") {
        p.mean = v;
        if (floor_col >= 0 && r.size() > static_cast<size_t>(floor_col))
          p.truth = floor_log ? std::log(number(r[floor_col])) : number(r[floor_col]);
      }
      else if (r[1] == "ci95_lo") p.lo = v;
      else if (r[1] == "ci95_hi") p.hi = v;
      else if (!r[1].empty() && std::isdigit(static_cast<unsigned char>(r[1][0])) && is_status(r[status], RunStatus::Ok) && std::isfinite(v))
        p.seeds.emplace_back(r[1], v);
    }
  }
  return points;
}

// An lmx ablate folder (its ablation.csv): the points are its steps, each keeping the ones before.
bool is_ablation(const PlotOptions& o) {
  std::error_code ec;
  return o.paths.size() == 1 && fs::is_regular_file(fs::path(o.paths[0]) / "ablation.csv", ec);
}

// METRIC: each point's seeds and mean with its 95% interval (summary.csv's), the points in order.
Figure metric_figure(const std::vector<PointValues>& points, const PlotOptions& o, const fs::path& out) {
  std::string dat = "# x\tpoint\tseeds\tmean\tci95_lo\tci95_hi\ttrue (the floor: summary.csv's true_test_ppl)\n";
  std::vector<double> truths;
  for (size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    auto cell = [](double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : std::string("NaN"); };
    dat += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\n", i, clean(p.name), p.seeds.size(), cell(p.mean), cell(p.lo),
                       cell(p.hi), cell(p.truth));
    truths.push_back(p.truth);
  }
  dat += "\n\n# x\tpoint\tseed\tvalue\n";
  for (size_t i = 0; i < points.size(); ++i)
    for (const auto& [seed, v] : points[i].seeds) dat += fmt::format("{}\t{}\t{}\t{:.6g}\n", i, clean(points[i].name), seed, v);
  const std::string file = o.metric + ".dat";
  write_file_atomic((out / file).string(), dat);
  size_t most = 0;
  for (const auto& p : points) most = std::max(most, p.seeds.size());
  std::string gp = std::string(kColours) + "set datafile separator '\\t'\nset termoption noenhanced\nset grid ytics\nset key top right\n";
  gp += fmt::format("set title {}\n", quoted(fmt::format("{}: {} per point, mean and 95% interval of the mean over "
                                                         "its seeds (up to {})", title_of({}, o), o.metric, most)));
  gp += fmt::format("set xlabel {}\nset ylabel {}\nset xrange [-0.5:{}]\nset xtics rotate by -25\n",
                    quoted(is_ablation(o) ? "ablation step, in order (each keeps the changes before it)" : "grid point"),
                    quoted(o.metric), static_cast<double>(points.size()) - 0.5);
  // The y range padded (the top for the key), so that no seed sits on the frame or under the key.
  // The floor: one dashed line with its value when every point shares it (the same test split),
  // else a mark per point.
  const std::string what = o.metric == "test_loss" ? "true NLL" : "true ppl";
  std::string floor = shared_floor(truths, what);
  if (!floor.empty()) {
    floor = ", \\\n     " + floor;
  } else if (std::any_of(truths.begin(), truths.end(), [](double x) { return std::isfinite(x); })) {
    floor = fmt::format(", \\\n     {} index 0 using 1:7 with points pt 2 ps 1.2 lc rgb 'black' title {}", quoted(file),
                        quoted(what + " per point (the floor)"));
  }
  gp += fmt::format("set bmargin 5\nset offsets 0, 0, graph 0.15, graph 0.05\nplot {} index 0 using 1:4:5:6:xticlabels(2) with yerrorbars pt 7 ps 1.2 lw 1.6 lc 1 "
                    "title 'mean, 95% interval', \\\n     {} index 1 using ($1 + 0.12):4 with points pt 6 ps 0.8 lc 2 "
                    "title 'seeds'{}\n",
                    quoted(file), quoted(file), floor);
  return {o.metric, gp};
}

// The training length of an lmx extrapolate folder: data.seq_len in the config.yaml of its first
// encoding's first seed (extrapolate sets it to --train-len); 0 when there is none.
int extrapolate_train_len(const fs::path& dir, const std::string& encoding) {
  for (const auto& seed : sorted_subdirs(dir / encoding)) {
    std::error_code ec;
    const fs::path cfg = seed / "config.yaml";
    if (!fs::is_regular_file(cfg, ec)) continue;
    try {
      const YAML::Node n = YAML::LoadFile(cfg.string());
      if (n["data"] && n["data"]["seq_len"]) return n["data"]["seq_len"].as<int>();
    } catch (const YAML::Exception&) {
    }
  }
  return 0;
}

// One position range of by_position.csv ("lo-hi") and its values over the seeds.
struct PositionRange {
  std::string name;
  double lo = 0, hi = 0;
  std::vector<double> nll, truth;
};
using EncodingRanges = std::vector<std::pair<std::string, std::vector<PositionRange>>>;

// by_position.csv's rows grouped by encoding and range, both in the table's order.
EncodingRanges read_by_position(const fs::path& csv) {
  const Table t = read_csv(csv.string());
  const int enc = column(t, "position"), range = column(t, "range"), nll = column(t, "nll"), truth = column(t, "true_nll");
  if (enc < 0 || range < 0 || nll < 0 || truth < 0)
    throw InputError(fmt::format("{}: not an lmx extrapolate table (position, range, nll, true_nll)", csv.string()));
  EncodingRanges encodings;
  for (const auto& r : t.rows) {
    if (r.size() <= static_cast<size_t>(std::max({enc, range, nll, truth}))) continue;
    auto e = std::find_if(encodings.begin(), encodings.end(), [&](const auto& x) { return x.first == r[enc]; });
    if (e == encodings.end()) e = encodings.insert(encodings.end(), {r[enc], {}});
    auto g = std::find_if(e->second.begin(), e->second.end(), [&](const PositionRange& x) { return x.name == r[range]; });
    if (g == e->second.end()) {
      PositionRange fresh;
      fresh.name = r[range];
      const size_t dash = r[range].find('-');
      fresh.lo = number(r[range].substr(0, dash));
      fresh.hi = dash == std::string::npos ? fresh.lo : number(r[range].substr(dash + 1));
      g = e->second.insert(e->second.end(), fresh);
    }
    g->nll.push_back(number(r[nll]));
    g->truth.push_back(number(r[truth]));
  }
  if (encodings.empty()) throw InputError(fmt::format("{}: no rows", csv.string()), "lmx extrapolate writes it as it goes");
  return encodings;
}

// The truth per range over every encoding and seed (the same test targets for all of them), the
// ranges by position; its values are in .nll, as the encodings' are.
std::vector<PositionRange> truth_by_range(const EncodingRanges& encodings) {
  std::vector<PositionRange> out;
  for (const auto& [name, ranges] : encodings)
    for (const auto& g : ranges) {
      auto it = std::find_if(out.begin(), out.end(), [&](const PositionRange& x) { return x.name == g.name; });
      if (it == out.end()) it = out.insert(out.end(), {g.name, g.lo, g.hi, {}, {}});
      it->nll.insert(it->nll.end(), g.truth.begin(), g.truth.end());
    }
  std::sort(out.begin(), out.end(), [](const PositionRange& a, const PositionRange& b) { return a.lo < b.lo; });
  return out;
}

// A block of nll_by_position.dat: per range lo, hi, its middle, seeds, mean, min, max of .nll.
std::string position_block(const std::string& title, const std::vector<PositionRange>& ranges) {
  std::string out = fmt::format("# {}\n", clean(title));
  for (const auto& g : ranges) {
    const Stats st = stats(g.nll);
    out += fmt::format("{}\t{}\t{}\t{}\t{:.6g}\t{:.6g}\t{:.6g}\n", g.lo, g.hi, (g.lo + g.hi + 1) / 2, st.n, st.mean,
                       st.min, st.max);
  }
  return out + "\n\n";
}

// nll_by_position: an lmx extrapolate folder's by_position.csv drawn, the mean NLL over the seeds
// per position range and encoding (band: min to max), the true NLL of the same targets, and the
// training length marked.
Figure position_figure(const EncodingRanges& encodings, const fs::path& dir, const PlotOptions& o, const fs::path& out) {
  std::string dat = "# lo\thi\tx (the range's middle)\tseeds\tmean\tmin\tmax (one block per encoding, then the truth)\n";
  for (const auto& [name, ranges] : encodings) dat += position_block(name, ranges);
  dat += position_block("true NLL", truth_by_range(encodings));
  write_file_atomic((out / "nll_by_position.dat").string(), dat);

  int train_len = extrapolate_train_len(dir, encodings.front().first);
  if (train_len <= 0) train_len = static_cast<int>(encodings.front().second.front().hi) + 1;  // the first range's end
  std::string gp = std::string(kColours) + "set datafile separator '\\t'\nset termoption noenhanced\nset grid\nset key top left\n";
  gp += fmt::format("set title {}\n", quoted(fmt::format("{}: NLL by position, trained at length {}, mean over seeds "
                                                         "(band: min to max)", title_of({}, o), train_len)));
  gp += "set xlabel 'target position (middle of each range; log scale)'\nset ylabel 'NLL (nats per token)'\n"
        "set logscale x 2\n";
  gp += fmt::format("set arrow from {0}, graph 0 to {0}, graph 1 nohead dt 3 lw 1.4 lc rgb 'gray40'\n"
                    "set label {1} at {0}, graph 0.96 offset 0.6, 0 tc rgb 'gray30'\n",
                    train_len, quoted(fmt::format("training length {}", train_len)));
  std::vector<std::string> parts;
  const std::string file = quoted("nll_by_position.dat");
  for (size_t k = 0; k < encodings.size(); ++k) {
    parts.push_back(fmt::format("{} index {} using 3:6:7 with filledcurves fs transparent solid 0.15 noborder lc {} notitle",
                                file, k, k + 1));
    parts.push_back(fmt::format("{} index {} using 3:5 with linespoints pt 7 ps 0.7 lw 1.6 lc {} title {}", file, k,
                                k + 1, quoted(clean(encodings[k].first))));
  }
  parts.push_back(fmt::format("{} index {} using 3:5 with linespoints dt 2 pt 1 lw 1.4 lc rgb 'black' title "
                              "'true NLL (the floor)'",
                              file, encodings.size()));
  gp += "plot " + fmt::format("{}", fmt::join(parts, ", \\\n     ")) + "\n";
  return {"nll_by_position", gp};
}

std::vector<std::string> draw(const Figure& f, const PlotOptions& o, const fs::path& out) {
  std::vector<std::string> formats = o.format == "both" ? std::vector<std::string>{"png", "svg"}
                                                        : std::vector<std::string>{o.format};
  std::vector<std::string> written;
  for (const auto& format : formats) {
    const std::string name = f.stem + "." + format;
    const fs::path script = out / (f.stem + (formats.size() > 1 ? "." + format : "") + ".gp");
    write_file_atomic(script.string(), fmt::format("# lmx plot: gnuplot {} in this folder redraws {}\n{}\nset output {}\n{}",
                                                   script.filename().string(), name, terminal(o, format), quoted(name),
                                                   f.script));
    run_gnuplot(script);
    written.push_back((out / name).string());
  }
  return written;
}

}  // namespace

std::vector<Series> find_series(const std::vector<std::string>& paths) {
  std::vector<Series> all;
  for (const auto& p : paths) {
    for (auto& s : series_of(p)) {
      // The same label twice (two runs of one config): numbered.
      std::string label = s.label;
      for (int k = 2; std::any_of(all.begin(), all.end(), [&](const Series& x) { return x.label == label; }); ++k)
        label = fmt::format("{} #{}", s.label, k);
      s.label = label;
      all.push_back(std::move(s));
    }
  }
  return all;
}

std::vector<CurvePoint> curve(const Series& s, const std::string& column_name) {
  std::map<int64_t, std::vector<double>> at;
  for (const auto& file : s.metrics) {
    const Table t = read_csv(file);
    const int step = column(t, "step"), col = column(t, column_name);
    if (step < 0 || col < 0)
      throw InputError(fmt::format("{}: no '{}' column", file, step < 0 ? "step" : column_name),
                       "metrics.csv is written by lmx train");
    for (const auto& r : t.rows) {
      if (r.size() <= static_cast<size_t>(std::max(step, col))) continue;
      const double v = number(r[col]);
      if (std::isfinite(v)) at[std::stoll(r[step])].push_back(v);
    }
  }
  std::vector<CurvePoint> out;
  for (const auto& [step, values] : at) {
    const Stats st = stats(values);
    out.push_back({step, st.n, st.mean, st.min, st.max});
  }
  return out;
}

std::vector<std::string> plot_runs(const PlotOptions& o) {
  if (o.paths.empty()) throw InputError("plot needs a run, sweep, ablate or extrapolate folder", "lmx plot runs/llama/<stamp>");
  if (o.format != "png" && o.format != "svg" && o.format != "both")
    throw InputError(fmt::format("--format {}: valid: png, svg, both", o.format));
  const std::vector<Series> series = find_series(o.paths);
  const fs::path out = o.out.empty() ? fs::path(o.paths.front()) : fs::path(o.out);
  std::vector<PointValues> points = summary_points(o.paths, o.metric);  // checks --metric before writing
  // An lmx extrapolate folder's table, read (and checked) before anything is written.
  std::error_code ec;
  std::optional<EncodingRanges> by_position;
  if (o.paths.size() == 1 && fs::is_regular_file(fs::path(o.paths[0]) / "by_position.csv", ec))
    by_position = read_by_position(fs::path(o.paths[0]) / "by_position.csv");
  // An lmx ablate folder: its steps in order (their names start with the step's number).
  if (is_ablation(o))
    std::stable_sort(points.begin(), points.end(), [](const PointValues& a, const PointValues& b) {
      return std::atoi(a.name.c_str()) < std::atoi(b.name.c_str());
    });
  try {
    fs::create_directories(out);
  } catch (const fs::filesystem_error& e) {
    throw InputError(fmt::format("{} {}: cannot create the folder: {}", o.out.empty() ? "plot folder" : "--out",
                                 out.string(), e.code().message()),
                     "give --out a folder that can be written to");
  }
  if (!fs::is_directory(out, ec))
    throw InputError(fmt::format("--out {}: not a folder", out.string()), "give --out a folder that can be written to");
  std::vector<std::string> written = draw(loss_figure(series, o, out), o, out);
  auto add = [&](const std::vector<std::string>& more) { written.insert(written.end(), more.begin(), more.end()); };
  if (points.size() >= 2) add(draw(metric_figure(points, o, out), o, out));
  if (by_position) add(draw(position_figure(*by_position, o.paths[0], o, out), o, out));
  return written;
}

}  // namespace lmx
