#include "experiments/spec.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/fields.h"
#include "data/corpus.h"
#include "model/sizes.h"
#include "util/error.h"

namespace fs = std::filesystem;

namespace lmx {

namespace {

std::string scalar(const std::string& file, const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) throw InputError(fmt::format("{}: {} expects a value, not a list or mapping", yaml_at(file, n), key));
  return n.Scalar();
}

// A value as the spec sets it: a file name (data.grammar, ...) relative to the spec.
std::string spec_value(const std::string& file, const std::string& key, const std::string& value) {
  return resolve_key_value(key, value, fs::path(file).parent_path().string());
}

// The keys of a mapping, each once (YAML parsers keep one of a repeated key silently).
std::vector<std::string> unique_keys(const std::string& file, const YAML::Node& map, const std::string& what) {
  std::vector<std::string> keys;
  for (const auto& kv : map) {
    const std::string key = scalar(file, kv.first, what);
    if (std::find(keys.begin(), keys.end(), key) != keys.end())
      throw InputError(fmt::format("{}: '{}' is given twice", yaml_at(file, kv.first), key), "give each key once");
    keys.push_back(key);
  }
  return keys;
}

// A mapping of config keys to scalar values -> "key=value" overrides.
std::vector<std::string> overrides(const std::string& file, const YAML::Node& n, const std::string& what) {
  std::vector<std::string> out;
  if (!n || n.IsNull()) return out;
  if (!n.IsMap()) throw InputError(fmt::format("{}: {} expects a mapping of section.key: value", yaml_at(file, n), what));
  unique_keys(file, n, "a key");
  for (const auto& kv : n) {
    const std::string key = scalar(file, kv.first, "a key");
    out.push_back(key + "=" + spec_value(file, key, scalar(file, kv.second, key)));
  }
  return out;
}

}  // namespace

namespace {
ExperimentSpec load_spec_body(const std::string& path);
}  // namespace

// Any yaml-cpp exception the checks did not foresee is still an InputError at its place.
ExperimentSpec load_spec(const std::string& path) {
  try {
    return load_spec_body(path);
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("{}:{}:{}: {}", path, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
}

namespace {
ExperimentSpec load_spec_body(const std::string& path) {
  ExperimentSpec spec;
  spec.path = path;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw InputError(fmt::format("{}: no such experiment spec", path));
  YAML::Node root;
  try {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    root = load_single_document(text.str(), path);
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("{}:{}:{}: not valid YAML: {}", path, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  if (!root.IsMap()) throw InputError(fmt::format("{}: an experiment spec is a mapping (kind, base, seeds, set, points, grid, quick)", path));
  static const std::vector<std::string> keys = {"kind", "base", "seeds", "set", "points", "grid", "quick", "description", "match_params"};
  unique_keys(path, root, "a key");
  for (const auto& kv : root) {
    const std::string key = scalar(path, kv.first, "a key");
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::string near = closest(key, keys);
      throw InputError(fmt::format("{}: unknown key '{}'{}; valid: {}", yaml_at(path, kv.first), key,
                                   near.empty() ? "" : " (did you mean '" + near + "'?)", join(keys)));
    }
  }
  if (root["kind"]) spec.kind = scalar(path, root["kind"], "kind");
  if (spec.kind != "train") throw InputError(fmt::format("{}: kind '{}' is not a sweep job; valid: train", yaml_at(path, root["kind"]), spec.kind));
  if (!root["base"]) throw InputError(fmt::format("{}: missing key 'base' (the config every point starts from)", path));
  spec.base = (fs::path(path).parent_path() / scalar(path, root["base"], "base")).lexically_normal().string();
  if (auto s = root["seeds"]) {
    if (!s.IsSequence() || s.size() == 0) throw InputError(fmt::format("{}: seeds expects a non-empty list, e.g. [0, 1]", yaml_at(path, s)));
    spec.seeds.clear();
    for (const auto& v : s) {
      const auto x = v.IsScalar() ? strict_integer(v.Scalar()) : std::nullopt;
      if (!x || *x < 0)
        throw InputError(fmt::format("{}: seeds: expects non-negative decimal integers (no leading zeros)", yaml_at(path, v)));
      if (std::find(spec.seeds.begin(), spec.seeds.end(), static_cast<uint64_t>(*x)) != spec.seeds.end())
        throw InputError(fmt::format("{}: seeds: seed {} is given twice", yaml_at(path, v), *x), "each seed runs once");
      spec.seeds.push_back(static_cast<uint64_t>(*x));
    }
  }
  if (auto m = root["match_params"]) spec.match_params = scalar(path, m, "match_params");
  spec.set = overrides(path, root["set"], "set");
  spec.quick = overrides(path, root["quick"], "quick");
  if (auto p = root["points"]) {
    if (!p.IsMap()) throw InputError(fmt::format("{}: points expects a mapping name: {{key: value, ...}}", yaml_at(path, p)));
    unique_keys(path, p, "a point name");
    for (const auto& kv : p) spec.points.emplace_back(scalar(path, kv.first, "a point name"), overrides(path, kv.second, "a point"));
  }
  if (!spec.match_params.empty() &&
      std::none_of(spec.points.begin(), spec.points.end(), [&](const auto& p) { return p.first == spec.match_params; }))
    throw InputError(fmt::format("{}: match_params: '{}' is not one of the points", yaml_at(path, root["match_params"]),
                                 spec.match_params));
  if (auto g = root["grid"]) {
    if (!g.IsMap()) throw InputError(fmt::format("{}: grid expects a mapping key: [values]", yaml_at(path, g)));
    unique_keys(path, g, "a grid key");
    for (const auto& kv : g) {
      const std::string key = scalar(path, kv.first, "a grid key");
      if (!kv.second.IsSequence() || kv.second.size() == 0)
        throw InputError(fmt::format("{}: grid axis {} expects a non-empty list", yaml_at(path, kv.second), key));
      std::vector<std::string> values;
      for (const auto& v : kv.second) values.push_back(spec_value(path, key, scalar(path, v, key)));
      spec.grid.emplace_back(key, values);
    }
  }
  return spec;
}
}  // namespace

void add_cli_sets(ExperimentSpec& spec, const std::vector<std::string>& sets) {
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError(fmt::format("--set {}: expected section.key=value or section.key=a,b,c", s));
    const std::string key = s.substr(0, eq), value = s.substr(eq + 1);
    if (value.find(',') == std::string::npos) {
      spec.set.push_back(s);
      continue;
    }
    std::vector<std::string> values;
    size_t start = 0;
    while (true) {
      const auto comma = value.find(',', start);
      values.push_back(value.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    spec.grid.emplace_back(key, values);
  }
}

namespace {

// match_params: every point whose parameter count is more than 1% away from the reference
// point's (the first grid point of that name) gets the model.d_ff that comes closest to it, as
// lmx ablate re-matches its steps; the override is recorded in the point's overrides.
void match_point_params(const ExperimentSpec& spec, std::vector<GridPoint>& points) {
  auto ref = std::find_if(points.begin(), points.end(), [&](const GridPoint& p) { return p.base_name == spec.match_params; });
  const Config& rc = ref->config;
  const int vocab = rc.model.vocab_size > 0 ? rc.model.vocab_size : data::load_vocabulary(rc.data).vocab.size();
  const int64_t target = params_of(rc.model, vocab);
  for (auto& p : points) {
    if (std::llabs(params_of(p.config.model, vocab) - target) <= target / 100) continue;
    const int f = match_d_ff(p.config.model, vocab, target);
    p.config.model.d_ff = f;
    p.overrides.push_back(fmt::format("model.d_ff={}", f));
  }
}

}  // namespace

std::vector<GridPoint> expand(const ExperimentSpec& spec, bool quick) {
  std::vector<std::pair<std::string, std::vector<std::string>>> points = spec.points;
  if (points.empty()) points.emplace_back("", std::vector<std::string>{});
  std::vector<GridPoint> out;
  for (const auto& [pname, pset] : points) {
    // Odometer over the grid axes.
    std::vector<size_t> idx(spec.grid.size(), 0);
    while (true) {
      GridPoint gp;
      gp.name = pname;
      std::string base = spec.base;
      for (const auto& kv : pset) {  // a point's own base config: "base=<path relative to the spec>"
        if (kv.rfind("base=", 0) == 0)
          base = (fs::path(spec.path).parent_path() / kv.substr(5)).lexically_normal().string();
        else
          gp.overrides.push_back(kv);
      }
      for (size_t a = 0; a < spec.grid.size(); ++a) {
        const std::string kv = spec.grid[a].first + "=" + spec.grid[a].second[idx[a]];
        gp.overrides.push_back(kv);
        gp.name += (gp.name.empty() ? "" : ",") + kv;
      }
      if (gp.name.empty()) gp.name = fs::path(spec.base).stem().string();
      std::vector<std::string> all = spec.set;
      all.insert(all.end(), gp.overrides.begin(), gp.overrides.end());
      for (const auto& other : out)
        if (other.name == gp.name)
          throw InputError(fmt::format("{}: point '{}' is given twice (its rows would be averaged into one)", spec.path,
                                       gp.name),
                           "give each point and grid value once");
      try {
        gp.config = load_config(base, all);
      } catch (const InputError& e) {
        throw InputError(fmt::format("{}: point '{}': {}", spec.path, gp.name, e.what()), e.hint());
      }
      // The quick block is checked also when not used: a --quick smoke test must not be the
      // first to find it broken.
      if (!spec.quick.empty()) {
        all.insert(all.end(), spec.quick.begin(), spec.quick.end());
        try {
          Config q = load_config(base, all);
          if (quick) gp.config = q;
        } catch (const InputError& e) {
          throw InputError(fmt::format("{}: point '{}' with the quick: block: {}", spec.path, gp.name, e.what()), e.hint());
        }
      }
      gp.base_name = pname;
      gp.config.name = gp.name;
      out.push_back(std::move(gp));
      size_t a = 0;
      while (a < idx.size() && ++idx[a] == spec.grid[a].second.size()) idx[a++] = 0;
      if (a == idx.size()) break;
    }
  }
  if (!spec.match_params.empty()) match_point_params(spec, out);
  return out;
}

}  // namespace lmx
