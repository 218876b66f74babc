#include "data/grammar.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "config/fields.h"
#include "util/error.h"

namespace lmx::data {

namespace {

[[noreturn]] void fail(const std::string& where, const std::string& message) {
  throw InputError(fmt::format("{}: {}", where, message),
                   "the grammar format is described at the top of data/garden.yaml");
}

bool is_word(const std::string& s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::islower(c) || std::isdigit(c) || std::string(".,;:!?'-").find(c) != std::string::npos;
  });
}

std::vector<std::string> keys_of(const YAML::Node& map) {
  std::vector<std::string> out;
  for (const auto& kv : map) out.push_back(kv.first.as<std::string>());
  return out;
}

// Limits that keep generation bounded (a document, the rule nesting, the rules of a file).
constexpr size_t kMaxRules = 10000;
constexpr int kMaxDepth = 256;
constexpr double kMaxDocWords = 100000;

// Raw choice before word ids exist.
struct RawSymbol {
  Symbol::Kind kind;
  std::string name;
};
struct RawChoice {
  double weight;
  std::vector<RawSymbol> seq;
  int bind;
  std::string where;
};

// Depth-first search for a rule that reaches itself; returns the cycle as "A -> B -> A".
std::string find_cycle(const std::vector<std::vector<int>>& edges, const std::vector<std::string>& names) {
  std::vector<int> color(edges.size(), 0), parent(edges.size(), -1);
  std::string cycle;
  std::function<bool(int)> dfs = [&](int u) {
    color[u] = 1;
    for (int v : edges[u]) {
      if (color[v] == 1) {
        std::vector<std::string> path{names[v]};
        for (int w = u; w != v; w = parent[w]) path.push_back(names[w]);
        path.push_back(names[v]);
        std::reverse(path.begin() + 1, path.end() - 1);
        cycle = join(path, " -> ");
        return true;
      }
      if (color[v] == 0) {
        parent[v] = u;
        if (dfs(v)) return true;
      }
    }
    color[u] = 2;
    return false;
  };
  for (size_t u = 0; u < edges.size(); ++u)
    if (color[u] == 0 && dfs(static_cast<int>(u))) return cycle;
  return "";
}

}  // namespace

std::string default_grammar_path() { return std::string(LMX_SOURCE_DIR) + "/data/garden.yaml"; }

std::string grammar_path(const std::string& spec) {
  if (spec.empty()) return default_grammar_path();
  if (spec.find_first_of("/.") != std::string::npos) return spec;
  const std::string builtin = std::string(LMX_SOURCE_DIR) + "/data/" + spec + ".yaml";
  std::ifstream probe(builtin);
  if (!probe)
    throw InputError(fmt::format("data.grammar: '{}' is not a built-in grammar (data/{}.yaml does not exist)", spec, spec),
                     "built-in grammars: garden (the default), garden_v2, garden_v1; or give a grammar file's path");
  return builtin;
}

namespace {

// A grammar while it is read: the parts that exist before word and rule ids do.
struct GrammarDraft {
  std::string source;
  std::set<std::string> words;                   // every word, for the vocabulary
  std::vector<std::vector<std::string>> forms;   // per slot, its word per gender
  std::vector<std::string> names;                // rule names, in file order
  std::map<std::string, int> rule_index;
  std::vector<std::vector<RawChoice>> raw;       // per rule
  std::vector<std::vector<int>> edges;           // rule -> the rules its choices use
};

// The document as YAML: a mapping with exactly the keys start, slots, rules.
YAML::Node grammar_root(const std::string& yaml_text, const std::string& source) {
  YAML::Node root;
  try {
    root = load_single_document(yaml_text, source);
  } catch (const YAML::Exception& e) {
    fail(fmt::format("{}:{}:{}", source, e.mark.line + 1, e.mark.column + 1), "not valid YAML: " + e.msg);
  }
  if (!root.IsMap()) fail(source, "a grammar is a mapping with keys start, slots, rules");
  const std::vector<std::string> top_keys{"start", "slots", "rules"};
  for (const auto& kv : root) {
    auto key = kv.first.as<std::string>();
    if (std::find(top_keys.begin(), top_keys.end(), key) == top_keys.end()) {
      auto near = closest(key, top_keys);
      fail(yaml_at(source, kv.first), fmt::format("unknown key '{}'{}; valid: {}", key,
                                             near.empty() ? "" : " (did you mean '" + near + "'?)", join(top_keys)));
    }
  }
  for (const auto& key : top_keys)
    if (!root[key]) fail(source, fmt::format("missing key '{}'", key));
  return root;
}

// Slots: name -> {gender: word}; every slot has the same genders.
void read_slots(const YAML::Node& slots, Grammar& g, GrammarDraft& d) {
  if (!slots.IsMap() || slots.size() == 0) fail(yaml_at(d.source, slots), "slots: expected a mapping slot -> {gender: word}");
  for (const auto& kv : slots) {
    auto name = kv.first.as<std::string>();
    const std::string where = yaml_at(d.source, kv.second) + ": slots." + name;
    if (!kv.second.IsMap() || kv.second.size() == 0) fail(where, "expected a mapping gender -> word");
    auto genders = keys_of(kv.second);
    if (g.genders.empty()) g.genders = genders;
    if (genders != g.genders)
      fail(where, fmt::format("genders {} differ from the first slot's {}", join(genders), join(g.genders)));
    std::vector<std::string> forms;
    for (const auto& f : kv.second) {
      auto w = f.second.IsScalar() ? f.second.Scalar() : "";
      if (!is_word(w)) fail(where + "." + f.first.as<std::string>(), fmt::format("'{}' is not a lowercase word", w));
      d.words.insert(w);
      forms.push_back(w);
    }
    g.slots.push_back(name);
    d.forms.push_back(forms);
  }
}

// Rule names first, so that choices can refer to rules defined later.
void read_rule_names(const YAML::Node& rules, GrammarDraft& d) {
  if (!rules.IsMap() || rules.size() == 0) fail(yaml_at(d.source, rules), "rules: expected a mapping Name -> list of choices");
  d.names = keys_of(rules);
  if (d.names.size() > kMaxRules)
    fail(yaml_at(d.source, rules), fmt::format("{} rules, more than the {} allowed", d.names.size(), kMaxRules));
  for (size_t i = 0; i < d.names.size(); ++i) {
    if (d.names[i].empty() || !std::isupper(static_cast<unsigned char>(d.names[i][0])))
      fail(yaml_at(d.source, rules) + ": rules." + d.names[i], "rule names start with a capital letter");
    if (!d.rule_index.emplace(d.names[i], static_cast<int>(i)).second)
      fail(yaml_at(d.source, rules) + ": rules." + d.names[i], "the rule is defined twice");
  }
  d.raw.assign(d.names.size(), {});
  d.edges.assign(d.names.size(), {});
}

// "<weight> <symbols...>": a word, a Rule, a $slot, and a final @gender binding.
RawChoice read_choice(const std::string& text, const std::string& where, int rule, const Grammar& g, GrammarDraft& d) {
  std::istringstream in(text);
  std::string tok;
  in >> tok;
  double weight = 0;
  try {
    size_t used = 0;
    weight = std::stod(tok, &used);
    if (used != tok.size()) throw std::invalid_argument(tok);
  } catch (const std::exception&) {
    fail(where, fmt::format("expected a weight first, got '{}'", tok));
  }
  if (!(weight > 0) || !std::isfinite(weight)) fail(where, fmt::format("weight must be > 0, got {}", tok));
  RawChoice choice{weight, {}, -1, where};
  while (in >> tok) {
    if (choice.bind >= 0) fail(where, fmt::format("'{}' after the binding: @gender must come last", tok));
    if (tok[0] == '@') {
      auto gender = tok.substr(1);
      auto it = std::find(g.genders.begin(), g.genders.end(), gender);
      if (it == g.genders.end())
        fail(where, fmt::format("unknown gender '{}'; the slots define: {}", gender, join(g.genders)));
      choice.bind = static_cast<int>(it - g.genders.begin());
    } else if (tok[0] == '$') {
      auto name = tok.substr(1);
      if (std::find(g.slots.begin(), g.slots.end(), name) == g.slots.end()) {
        auto near = closest(name, g.slots);
        fail(where, fmt::format("unknown slot '{}'{}", tok, near.empty() ? "" : " (did you mean '$" + near + "'?)"));
      }
      choice.seq.push_back({Symbol::Slot, name});
    } else if (std::isupper(static_cast<unsigned char>(tok[0]))) {
      if (!d.rule_index.count(tok)) {
        auto near = closest(tok, d.names);
        fail(where, fmt::format("unknown rule '{}'{}", tok, near.empty() ? "" : " (did you mean '" + near + "'?)"));
      }
      choice.seq.push_back({Symbol::Rule, tok});
      d.edges[rule].push_back(d.rule_index[tok]);
    } else {
      if (!is_word(tok))
        fail(where, fmt::format("'{}' is not a word (lowercase letters, digits, punctuation), a Rule, $slot or @gender", tok));
      d.words.insert(tok);
      choice.seq.push_back({Symbol::Word, tok});
    }
  }
  if (choice.bind >= 0 && choice.seq.empty()) fail(where, "an empty choice cannot bind a gender");
  return choice;
}

// Every rule's list of choices.
void read_rules(const YAML::Node& rules, const Grammar& g, GrammarDraft& d) {
  size_t r = 0;
  for (const auto& kv : rules) {
    const std::string rule_key = "rules." + d.names[r];
    if (!kv.second.IsSequence() || kv.second.size() == 0)
      fail(yaml_at(d.source, kv.second) + ": " + rule_key, "expected a list of choices \"<weight> <symbols...>\"");
    for (size_t c = 0; c < kv.second.size(); ++c) {
      const YAML::Node node = kv.second[c];
      const std::string where = fmt::format("{}: {}[{}]", yaml_at(d.source, node), rule_key, c);
      if (!node.IsScalar()) fail(where, "a choice is one string \"<weight> <symbols...>\"");
      d.raw[r].push_back(read_choice(node.Scalar(), where, static_cast<int>(r), g, d));
    }
    ++r;
  }
}

// No recursion, every rule reachable from start.
void check_rule_graph(const GrammarDraft& d, int start) {
  if (auto cycle = find_cycle(d.edges, d.names); !cycle.empty())
    fail(d.source + ": rules", "recursion is not allowed (the walk must end): " + cycle);
  std::vector<bool> reached(d.names.size(), false);
  std::function<void(int)> reach = [&](int u) {
    if (reached[u]) return;
    reached[u] = true;
    for (int v : d.edges[u]) reach(v);
  };
  reach(start);
  for (size_t i = 0; i < d.names.size(); ++i)
    if (!reached[i]) fail(d.source + ": rules." + d.names[i], "never used: not reachable from start");
}

// Bounded documents: rules that expand exponentially (A: B B, B: C C, ...) would generate
// documents of millions of words. Longest document and deepest rule nesting, over the DAG.
void check_document_bounds(const GrammarDraft& d, int start) {
  std::vector<double> longest(d.names.size(), -1);
  std::vector<int> depth(d.names.size(), 0);
  std::function<void(int)> measure = [&](int u) {
    if (longest[u] >= 0) return;
    double most = 0;
    int deepest = 0;
    for (const auto& c : d.raw[u]) {
      double len = 0;
      for (const auto& s : c.seq) {
        if (s.kind != Symbol::Rule) { len += 1; continue; }
        const int v = d.rule_index.at(s.name);
        measure(v);
        len += longest[v];
        deepest = std::max(deepest, depth[v]);
      }
      most = std::max(most, len);
    }
    longest[u] = std::min(most, 1e18);
    depth[u] = deepest + 1;
  };
  measure(start);
  if (depth[start] > kMaxDepth)
    fail(d.source + ": rules", fmt::format("rules nest {} deep from {}, more than the {} allowed", depth[start],
                                             d.names[start], kMaxDepth));
  if (longest[start] > kMaxDocWords)
    fail(d.source + ": rules", fmt::format("the longest document has {:.0f} words, more than the {} allowed "
                                             "(rules that repeat rules multiply)", longest[start], kMaxDocWords));
}

// Vocabulary (specials first, then every word in byte order), the slots' word ids, and the
// rules with normalized weights and ids.
void build_grammar(Grammar& g, const GrammarDraft& d) {
  g.vocab.words = {"<pad>", "<bos>", "<eos>"};
  g.vocab.pad = 0, g.vocab.bos = 1, g.vocab.eos = 2;
  for (const auto& w : d.words) g.vocab.words.push_back(w);
  std::map<std::string, int32_t> word_id;
  for (size_t i = 0; i < g.vocab.words.size(); ++i) word_id[g.vocab.words[i]] = static_cast<int32_t>(i);
  for (const auto& forms : d.forms) {
    std::vector<int32_t> ids;
    for (const auto& w : forms) ids.push_back(word_id.at(w));
    g.forms.push_back(ids);
  }
  for (size_t i = 0; i < d.names.size(); ++i) {
    Rule rule{d.names[i], {}};
    double total = 0;
    for (const auto& c : d.raw[i]) total += c.weight;
    for (const auto& c : d.raw[i]) {
      Choice choice{c.weight / total, {}, c.bind, c.where};
      for (const auto& s : c.seq) {
        int32_t id = s.kind == Symbol::Word ? word_id.at(s.name)
                   : s.kind == Symbol::Rule ? d.rule_index.at(s.name)
                   : static_cast<int32_t>(std::find(g.slots.begin(), g.slots.end(), s.name) - g.slots.begin());
        choice.seq.push_back({s.kind, id});
      }
      rule.choices.push_back(std::move(choice));
    }
    g.rules.push_back(std::move(rule));
  }
}

}  // namespace

Grammar parse_grammar(const std::string& yaml_text, const std::string& source) {
  const YAML::Node root = grammar_root(yaml_text, source);
  Grammar g;
  g.source = source;
  GrammarDraft d;
  d.source = source;
  read_slots(root["slots"], g, d);
  const YAML::Node rules = root["rules"];
  read_rule_names(rules, d);
  read_rules(rules, g, d);
  const YAML::Node start = root["start"];
  if (!start.IsScalar() || !d.rule_index.count(start.Scalar()))
    fail(yaml_at(source, start) + ": start", fmt::format("'{}' is not a rule", start.IsScalar() ? start.Scalar() : ""));
  g.start = d.rule_index[start.Scalar()];
  check_rule_graph(d, g.start);
  check_document_bounds(d, g.start);
  build_grammar(g, d);
  return g;
}

Grammar load_grammar(const std::string& path) {
  std::error_code ec;
  std::ifstream in;
  // A FIFO or device would block or never end: only regular files (or links to them).
  if (std::filesystem::is_regular_file(path, ec)) in.open(path, std::ios::binary);
  if (!in.is_open() || !in)
    throw InputError(fmt::format("{}: cannot read the garden grammar", path),
                     "set data.grammar to a grammar file (the built-in one is data/garden.yaml in the lmx sources)");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_grammar(ss.str(), path);
}

}  // namespace lmx::data
