// lmx plot FOLDER...: figures of one's own runs (experiments/plot.h): loss against step per
// config or grid point, and a sweep's metric per grid point with its 95% interval.
#include <fmt/format.h>

#include "cli/app.h"
#include "experiments/plot.h"
#include "util/log.h"

namespace lmx::cli {

int run_plot(const PlotOptions& o, const Globals& g) {
  PlotOptions opt = o;
  if (!g.out.empty()) opt.out = g.out;
  for (const auto& file : plot_runs(opt)) log::info("plot", "{}", file);
  return 0;
}

void add_plot_command(CLI::App& app, Globals& g) {
  auto o = std::make_shared<PlotOptions>();
  auto* cmd = app.add_subcommand(
      "plot", "Figures of runs (gnuplot): loss against step per config or grid point, a sweep's metric per point");
  cmd->add_option("folders", o->paths,
                  "run, sweep, ablate or extrapolate folders (or seed folders); several: one line each")
      ->required();
  cmd->add_option("--metric", o->metric, "summary.csv column of the per-point figure (default test_ppl)");
  cmd->add_option("--format", o->format, "png (default), svg or both")->check(CLI::IsMember({"png", "svg", "both"}));
  cmd->add_option("--size", o->width, "figure width in pixels (default 1100)")->check(CLI::Range(200, 10000));
  cmd->add_option("--height", o->height, "figure height in pixels (default 480)")->check(CLI::Range(150, 10000));
  on_run(cmd, g, o, run_plot);
}

}  // namespace lmx::cli
