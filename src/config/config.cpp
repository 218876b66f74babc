#include "config/config.h"

#include <yaml-cpp/yaml.h>
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "config/fields.h"
#include "config/registry.h"
#include "util/error.h"

namespace fs = std::filesystem;

namespace lmx {

template <class E>
E parse_option(const std::string& name) {
  const auto& names = OptionNames<E>::names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<E>(i);
  throw InputError(fmt::format("{}: unknown value '{}'; valid: {}", OptionNames<E>::key, name, join(names)));
}

#define LMX_OPTION(E, KEY, ...)                                   \
  template <>                                                     \
  const char* OptionNames<E>::key = KEY;                          \
  template <>                                                     \
  const std::vector<std::string>& OptionNames<E>::names() {       \
    static const std::vector<std::string> list = {__VA_ARGS__};   \
    return list;                                                  \
  }                                                               \
  template E parse_option<E>(const std::string&);
LMX_OPTION(NormPlacement, "model.norm_placement", "pre", "post", "sandwich")
LMX_OPTION(RopeLayout, "model.rope_layout", "half", "interleaved")
LMX_OPTION(RopeScaling, "model.rope_scaling", "none", "linear", "ntk", "yarn")
LMX_OPTION(TiedInit, "model.tied_init", "embedding", "linear")
LMX_OPTION(InitScheme, "model.init", "normal", "torch_default", "gpt2", "zero_proj")
LMX_OPTION(EmbedScale, "model.embed_scale", "1", "sqrt_d")
LMX_OPTION(Schedule, "train.schedule", "constant", "cosine", "linear")
LMX_OPTION(Precision, "train.precision", "fp32", "bf16")
LMX_OPTION(TokenizerKind, "data.tokenizer", "bytes", "sentencepiece")
LMX_OPTION(DataLayout, "data.layout", "doc", "packed")
LMX_OPTION(DeviceKind, "train.device", "cpu", "cuda")
LMX_OPTION(OptimizerKind, "train.optimizer", "adamw", "adam", "muon")
#undef LMX_OPTION

int ModelConfig::ffn_hidden(bool gated) const {
  if (d_ff > 0) return d_ff;
  const long long plain = d_ff_plain > 0 ? d_ff_plain : 4LL * d_model;
  // A gated FFN has three matrices instead of two: 2/3 of the width keeps the parameter
  // count (rounded to nearest: 256 -> 171), then rounded up to d_ff_multiple (Llama: 256).
  const long long width = gated ? (2 * plain + 1) / 3 : plain;
  const long long m = d_ff_multiple;
  const long long hidden = (width + m - 1) / m * m;
  if (hidden > std::numeric_limits<int>::max())
    throw InputError(fmt::format("model.d_ff auto is {} (from d_model {}, d_ff_plain {}, d_ff_multiple {}): more than "
                                 "the {} a width may be",
                                 hidden, d_model, d_ff_plain, d_ff_multiple, std::numeric_limits<int>::max()),
                     "set model.d_ff, or smaller d_model / d_ff_plain / d_ff_multiple");
  return static_cast<int>(hidden);
}

namespace {

const std::vector<std::string> kSections = {"model", "train", "data"};
const std::vector<std::string> kTopKeys = {"extends", "model", "train", "data"};

std::string where(const std::string& file, const YAML::Mark& mark) {
  if (mark.is_null()) return file;
  return fmt::format("{}:{}:{}", file, mark.line + 1, mark.column + 1);
}

std::vector<std::string> section_keys(const std::string& section) {
  std::vector<std::string> keys;
  for (const auto& f : config_fields())
    if (f.key.rfind(section + ".", 0) == 0) keys.push_back(f.key.substr(section.size() + 1));
  return keys;
}

std::string did_you_mean(const std::string& key, const std::vector<std::string>& valid) {
  std::string near = closest(key, valid);
  return near.empty() ? "" : " (did you mean '" + near + "'?)";
}

void apply_tree(Config& cfg, const YAML::Node& root, const std::string& file,
                std::vector<std::string>& chain, bool allow_extends);

// Refuses a key given twice in one mapping (YAML parsers keep one of them silently).
void unique_key(std::vector<std::string>& seen, const std::string& name, const std::string& at) {
  if (std::find(seen.begin(), seen.end(), name) != seen.end())
    throw InputError(fmt::format("{}: '{}' is given twice in one mapping", at, name), "give each key once");
  seen.push_back(name);
}

void apply_file(Config& cfg, const std::string& path, std::vector<std::string>& chain) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw InputError(fmt::format("{}: no such config file", path),
                     "configs/ holds the presets; run `lmx config show configs/textbook.yaml`");
  if (fs::is_directory(path, ec)) throw InputError(fmt::format("{}: is a directory, not a config file", path));
  // A FIFO, socket or device would block or never end: only regular files (or links to them).
  if (!fs::is_regular_file(path, ec)) throw InputError(fmt::format("{}: not a regular file, not a config file", path));
  std::string canon = fs::weakly_canonical(path).string();
  if (std::find(chain.begin(), chain.end(), canon) != chain.end()) {
    chain.push_back(canon);
    throw InputError(fmt::format("{}: extends cycle: {}", path, join(chain, " -> ")));
  }
  chain.push_back(canon);
  YAML::Node root;
  try {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) throw InputError(fmt::format("{}: cannot read", path));
    root = load_single_document(text.str(), path);
  } catch (const YAML::ParserException& e) {
    throw InputError(fmt::format("{}: not valid YAML: {}", where(path, e.mark), e.msg));
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("{}: cannot read: {}", path, e.msg));
  }
  apply_tree(cfg, root, path, chain, true);
  chain.pop_back();
}

// A mapping key as a name; a list, mapping or empty (`? `) key is an InputError at its place.
std::string key_name(const YAML::Node& key, const std::string& file) {
  if (!key.IsScalar())
    throw InputError(fmt::format("{}: a key must be a plain name, not a list, a mapping or empty", where(file, key.Mark())));
  return key.Scalar();
}

// A file-naming key's value just set (data.grammar, data.text_path), resolved against base_dir
// (resolve_key_value: a bare grammar name stays a built-in); other keys are left alone.
void resolve_file_key(Config& cfg, const std::string& key, const std::string& base_dir) {
  if (!is_path_key(key)) return;
  std::string& p = key == "data.grammar" ? cfg.data.grammar : cfg.data.text_path;
  p = resolve_key_value(key, p, base_dir);
}

void apply_tree_body(Config& cfg, const YAML::Node& root, const std::string& file,
                     std::vector<std::string>& chain, bool allow_extends);

// Any yaml-cpp exception left (a conversion the checks did not foresee) is still an InputError
// naming the file, line and column.
void apply_tree(Config& cfg, const YAML::Node& root, const std::string& file,
                std::vector<std::string>& chain, bool allow_extends) {
  try {
    apply_tree_body(cfg, root, file, chain, allow_extends);
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("{}: {}", where(file, e.mark), e.msg));
  }
}

// Keys that existed once, with what replaced them: named in the error instead of "unknown".
std::string retired(const std::string& key) {
  if (key == "train.split_batch")
    return "train.split_batch was replaced by train.step_parts, the parts fixed by the config (the same bits at any "
           "--threads): split_batch: false (one pass) is step_parts: 1, true at --threads 2 is step_parts: 2";
  return {};
}

void apply_tree_body(Config& cfg, const YAML::Node& root, const std::string& file,
                     std::vector<std::string>& chain, bool allow_extends) {
  if (!root || root.IsNull())
    throw InputError(fmt::format("{}: empty config", file),
                     "a config needs at least one of model:, train:, data: or extends:");
  if (!root.IsMap())
    throw InputError(fmt::format("{}: a config is a mapping with sections model:, train:, data:", where(file, root.Mark())));
  // The base comes first so that this file's keys win.
  if (auto base = root["extends"]) {
    if (!allow_extends) throw InputError(fmt::format("{}: extends is not allowed here", where(file, base.Mark())));
    if (!base.IsScalar())
      throw InputError(fmt::format("{}: extends expects a file name", where(file, base.Mark())));
    fs::path base_path = fs::path(file).parent_path() / base.Scalar();
    apply_file(cfg, base_path.lexically_normal().string(), chain);
  }
  std::vector<std::string> seen;
  for (const auto& item : root) {
    std::string name = key_name(item.first, file);
    std::string at = where(file, item.first.Mark());
    unique_key(seen, name, at);
    if (name == "extends") continue;
    if (std::find(kSections.begin(), kSections.end(), name) == kSections.end())
      throw InputError(fmt::format("{}: unknown section '{}'{}; valid: {}", at, name,
                                   did_you_mean(name, kTopKeys), join(kTopKeys)));
    const YAML::Node& body = item.second;
    if (body.IsNull()) continue;
    if (!body.IsMap())
      throw InputError(fmt::format("{}: section {} must be a mapping of keys", at, name));
    std::vector<std::string> keys;
    for (const auto& kv : body) {
      std::string key = key_name(kv.first, file);
      std::string kat = where(file, kv.first.Mark());
      unique_key(keys, name + "." + key, kat);
      const Field* field = find_field(name + "." + key);
      if (!field) {
        if (const std::string why = retired(name + "." + key); !why.empty())
          throw InputError(fmt::format("{}: {}", kat, why));
        throw InputError(fmt::format("{}: unknown key {}.{}{}", kat, name, key,
                                     did_you_mean(key, section_keys(name))),
                         "`lmx config fields` lists every key with its meaning");
      }
      field->set(cfg, kv.second, where(file, kv.second.Mark()));
      if (allow_extends) resolve_file_key(cfg, field->key, fs::path(file).parent_path().string());  // relative to that file
    }
  }
}

void check(bool ok, const Config& cfg, const std::string& message, const std::string& hint = {}) {
  if (!ok) throw InputError(fmt::format("{}: {}", cfg.source.empty() ? "config" : cfg.source, message), hint);
}

// A file name the file system cannot hold: a component longer than the limit of the nearest
// existing directory (pathconf NAME_MAX: 255 bytes on ext4), or more than PATH_MAX in all.
void check_path_length(const Config& cfg, const std::string& key, const std::string& path) {
  check(path.size() < PATH_MAX, cfg, fmt::format("{} is {} bytes long; paths are at most {}", key, path.size(), PATH_MAX - 1));
  fs::path existing = fs::path(path).parent_path();
  std::error_code ec;
  while (!existing.empty() && !fs::is_directory(existing, ec)) existing = existing.parent_path();
  const long limit = pathconf(existing.empty() ? "." : existing.c_str(), _PC_NAME_MAX);
  const size_t name_max = limit > 0 ? static_cast<size_t>(limit) : 255;
  for (const auto& part : fs::path(path)) {
    const std::string name = part.string();
    check(name.size() <= name_max, cfg,
          fmt::format("{}: the file name component '{}...' is {} bytes; this file system allows {}", key,
                      name.substr(0, 24), name.size(), name_max),
          "use a shorter file or directory name");
  }
}

}  // namespace

void apply_override(Config& cfg, const std::string& assignment) {
  auto eq = assignment.find('=');
  std::string at = "--set " + assignment;
  if (eq == std::string::npos || eq == 0)
    throw InputError(fmt::format("{}: expected section.key=value, e.g. --set model.ffn=swiglu", at));
  std::string key = assignment.substr(0, eq);
  std::string value = assignment.substr(eq + 1);
  const Field* field = find_field(key);
  if (!field) {
    if (const std::string why = retired(key); !why.empty()) throw InputError(fmt::format("{}: {}", at, why));
    std::vector<std::string> keys;
    for (const auto& f : config_fields()) keys.push_back(f.key);
    throw InputError(fmt::format("{}: unknown key {}{}", at, key, did_you_mean(key, keys)),
                     "`lmx config fields` lists every key with its meaning");
  }
  YAML::Node node;
  try {
    node = value.empty() ? YAML::Node(YAML::NodeType::Null) : YAML::Load(value);
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("{}: value is not a YAML scalar: {}", at, e.msg));
  }
  field->set(cfg, node, at);
  resolve_file_key(cfg, key, "");  // --set: relative to the working directory
}

Config parse_config(const std::string& yaml_text, const std::string& source_name,
                    const std::vector<std::string>& overrides) {
  Config cfg;
  cfg.source = source_name;
  YAML::Node root;
  try {
    root = load_single_document(yaml_text, source_name);
  } catch (const YAML::ParserException& e) {
    throw InputError(fmt::format("{}: not valid YAML: {}", where(source_name, e.mark), e.msg));
  }
  std::vector<std::string> chain;
  apply_tree(cfg, root, source_name, chain, false);
  for (const auto& o : overrides) apply_override(cfg, o);
  validate(cfg);
  return cfg;
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  Config cfg;
  cfg.source = path;
  cfg.name = fs::path(path).stem().string();
  std::vector<std::string> chain;
  apply_file(cfg, path, chain);
  for (const auto& o : overrides) apply_override(cfg, o);
  // The tokenizer model: next to the config by default; a relative path is relative to it (or,
  // from --set, to the working directory when it names a file there). Made absolute, so that
  // the config a run records works from any working directory.
  std::string& model = cfg.data.tokenizer_model;
  const std::string config_dir = fs::path(path).parent_path().string();
  if (cfg.data.tokenizer == TokenizerKind::SentencePiece && model.empty())
    model = resolve_path(cfg.name + ".tokenizer.model", config_dir);
  else if (!model.empty())
    model = resolve_path(model, fs::path(model).is_relative() && fs::exists(model) ? "" : config_dir);
  validate(cfg);
  return cfg;
}

void validate(const Config& cfg) {
  const ModelConfig& m = cfg.model;
  const int kv = m.kv_heads();
  check(m.head_dim > 0 || m.d_model % m.n_heads == 0, cfg,
        fmt::format("model.d_model ({}) must be divisible by model.n_heads ({})", m.d_model, m.n_heads),
        "or set model.head_dim explicitly");
  check(kv <= m.n_heads && m.n_heads % kv == 0, cfg,
        fmt::format("model.n_heads ({}) must be a multiple of model.n_kv_heads ({})", m.n_heads, kv));
  const bool rope = registry::position(m).rotary, latent = registry::attention(m).latent;
  if (rope && !latent)
    check(m.dim_head() % 2 == 0, cfg, fmt::format("RoPE needs an even head dim, got {}", m.dim_head()));
  if (latent) {
    check(kv == m.n_heads, cfg, "model.n_kv_heads must equal n_heads (or auto) with MLA: MLA shares one latent, not KV heads");
    check(!rope || m.mla_rope_dim > 0, cfg, "MLA with RoPE needs model.mla_rope_dim > 0 (decoupled RoPE)",
          "RoPE cannot be applied to keys recovered from the latent when W_UK is absorbed");
    check(m.mla_rope_dim % 2 == 0, cfg, fmt::format("model.mla_rope_dim must be even, got {}", m.mla_rope_dim));
    check(rope || m.mla_rope_dim == 0, cfg,
          "model.mla_rope_dim > 0 needs model.position: rope (one position scheme at a time)");
  }
  check(m.sliding_window == 0 || !latent, cfg,
        fmt::format("model.sliding_window needs model.attention mha, not {}", m.attention));
  check(m.sliding_window <= m.max_seq_len, cfg,
        fmt::format("model.sliding_window ({}) exceeds model.max_seq_len ({}): the window would never slide",
                    m.sliding_window, m.max_seq_len),
        "use a window below the context, or 0 for full attention");
  check(m.attn_softcap == 0 || !latent, cfg,
        fmt::format("model.attn_softcap needs model.attention mha, not {}", m.attention));
  check(!m.qk_norm || !latent, cfg, fmt::format("model.qk_norm needs model.attention mha, not {}", m.attention),
        "MLA normalizes its latents instead (model.mla_latent_norm)");
  for (const registry::Traits* row : {&registry::ffn(m), &registry::norm(m), &registry::attention(m), &registry::position(m)})
    if (row->model_check) {
      const std::string why = row->model_check(m);
      check(why.empty(), cfg, why);
    }
  check(m.rope_scaling == RopeScaling::None || rope, cfg,
        fmt::format("model.rope_scaling is {} but model.position is {}", option_name(m.rope_scaling), m.position));
  check(m.rope_scaling == RopeScaling::None || m.rope_factor >= 1, cfg, "model.rope_factor must be >= 1");
  check(cfg.data.seq_len <= m.max_seq_len, cfg,
        fmt::format("data.seq_len ({}) exceeds model.max_seq_len ({})", cfg.data.seq_len, m.max_seq_len));
  const TrainConfig& t = cfg.train;
  check(t.min_lr <= t.lr, cfg, fmt::format("train.min_lr ({}) exceeds train.lr ({})", t.min_lr, t.lr));
  check(t.steps > 0 || t.epochs > 0, cfg, "one of train.steps and train.epochs must be > 0");
  const DataConfig& d = cfg.data;
  const registry::Traits& corpus = registry::corpus(d);
  if (corpus.check) {
    const std::string why = corpus.check(d);
    check(why.empty(), cfg, why);
  }
  check(d.tokenizer == TokenizerKind::Bytes || corpus.text_source, cfg,
        fmt::format("data.tokenizer is {} but data.kind is {} (subword tokenizers are for text)", option_name(d.tokenizer),
                    d.kind));
  check(d.val_fraction + d.test_fraction < 1, cfg, "data.val_fraction + data.test_fraction must be < 1");
  check_path_length(cfg, "data.grammar", d.grammar);
  check_path_length(cfg, "data.text_path", d.text_path);
  check_path_length(cfg, "data.tokenizer_model", d.tokenizer_model);
  if (m.d_ff == 0) {  // d_ff auto must fit an int (the gated width is never larger)
    try {
      m.ffn_hidden(false);
    } catch (const InputError& e) {
      check(false, cfg, e.what(), e.hint());
    }
  }
  check(m.rope_scaling != RopeScaling::Yarn || m.yarn_beta_fast > m.yarn_beta_slow, cfg,
        fmt::format("model.yarn_beta_fast ({}) must exceed model.yarn_beta_slow ({})", m.yarn_beta_fast,
                    m.yarn_beta_slow));
}

std::string to_yaml(const Config& cfg) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  std::string current;
  for (const auto& f : config_fields()) {
    auto dot = f.key.find('.');
    std::string section = f.key.substr(0, dot);
    if (section != current) {
      if (!current.empty()) out << YAML::EndMap;
      out << YAML::Key << section << YAML::Value << YAML::BeginMap;
      current = section;
    }
    std::string value = f.get(cfg);
    out << YAML::Key << f.key.substr(dot + 1) << YAML::Value;
    if (f.type == "string" || f.type == "choice")
      out << YAML::DoubleQuoted << value;
    else
      out << value;
  }
  if (!current.empty()) out << YAML::EndMap;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

bool operator==(const Config& a, const Config& b) {
  for (const auto& f : config_fields())
    if (f.get(a) != f.get(b)) return false;
  return true;
}

}  // namespace lmx
