// The command line: global options shared by every verb, and one registration function
// per verb family (cli/cmd_*.cpp). A verb's callback stores its action in Globals::run;
// main() applies the global options (logging, threads, device) and then runs it.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace lmx::cli {

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

}  // namespace lmx::cli
