// lmx data stats|sample: look at the corpus a config names.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>

#include "cli/app.h"
#include "config/config.h"
#include "config/registry.h"
#include "data/baselines.h"
#include "data/corpus.h"
#include "data/garden.h"
#include "data/pronoun.h"
#include "data/text.h"
#include "data/tokenizer.h"
#include "util/error.h"
#include "util/log.h"

namespace lmx::cli {

struct DataStatsOptions {
  std::string path = "configs/textbook.yaml";
  std::vector<std::string> sets;
};

struct DataTokenizerOptions {
  std::string path = "configs/textbook.yaml";
  std::vector<std::string> sets;
  int vocab = 0;
  std::string type = "bpe";
  bool byte_fallback = false;
};

struct DataSampleOptions {
  std::string path = "configs/textbook.yaml";
  std::vector<std::string> sets;
  int n = 5;
};

namespace {

// A relative config path that does not exist here is looked up in the lmx sources.
Config load_data_config(std::string path, const std::vector<std::string>& sets, const Globals& g) {
  if (std::filesystem::path(path).is_relative() && !std::filesystem::exists(path)) {
    auto in_source = std::filesystem::path(LMX_SOURCE_DIR) / path;
    if (std::filesystem::exists(in_source)) path = in_source.string();
  }
  Config cfg = load_config(path, sets);
  if (g.seed >= 0) cfg.data.seed = static_cast<int>(g.seed);
  return cfg;
}

std::string show_doc(const data::Vocab& vocab, const data::Doc& doc) {
  std::string text = vocab.decode(doc);
  if (!vocab.bytes) return text;
  std::string out;  // bytes: make control characters visible
  for (unsigned char c : text) out += (c == '\n') ? std::string("\\n") : (c < 32 ? std::string("?") : std::string(1, c));
  return out;
}

// Far-site shortcut baselines: the pronoun of the sentence's first / nearest gendered noun, or
// of its first / nearest clause subject (the rule: 1.0), and how often other-gender nouns stand
// between the antecedent and the pronoun.
void print_shortcuts(const data::Garden& garden, const std::vector<data::Doc>& docs, int W,
                     const std::vector<int32_t>& boundaries) {
  using namespace data;
  std::vector<std::vector<int>> subjects;
  for (const Doc& doc : docs) subjects.push_back(garden.subject_positions(doc));
  for (bool subject : {false, true})
    for (bool first : {true, false}) {
      auto acc = pronoun_accuracy(garden, docs, W,
                                  subject ? subject_heuristic(docs, subjects, garden.noun_pronouns(), boundaries, first)
                                          : noun_heuristic(docs, garden.noun_pronouns(), boundaries, first));
      std::cout << fmt::format("  {} {} of the sentence as antecedent: far accuracy {:.3f}, near {:.3f}\n",
                               first ? "first  " : "nearest", subject ? "subject      " : "gendered noun", acc.far(),
                               acc.near());
    }
  PronounAccuracy all = pronoun_accuracy(garden, docs, W, [](size_t, int, const std::vector<int32_t>& c) {
    return std::vector<double>(c.size(), 0.0);
  });
  const auto& n = all.by_intervening_sites;
  const auto& d = all.by_distance_sites;
  std::cout << fmt::format("  far sites by distance {}-10 / 11-20 / 21+: {} / {} / {}\n", W + 1, d[0], d[1], d[2]);
  std::cout << fmt::format("  far sites with 0 / 1 / 2+ other-gender nouns between antecedent and pronoun: {} / {} / {} "
                           "(share with any: {:.3f})\n", n[0], n[1], n[2],
                           all.far_sites ? static_cast<double>(n[1] + n[2]) / all.far_sites : 0.0);
}

void print_stats(const Config& cfg) {
  using namespace data;
  const Corpus corpus = load_corpus(cfg.data);
  const auto unigram = unigram_logprobs(corpus);
  std::cout << fmt::format("kind        {}\n", corpus.kind);
  std::cout << fmt::format("vocabulary  {} tokens\n", corpus.vocab.size());
  if (corpus.vocab.tokenizer)
    std::cout << fmt::format("tokenizer   sentencepiece {} (hash {})\n", corpus.vocab.tokenizer->path(),
                             corpus.vocab.tokenizer->hash());
  else if (!corpus.vocab.bytes)
    std::cout << fmt::format("  {}\n", fmt::join(corpus.vocab.words, " "));

  std::cout << fmt::format("\n{:<6} {:>7} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "split", "docs", "tokens",
                           "mean len", "true nll", "true ppl", "uni nll", "uni ppl");
  for (Split s : {Split::Train, Split::Val, Split::Test}) {
    SplitStats st = split_stats(corpus, s, unigram);
    std::cout << fmt::format("{:<6} {:>7} {:>8} {:>9.2f} {:>9.4f} {:>9.3f} {:>9.4f} {:>9.3f}\n", split_name(s),
                             st.docs, st.tokens, st.mean_doc_len, st.true_nll, st.true_ppl(), st.unigram_nll,
                             st.unigram_ppl());
  }
  std::cout << "(nll: mean nats per predicted token, <eos> included; unigram: add-one smoothed train counts)\n";
  if (registry::corpus(cfg.data).text_source) {  // tokens per byte of text (<bos>/<eos> not counted)
    std::cout << "\ntokens per byte:";
    for (Split s : {Split::Train, Split::Val, Split::Test}) {
      int64_t tokens = 0, bytes = 0;
      for (const Doc& doc : corpus.split(s)) {
        Doc inner(doc.begin() + 1, doc.end() - 1);
        tokens += static_cast<int64_t>(inner.size());
        bytes += static_cast<int64_t>(corpus.vocab.decode(inner).size());
      }
      std::cout << fmt::format(" {} {:.4f}", split_name(s), bytes ? static_cast<double>(tokens) / bytes : 0.0);
    }
    std::cout << "\n";
  }

  if (auto garden = std::dynamic_pointer_cast<const Garden>(corpus.truth)) {  // the garden's own statistics
    const int W = cfg.data.pronoun_window;
    std::map<int, int64_t> hist;
    int64_t total = 0, far = 0;
    for (const Doc& doc : corpus.train)
      for (const auto& site : garden->pronoun_sites(doc)) ++hist[site.distance], ++total, far += site.distance > W;
    std::cout << fmt::format("\npossessive pronouns in train: {} sites, {} far (distance > W = {}: {:.1f}%)\n", total,
                             far, W, total ? 100.0 * far / total : 0.0);
    int64_t most = 1;
    for (const auto& [d, c] : hist) most = std::max(most, c);
    for (const auto& [d, c] : hist)
      std::cout << fmt::format("  {:>3} {:>7} {}\n", d, c, std::string(static_cast<size_t>(40 * c / most), '#'));
    // How much a shortcut solves: the pronoun of the sentence's first, or nearest, gendered noun.
    std::vector<int32_t> boundaries{corpus.vocab.bos, corpus.vocab.eos};
    for (const char* w : {".", "!", "?"})
      if (auto it = std::find(corpus.vocab.words.begin(), corpus.vocab.words.end(), w); it != corpus.vocab.words.end())
        boundaries.push_back(static_cast<int32_t>(it - corpus.vocab.words.begin()));
    print_shortcuts(*garden, corpus.train, W, boundaries);
  }

  std::cout << "\nsample documents (train):\n";
  for (size_t i = 0; i < std::min<size_t>(3, corpus.train.size()); ++i)
    std::cout << "  " << show_doc(corpus.vocab, corpus.train[i]) << "\n";
}

void print_sample(const Config& cfg, int n) {
  using namespace data;
  if (!registry::corpus(cfg.data).has_truth) {
    Corpus corpus = load_corpus(cfg.data);
    std::cout << fmt::format("({} has no true distribution: documents only)\n", cfg.data.kind);
    for (size_t i = 0; i < std::min<size_t>(n, corpus.train.size()); ++i)
      std::cout << show_doc(corpus.vocab, corpus.train[i]) << "\n\n";
    return;
  }
  DataConfig first = cfg.data;  // the first n training documents, with each token's probability
  if (registry::corpus(cfg.data).doc_counts) first.train_docs = n, first.val_docs = first.test_docs = 1;
  const Corpus corpus = load_corpus(first);
  const auto& words = corpus.vocab.words;
  for (size_t d = 0; d < std::min<size_t>(n, corpus.train.size()); ++d) {
    const Doc& doc = corpus.train[d];
    auto lp = corpus.truth->logprobs(doc);
    std::string line = words[doc[0]];
    double nll = 0;
    for (size_t i = 1; i < doc.size(); ++i) {
      line += fmt::format(" {}({:.2f})", words[doc[i]], std::exp(lp[i]));
      nll -= lp[i];
    }
    std::cout << line << fmt::format("\n  {} tokens, mean nll {:.3f}\n", doc.size() - 1, nll / (doc.size() - 1));
  }
}

}  // namespace

int run_data_stats(const DataStatsOptions& o, const Globals& g) {
  print_stats(load_data_config(o.path, o.sets, g));
  return 0;
}

int run_data_tokenizer(const DataTokenizerOptions& o, const Globals& g) {
  Config cfg = load_data_config(o.path, o.sets, g);
  if (!registry::corpus(cfg.data).text_source)
    throw InputError(fmt::format("{}: data.kind is {}; a tokenizer is trained on text", cfg.source, cfg.data.kind));
  std::string path = cfg.data.tokenizer_model;
  if (path.empty())  // a bytes config: the default place beside it
    path = (std::filesystem::path(cfg.source).parent_path() / (cfg.name + ".tokenizer.model")).string();
  const auto texts = data::text_training_split(cfg.data);
  data::train_tokenizer(texts, o.vocab, o.type, path, o.byte_fallback);
  auto t = data::Tokenizer::load(path);
  std::cout << fmt::format("{}: SentencePiece {} with {} pieces, trained on {} training documents (hash {})\n", path,
                           o.type, t->size(), texts.size(), t->hash());
  if (cfg.data.tokenizer != TokenizerKind::SentencePiece)
    log::info("data", "set data.tokenizer: sentencepiece in {} to use it", cfg.source);
  return 0;
}

int run_data_sample(const DataSampleOptions& o, const Globals& g) {
  print_sample(load_data_config(o.path, o.sets, g), o.n);
  return 0;
}

void add_data_commands(CLI::App& app, Globals& g) {
  auto* data = app.add_subcommand("data", "Inspect the dataset a config names: statistics, sample documents");
  data->require_subcommand(1);

  auto stats_o = std::make_shared<DataStatsOptions>();
  auto* stats = data->add_subcommand(
      "stats", "Vocabulary, split sizes, mean document length, true and unigram perplexity, pronoun distances");
  stats->add_option("config", stats_o->path, "config file (default configs/textbook.yaml)");
  add_set_option(stats, stats_o->sets);
  on_run(stats, g, stats_o, run_data_stats);

  auto tok_o = std::make_shared<DataTokenizerOptions>();
  auto* tok = data->add_subcommand(
      "tokenizer", "Train a SentencePiece model on a text config's training split; writes data.tokenizer_model");
  tok->add_option("config", tok_o->path, "text config (data.kind text)")->required();
  add_set_option(tok, tok_o->sets);
  tok->add_option("--vocab", tok_o->vocab, "vocabulary size, <unk> <bos> <eos> <pad> included")
      ->required()
      ->check(CLI::Range(8, 1 << 20));
  tok->add_option("--type", tok_o->type, "bpe or unigram (default bpe)");
  tok->add_flag("--byte-fallback", tok_o->byte_fallback,
                "add the 256 byte pieces <0x00>..<0xFF> (unseen characters become bytes, not <unk>; llama.cpp "
                "needs them: lmx export --gguf)");
  on_run(tok, g, tok_o, run_data_tokenizer);

  auto sample_o = std::make_shared<DataSampleOptions>();
  auto* sample = data->add_subcommand("sample", "The first training documents with each token's true probability");
  sample->add_option("config", sample_o->path, "config file (default configs/textbook.yaml)");
  add_set_option(sample, sample_o->sets);
  sample->add_option("--n", sample_o->n, "documents to show (default 5)")->check(Positive);
  on_run(sample, g, sample_o, run_data_sample);
}

}  // namespace lmx::cli
