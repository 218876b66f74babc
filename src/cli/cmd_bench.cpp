// lmx bench CONFIG   time training steps (forward + backward + AdamW, the trainer's own
//                    train_step), FLOPs and MFU, peak RSS, KV-cache vs recompute decoding
// lmx bench --peak   this machine's single-precision matmul peak (at the --threads given)
#include <fmt/format.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include "torch_api.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <utility>

#include "cli/app.h"
#include "config/config.h"
#include "config/registry.h"
#include "data/corpus.h"
#include "infer/decoder.h"
#include "kernels/gemm.h"
#include "kernels/precision.h"
#include "kernels/torch_runtime.h"
#include "model/lm.h"
#include "model/sizes.h"
#include "train/trainer.h"
#include "util/clock.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/log.h"
#include "util/op_timer.h"
#include "util/runtime.h"

namespace lmx::cli {

struct BenchOptions {
  std::string config;
  std::vector<std::string> sets;
  int steps = 50;
  int warmup = 10;
  int batch = 0;      // 0 = the config's train.batch_size
  int seq_len = 0;    // 0 = the config's data.seq_len
  int vocab = 0;      // 0 = the config's model.vocab_size, or the dataset's when auto
  int decode_len = 512;
  bool no_decode = false;
  bool peak = false;
  int peak_size = 1024;
  int peak_reps = 10;
  bool breakdown = false;
  std::string profile;  // chrome trace of a few steps (torch::autograd::profiler)
  std::string csv;
};

namespace {

// Best-of-reps GFLOP/s of an n×n by n×n float32 matmul (2n³ FLOPs) at the current threads,
// through one GEMM backend (kernels/gemm.h).
double matmul_gflops(int64_t n, int reps, gemm::Backend be) {
  torch::NoGradGuard no_grad;
  auto a = torch::randn({n, n}), b = torch::randn({n, n}), c = torch::empty({n, n});
  for (int i = 0; i < 2; ++i) gemm::sgemm(a, false, b, false, c, 0.0f, be);  // warm-up (buffers, caches, JIT)
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    gemm::sgemm(a, false, b, false, c, 0.0f, be);
    best = std::min(best, seconds_since(t0));
  }
  return 2.0 * n * n * n / best / 1e9;
}

// The machine's sgemm peak: the better of LibTorch's BLAS and (in a build with it) oneDNN,
// whichever the linear layers use, so MFU is never measured against the slower one.
// With it, oneDNN's bf16 GEMM (bfloat16 operands, float32 accumulation and output) on the same
// n×n×n problem where the linear layers can run it (gemm::bf16_unavailable() empty): the rate a
// train.precision bf16 step's MFU is against.
struct Peak {
  double blas = 0, onednn = 0, bf16 = 0;
  double best() const { return std::max(blas, onednn); }
};
Peak matmul_peak(int64_t n, int reps) {
  Peak p;
  p.blas = matmul_gflops(n, reps, gemm::Backend::torch);
  if (gemm::bf16_unavailable().empty()) {  // oneDNN's sgemm and bf16 GEMM, timed side by side
    const gemm::Bf16Rates r = gemm::measure_bf16_rates(n, reps);
    p.onednn = r.fp32_gflops, p.bf16 = r.bf16_gflops;
  } else if (gemm::built_with_onednn()) {
    p.onednn = matmul_gflops(n, reps, gemm::Backend::onednn);
  }
  return p;
}
std::string gflops_cell(double g) { return g > 0 ? fmt::format("{:.1f}", g) : ""; }


// The BLAS in use; warns when OPENBLAS_CORETYPE holds it back.
runtime::BlasInfo checked_blas() {
  runtime::BlasInfo blas = runtime::blas_info();
  if (const std::string note = blas.core_note(); !note.empty()) log::warn("bench", "{}", note);
  return blas;
}

// Who chose the BLAS kernels, for the CSV (one word, no spaces: runners split rows on blanks):
// OPENBLAS_CORETYPE when the variable is set, auto when OpenBLAS detected the CPU itself.
std::string kernels_from(const runtime::BlasInfo& blas) {
  if (blas.core.empty()) return "";
  return blas.core_env.empty() ? "auto" : "OPENBLAS_CORETYPE";
}

int run_peak(const BenchOptions& a) {
  const runtime::BlasInfo blas = checked_blas();
  const Peak peak = matmul_peak(a.peak_size, a.peak_reps);
  Table t{{"threads", "matmul", "peak_gflops", "blas_gflops", "onednn_gflops", "gemm", "blas_kernels",
           "blas_kernels_from", "bf16_gflops"},
          {}};
  t.add({std::to_string(runtime::threads()), fmt::format("{0}x{0}x{0} sgemm", a.peak_size), gflops_cell(peak.best()),
         gflops_cell(peak.blas), gflops_cell(peak.onednn), gemm::name(gemm::active()), blas.core, kernels_from(blas),
         gflops_cell(peak.bf16)});
  std::cout << t.markdown();
  if (!a.csv.empty()) write_file_atomic(a.csv, t.csv());
  return 0;
}

// Tokens per second decoding `len` tokens one at a time (batch 1, teacher-forced on a fixed
// random sequence, no sampling): with the KV cache (one token per forward; on the inference
// engine, infer/decoder.h, where it runs the model, built before the clock starts, as llama.cpp
// times its eval after loading) or recomputing the whole prefix at every step.
double decode_tokens_per_s(ModernLM& model, int64_t len, int64_t vocab, bool cached) {
  torch::NoGradGuard no_grad;
  model->eval();
  auto tokens = torch::randint(vocab, {1, len}, torch::kInt64);
  std::unique_ptr<infer::Decoder> engine;
  if (cached && infer::Decoder::unsupported(model).empty()) engine = std::make_unique<infer::Decoder>(model, len);
  auto t0 = Clock::now();
  if (engine) {
    const int64_t* tok = tokens.data_ptr<int64_t>();
    engine->prefill({tok[0]});
    for (int64_t t = 1; t < len; ++t) engine->step(tok[t]);
  } else if (cached) {
    KVCache cache;
    for (int64_t t = 0; t < len; ++t) model->forward(tokens.slice(1, t, t + 1), &cache);
  } else {
    for (int64_t t = 1; t <= len; ++t) model->forward(tokens.slice(1, 0, t));
  }
  const double s = seconds_since(t0);
  model->train();
  return len / s;
}

// The GEMMs of every nn::Linear of the model on `rows` rows, timed alone (hot cache, no
// autograd) in train.precision: forward (onto the bias), input gradient gy·W and weight
// gradient gyᵀ·x, plus the bias gradient's column sum (and in bf16 the conversions the layers
// make); ms per step, the mean of `reps` repetitions. What a step costs at least with this
// GEMM: the floor the rest of the step adds to.
double linear_gemm_ms(ModernLM& model, int64_t rows, int reps, Precision precision) {
  struct Shape {
    torch::Tensor x, w, b, gy;
  };
  std::vector<Shape> shapes;
  for (const auto& m : model->modules(/*include_self=*/false)) {
    auto* lin = dynamic_cast<torch::nn::LinearImpl*>(m.get());
    if (!lin) continue;
    const auto& w = lin->weight;
    shapes.push_back({torch::randn({rows, w.size(1)}), w.detach().clone(),
                      lin->bias.defined() ? lin->bias.detach().clone() : torch::Tensor(), torch::randn({rows, w.size(0)})});
  }
  AutocastGuard bf16(precision, c10::DeviceType::CPU);
  auto once = [&] {  // as the linear layers run them (kernels/gemm.cpp), on the active backend
    for (auto& s : shapes) gemm::linear_gemms_once(s.x, s.w, s.b, s.gy);
  };
  once();  // warm-up
  const auto t0 = Clock::now();
  for (int r = 0; r < std::max(1, reps); ++r) once();
  return seconds_since(t0) * 1e3 / std::max(1, reps);
}

// Diagnostics: the phases of train_step timed apart (StepResult::phase_ms), the mean over
// --steps steps, and every linear layer's GEMMs alone.
void print_breakdown(ModernLM& model, FusedAdamW& optimizer, const torch::Tensor& data, const Config& cfg,
                     const BenchOptions& a) {
  const int64_t T = data.size(2) - 1;
  double t_fwd = 0, t_bwd = 0, t_clip = 0, t_opt = 0;
  const int parts = step_parts(cfg.train, torch::kCPU);
  op_timer::reset();
  op_timer::set_enabled(true);
  for (int step = 0; step < a.steps; ++step) {
    auto rows = data[step % data.size(0)];
    const auto r = train_step(model, optimizer, rows.slice(1, 0, T), rows.slice(1, 1, T + 1), cfg.train.lr,
                              cfg.train.grad_clip, cfg.train.precision, -1, parts, cfg.train.z_loss);
    t_fwd += r.phase_ms[0], t_bwd += r.phase_ms[1], t_clip += r.phase_ms[2], t_opt += r.phase_ms[3];
  }
  op_timer::set_enabled(false);
  const double n = std::max(1, a.steps);
  Table t{{"phase", "ms"}, {}};
  t.add({"forward + loss", fmt::format("{:.3f}", t_fwd / n)});
  t.add({"backward", fmt::format("{:.3f}", t_bwd / n)});
  t.add({"clip", fmt::format("{:.3f}", t_clip / n)});
  t.add({"AdamW step", fmt::format("{:.3f}", t_opt / n)});
  // Forward + backward split by who spends it (util/op_timer.h): lmx's own ops, forward and
  // backward together, then the rest of the two phases.
  const std::pair<op_timer::Kind, const char*> kinds[] = {
      {op_timer::Kind::Linear, "fwd+bwd in linear layers (GEMMs)"},
      {op_timer::Kind::Attention, "fwd+bwd in fused attention"},
      {op_timer::Kind::Activation, "fwd+bwd in fused FFN activations"},
      {op_timer::Kind::Norm, "fwd+bwd in norms (+ residual adds)"},
      {op_timer::Kind::Loss, "fwd+bwd in fused cross-entropy"}};
  double ours = 0;
  for (const auto& [kind, label] : kinds) {
    ours += op_timer::total_ms(kind);
    t.add({label, fmt::format("{:.3f}", op_timer::total_ms(kind) / n)});
  }
  t.add({"fwd+bwd elsewhere (LibTorch ops, autograd, allocation)", fmt::format("{:.3f}", (t_fwd + t_bwd - ours) / n)});
  const double gemm = linear_gemm_ms(model, data.size(1) * T, a.steps, cfg.train.precision);
  t.add({"(all linear layers' GEMMs alone)", fmt::format("{:.3f}", gemm)});
  t.add({"(everything else)", fmt::format("{:.3f}", (t_fwd + t_bwd + t_clip + t_opt) / n - gemm)});
  std::cout << t.markdown() << "\n";
}

// The headline under bench's table: MFU against the GEMM rate of the run's precision (the bf16
// GEMM's where `bf16`, else the sgemm's), with the other rate beside it.
std::string mfu_line(double achieved, const Peak& peaks, bool bf16, int64_t n) {
  const double peak = bf16 ? peaks.bf16 : peaks.best();
  std::string other;
  if (bf16) other = fmt::format("; the fp32 sgemm {:.1f} GFLOP/s", peaks.best());
  else if (peaks.bf16 > 0)
    other = fmt::format("; bf16 GEMM {:.1f} GFLOP/s ({:.2f}x the sgemm)", peaks.bf16, peaks.bf16 / peaks.best());
  return fmt::format("\nMFU {:.1f}%: {:.1f} GFLOP/s of this machine's {:.1f} GFLOP/s {} ({}x{}x{}, {} thread{}, "
                     "measured now){}\n",
                     100 * achieved / peak, achieved, peak, bf16 ? "bf16 GEMM" : "fp32 sgemm", n, n, n,
                     runtime::threads(), runtime::threads() == 1 ? "" : "s", other);
}

// Training steps timed on random tokens, the FLOP rate and MFU against the matmul peak, and
// KV-cache decoding.
int bench_training(const BenchOptions& a, const Globals& g) {
  if (a.config.empty()) throw InputError("lmx bench: give a CONFIG (or --peak)", "lmx bench configs/textbook.yaml");
  const runtime::BlasInfo blas = checked_blas();
  Config cfg = load_config(a.config, a.sets);
  if (a.batch > 0) cfg.train.batch_size = a.batch;
  if (a.seq_len > 0) cfg.data.seq_len = a.seq_len;
  if (a.vocab > 0) cfg.model.vocab_size = a.vocab;
  if (cfg.model.vocab_size == 0) cfg.model.vocab_size = data::load_vocabulary(cfg.data).vocab.size();
  const int64_t B = cfg.train.batch_size, T = cfg.data.seq_len, V = cfg.model.vocab_size;
  if (T > cfg.model.max_seq_len && registry::position(cfg.model).bounded_length)
    throw InputError(fmt::format("--seq-len {} exceeds model.max_seq_len {}", T, cfg.model.max_seq_len));

  torch::manual_seed(g.seed >= 0 ? g.seed : 0);
  ModernLM model(cfg.model);
  model->train();
  auto optimizer = make_optimizer(model, cfg.train);
  const int total = a.warmup + a.steps;
  const int parts = step_parts(cfg.train, torch::kCPU);  // train.step_parts
  auto data = torch::randint(V, {std::max(total, 1), B, T + 1}, torch::kInt64);
  log::info("bench", "{}: {} parameters, B={} T={} V={}, {} threads, {} warm-up + {} timed steps", cfg.source,
            count_parameters(model), B, T, V, runtime::threads(), a.warmup, a.steps);
  double timed_s = 0, last_loss = 0;
  Clock::time_point t0;
  for (int step = 0; step < total; ++step) {
    if (step == a.warmup) t0 = Clock::now();
    auto rows = data[step];
    auto r = train_step(model, *optimizer, rows.slice(1, 0, T), rows.slice(1, 1, T + 1), cfg.train.lr,
                        cfg.train.grad_clip, cfg.train.precision, -1, parts, cfg.train.z_loss);
    last_loss = r.loss;
  }
  timed_s = seconds_since(t0);
  const double train_rss = peak_rss_mib();
  const double ms = a.steps > 0 ? timed_s / a.steps * 1e3 : 0;
  const ForwardFlops ff = forward_flops(cfg.model, T);
  const double step_flops = 3.0 * static_cast<double>(ff.total(/*causal=*/true)) * B;
  const double achieved = ms > 0 ? step_flops / (ms / 1e3) / 1e9 : 0;  // GFLOP/s
  // MFU against the GEMM rate of the run's precision, measured here: the sgemm's for fp32, the
  // bf16 GEMM's for bf16 (its linear layers' GEMMs; the rest of the step stays float32).
  const Peak peaks = matmul_peak(a.peak_size, a.peak_reps);
  const bool bf16 = cfg.train.precision == Precision::Bf16 && peaks.bf16 > 0;
  const double peak = bf16 ? peaks.bf16 : peaks.best();
  if (a.breakdown) print_breakdown(model, *optimizer, data, cfg, a);
  if (!a.profile.empty()) {
    torch::autograd::profiler::RecordProfile guard(a.profile);
    for (int step = 0; step < 5; ++step) {
      auto rows = data[step % data.size(0)];
      train_step(model, *optimizer, rows.slice(1, 0, T), rows.slice(1, 1, T + 1), cfg.train.lr, cfg.train.grad_clip,
                 cfg.train.precision, -1, parts, cfg.train.z_loss);
    }
  }

  double dec_cached = 0, dec_full = 0;
  if (!a.no_decode && a.decode_len > 0) {
    const int64_t len = a.decode_len;
    if (registry::position(cfg.model).bounded_length && len > cfg.model.max_seq_len)
      throw InputError(fmt::format("--decode-len {} exceeds model.max_seq_len {}", len, cfg.model.max_seq_len));
    decode_tokens_per_s(model, std::min<int64_t>(len, 16), V, true);  // warm-up
    dec_cached = decode_tokens_per_s(model, len, V, true);
    dec_full = decode_tokens_per_s(model, len, V, false);
  }

  Table t{{"config", "threads", "torch_threads", "blas_threads", "batch", "seq_len", "vocab", "params", "steps", "ms_per_step", "tokens_per_s",
           "gflop_per_step", "gflops", "peak_gflops", "mfu", "peak_rss_mib", "decode_len", "decode_kv_tok_s",
           "decode_recompute_tok_s", "kv_speedup", "final_loss", "blas_kernels", "blas_kernels_from", "gemm",
           "decode_path", "step_parts", "precision", "mfu_against", "sgemm_gflops", "bf16_gflops"},
          // new columns go last: ../shared/bench/llmc reads them by position
          {}};
  t.add({cfg.name, std::to_string(runtime::threads()), std::to_string(torch_runtime::torch_threads()),
         std::to_string(runtime::blas_threads()), std::to_string(B), std::to_string(T), std::to_string(V),
         std::to_string(count_parameters(model)), std::to_string(a.steps), fmt::format("{:.3f}", ms),
         fmt::format("{:.0f}", ms > 0 ? B * T / (ms / 1e3) : 0), fmt::format("{:.4f}", step_flops / 1e9),
         fmt::format("{:.1f}", achieved), fmt::format("{:.1f}", peak), fmt::format("{:.3f}", achieved / peak),
         fmt::format("{:.1f}", train_rss), a.no_decode ? "" : std::to_string(a.decode_len),
         a.no_decode ? "" : fmt::format("{:.0f}", dec_cached), a.no_decode ? "" : fmt::format("{:.0f}", dec_full),
         a.no_decode ? "" : fmt::format("{:.2f}", dec_cached / dec_full), fmt::format("{:.4f}", last_loss),
         blas.core, kernels_from(blas), gemm::name(gemm::active()),
         a.no_decode ? "" : (infer::Decoder::unsupported(model).empty() ? "engine" : "modules"),
         std::to_string(parts), option_name(cfg.train.precision), bf16 ? "bf16_gemm" : "sgemm",
         gflops_cell(peaks.best()), gflops_cell(peaks.bf16)});
  std::cout << t.markdown();
  std::cout << mfu_line(achieved, peaks, bf16, a.peak_size);
  if (!a.csv.empty()) write_file_atomic(a.csv, t.csv());
  return 0;
}

}  // namespace

int run_bench(const BenchOptions& o, const Globals& g) { return o.peak ? run_peak(o) : bench_training(o, g); }

void add_bench_command(CLI::App& app, Globals& g) {
  auto o = std::make_shared<BenchOptions>();
  auto* cmd = app.add_subcommand(
      "bench", "Time training steps (ms/step, tokens/s, FLOP/s, MFU, peak RSS) and KV-cache decoding; --peak: matmul peak");
  cmd->add_option("config", o->config, "config file (YAML)");
  add_set_option(cmd, o->sets);
  cmd->add_option("--steps", o->steps, "timed training steps (default 50)")->check(NonNegative);
  cmd->add_option("--warmup", o->warmup, "untimed steps first (default 10)")->check(NonNegative);
  cmd->add_option("--batch", o->batch, "sequences per step (default: train.batch_size)")->check(Positive);
  cmd->add_option("--seq-len", o->seq_len, "tokens per sequence (default: data.seq_len)")->check(Positive);
  cmd->add_option("--vocab", o->vocab, "vocabulary size (default: model.vocab_size, or the dataset's)")
      ->check(Positive);
  cmd->add_option("--decode-len", o->decode_len, "decode this many tokens, with and without the KV cache (default 512)")
      ->check(NonNegative);
  cmd->add_flag("--no-decode", o->no_decode, "skip the decoding measurement");
  cmd->add_flag("--peak", o->peak, "only measure the matmul peak (GFLOP/s) at --threads");
  cmd->add_option("--peak-size", o->peak_size, "n of the n×n×n peak matmul (default 1024)")->check(Positive);
  cmd->add_flag("--breakdown", o->breakdown, "also time forward, backward, clipping and AdamW apart");
  cmd->add_option("--profile", o->profile, "write a Chrome trace of 5 training steps to this file (op timings)");
  cmd->add_option("--csv", o->csv, "also write the table to this CSV file");
  on_run(cmd, g, o, run_bench);
}

}  // namespace lmx::cli
