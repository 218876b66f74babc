// The command line: global options shared by every verb, and one registration function per
// verb (cli/cmd_*.cpp). Each verb is an options struct that CLI11 fills plus one
// `int run_VERB(const VerbOptions&, const Globals&)`; on_run makes that function the action
// main() runs after applying the global options (logging, threads, device).
#pragma once
#include <CLI/CLI.hpp>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "train/run_plan.h"

namespace lmx::cli {

// A numeric option check whose message names the range as a person writes it ("must be > 0",
// not CLI11's 309-digit DBL_MAX) and that refuses nan and inf.
inline CLI::Validator numeric_check(std::function<bool(double)> ok, const std::string& range) {
  return CLI::Validator(
      [ok, range](std::string& input) {
        double v = 0;
        const bool number = CLI::detail::lexical_cast(input, v) && std::isfinite(v);
        return number && ok(v) ? std::string() : "must be a number " + range + ", got '" + input + "'";
      },
      range);
}
inline const CLI::Validator Positive = numeric_check([](double v) { return v > 0; }, "> 0");
inline const CLI::Validator NonNegative = numeric_check([](double v) { return v >= 0; }, ">= 0");

struct Globals {
  int threads = 0;             // 0 = runtime::default_threads()
  std::string device_flag = "cpu";       // --device as given: cpu | cuda
  DeviceKind device = DeviceKind::Cpu;  // --device, parsed (entry.cpp)
  long long seed = -1;         // -1 = the config's / verb's default
  std::string out;             // output directory (verbs that write results)
  int verbose = 0;
  bool quiet = false;
  bool device_given = false;
  bool version = false;        // --version
  std::string log_file;        // --log-file
  std::function<int()> run;    // the chosen verb's action; returns the exit code
};

// The global options (--version, --threads, --device, --seed, --out, -v, -q, --log-file),
// declared once for every verb.
void add_global_options(CLI::App& app, Globals& g);

// The global options a child lmx needs to work as this one (lmx launch's workers).
std::vector<std::string> global_args(const Globals& g);
// A child `lmx train`'s command line (train/run_plan.h's TrainChild): global_args of a quiet
// run with its threads, then the verb's own flags (cmd_train.cpp, beside their definitions).
std::vector<std::string> train_child_args(const TrainChild& child);

// Option groups that several verbs take, declared here once.
inline const std::string kSetHelp = "override a field: section.key=value (repeatable)";
// A repeatable --set takes one value per use, so `lmx train --set k=v CONFIG` does not read
// CONFIG as a second override: the order of --set and the positional does not matter.
CLI::Option* add_set_option(CLI::App* cmd, std::vector<std::string>& sets, const std::string& help = kSetHelp);
// --seeds "0,1,2" (read with parse_seeds, cli/common.h).
CLI::Option* add_seeds_option(CLI::App* cmd, std::string& seeds, const std::string& help);

// Makes run(options, globals) the action of main() when cmd is the chosen verb.
template <class Options>
void on_run(CLI::App* cmd, Globals& g, std::shared_ptr<Options> options,
            int (*run)(const Options&, const Globals&)) {
  cmd->callback([&g, options, run] { g.run = [&g, options, run] { return run(*options, g); }; });
}

void add_config_commands(CLI::App& app, Globals& g);
void add_list_command(CLI::App& app, Globals& g);
void add_data_commands(CLI::App& app, Globals& g);
void add_sizes_commands(CLI::App& app, Globals& g);
void add_train_command(CLI::App& app, Globals& g);
void add_eval_command(CLI::App& app, Globals& g);
void add_generate_command(CLI::App& app, Globals& g);
void add_probe_command(CLI::App& app, Globals& g);
void add_sweep_command(CLI::App& app, Globals& g);
void add_extrapolate_command(CLI::App& app, Globals& g);
void add_ablate_command(CLI::App& app, Globals& g);
void add_bench_command(CLI::App& app, Globals& g);
void add_uptrain_command(CLI::App& app, Globals& g);
void add_launch_command(CLI::App& app, Globals& g);
void add_export_command(CLI::App& app, Globals& g);
void add_compare_command(CLI::App& app, Globals& g);
void add_plot_command(CLI::App& app, Globals& g);

}  // namespace lmx::cli
