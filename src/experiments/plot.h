// lmx plot: figures of one's own runs, drawn by gnuplot as the lecture's figures are. From run,
// sweep, ablate and extrapolate folders:
//   loss.png        training and validation loss against step, one line per config or grid
//                   point: the mean over its seeds, with a band from the lowest to the highest,
//                   and each split's floor (its per-token NLL under the truth, metrics.csv's
//                   train_true_nll / val_true_nll; the garden world) as a dashed line with its value;
//   METRIC.png      (folders holding two or more configs or grid points) a summary.csv metric
//                   per grid point: each seed's value and the mean with the 95% interval of the
//                   mean that summary.csv holds (ci95_lo / ci95_hi), and for test_ppl / test_loss
//                   the true perplexity / NLL of the test split; an ablate folder's steps in order;
//   nll_by_position.png  (an extrapolate folder) by_position.csv: the NLL per position range and
//                   encoding, mean over seeds with a min-max band, the true NLL of the same
//                   targets, and the training length marked.
// The numbers gnuplot draws are written first, tab-separated, beside the figures (loss_train.dat,
// loss_val.dat, loss_floor.dat, METRIC.dat, nll_by_position.dat), with the gnuplot script that
// draws them (*.gp: edit and rerun it).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lmx {

struct PlotOptions {
  std::vector<std::string> paths;   // run / sweep / ablate / extrapolate folders, or seed folders
  std::string out;                  // folder for the figures (default: the first path)
  std::string metric = "test_ppl";  // the per-point figure's summary.csv column
  std::string format = "png";       // png, svg or both
  int width = 1100, height = 480;   // pixels (SVG: the same numbers in its units)
};

// One line of the loss figure: a config or grid point and its seeds' metrics.csv files.
struct Series {
  std::string label;
  std::vector<std::string> metrics;  // one per seed, in seed order
};

// The series under each path, in order (a sweep's by grid point). InputError naming the path
// when one holds no metrics.csv.
std::vector<Series> find_series(const std::vector<std::string>& paths);

// A curve's value at one step over the seeds that reached it.
struct CurvePoint {
  int64_t step = 0;
  int seeds = 0;
  double mean = 0, min = 0, max = 0;
};

// The mean / min / max over the series' seeds of a metrics.csv column (train_loss, val_loss) at
// every step where at least one seed has a finite value.
std::vector<CurvePoint> curve(const Series& s, const std::string& column);

// Writes the data files, the scripts and the figures; returns the figures' paths.
// RuntimeError when gnuplot is missing or fails (the data files are written by then).
std::vector<std::string> plot_runs(const PlotOptions& opt);

}  // namespace lmx
