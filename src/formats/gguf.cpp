#include "formats/gguf.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <regex>

#include "formats/hf_llama.h"
#include "util/csv.h"
#include "util/error.h"

namespace lmx {

namespace {

constexpr uint32_t kAlignment = 32;

// gguf_type (metadata values) and ggml_type (tensor data) numbers from ggml's gguf.h / ggml.h.
enum GgufType : uint32_t { kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9 };
enum GgmlType : uint32_t { kGgmlF32 = 0, kGgmlF16 = 1, kGgmlBF16 = 30 };

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void put_string(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

// The metadata section, built key by key.
class Metadata {
 public:
  void u32(const std::string& key, int64_t v) {
    if (v < 0 || v > UINT32_MAX) throw RuntimeError(fmt::format("GGUF: {} = {} does not fit a u32", key, v));
    head(key, kU32);
    put<uint32_t>(bytes_, static_cast<uint32_t>(v));
  }
  void f32(const std::string& key, double v) {
    head(key, kF32);
    put<float>(bytes_, static_cast<float>(v));
  }
  void boolean(const std::string& key, bool v) {
    head(key, kBool);
    put<uint8_t>(bytes_, v ? 1 : 0);
  }
  void string(const std::string& key, const std::string& v) {
    head(key, kString);
    put_string(bytes_, v);
  }
  void strings(const std::string& key, const std::vector<std::string>& v) {
    array(key, kString, v.size());
    for (const auto& s : v) put_string(bytes_, s);
  }
  template <class T>
  void numbers(const std::string& key, GgufType type, const std::vector<T>& v) {
    array(key, type, v.size());
    for (T x : v) put<T>(bytes_, x);
  }
  uint64_t count() const { return count_; }
  const std::string& bytes() const { return bytes_; }

 private:
  void head(const std::string& key, GgufType type) {
    put_string(bytes_, key);
    put<uint32_t>(bytes_, type);
    ++count_;
  }
  void array(const std::string& key, GgufType type, size_t n) {
    head(key, kArray);
    put<uint32_t>(bytes_, type);
    put<uint64_t>(bytes_, n);
  }
  std::string bytes_;
  uint64_t count_ = 0;
};

// lmx's (HF's) parameter name -> llama.cpp's tensor name.
std::string gguf_name(const std::string& name) {
  static const std::vector<std::pair<std::string, std::string>> layer = {
      {"input_layernorm", "attn_norm"},   {"self_attn.q_proj", "attn_q"}, {"self_attn.k_proj", "attn_k"},
      {"self_attn.v_proj", "attn_v"},     {"self_attn.o_proj", "attn_output"},
      {"post_attention_layernorm", "ffn_norm"}, {"mlp.gate_proj", "ffn_gate"}, {"mlp.up_proj", "ffn_up"},
      {"mlp.down_proj", "ffn_down"},      {"self_attn.q_norm", "attn_q_norm"}, {"self_attn.k_norm", "attn_k_norm"}};
  if (name == "model.embed_tokens.weight") return "token_embd.weight";
  if (name == "model.norm.weight") return "output_norm.weight";
  if (name == "lm_head.weight") return "output.weight";
  static const std::regex re(R"(model\.layers\.(\d+)\.(.+)\.weight)");
  std::smatch m;
  if (std::regex_match(name, m, re))
    for (const auto& [hf, gg] : layer)
      if (m[2] == hf) return fmt::format("blk.{}.{}.weight", m[1].str(), gg);
  throw RuntimeError(fmt::format("GGUF: no llama.cpp name for the parameter '{}'", name));
}

void put_hparams(Metadata& md, const Checkpoint& ckpt, const std::string& type) {
  const ModelConfig& m = ckpt.config.model;
  const std::string arch = hf_family(m).model_type;  // llama, or qwen3 (its keys: llama's under qwen3.)
  auto key = [&arch](const char* k) { return arch + "." + k; };
  md.string("general.architecture", arch);
  md.string("general.name", ckpt.config.name.empty() ? "lmx" : ckpt.config.name);
  md.u32("general.alignment", kAlignment);
  md.u32("general.file_type", type == "f32" ? 0 : type == "f16" ? 1 : 32);  // ALL_F32, MOSTLY_F16, MOSTLY_BF16
  md.u32(key("context_length"), m.max_seq_len);
  md.u32(key("embedding_length"), m.d_model);
  md.u32(key("block_count"), m.n_layers);
  md.u32(key("feed_forward_length"), m.ffn_hidden(true));
  md.u32(key("attention.head_count"), m.n_heads);
  md.u32(key("attention.head_count_kv"), m.kv_heads());
  md.u32(key("attention.key_length"), m.dim_head());
  md.u32(key("attention.value_length"), m.dim_head());
  md.u32(key("rope.dimension_count"), m.dim_head());
  md.f32(key("rope.freq_base"), hf_rope_theta(m));
  if (m.rope_scaling == RopeScaling::Linear) {
    md.string(key("rope.scaling.type"), "linear");
    md.f32(key("rope.scaling.factor"), m.rope_factor);
  }
  md.f32(key("attention.layer_norm_rms_epsilon"), m.norm_eps);
  md.u32(key("vocab_size"), m.vocab_size);
  if (m.ffn == "moe") {  // Mixtral: feed_forward_length is each expert's width
    md.u32(key("expert_count"), m.moe_experts);
    md.u32(key("expert_used_count"), m.moe_top_k);
  }
}

void put_vocab(Metadata& md, const GgufVocab& v) {
  md.string("tokenizer.ggml.model", v.model);
  if (v.model == "gpt2") md.string("tokenizer.ggml.pre", "default");
  md.strings("tokenizer.ggml.tokens", v.tokens);
  if (!v.scores.empty()) md.numbers<float>("tokenizer.ggml.scores", kF32, v.scores);
  md.numbers<int32_t>("tokenizer.ggml.token_type", kI32, v.types);
  if (v.model == "gpt2") md.strings("tokenizer.ggml.merges", {});
  md.u32("tokenizer.ggml.bos_token_id", v.bos);
  md.u32("tokenizer.ggml.eos_token_id", v.eos);
  md.u32("tokenizer.ggml.padding_token_id", v.pad);
  if (v.unk >= 0) md.u32("tokenizer.ggml.unknown_token_id", v.unk);
  md.boolean("tokenizer.ggml.add_bos_token", true);  // lmx's documents start with <bos>
  md.boolean("tokenizer.ggml.add_eos_token", false);
  if (v.model == "llama") md.boolean("tokenizer.ggml.add_space_prefix", false);  // lmx: no dummy prefix
}

// The vocabulary padded with unused entries up to the model's rows (or an InputError when larger).
GgufVocab fit_vocab(GgufVocab v, const Checkpoint& ckpt) {
  const int V = ckpt.config.model.vocab_size;
  if (static_cast<int>(v.tokens.size()) > V)
    throw InputError(fmt::format("{}: the vocabulary has {} tokens, the model's model.vocab_size {}", ckpt.path,
                                 v.tokens.size(), V),
                     "export with the data section the model was trained with");
  for (int i = static_cast<int>(v.tokens.size()); i < V; ++i) {
    v.tokens.push_back(fmt::format("<unused{}>", i));
    if (!v.scores.empty()) v.scores.push_back(0.0f);
    v.types.push_back(5);
  }
  return v;
}

struct TensorOut {
  std::string name;
  torch::Tensor data;  // contiguous, CPU, in the file's type
  GgmlType type;
};

// A Mixtral layer's experts as llama.cpp stacks them: mlp.experts.E.gate_proj.weight (F, C) for
// every E -> blk.N.ffn_gate_exps.weight (E, F, C) (up likewise, down (E, C, F)); the router
// mlp.router.weight (E, C) -> blk.N.ffn_gate_inp.weight. Other names pass through.
NamedTensors stack_experts(const NamedTensors& in, const ModelConfig& m) {
  if (m.ffn != "moe") return in;
  NamedTensors out;
  static const std::regex expert(R"(model\.layers\.(\d+)\.mlp\.experts\.(\d+)\.(gate|up|down)_proj\.weight)");
  static const std::regex router(R"(model\.layers\.(\d+)\.mlp\.router\.weight)");
  std::map<std::pair<int, std::string>, std::vector<torch::Tensor>> stacks;  // (layer, gate|up|down) -> by expert
  for (const auto& [name, t] : in) {
    std::smatch s;
    if (std::regex_match(name, s, expert)) {
      auto& v = stacks[{std::stoi(s[1].str()), s[3].str()}];
      const auto e = static_cast<size_t>(std::stoi(s[2].str()));
      if (v.size() <= e) v.resize(e + 1);
      v[e] = t;
    } else if (std::regex_match(name, s, router)) {
      out.push_back({fmt::format("blk.{}.ffn_gate_inp.weight", s[1].str()), t});
    } else {
      out.push_back({name, t});
    }
  }
  for (const auto& [at, v] : stacks)
    out.push_back({fmt::format("blk.{}.ffn_{}_exps.weight", at.first, at.second), torch::stack(v)});
  return out;
}

std::vector<TensorOut> gguf_tensors(const Checkpoint& ckpt, const std::string& type) {
  const ModelConfig& m = ckpt.config.model;
  ModernLM model = load_model(ckpt);  // checks names and shapes
  std::vector<TensorOut> out;
  // llama.cpp's llama rotates adjacent pairs (half-layout q/k rows permuted to them); its qwen3
  // half-split ones (NEOX), as lmx's half layout (interleaved q/k rows and QK-norm gains permuted).
  const bool neox = hf_family(m).qk_norm;
  for (const auto& [name, value] : stack_experts(llama_tensors(model, m), m)) {
    torch::Tensor t = value.to(torch::kFloat32);
    if (follows_rope_layout(name)) {
      if (!neox && m.rope_layout == RopeLayout::Half) t = half_to_interleaved(t, m.dim_head());
      if (neox && m.rope_layout == RopeLayout::Interleaved) t = to_half_layout(t, m.dim_head());
    }
    GgmlType gt = kGgmlF32;
    if (t.dim() >= 2 && type == "f16") t = t.to(torch::kFloat16), gt = kGgmlF16;
    if (t.dim() >= 2 && type == "bf16") t = t.to(torch::kBFloat16), gt = kGgmlBF16;
    out.push_back({name.rfind("blk.", 0) == 0 ? name : gguf_name(name), t.contiguous(), gt});
  }
  return out;
}

}  // namespace

std::string gguf_blocker(const ModelConfig& m) {
  if (m.ffn != "moe") return hf_llama_blocker(m);
  // Mixtral: llama.cpp's llama with routed SwiGLU experts (softmax router, top-k renormalized:
  // lmx's MoE), no shared ones, no QK-norm (its qwen3 has no experts)
  if (m.moe_shared_experts > 0)
    return fmt::format("model.moe_shared_experts is {} (Mixtral has no shared experts; DeepSeek's are not exported)",
                       m.moe_shared_experts);
  if (m.qk_norm) return "model.qk_norm with model.ffn moe (llama.cpp's qwen3 has no experts; Qwen 3's MoE is not exported)";
  ModelConfig dense = m;
  dense.ffn = "swiglu";  // the rest as a Llama's
  return hf_llama_blocker(dense);
}

const std::vector<std::string>& gguf_types() {
  static const std::vector<std::string> names = {"f32", "f16", "bf16"};
  return names;
}

torch::Tensor half_to_interleaved(const torch::Tensor& w, int64_t D) {
  const int64_t heads = w.size(0) / D;
  return w.reshape({heads, 2, D / 2, w.size(1)}).transpose(1, 2).reshape({heads * D, w.size(1)});
}

void export_gguf(const Checkpoint& ckpt, const GgufVocab& vocab, const std::string& path, const std::string& type) {
  const std::string blocker = gguf_blocker(ckpt.config.model);
  if (!blocker.empty())
    throw InputError(fmt::format("{}: cannot export as GGUF (llama.cpp llama or qwen3): {}", ckpt.path, blocker),
                     "only pre-norm RMSNorm, SwiGLU, RoPE, MHA/GQA/MQA models without biases are llama.cpp's llama "
                     "(with model.qk_norm: its qwen3)");
  const auto& types = gguf_types();
  if (std::find(types.begin(), types.end(), type) == types.end())
    throw InputError(fmt::format("--gguf-type: unknown type '{}'; valid: f32, f16, bf16", type));
  Metadata md;
  put_hparams(md, ckpt, type);
  put_vocab(md, fit_vocab(vocab, ckpt));
  const std::vector<TensorOut> tensors = gguf_tensors(ckpt, type);

  std::string infos;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    put_string(infos, t.name);
    put<uint32_t>(infos, static_cast<uint32_t>(t.data.dim()));
    for (int64_t d = t.data.dim() - 1; d >= 0; --d) put<uint64_t>(infos, static_cast<uint64_t>(t.data.size(d)));
    put<uint32_t>(infos, t.type);
    put<uint64_t>(infos, offset);
    offset += (t.data.nbytes() + kAlignment - 1) / kAlignment * kAlignment;
  }
  std::string file = "GGUF";
  put<uint32_t>(file, 3);
  put<uint64_t>(file, tensors.size());
  put<uint64_t>(file, md.count());
  file += md.bytes();
  file += infos;
  for (const auto& t : tensors) {
    file.append((kAlignment - file.size() % kAlignment) % kAlignment, '\0');
    file.append(static_cast<const char*>(t.data.data_ptr()), t.data.nbytes());
  }
  file.append((kAlignment - file.size() % kAlignment) % kAlignment, '\0');
  write_file_atomic(path, file);
}

}  // namespace lmx
