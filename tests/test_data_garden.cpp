// The garden grammar and its one walk: exact probabilities, sampling, the language's edges.
#include "catch.h"

#include <cmath>
#include <functional>
#include <map>

#include "data/corpus.h"
#include "data/garden.h"
#include "data/grammar.h"
#include "helpers.h"
#include "util/error.h"

using namespace lmx;
using namespace lmx::data;
using lmx::test::TempDir;

namespace {

std::shared_ptr<const Garden> builtin() {
  static auto garden = Garden::load("");
  return garden;
}

// Next-token probabilities depend on the stack and the bound gender only.
std::string state_key(const Garden::State& s) {
  std::string key = std::to_string(s.bound) + "|";
  for (const auto& sym : s.stack) key += std::to_string(sym.kind) + ":" + std::to_string(sym.id) + " ";
  return key;
}

void expect_input_error(const std::function<void()>& f, const std::vector<std::string>& fragments) {
  try {
    f();
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    std::string msg = e.what();
    INFO("message: " << msg);
    for (const auto& frag : fragments) CHECK(msg.find(frag) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("the built-in grammar: vocabulary and specials", "[data]") {
  const Vocab& v = builtin()->vocab();
  CHECK(v.pad == 0);
  CHECK(v.bos == 1);
  CHECK(v.eos == 2);
  CHECK(v.size() - 3 >= 60);
  CHECK(v.size() - 3 <= 150);
  auto pronouns = builtin()->pronouns();
  REQUIRE(pronouns.size() == 3);
  std::vector<std::string> names;
  for (auto p : pronouns) names.push_back(v.words[p]);
  CHECK(names == std::vector<std::string>{"her", "his", "its"});  // ids in vocabulary (byte) order
}

TEST_CASE("next-token probabilities sum to 1 and sampling agrees with the scorer (chi-square)", "[data]") {
  // 6000 documents from a fixed seed. At every reachable state the options must sum to 1.
  // Observed next-token counts, grouped by state, are compared with n·p: over the states
  // where every expected count is >= 5, X² must stay below dof + 4·sqrt(2·dof)
  // (p ≈ 1e-4 under the normal approximation of the chi-square distribution).
  const Garden& g = *builtin();
  Rng rng(7);
  struct Cell {
    int64_t n = 0;
    std::map<int32_t, int64_t> count;
    std::vector<std::pair<int32_t, double>> p;
  };
  std::map<std::string, Cell> cells;
  double worst_sum_error = 0;
  int64_t states = 0;
  for (int d = 0; d < 6000; ++d) {
    Doc doc = g.sample(rng);
    REQUIRE(doc.front() == g.vocab().bos);
    REQUIRE(doc.back() == g.vocab().eos);
    Garden::State s = g.start();
    for (size_t i = 1; i < doc.size(); ++i) {
      auto options = g.next(s);
      double sum = 0;
      for (const auto& o : options) sum += o.p;
      worst_sum_error = std::max(worst_sum_error, std::abs(sum - 1.0));
      ++states;
      Cell& cell = cells[state_key(s)];
      if (cell.p.empty())
        for (const auto& o : options) cell.p.emplace_back(o.token, o.p);
      ++cell.n;
      ++cell.count[doc[i]];
      auto it = std::find_if(options.begin(), options.end(), [&](const auto& o) { return o.token == doc[i]; });
      REQUIRE(it != options.end());
      s = it->after;
    }
    CHECK(s.done);
  }
  CHECK(worst_sum_error < 1e-12);
  double x2 = 0;
  int64_t dof = 0;
  for (const auto& [key, cell] : cells) {
    if (cell.p.size() < 2) continue;
    bool enough = true;
    for (const auto& [tok, p] : cell.p) enough = enough && cell.n * p >= 5;
    if (!enough) continue;
    for (const auto& [tok, p] : cell.p) {
      double expected = cell.n * p;
      double observed = cell.count.count(tok) ? static_cast<double>(cell.count.at(tok)) : 0.0;
      x2 += (observed - expected) * (observed - expected) / expected;
    }
    dof += static_cast<int64_t>(cell.p.size()) - 1;
  }
  INFO("states visited " << states << ", distinct " << cells.size() << ", X² " << x2 << " on " << dof << " dof");
  CHECK(dof > 100);
  CHECK(x2 < dof + 4 * std::sqrt(2.0 * dof));
}

TEST_CASE("a tiny grammar's documents have probabilities summing to 1", "[data]") {
  // Enumerates the whole language of a small grammar with empty choices, bindings and a slot.
  const std::string text = R"(start: S
slots:
  poss: {he: his, she: her}
rules:
  S:
    - 1 the N Mid V Obj .
  N:
    - 1 boy @he
    - 3 girl @she
  Mid:
    - 2
    - 1 that sings
  V:
    - 1 sees
    - 1 likes
  Obj:
    - 1 $poss cat
    - 2 a dog
    - 1
)";
  Garden g(parse_grammar(text, "tiny.yaml"));
  double total = 0;
  int docs = 0;
  std::function<void(Doc, Garden::State, double)> enumerate = [&](Doc prefix, Garden::State s, double p) {
    for (const auto& o : g.next(s)) {
      Doc d = prefix;
      d.push_back(o.token);
      if (o.after.done) {
        auto lp = g.logprobs(d);
        double logp = 0;
        for (double x : lp) logp += x;
        CHECK(logp == Approx(std::log(p * o.p)).margin(1e-12));
        total += std::exp(logp);
        ++docs;
      } else {
        enumerate(d, o.after, p * o.p);
      }
    }
  };
  enumerate({g.vocab().bos}, g.start(), 1.0);
  CHECK(docs == 2 * 2 * 2 * 3);
  CHECK(total == Approx(1.0).margin(1e-12));
  // The pronoun agrees with the subject, at the right distance.
  Doc doc = g.vocab().encode("<bos> the girl that sings likes her cat . <eos>");
  auto sites = g.pronoun_sites(doc);
  REQUIRE(sites.size() == 1);
  CHECK(sites[0].pos == 6);
  CHECK(sites[0].distance == 4);
  CHECK(g.vocab().words[sites[0].correct] == "her");
  auto lp = g.logprobs(doc);
  CHECK(lp[6] == Approx(std::log(0.25)));  // Obj chose the $poss choice; the form itself is certain
}

TEST_CASE("strings outside the language are rejected at the first bad token", "[data]") {
  const Garden& g = *builtin();
  const Vocab& v = g.vocab();
  auto lp = [&](const std::string& text) { return g.logprobs(v.encode(text)); };
  CHECK_NOTHROW(lp("<bos> the girl waters her rose . <eos>"));
  expect_input_error([&] { lp("<bos> the girl waters his rose . <eos>"); }, {"'his'", "position 4", "her"});
  expect_input_error([&] { lp("<bos> the the girl . <eos>"); }, {"'the'", "position 2"});
  expect_input_error([&] { lp("<bos> the girl waters her rose . <eos> the"); }, {"position 8", "<eos>"});
  expect_input_error([&] { lp("<bos> the girl waters her rose ."); }, {"without <eos>"});
  expect_input_error([&] { lp("the girl waters her rose . <eos>"); }, {"position 0", "<bos>"});
  expect_input_error([&] { v.encode("<bos> the giraffe"); }, {"'giraffe'", "vocabulary"});
  expect_input_error([&] { g.next_distribution(v.encode("<bos> the cat the")); }, {"'the'", "position 3"});
}

TEST_CASE("next_distribution is the scorer's distribution", "[data]") {
  const Garden& g = *builtin();
  const Vocab& v = g.vocab();
  Doc doc = v.encode("<bos> the old dog that the girl sees near its house sleeps . <eos>");
  auto lp = g.logprobs(doc);
  for (size_t i = 1; i < doc.size(); ++i) {
    auto dist = g.next_distribution(Doc(doc.begin(), doc.begin() + i));
    double sum = 0, p = 0;
    for (auto [tok, q] : dist) sum += q, p += tok == doc[i] ? q : 0;
    CHECK(sum == Approx(1.0));
    CHECK(std::log(p) == Approx(lp[i]));
  }
  // After the subject "dog" and a relative clause naming the girl, the pronoun is its, with
  // nothing else possible: it agrees with the subject, not with the nearest noun.
  auto dist = g.next_distribution(v.encode("<bos> the old dog that the girl sees near"));
  std::map<std::string, double> p;
  for (auto [tok, q] : dist) p[v.words[tok]] = q;
  CHECK(p.count("its") == 1);
  CHECK(p.count("his") == 0);
  CHECK(p.count("her") == 0);
}

TEST_CASE("grammar file errors name the file and the key", "[data]") {
  TempDir dir;
  auto load = [&](const std::string& body) {
    auto path = dir.write("g.yaml", "start: S\nslots:\n  poss: {he: his}\nrules:\n" + body);
    return [path] { Garden::load(path); };
  };
  expect_input_error(load("  S:\n    - 1 the Nuon\n  Noun:\n    - 1 cat @he\n"),
                     {"g.yaml:6:7", "rules.S[0]", "unknown rule 'Nuon'", "Noun"});
  expect_input_error(load("  S:\n    - 1 the A\n  A:\n    - 1 B\n  B:\n    - 1 x A\n"),
                     {"g.yaml", "recursion", "A -> B -> A"});
  expect_input_error(load("  S:\n    - zero cat\n"), {"g.yaml:6:7", "rules.S[0]", "weight"});
  expect_input_error(load("  S:\n    - 1 cat @she\n"), {"rules.S[0]", "unknown gender 'she'"});
  expect_input_error(load("  S:\n    - 1 cat $pos\n"), {"rules.S[0]", "$pos", "$poss"});
  expect_input_error(load("  S:\n    - 1 cat\n  T:\n    - 1 dog\n"), {"rules.T", "not reachable"});
  expect_input_error(load("  S:\n    - 1 Cat!\n"), {"rules.S[0]", "Cat!"});
  expect_input_error([&] { Garden::load(dir.file("missing.yaml")); }, {"missing.yaml", "cannot read"});
  {
    auto path = dir.write("t.yaml", "start: S\nslot:\n  poss: {he: his}\nrules:\n  S:\n    - 1 cat\n");
    expect_input_error([&] { Garden::load(path); }, {"t.yaml:2:1", "unknown key 'slot'", "slots"});
  }
  // Ambiguity is found on the walk: "the" could start either choice of S.
  auto amb = dir.write("a.yaml", "start: S\nslots:\n  poss: {he: his}\nrules:\n  S:\n    - 1 the cat @he\n    - 1 the dog\n");
  Garden g(load_grammar(amb));
  expect_input_error([&] { g.next(g.start()); }, {"a.yaml", "ambiguous", "'the'", "rules.S[0]", "rules.S[1]"});
}
