// The option groups every verb or several verbs share, declared once.
#include "cli/app.h"

namespace lmx::cli {

void add_global_options(CLI::App& app, Globals& g) {
  app.add_flag("--version", g.version, "print versions of lmx, LibTorch, the BLAS in use, threads, CUDA");
  app.add_option("--threads", g.threads, "intra-op threads for LibTorch and OpenBLAS (default: this process's cores up to 2, or OMP_NUM_THREADS)")
      ->check(Positive);
  app.add_option("--device", g.device_flag, "cpu or cuda (cuda needs a CUDA build of LibTorch)");
  app.add_option("--seed", g.seed, "base seed for the verbs that take one")
      ->check(numeric_check([](double v) { return v >= 0 && v < 9.2e18; }, ">= 0 (a 64-bit integer)"));
  app.add_option("--out", g.out, "output directory for results");
  app.add_flag("-v,--verbose", g.verbose, "more log lines");
  app.add_flag("-q,--quiet", g.quiet, "only warnings and errors on stderr");
  app.add_option("--log-file", g.log_file, "also write the log lines to this file, with date and time (appended)");
}

std::vector<std::string> global_args(const Globals& g) {
  std::vector<std::string> args;
  if (g.threads > 0) args.insert(args.end(), {"--threads", std::to_string(g.threads)});
  if (g.device_given) args.insert(args.end(), {"--device", g.device_flag});
  if (g.seed >= 0) args.insert(args.end(), {"--seed", std::to_string(g.seed)});
  if (!g.out.empty()) args.insert(args.end(), {"--out", g.out});
  for (int i = 0; i < g.verbose; ++i) args.push_back("-v");
  if (g.quiet) args.push_back("-q");
  return args;
}

CLI::Option* add_set_option(CLI::App* cmd, std::vector<std::string>& sets, const std::string& help) {
  return cmd->add_option("--set", sets, help)->allow_extra_args(false);
}

CLI::Option* add_seeds_option(CLI::App* cmd, std::string& seeds, const std::string& help) {
  return cmd->add_option("--seeds", seeds, help);
}

}  // namespace lmx::cli
