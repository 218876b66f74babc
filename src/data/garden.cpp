#include "data/garden.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace lmx::data {

Garden::Garden(Grammar grammar) : g_(std::move(grammar)) {}

std::shared_ptr<const Garden> Garden::load(const std::string& path) {
  return std::make_shared<const Garden>(load_grammar(grammar_path(path)));
}

Garden::State Garden::start() const {
  State s;
  s.stack.push_back({Symbol::Rule, g_.start});
  return s;
}

namespace {

// A path through the grammar from a state to its next word.
struct Path {
  std::vector<Symbol> stack;
  double p;
  int bind;                   // gender the first word binds (-1: none)
  const std::string* choice;  // the last choice taken, for ambiguity messages (the grammar's, not copied)
};

const std::string kStart = "start";

}  // namespace

std::vector<Garden::Next> Garden::next(const State& state) const {
  std::vector<Next> out;
  if (state.done) return out;
  std::vector<const std::string*> origin;  // origin[k]: the choice that produced out[k]

  // Depth-first over every choice until each path reaches a word (or the end: <eos>).
  std::vector<Path> frontier{{state.stack, 1.0, -1, &kStart}};
  while (!frontier.empty()) {
    Path path = std::move(frontier.back());
    frontier.pop_back();
    Next n;
    n.p = path.p;
    n.after.bound = state.bound;
    n.after.bound_pos = state.bound_pos;
    n.after.pos = state.pos + 1;
    if (path.stack.empty()) {
      n.token = g_.vocab.eos;
      n.after.done = true;
    } else {
      Symbol top = path.stack.back();
      path.stack.pop_back();
      if (top.kind == Symbol::Rule) {
        const Rule& rule = g_.rules[top.id];
        for (const Choice& c : rule.choices) {
          Path p{path.stack, path.p * c.p, c.bind >= 0 ? c.bind : path.bind, &c.where};
          p.stack.insert(p.stack.end(), c.seq.rbegin(), c.seq.rend());
          frontier.push_back(std::move(p));
        }
        continue;
      }
      if (top.kind == Symbol::Word) {
        n.token = top.id;
      } else {
        if (state.bound < 0)
          throw InputError(fmt::format("{}: ${} is used before any @gender choice bound a subject ({})", g_.source,
                                       g_.slots[top.id], *path.choice));
        n.token = g_.forms[top.id][state.bound];
        n.distance = state.pos - state.bound_pos;
      }
      n.after.stack = std::move(path.stack);
    }
    if (path.bind >= 0) n.after.bound = path.bind, n.after.bound_pos = state.pos;
    for (size_t k = 0; k < out.size(); ++k)
      if (out[k].token == n.token)
        throw InputError(fmt::format("{}: the grammar is ambiguous: '{}' can come from two choices ({} and {})",
                                     g_.source, g_.vocab.words[n.token], *origin[k], *path.choice),
                         "every possible next word must come from exactly one choice");
    out.push_back(std::move(n));
    origin.push_back(path.choice);
  }
  return out;
}

namespace {

std::string context(const Vocab& vocab, const Doc& doc, size_t i) {
  size_t from = i > 8 ? i - 8 : 0;
  std::string out = from > 0 ? "... " : "";
  for (size_t k = from; k < i; ++k) out += vocab.words[doc[k]] + " ";
  return out;
}

}  // namespace

template <class Visit>
void Garden::walk(const Doc& doc, Visit&& visit) const {
  const Vocab& v = g_.vocab;
  auto bad = [&](size_t i, const std::string& why) {
    std::string tok = doc[i] >= 0 && doc[i] < v.size() ? "'" + v.words[doc[i]] + "'" : std::to_string(doc[i]);
    return InputError(fmt::format("not in the garden language: token {} at position {} {}", tok, i, why),
                      fmt::format("after: {}", context(v, doc, i)));
  };
  if (doc.empty()) throw InputError("not in the garden language: an empty document (it must start with <bos>)");
  if (doc[0] != v.bos) throw bad(0, "(a document starts with <bos>)");
  State state = start();
  for (size_t i = 1; i < doc.size(); ++i) {
    if (state.done) throw bad(i, "follows <eos>");
    std::vector<Next> options = next(state);
    auto it = std::find_if(options.begin(), options.end(), [&](const Next& n) { return n.token == doc[i]; });
    if (it == options.end()) {
      std::vector<std::string> expected;
      for (const auto& n : options) expected.push_back(v.words[n.token]);
      std::sort(expected.begin(), expected.end());
      if (expected.size() > 12) expected.resize(12), expected.push_back("...");
      throw bad(i, fmt::format("cannot follow here (expected one of: {})", fmt::join(expected, " ")));
    }
    visit(i, options, *it);
    state = std::move(it->after);
  }
}

Garden::State Garden::follow(const Doc& prefix) const {
  if (prefix.size() <= 1) {
    walk(prefix, [](size_t, const std::vector<Next>&, const Next&) {});
    return start();
  }
  State state;
  walk(prefix, [&](size_t i, const std::vector<Next>&, const Next& chosen) {
    if (i + 1 == prefix.size()) state = chosen.after;
  });
  return state;
}

std::vector<std::pair<int32_t, double>> Garden::next_distribution(const Doc& prefix) const {
  std::vector<std::pair<int32_t, double>> out;
  for (const auto& n : next(follow(prefix))) out.emplace_back(n.token, n.p);
  return out;
}

Doc Garden::sample(Rng& rng) const {
  Doc doc{g_.vocab.bos};
  State state = start();
  while (!state.done) {
    std::vector<Next> options = next(state);
    double u = rng.uniform(), acc = 0;
    size_t pick = options.size() - 1;  // rounding: the last option takes what is left
    for (size_t k = 0; k < options.size(); ++k) {
      acc += options[k].p;
      if (u < acc) {
        pick = k;
        break;
      }
    }
    doc.push_back(options[pick].token);
    state = std::move(options[pick].after);
  }
  return doc;
}

std::vector<double> Garden::logprobs(const Doc& doc) const {
  std::vector<double> out(doc.size(), 0.0);
  walk(doc, [&](size_t i, const std::vector<Next>&, const Next& chosen) { out[i] = std::log(chosen.p); });
  if (doc.size() < 2 || doc.back() != g_.vocab.eos)
    throw InputError(fmt::format("not in the garden language: the document ends at position {} without <eos>",
                                 doc.size() - 1));
  return out;
}

std::vector<PronounSite> Garden::pronoun_sites(const Doc& doc) const {
  std::vector<PronounSite> out;
  const std::map<int32_t, int> genders = noun_genders();
  walk(doc, [&](size_t i, const std::vector<Next>&, const Next& chosen) {
    if (chosen.distance < 0) return;
    PronounSite site{static_cast<int>(i), chosen.distance, chosen.token, 0};
    for (size_t j = i - chosen.distance + 1; j < i; ++j)
      if (auto it = genders.find(doc[j]); it != genders.end() && it->second != chosen.after.bound) ++site.intervening;
    out.push_back(site);
  });
  return out;
}

std::map<int32_t, int> Garden::noun_genders() const {
  std::map<int32_t, int> out;
  for (const Rule& rule : g_.rules)
    for (const Choice& c : rule.choices)
      if (c.bind >= 0 && !c.seq.empty() && c.seq[0].kind == Symbol::Word) out[c.seq[0].id] = c.bind;
  return out;
}

std::map<int32_t, int32_t> Garden::noun_pronouns() const {
  std::map<int32_t, int32_t> out;
  for (const auto& [noun, gender] : noun_genders()) out[noun] = g_.forms[0][gender];
  return out;
}

std::vector<int> Garden::subject_positions(const Doc& doc) const {
  std::vector<int> out;
  walk(doc, [&](size_t i, const std::vector<Next>&, const Next& chosen) {
    if (chosen.after.bound_pos == static_cast<int>(i)) out.push_back(static_cast<int>(i));
  });
  return out;
}

std::vector<int32_t> Garden::pronouns() const {
  std::vector<int32_t> out;
  for (const auto& forms : g_.forms) out.insert(out.end(), forms.begin(), forms.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace lmx::data
