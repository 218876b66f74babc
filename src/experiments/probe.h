// Probes: the lecture tables that need no training run (or only an initialized model, or
// one checkpoint). One aligned name → (arguments, description, function) table, in
// experiments/probe.cpp; `lmx probe --list`, `lmx probe --help` and the unknown-name error
// all print it. Each probe family has its own file:
//   probe_ffn.cpp       activations, ffn-params, sparsity          (lecture 01)
//   probe_norm.cpp      norm-invariance, gradnorm                  (lecture 02)
//   probe_attention.cpp kv-decode, mla, kv-table                   (lecture 03)
//   probe_position.cpp  rope-relative, rope-decay, rope-layout, t5-buckets (lecture 04)
// Every number comes from the model's own code (activation functions, norms, RoPE, the T5
// bucket function, sizes.h); closed-form references are computed next to them, not typed in.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "util/csv.h"

namespace lmx::experiments {

struct ProbeOptions {
  std::string checkpoint;                 // sparsity: model.safetensors written by lmx train
  std::string config;                     // gradnorm, kv-decode: base config (default: a preset)
  int docs = 200;                         // sparsity: the first N validation documents
  std::vector<int> depths = {6, 12, 24};  // gradnorm: n_layers of the models compared
  uint64_t seed = 0;                      // init / random vectors
  int len = 48;                           // kv-decode: tokens decoded
  int64_t context = 32768;                // kv-table: context length for the GiB column
};

struct ProbeTable {
  std::string key;    // short name: the CSV file suffix for tables after the first
  std::string title;  // printed as a Markdown heading
  Table table;
};

struct ProbeResult {
  std::vector<ProbeTable> tables;  // the first is the probe's main table
  std::vector<std::string> notes;  // one-line remarks printed after the tables
};

using ProbeFn = ProbeResult (*)(const ProbeOptions&);

struct ProbeEntry {
  std::string name;
  std::string args;         // what the probe reads, e.g. "CKPT [--docs N]"
  ProbeFn run;
  std::string description;  // one line, starting with the lecture item (01.1 = section 01, item 1)
};

const std::vector<ProbeEntry>& probes();
// Throws InputError listing the valid names.
const ProbeEntry& find_probe(const std::string& name);
// The aligned table: "  name  args  description" per line (for --list and --help).
std::string probe_list();

// The probes (one function per table row).
ProbeResult probe_activations(const ProbeOptions& opt);
ProbeResult probe_ffn_params(const ProbeOptions& opt);
ProbeResult probe_sparsity(const ProbeOptions& opt);
ProbeResult probe_norm_invariance(const ProbeOptions& opt);
ProbeResult probe_gradnorm(const ProbeOptions& opt);
ProbeResult probe_kv_decode(const ProbeOptions& opt);
ProbeResult probe_mla(const ProbeOptions& opt);
ProbeResult probe_kv_table(const ProbeOptions& opt);
ProbeResult probe_rope_relative(const ProbeOptions& opt);
ProbeResult probe_rope_decay(const ProbeOptions& opt);
ProbeResult probe_rope_layout(const ProbeOptions& opt);
ProbeResult probe_t5_buckets(const ProbeOptions& opt);

// Shared by the probe files.
// Loads a config; a relative path that does not exist here is looked up in the lmx sources
// (so `configs/textbook.yaml` works from any directory).
Config load_probe_config(const std::string& path);
std::string fixed(double v, int decimals = 6);  // "-0.169971"
std::string sci(double v);                      // "1.234e-07"
// The largest |a - b|, computed in float64.
double max_abs(const at::Tensor& a, const at::Tensor& b);

}  // namespace lmx::experiments
