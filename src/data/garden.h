// The garden world's one walk of the grammar. The same step function `next` generates
// documents (sample), scores them exactly (logprobs), finds possessive-pronoun sites and
// exposes p(next token | prefix), so the generator, the scorer and the metric cannot disagree.
//
// A walk state is the stack of symbols still to expand plus the gender bound by the
// sentence's subject. Because the grammar is unambiguous (checked on every step), the
// state after a prefix is determined by the prefix.
#pragma once
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "data/corpus.h"
#include "data/grammar.h"
#include "data/rng.h"

namespace lmx::data {

// One possessive-pronoun site: doc[pos] is a pronoun that must agree with the subject
// `distance` tokens back (distance = pos - subject position). `intervening`: the nouns of
// another gender strictly between that subject and the pronoun (the subjects and objects of
// relative and "when" clauses): what a "nearest noun" reading gets wrong.
struct PronounSite {
  int pos = 0;
  int distance = 0;
  int32_t correct = -1;
  int intervening = 0;
};

class Garden final : public Truth {
 public:
  struct State {
    std::vector<Symbol> stack;  // symbols still to expand, top at the back
    int bound = -1;             // gender bound by the latest subject (-1: none yet)
    int bound_pos = -1;         // position of the word that bound it
    int pos = 1;                // position of the next token (0 holds <bos>)
    bool done = false;          // <eos> emitted
  };
  struct Next {
    int32_t token = -1;
    double p = 0;               // p(token | prefix)
    State after;                // the state once token is emitted
    int distance = -1;          // agreement slot: pos - subject position; else -1
  };

  explicit Garden(Grammar grammar);
  // Loads a grammar file; an empty path means the built-in data/garden.yaml.
  static std::shared_ptr<const Garden> load(const std::string& path);

  const Vocab& vocab() const { return g_.vocab; }
  const Grammar& grammar() const { return g_; }

  // The walk: the state after <bos>, and every possible next token from a state, each
  // with its probability and the state after it (empty once <eos> was emitted).
  // Throws InputError naming the rules if two choices could produce the same token.
  State start() const;
  std::vector<Next> next(const State& state) const;
  // Walks doc[0..n) (which must start with <bos>); throws InputError at the first token
  // the language cannot produce. Returns the state after the prefix.
  State follow(const Doc& prefix) const;
  // p(token | prefix) for every token that can follow (sums to 1).
  std::vector<std::pair<int32_t, double>> next_distribution(const Doc& prefix) const;

  // One document <bos> ... <eos>, drawn with rng.
  Doc sample(Rng& rng) const;

  std::vector<double> logprobs(const Doc& doc) const override;
  // Every possessive pronoun in doc with its subject distance.
  std::vector<PronounSite> pronoun_sites(const Doc& doc) const;
  // The ids of all possessive pronouns (the candidates the metric compares).
  std::vector<int32_t> pronouns() const;
  // Nouns that bind a gender (the first word of an @gender choice) -> the first slot's form for
  // that gender (gardener -> his): what a "which noun is the antecedent" baseline needs.
  std::map<int32_t, int32_t> noun_pronouns() const;
  // The same nouns -> the gender they bind (an index into grammar().genders).
  std::map<int32_t, int> noun_genders() const;
  // Positions in doc of the words that bound a gender: the subjects of its clauses.
  std::vector<int> subject_positions(const Doc& doc) const;

 private:
  // Calls visit(i, options at position i, chosen option) for i = 1..n-1.
  template <class Visit>
  void walk(const Doc& doc, Visit&& visit) const;

  Grammar g_;
};

// The first n documents of a split's stream (train 1, val 2, test 3, derived from seed):
// what load_corpus puts in that split.
std::vector<Doc> generate_split(const Garden& garden, uint64_t seed, Split split, int n);

}  // namespace lmx::data
