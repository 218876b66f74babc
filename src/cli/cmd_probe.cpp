// lmx probe NAME [CKPT] [options] [--csv FILE]   one lecture table (experiments/probe.h)
// lmx probe --list                                the probe table
// Each probe prints its tables as Markdown on stdout. --csv FILE writes the first table to
// FILE and every further table to FILE's stem + "_" + key + ".csv" in the same directory.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/app.h"
#include "cli/common.h"
#include "experiments/probe.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/log.h"

namespace lmx::cli {

struct ProbeVerbOptions {
  std::string name, checkpoint, depths, csv;
  bool list = false;
  experiments::ProbeOptions opt;
};

namespace {

// Cells such as "max |Δ|" would split a Markdown row: escape the bars there (not in CSV).
Table markdown_safe(Table t) {
  auto escape = [](std::string& cell) {
    std::string out;
    for (char c : cell) out += c == '|' ? std::string("\\|") : std::string(1, c);
    cell = out;
  };
  for (auto& h : t.header) escape(h);
  for (auto& r : t.rows)
    for (auto& c : r) escape(c);
  return t;
}

std::string csv_path_for(const std::string& first, const std::string& key) {
  namespace fs = std::filesystem;
  fs::path p(first);
  return (p.parent_path() / (p.stem().string() + "_" + key + ".csv")).string();
}

// The tables as Markdown on stdout (then the notes); with --csv, each table as CSV too.
void print_probe(const experiments::ProbeResult& res, const std::string& csv) {
  for (size_t i = 0; i < res.tables.size(); ++i) {
    const auto& t = res.tables[i];
    std::cout << (i > 0 ? "\n" : "") << "### " << t.title << "\n\n" << markdown_safe(t.table).markdown();
  }
  if (!res.notes.empty()) std::cout << "\n";
  for (const auto& note : res.notes) std::cout << note << "\n";
  if (csv.empty()) return;
  for (size_t i = 0; i < res.tables.size(); ++i) {
    const std::string path = i == 0 ? csv : csv_path_for(csv, res.tables[i].key);
    write_file_atomic(path, res.tables[i].table.csv());
    log::info("probe", "wrote {}", path);
  }
}

}  // namespace

int run_probe(const ProbeVerbOptions& o, const Globals& g) {
  if (o.list || o.name.empty()) {
    std::cout << experiments::probe_list();
    return 0;
  }
  const auto& entry = experiments::find_probe(o.name);
  if (!o.checkpoint.empty() && o.name != "sparsity")
    throw InputError(fmt::format("probe {} takes no checkpoint (got '{}')", o.name, o.checkpoint));
  experiments::ProbeOptions opt = o.opt;
  opt.checkpoint = o.checkpoint;
  if (!o.depths.empty()) opt.depths = parse_int_list("--depths", o.depths);
  if (g.seed >= 0) opt.seed = static_cast<uint64_t>(g.seed);
  print_probe(entry.run(opt), o.csv);
  return 0;
}

void add_probe_command(CLI::App& app, Globals& g) {
  auto o = std::make_shared<ProbeVerbOptions>();
  auto* cmd = app.add_subcommand("probe", "Lecture tables that need no training run: activations, RoPE, KV cache, ...");
  cmd->footer("\nProbes:\n" + experiments::probe_list());
  cmd->add_option("name", o->name, "probe name (see the list below)");
  cmd->add_option("checkpoint", o->checkpoint, "sparsity: the checkpoint (model.safetensors)");
  cmd->add_flag("--list", o->list, "list the probes");
  cmd->add_option("--docs", o->opt.docs, "sparsity: validation documents (default 200)")->check(Positive);
  cmd->add_option("--depths", o->depths, "gradnorm: comma-separated depths (default 6,12,24)");
  cmd->add_option("--len", o->opt.len, "kv-decode: tokens to decode (default 48)")->check(Positive);
  cmd->add_option("--context", o->opt.context, "kv-table: context length in tokens (default 32768)");
  cmd->add_option("--config", o->opt.config, "gradnorm, kv-decode: base config (default configs/textbook.yaml)");
  cmd->add_option("--csv", o->csv, "also write the tables as CSV");
  on_run(cmd, g, o, run_probe);
}

}  // namespace lmx::cli
