// lmx's program: the verbs parsed from the command line and run (cli/entry.h). main() is
// cli/main.cpp, which calls run_main.
#include "cli/entry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/version.h>

#include <algorithm>
#include <iostream>

#include "cli/app.h"
#include "config/registry.h"
#include "distributed/dist.h"
#include "kernels/cpu_kernels.h"
#include "kernels/fused_attention.h"
#include "kernels/gemm.h"
#include "kernels/torch_runtime.h"
#include "util/error.h"
#include "util/fork_server.h"
#include "util/log.h"
#include "util/log_sink.h"
#include "util/runtime.h"
#include "util/signals.h"
#include "util/strings.h"

namespace {

std::string components_footer() {
  std::vector<std::string> keys;
  for (auto kind : lmx::registry::kinds()) keys.push_back(lmx::registry::kind_key(kind));
  std::string out = fmt::format("\nComponents ({}):\n", fmt::join(keys, ", "));
  for (auto kind : lmx::registry::kinds())
    out += fmt::format("  {:<10} {}\n", lmx::registry::kind_name(kind),
                       fmt::join(lmx::registry::names(kind), ", "));
  return out;
}

void print_version() {
  auto blas = lmx::runtime::blas_info();
  const auto backends = lmx::dist::backends();
  std::cout << fmt::format("lmx {}\n", LMX_VERSION)
            << fmt::format("LibTorch {}\n", TORCH_VERSION)
            << fmt::format("BLAS {}{}\n", blas.library,
                           blas.openblas ? " (OpenBLAS " + blas.config + ")" : " (not OpenBLAS: slow reference BLAS?)")
            << (blas.core.empty() ? "" : fmt::format("BLAS kernels {}\n", blas.core_label()))
            << (blas.core_note().empty() ? "" : fmt::format("note: {}\n", blas.core_note()))
            << fmt::format("linear layers' GEMMs {}\n", lmx::gemm::describe())
            << fmt::format("fused kernels {}{}\n", lmx::kernels::kernel_isa(),
                           lmx::fused_attention_enabled() ? "" : " (off: LMX_FUSED_ATTENTION=0)")
            << fmt::format("bf16 on the CPU {}\n", lmx::gemm::bf16_unavailable().empty()
                                                     ? "oneDNN bf16 GEMMs (AVX512-BF16), float32 accumulation"
                                                     : "LibTorch's autocast: " + lmx::gemm::bf16_unavailable())
            << fmt::format("threads {} (LibTorch {}, OpenBLAS {})\n", lmx::runtime::threads(),
                           lmx::torch_runtime::torch_threads(), lmx::runtime::blas_threads())
            << fmt::format("denormals {}\n", lmx::torch_runtime::denormals_flushed()
                                                  ? "flushed to zero (FTZ/DAZ; LMX_KEEP_DENORMALS=1 keeps them)"
                                                  : "kept (IEEE gradual underflow)")
            << fmt::format("CUDA {}\n", lmx::torch_runtime::cuda_available() ? "available" : "not available")
            << fmt::format("data-parallel backends {}\n",
                           backends.empty() ? "none" : fmt::format("{}", fmt::join(backends, ", ")));
}

// A message as one readable line: newlines become spaces, and a very long word (a 100 KB file
// name) keeps its start and end only.
std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  std::replace(text.begin(), text.end(), '\r', ' ');
  constexpr size_t kLong = 240;
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const size_t end = std::min(text.find(' ', i), text.size());
    if (end - i > kLong)
      out += text.substr(i, 120) + fmt::format("...({} bytes)...", end - i - 180) + text.substr(end - 60, 60);
    else
      out += text.substr(i, end - i);
    if (end < text.size()) out += ' ';
    i = end + 1;
  }
  return out;
}

int error_exit(const lmx::Error& e) {
  std::cerr << "lmx: error: " << one_line(e.what()) << "\n";
  if (!e.hint().empty()) std::cerr << "  hint: " << one_line(e.hint()) << "\n";
  return e.exit_code();
}

// Every verb, in the order `lmx --help` lists them.
void add_verbs(CLI::App& app, lmx::cli::Globals& g) {
  using namespace lmx::cli;
  add_config_commands(app, g);
  add_list_command(app, g);
  add_train_command(app, g);
  add_eval_command(app, g);
  add_generate_command(app, g);
  add_sweep_command(app, g);
  add_extrapolate_command(app, g);
  add_ablate_command(app, g);
  add_compare_command(app, g);
  add_plot_command(app, g);
  add_uptrain_command(app, g);
  add_export_command(app, g);
  add_launch_command(app, g);
  add_data_commands(app, g);
  add_sizes_commands(app, g);
  add_probe_command(app, g);
  add_bench_command(app, g);
}

// After parsing: the global options applied (log, threads, device, GEMM), then the chosen verb.
int apply_globals_and_run(const CLI::App& app, lmx::cli::Globals& g) {
  using namespace lmx;
  log::init(g.quiet ? -1 : g.verbose);
  if (!g.log_file.empty()) {
    const std::string why = log_sink::open_file(g.log_file, false);
    if (!why.empty()) throw InputError(fmt::format("--log-file {}: cannot open: {}", g.log_file, why));
  }
  g.device_given = app.get_option("--device")->count() > 0;
  const int threads = g.threads > 0 ? g.threads : runtime::default_threads();
  if (threads > runtime::max_threads())
    throw InputError(fmt::format("{} {}: at most {} threads (4 x this machine's {} cores)",
                                 g.threads > 0 ? "--threads" : "OMP_NUM_THREADS", threads, runtime::max_threads(),
                                 runtime::max_threads() / 4),
                     "leave --threads out for the default");
  torch_runtime::set_threads(threads);
  try {
    g.device = parse_option<DeviceKind>(g.device_flag);
  } catch (const InputError&) {  // the flag's message, not the config key's
    throw InputError("unknown device '" + g.device_flag + "'", "valid devices: " + join(OptionNames<DeviceKind>::names()));
  }
  torch_runtime::check_device(g.device);
  gemm::active();  // a bad LMX_GEMM fails here, before any work
  if (g.version) {
    print_version();
    return 0;
  }
  if (!g.run) {
    std::cout << app.help();
    return 2;
  }
  return g.run();
}

}  // namespace

int lmx::cli::run_main(int argc, char** argv) {
  using namespace lmx;
  // A fork server (a sweep's, util/fork_server.h) serves here and never returns: its runs
  // start from this point of a fresh process.
  fork_server::serve_if_asked(&lmx::cli::run_main);
  // First, before any thread exists: every thread started later blocks SIGINT / SIGTERM, and
  // one of its own takes them (before the job starts, either exits 130).
  signals::install_early();
  runtime::open_self();
  runtime::tune_allocator();
  torch_runtime::flush_denormals();
  CLI::App app{"lmx: train, evaluate and ablate small Transformer LMs on CPU or CUDA"};
  app.footer(components_footer());
  app.fallthrough();
  app.require_subcommand(0, 1);
  cli::Globals g;
  cli::add_global_options(app, g);
  add_verbs(app, g);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::ParseError& e) {
    std::cerr << "lmx: error: " << one_line(e.what()) << "\n  hint: lmx --help lists verbs and options\n";
    return 2;
  }

  try {
    return apply_globals_and_run(app, g);
  } catch (const Error& e) {
    return error_exit(e);
  } catch (const c10::Error& e) {
    std::cerr << "lmx: error: LibTorch: " << one_line(e.what_without_backtrace()) << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "lmx: error: " << one_line(e.what()) << "\n";
    return 1;
  }
}
