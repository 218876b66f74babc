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

}  // namespace

void add_probe_commands(CLI::App& app, Globals& g) {
  struct ProbeArgs {
    std::string name, checkpoint, depths, csv;
    bool list = false;
    experiments::ProbeOptions opt;
  };
  auto a = std::make_shared<ProbeArgs>();
  auto* probe = app.add_subcommand("probe", "Lecture tables that need no training run: activations, RoPE, KV cache, ...");
  probe->footer("\nProbes:\n" + experiments::probe_list());
  probe->add_option("name", a->name, "probe name (see the list below)");
  probe->add_option("checkpoint", a->checkpoint, "sparsity: the checkpoint (model.safetensors)");
  probe->add_flag("--list", a->list, "list the probes");
  probe->add_option("--docs", a->opt.docs, "sparsity: validation documents (default 200)")->check(Positive);
  probe->add_option("--depths", a->depths, "gradnorm: comma-separated depths (default 6,12,24)");
  probe->add_option("--len", a->opt.len, "kv-decode: tokens to decode (default 48)")->check(Positive);
  probe->add_option("--context", a->opt.context, "kv-table: context length in tokens (default 32768)");
  probe->add_option("--config", a->opt.config, "gradnorm, kv-decode: base config (default configs/textbook.yaml)");
  probe->add_option("--csv", a->csv, "also write the tables as CSV");
  probe->callback([&g, a] {
    g.run = [&g, a] {
      if (a->list || a->name.empty()) {
        std::cout << experiments::probe_list();
        return 0;
      }
      const auto& entry = experiments::find_probe(a->name);
      if (!a->checkpoint.empty() && a->name != "sparsity")
        throw InputError(fmt::format("probe {} takes no checkpoint (got '{}')", a->name, a->checkpoint));
      experiments::ProbeOptions opt = a->opt;
      opt.checkpoint = a->checkpoint;
      if (!a->depths.empty()) opt.depths = parse_int_list("--depths", a->depths);
      if (g.seed >= 0) opt.seed = static_cast<uint64_t>(g.seed);
      const experiments::ProbeResult res = entry.run(opt);
      for (size_t i = 0; i < res.tables.size(); ++i) {
        const auto& t = res.tables[i];
        std::cout << (i > 0 ? "\n" : "") << "### " << t.title << "\n\n" << markdown_safe(t.table).markdown();
      }
      if (!res.notes.empty()) std::cout << "\n";
      for (const auto& note : res.notes) std::cout << note << "\n";
      if (!a->csv.empty()) {
        for (size_t i = 0; i < res.tables.size(); ++i) {
          const std::string path = i == 0 ? a->csv : csv_path_for(a->csv, res.tables[i].key);
          write_file_atomic(path, res.tables[i].table.csv());
          log::info("probe", "wrote {}", path);
        }
      }
      return 0;
    };
  });
}

}  // namespace lmx::cli
