// The command line: global options shared by every verb, and one registration function
// per verb family (cli/cmd_*.cpp). A verb's callback stores its action in Globals::run;
// main() applies the global options (logging, threads, device) and then runs it.
#pragma once
#include <CLI/CLI.hpp>

#include <cmath>
#include <functional>
#include <string>

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
  std::string device = "cpu";  // cpu | cuda
  long long seed = -1;         // -1 = the config's / verb's default
  std::string out;             // output directory (verbs that write results)
  int verbose = 0;
  bool quiet = false;
  bool device_given = false;
  std::function<int()> run;    // the chosen verb's action; returns the exit code
};

void add_config_commands(CLI::App& app, Globals& g);
void add_list_command(CLI::App& app, Globals& g);
void add_data_commands(CLI::App& app, Globals& g);
void add_sizes_commands(CLI::App& app, Globals& g);
void add_train_commands(CLI::App& app, Globals& g);
void add_probe_commands(CLI::App& app, Globals& g);
void add_sweep_command(CLI::App& app, Globals& g);
void add_extrapolate_command(CLI::App& app, Globals& g);
void add_ablate_command(CLI::App& app, Globals& g);
void add_bench_command(CLI::App& app, Globals& g);
void add_uptrain_command(CLI::App& app, Globals& g);
void add_launch_command(CLI::App& app, Globals& g);
void add_export_command(CLI::App& app, Globals& g);
void add_compare_command(CLI::App& app, Globals& g);

}  // namespace lmx::cli
