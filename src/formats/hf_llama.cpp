#include "formats/hf_llama.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "config/registry.h"
#include "util/csv.h"
#include "util/error.h"

namespace fs = std::filesystem;

namespace lmx {

namespace {

const char* const kLmxConfigKey = "lmx_config";

// (H·D, C) rows of interleaved RoPE pairs (2i, 2i+1) -> half-split pairs (i, i + D/2), per head.
torch::Tensor interleaved_to_half(const torch::Tensor& w, int64_t D) {
  const int64_t heads = w.size(0) / D;
  return w.reshape({heads, D / 2, 2, w.size(1)}).transpose(1, 2).reshape({heads * D, w.size(1)});
}

struct JsonReader {
  const nlohmann::json& j;
  std::string file;

  InputError bad(const std::string& key, const std::string& what) const {
    return InputError(fmt::format("{}: key '{}' {}", file, key, what),
                      "config.json must be a Hugging Face LlamaConfig (model_type llama)");
  }
  bool has(const std::string& key) const { return j.contains(key) && !j.at(key).is_null(); }
  int integer(const std::string& key, int fallback, bool required = false) const {
    if (!has(key)) {
      if (required) throw bad(key, "is missing");
      return fallback;
    }
    const auto& v = j.at(key);
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (1LL << 30))
      throw bad(key, fmt::format("is {}, not a non-negative integer", v.dump()));
    return v.get<int>();
  }
  double number(const std::string& key, double fallback) const {
    if (!has(key)) return fallback;
    const auto& v = j.at(key);
    if (!v.is_number()) throw bad(key, fmt::format("is {}, not a number", v.dump()));
    return v.get<double>();
  }
  bool boolean(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    const auto& v = j.at(key);
    if (!v.is_boolean()) throw bad(key, fmt::format("is {}, not true or false", v.dump()));
    return v.get<bool>();
  }
  std::string string(const std::string& key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    const auto& v = j.at(key);
    if (!v.is_string()) throw bad(key, fmt::format("is {}, not a string", v.dump()));
    return v.get<std::string>();
  }
};

}  // namespace

bool follows_rope_layout(const std::string& name) {
  for (const char* p : {".self_attn.q_proj.weight", ".self_attn.k_proj.weight", ".self_attn.q_norm.weight",
                        ".self_attn.k_norm.weight"})
    if (name.size() > std::strlen(p) && name.compare(name.size() - std::strlen(p), std::string::npos, p) == 0)
      return true;
  return false;
}

torch::Tensor to_half_layout(const torch::Tensor& t, int64_t D) {
  return t.dim() == 1 ? interleaved_to_half(t.unsqueeze(1), D).squeeze(1) : interleaved_to_half(t, D);
}

HfFamily hf_family(const ModelConfig& m) {
  return m.qk_norm ? HfFamily{"Qwen3ForCausalLM", "qwen3", true} : HfFamily{"LlamaForCausalLM", "llama", false};
}

std::string hf_llama_blocker(const ModelConfig& m) {
  using registry::Kind, registry::llama_name;
  if (!registry::attention(m).llama)
    return fmt::format("model.attention is {} (Llama: {}, i.e. MHA/GQA/MQA)", m.attention, llama_name(Kind::Attention));
  if (!registry::norm(m).llama) return fmt::format("model.norm is {} (Llama: {})", m.norm, llama_name(Kind::Norm));
  if (m.norm_placement != NormPlacement::Pre) return fmt::format("model.norm_placement is {} (Llama: pre)", option_name(m.norm_placement));
  if (m.ffn == "moe") return "model.ffn is moe (Llama has no experts; lmx writes Mixtral as GGUF only: --gguf)";
  if (!registry::ffn(m).llama) return fmt::format("model.ffn is {} (Llama: {})", m.ffn, llama_name(Kind::Ffn));
  if (!registry::position(m).llama) return fmt::format("model.position is {} (Llama: {})", m.position, llama_name(Kind::Position));
  if (m.bias) return "model.bias is true (Llama: no biases)";
  if (m.sliding_window > 0)
    return fmt::format("model.sliding_window is {} (Llama and Qwen 3 have none; Mistral's and Gemma 2's are not "
                       "exported)", m.sliding_window);
  if (m.attn_softcap > 0)
    return fmt::format("model.attn_softcap is {} (Llama and Qwen 3 have no soft-cap; lmx exports those, not Gemma 2)",
                       m.attn_softcap);
  if (m.logit_softcap > 0)
    return fmt::format("model.logit_softcap is {} (Llama and Qwen 3 have no soft-cap; lmx exports those, not Gemma 2)",
                       m.logit_softcap);
  if (m.rope_scaling == RopeScaling::Yarn)
    return fmt::format("model.rope_scaling is {} (exported: none, linear, ntk; Hugging Face reads yarn's trained "
                       "length differently across transformers versions)", option_name(m.rope_scaling));
  return "";
}

double hf_rope_theta(const ModelConfig& m) {
  const int64_t D = m.dim_head();
  if (m.rope_scaling != RopeScaling::Ntk || D <= 2) return m.rope_theta;
  return m.rope_theta * std::pow(m.rope_factor, static_cast<double>(D) / (D - 2));
}

bool llama_ties_head(const ModelConfig& m) {
  return m.tie_embeddings && m.embed_scale == EmbedScale::One;
}

NamedTensors llama_tensors(const ModernLM& model, const ModelConfig& m) {
  const double scale = model->embedding_scale();  // 0: none
  NamedTensors out;
  bool has_head = false;
  for (const auto& p : model->named_parameters()) {
    torch::Tensor t = p.value().detach();
    if (p.key() == "lm_head.weight") has_head = true;
    if (scale != 0 && p.key() == "model.embed_tokens.weight") {
      if (m.tie_embeddings) out.push_back({"lm_head.weight", t.clone()});  // the head reads the unscaled matrix
      t = t * scale;
    }
    out.push_back({p.key(), t});
  }
  if (scale != 0 && !m.tie_embeddings && !has_head)
    throw std::logic_error("llama_tensors: an untied model without lm_head.weight");
  return out;
}

bool is_hf_folder(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

void export_hf_llama(const Checkpoint& ckpt, const std::string& dir, const data::Vocab* vocab) {
  const ModelConfig& m = ckpt.config.model;
  const std::string blocker = hf_llama_blocker(m);
  if (!blocker.empty())
    throw InputError(fmt::format("{}: cannot export as Hugging Face Llama or Qwen 3: {}", ckpt.path, blocker),
                     "only pre-norm RMSNorm, SwiGLU, RoPE, MHA/GQA/MQA models without biases are LlamaForCausalLM "
                     "(with model.qk_norm: Qwen3ForCausalLM)");
  ModernLM model = load_model(ckpt);  // checks names and shapes
  const int64_t D = m.dim_head();

  const HfFamily family = hf_family(m);
  nlohmann::ordered_json j;
  j["architectures"] = {family.architecture};
  j["model_type"] = family.model_type;
  j["hidden_size"] = m.d_model;
  j["intermediate_size"] = m.ffn_hidden(true);
  j["num_attention_heads"] = m.n_heads;
  j["num_key_value_heads"] = m.kv_heads();
  j["head_dim"] = D;
  j["num_hidden_layers"] = m.n_layers;
  j["hidden_act"] = "silu";
  j["rms_norm_eps"] = m.norm_eps;
  j["rope_theta"] = hf_rope_theta(m);
  if (m.rope_scaling == RopeScaling::Linear)
    j["rope_scaling"] = {{"rope_type", "linear"}, {"type", "linear"}, {"factor", m.rope_factor}};
  else
    j["rope_scaling"] = nullptr;
  j["vocab_size"] = m.vocab_size;
  j["max_position_embeddings"] = m.max_seq_len;
  j["tie_word_embeddings"] = llama_ties_head(m);
  j["attention_bias"] = false;
  j["mlp_bias"] = false;
  if (family.qk_norm) j["use_sliding_window"] = false;  // Qwen3Config's window is off unless asked
  j["initializer_range"] = m.init_std;
  j["torch_dtype"] = "float32";
  nlohmann::ordered_json gen = {{"do_sample", false}, {"max_length", m.max_seq_len}};
  if (vocab)
    for (const auto& [key, id] : {std::pair{"bos_token_id", vocab->bos}, {"eos_token_id", vocab->eos},
                                  {"pad_token_id", vocab->pad}})
      j[key] = gen[key] = id;
  Config saved = ckpt.config;
  saved.model.rope_layout = RopeLayout::Half;  // the weights below are in the half layout
  saved.model.embed_scale = EmbedScale::One; // and the embedding scale folded in (llama_tensors)
  saved.model.tie_embeddings = llama_ties_head(m);
  j[kLmxConfigKey] = to_yaml(saved);

  NamedTensors tensors = llama_tensors(model, m);
  for (auto& [name, t] : tensors)
    if (m.rope_layout == RopeLayout::Interleaved && follows_rope_layout(name)) t = to_half_layout(t, D);
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_empty(dir, ec))
    throw InputError(fmt::format("{}: exists and is not empty", dir), "give a new or empty directory to --hf");
  fs::create_directories(dir, ec);
  if (ec) throw InputError(fmt::format("{}: cannot create: {}", dir, ec.message()));
  write_safetensors((fs::path(dir) / "model.safetensors").string(), tensors, {{"format", "pt"}});
  if (vocab) {
    write_hf_tokenizer(*vocab, dir, m.max_seq_len);
    write_file_atomic((fs::path(dir) / "generation_config.json").string(), gen.dump(2) + "\n");
  }
  write_file_atomic((fs::path(dir) / "config.json").string(), j.dump(2) + "\n");
}

namespace {

// config.json of an HF folder, as a JSON object.
nlohmann::json read_hf_config(const std::string& dir, const std::string& config_path) {
  std::ifstream in(config_path, std::ios::binary);
  if (!in)
    throw InputError(fmt::format("{}: a directory without config.json: not a Hugging Face model folder", dir),
                     "give a model.safetensors written by lmx train, or a folder written by lmx export --hf");
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not valid JSON: {}", config_path, e.what()));
  }
  if (!j.is_object()) throw InputError(fmt::format("{}: not a JSON object", config_path));
  return j;
}

// The LlamaConfig's sizes, and the components every Llama has; InputError for what lmx's
// Llama is not (another activation, biases, a RoPE scaling other than linear).
void read_llama_model(const JsonReader& r, ModelConfig& m) {
  m.d_model = r.integer("hidden_size", 0, true);
  m.d_ff = r.integer("intermediate_size", 0, true);
  m.d_ff_plain = 0;
  m.d_ff_multiple = 1;
  m.n_heads = r.integer("num_attention_heads", 0, true);
  m.n_kv_heads = r.integer("num_key_value_heads", m.n_heads);
  m.n_layers = r.integer("num_hidden_layers", 0, true);
  m.vocab_size = r.integer("vocab_size", 0, true);
  if (m.vocab_size < 1) throw r.bad("vocab_size", "is 0");
  m.head_dim = r.integer("head_dim", 0);
  if (m.n_heads > 0 && m.head_dim == m.d_model / m.n_heads) m.head_dim = 0;
  m.max_seq_len = r.integer("max_position_embeddings", 2048);
  m.norm_eps = r.number("rms_norm_eps", 1e-6);
  m.rope_theta = r.number("rope_theta", 10000.0);
  m.tie_embeddings = r.boolean("tie_word_embeddings", false);
  const std::string act = r.string("hidden_act", "silu");
  if (act != "silu") throw r.bad("hidden_act", fmt::format("is '{}'; lmx's swiglu is silu", act));
  for (const char* key : {"attention_bias", "mlp_bias"})
    if (r.boolean(key, false)) throw r.bad(key, "is true; lmx reads Llama without biases");
  m.attention = "mha";
  m.norm = "rmsnorm";
  m.norm_placement = NormPlacement::Pre;
  m.ffn = "swiglu";
  m.position = "rope";
  m.rope_layout = RopeLayout::Half;
  m.rope_scaling = RopeScaling::None;
  m.rope_factor = 1.0;
  m.rope_original_len = 0;
  m.bias = false;
  if (r.has("rope_scaling")) {
    const auto& rs = r.j.at("rope_scaling");
    const JsonReader sr{rs, r.file + " rope_scaling"};
    if (!rs.is_object()) throw r.bad("rope_scaling", fmt::format("is {}, not an object or null", rs.dump()));
    const std::string kind = sr.string("rope_type", sr.string("type", "default"));
    if (kind == "linear") {
      m.rope_scaling = RopeScaling::Linear;
      m.rope_factor = sr.number("factor", 1.0);
    } else if (kind != "default") {
      throw r.bad("rope_scaling", fmt::format("has rope_type '{}'; lmx reads default and linear", kind));
    }
  }
}

// The weight files: one, or the shards model.safetensors.index.json lists.
std::vector<std::string> hf_weight_files(const std::string& dir) {
  std::vector<std::string> files;
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (!fs::exists(index)) return {(fs::path(dir) / "model.safetensors").string()};
  std::ifstream ii(index, std::ios::binary);
  std::stringstream is;
  is << ii.rdbuf();
  std::set<std::string> shards;
  try {
    for (const auto& [name, file] : nlohmann::json::parse(is.str()).at("weight_map").items())
      shards.insert(file.get<std::string>());
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not a safetensors index (weight_map): {}", index.string(), e.what()));
  }
  for (const auto& s : shards) files.push_back((fs::path(dir) / s).string());
  return files;
}

}  // namespace

Checkpoint read_hf_llama(const std::string& dir) {
  const std::string config_path = (fs::path(dir) / "config.json").string();
  const nlohmann::json j = read_hf_config(dir, config_path);
  const JsonReader r{j, config_path};
  const std::string type = r.string("model_type", "");
  if (type != "llama" && type != "qwen3")
    throw r.bad("model_type", fmt::format("is '{}'; lmx reads Hugging Face Llama and Qwen 3 folders (model_type "
                                          "llama, qwen3)", type));

  Checkpoint ckpt;
  ckpt.path = dir;
  Config cfg;
  if (r.has(kLmxConfigKey)) cfg = parse_config(r.string(kLmxConfigKey, ""), config_path + " (lmx_config)");
  cfg.name = fs::path(dir).filename().empty() ? fs::path(dir).parent_path().filename().string()
                                              : fs::path(dir).filename().string();
  cfg.source = config_path;
  read_llama_model(r, cfg.model);
  cfg.model.qk_norm = type == "qwen3";  // q_norm / k_norm: RMSNorm over each head's D, before RoPE
  if (cfg.model.qk_norm && r.boolean("use_sliding_window", false))
    throw r.bad("use_sliding_window", "is true; lmx reads Qwen 3 without its sliding window");
  try {
    validate(cfg);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: the model it describes is not valid for lmx: {}", config_path, e.what()),
                     e.hint());
  }
  ckpt.config = cfg;
  for (const auto& file : hf_weight_files(dir)) {
    auto st = read_safetensors(file);
    for (auto& [name, t] : st.tensors) {
      if (name.find("rotary_emb.inv_freq") != std::string::npos) continue;  // a buffer old HF versions saved
      if (name == "lm_head.weight" && cfg.model.tie_embeddings) continue;  // tied: the embedding is the head
      ckpt.tensors.push_back({name, t.to(torch::kFloat32)});
    }
  }
  ckpt.metadata["lmx_config"] = to_yaml(cfg);
  return ckpt;
}

}  // namespace lmx
