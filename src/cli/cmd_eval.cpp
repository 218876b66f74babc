// lmx eval CHECKPOINT: loss, perplexity, true perplexity and the corpus's metric (the garden:
// pronoun accuracy) on a split, and mean NLL by position range.
#include <fmt/format.h>

#include <iostream>

#include "cli/app.h"
#include "cli/common.h"
#include "config/config.h"
#include "data/corpus.h"
#include "data/metrics.h"
#include "formats/checkpoint.h"
#include "train/evaluate.h"
#include "train/trainer.h"
#include "util/csv.h"
#include "util/error.h"

namespace lmx::cli {

struct EvalVerbOptions {
  std::string ckpt, split = "test", layout, by_position, csv;
  int seq_len = 0;
};

namespace {

// How to evaluate: the options given, else the checkpoint's training layout and lengths.
EvalOptions checkpoint_eval_options(const EvalVerbOptions& o, const Config& cfg) {
  EvalOptions opt;
  opt.split = data::parse_split(o.split);
  opt.layout = o.layout.empty() ? cfg.data.layout : parse_option<DataLayout>(o.layout);
  opt.seq_len = opt.layout == data::Layout::Packed ? (o.seq_len > 0 ? o.seq_len : cfg.data.seq_len) : 0;
  if (opt.seq_len > cfg.model.max_seq_len)
    throw InputError(fmt::format("--seq-len {} exceeds the model's max_seq_len {}", opt.seq_len, cfg.model.max_seq_len));
  if (!o.by_position.empty()) opt.by_position = parse_int_list("--by-position", o.by_position);
  return opt;
}

// The result table, and the by-position table when ranges were asked for; Markdown on stdout,
// CSV to --csv.
void print_eval(const EvalVerbOptions& o, const EvalOptions& opt, const EvalResult& r) {
  Table t;
  t.header = {"split", "layout", "tokens", "loss", "ppl", "true_nll", "true_ppl"};
  std::vector<std::string> cells = {o.split, option_name(opt.layout),
                                    std::to_string(r.tokens), csv_num(r.loss), csv_num(r.ppl), csv_num(r.true_nll),
                                    csv_num(r.true_ppl)};
  for (const auto& m : r.metrics.in(data::kEvalTable))
    t.header.push_back(m.column.name), cells.push_back(csv_num(m.value, m.column.decimals));
  t.add(cells);
  std::cout << t.markdown();
  Table pos;
  pos.header = {"positions", "tokens", "nll", "true_nll"};
  for (const auto& range : r.ranges)
    pos.add({fmt::format("{}-{}", range.lo, range.hi < 0 ? std::string("end") : std::to_string(range.hi - 1)),
             std::to_string(range.tokens), csv_num(range.nll), csv_num(range.true_nll)});
  if (!r.ranges.empty()) std::cout << "\n" << pos.markdown();
  if (!o.csv.empty()) write_file_atomic(o.csv, t.csv() + (r.ranges.empty() ? "" : "\n" + pos.csv()));
}

}  // namespace

int run_eval(const EvalVerbOptions& o, const Globals&) {
  Checkpoint ck = read_checkpoint(o.ckpt);
  ModernLM model = load_model(ck);
  data::Corpus corpus = data::load_corpus(ck.config.data);
  resolve_for_corpus(ck.config, corpus);  // the vocabulary fits the model (an HF folder may come from elsewhere)
  check_tokenizer(ck, corpus);
  const EvalOptions opt = checkpoint_eval_options(o, ck.config);
  EvalResult r = evaluate(model, corpus, opt);
  for (const auto& range : r.ranges)  // a mean over no token is no number: refuse the range
    if (range.tokens == 0)
      throw InputError(fmt::format("--by-position {}: no {} target at positions {}{}", o.by_position, o.split,
                                   range.lo, range.hi < 0 ? " or later" : fmt::format("-{}", range.hi - 1)),
                       "give range starts that the split's rows reach (lmx data stats shows document lengths)");
  print_eval(o, opt, r);
  return 0;
}

void add_eval_command(CLI::App& app, Globals& g) {
  auto o = std::make_shared<EvalVerbOptions>();
  auto* cmd = app.add_subcommand("eval", "Evaluate a checkpoint: loss, perplexity, true perplexity, pronoun accuracy");
  cmd->add_option("checkpoint", o->ckpt, "model.safetensors written by lmx train, or a Hugging Face Llama folder")
      ->required();
  cmd->add_option("--split", o->split, "train, val or test (default test)");
  cmd->add_option("--layout", o->layout, "doc or packed (default: the training layout)");
  cmd->add_option("--seq-len", o->seq_len, "packed: row length (default: the training seq_len)")->check(Positive);
  cmd->add_option("--by-position", o->by_position, "range starts for mean NLL by position, e.g. 0,64,128,256");
  cmd->add_option("--csv", o->csv, "also write the results as CSV");
  on_run(cmd, g, o, run_eval);
}

}  // namespace lmx::cli
