#include "formats/checkpoint.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "data/tokenizer.h"
#include "formats/hf_llama.h"
#include "model/memory.h"
#include "model/sizes.h"
#include "util/csv.h"
#include "util/error.h"

namespace fs = std::filesystem;

namespace lmx {

namespace {

const char* const kConfigKey = "lmx_config";
const char* const kNameKey = "lmx_run_name";

bool is_extra(const std::string& name) { return name.rfind("optim.", 0) == 0 || name.rfind("state.", 0) == 0; }

std::string shape_str(const torch::Tensor& t) { return fmt::format("[{}]", fmt::join(t.sizes().vec(), ", ")); }

// "a, b, c and 4 more"
std::string listing(const std::vector<std::string>& items) {
  const size_t shown = std::min<size_t>(items.size(), 6);
  std::string out = fmt::format("{}", fmt::join(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(shown), ", "));
  if (items.size() > shown) out += fmt::format(" and {} more", items.size() - shown);
  return out;
}

// A checkpoint travels with its tokenizer: a SentencePiece model is copied beside it as this
// file (once; again only when it differs), and read_checkpoint reads that copy.
const char* const kTokenizerCopy = "tokenizer.model";
const char* const kTokenizerHashKey = "tokenizer_hash";

bool uses_tokenizer_file(const Config& cfg) {
  return cfg.data.tokenizer == TokenizerKind::SentencePiece && !cfg.data.tokenizer_model.empty();
}

fs::path tokenizer_copy(const std::string& ckpt_path) { return fs::path(ckpt_path).parent_path() / kTokenizerCopy; }

// Copies the config's tokenizer model beside the checkpoint; returns its hash.
std::string copy_tokenizer_beside(const std::string& ckpt_path, const Config& cfg) {
  const std::string& source = cfg.data.tokenizer_model;
  const std::string hash = data::file_hash(source);
  const fs::path copy = tokenizer_copy(ckpt_path);
  std::error_code ec;
  if (fs::exists(copy, ec) && (fs::equivalent(copy, source, ec) || data::file_hash(copy.string()) == hash)) return hash;
  std::ifstream in(source, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  if (!in) throw InputError(fmt::format("{}: cannot read the tokenizer model to copy beside {}", source, ckpt_path));
  write_file_atomic(copy.string(), bytes.str());
  return hash;
}

}  // namespace

void save_checkpoint(const std::string& path, ModernLMImpl& model, const Config& cfg, const NamedTensors& extra_tensors,
                     const std::map<std::string, std::string>& extra_metadata) {
  NamedTensors tensors;
  for (const auto& p : model.named_parameters()) tensors.push_back({p.key(), p.value()});
  for (const auto& t : extra_tensors) tensors.push_back(t);
  std::map<std::string, std::string> metadata = extra_metadata;
  if (uses_tokenizer_file(cfg)) metadata[kTokenizerHashKey] = copy_tokenizer_beside(path, cfg);
  metadata[kConfigKey] = to_yaml(cfg);
  metadata[kNameKey] = cfg.name;
  metadata["format"] = "pt";  // what Hugging Face tools expect of a PyTorch state dict
  write_safetensors(path, tensors, metadata);
}

Checkpoint read_checkpoint(const std::string& path) {
  if (is_hf_folder(path)) return read_hf_llama(path);
  auto file = read_safetensors(path);
  auto it = file.metadata.find(kConfigKey);
  if (it == file.metadata.end())
    throw InputError(fmt::format("{}: no '{}' entry in the safetensors metadata: not an lmx checkpoint", path, kConfigKey),
                     "lmx checkpoints are written by `lmx train`");
  Checkpoint ckpt;
  ckpt.path = path;
  ckpt.config = parse_config(it->second, path + " (lmx_config)");
  auto name = file.metadata.find(kNameKey);
  if (name != file.metadata.end()) ckpt.config.name = name->second;
  // The tokenizer copy beside the checkpoint, when there is one (the run folder may have moved),
  // and it must be the file the checkpoint was trained with.
  const fs::path copy = tokenizer_copy(path);
  std::error_code ec;
  if (uses_tokenizer_file(ckpt.config) && fs::is_regular_file(copy, ec)) {
    ckpt.config.data.tokenizer_model = fs::absolute(copy, ec).lexically_normal().string();
    auto want = file.metadata.find(kTokenizerHashKey);
    if (want != file.metadata.end() && want->second != data::file_hash(copy.string()))
      throw InputError(fmt::format("{}: the tokenizer copy {} is not the one the checkpoint was trained with (hash {}, "
                                   "file {})", path, copy.string(), want->second, data::file_hash(copy.string())),
                       "restore the run folder's tokenizer.model (or retrain the run)");
  }
  ckpt.tensors = std::move(file.tensors);
  ckpt.metadata = std::move(file.metadata);
  return ckpt;
}

void load_weights(ModernLMImpl& model, const Checkpoint& ckpt) {
  std::map<std::string, torch::Tensor> stored;
  std::vector<std::string> unexpected, missing, mismatched;
  for (const auto& [name, t] : ckpt.tensors)
    if (!is_extra(name)) stored[name] = t;
  auto params = model.named_parameters();
  // A tied model with embed_scale exported as a Llama (formats/hf_llama.h, llama_tensors): the
  // head unscaled and the embedding the head times the scale, bit for bit: the shared matrix.
  const double scale = model.embedding_scale();
  auto head = stored.find("lm_head.weight"), embed = stored.find("model.embed_tokens.weight");
  if (scale != 0 && !params.contains("lm_head.weight") && head != stored.end() && embed != stored.end() &&
      head->second.sizes().equals(embed->second.sizes()) && torch::equal(head->second * scale, embed->second)) {
    embed->second = head->second;
    stored.erase(head);
  }
  std::set<std::string> known;
  for (const auto& p : params) {
    known.insert(p.key());
    auto it = stored.find(p.key());
    if (it == stored.end()) {
      missing.push_back(p.key());
    } else if (!it->second.sizes().equals(p.value().sizes())) {
      mismatched.push_back(fmt::format("{} shape {} in file vs {} in model", p.key(), shape_str(it->second),
                                       shape_str(p.value())));
    } else if (it->second.scalar_type() != p.value().scalar_type()) {
      mismatched.push_back(fmt::format("{} dtype {} in file vs {} in model", p.key(),
                                       c10::toString(it->second.scalar_type()), c10::toString(p.value().scalar_type())));
    }
  }
  for (const auto& [name, t] : stored)
    if (!known.count(name)) unexpected.push_back(name);
  if (!missing.empty() || !unexpected.empty() || !mismatched.empty()) {
    std::vector<std::string> parts;
    if (!missing.empty()) parts.push_back("missing: " + listing(missing));
    if (!unexpected.empty()) parts.push_back("unexpected: " + listing(unexpected));
    if (!mismatched.empty()) parts.push_back("mismatch: " + listing(mismatched));
    throw InputError(fmt::format("{}: weights do not match the model its config builds; {}", ckpt.path,
                                 fmt::join(parts, "; ")),
                     "the file was written by another version or edited; tensor names follow model/lm.h");
  }
  torch::NoGradGuard no_grad;
  for (auto& p : params) p.value().copy_(stored.at(p.key()));
}

ModernLM load_model(const Checkpoint& ckpt) {
  // The config in the metadata decides the model built: before allocating it, it must be the
  // model the file holds (a forged config could ask for terabytes) and fit in memory.
  if (ckpt.config.model.vocab_size > 0) {
    const int64_t params = count_params(ckpt.config.model).total();
    int64_t held = 0;
    for (const auto& [name, t] : ckpt.tensors)
      if (!is_extra(name)) held += t.numel();
    // Far more than the file holds: not its model (a small mismatch is listed exactly below).
    if (params > 2 * held + (1 << 20))
      throw InputError(fmt::format("{}: its config describes {} parameters but the file holds {} weights", ckpt.path,
                                   params, held),
                       "the checkpoint's metadata does not match its tensors; use another checkpoint");
    const double available = available_memory_bytes();
    if (available >= 0 && 4.0 * static_cast<double>(params) > available)
      throw InputError(fmt::format("{}: the model's {} weights need {} but only {} are available", ckpt.path,
                                   params, format_bytes(4.0 * static_cast<double>(params)), format_bytes(available)));
  }
  ModernLM model(ckpt.config.model);
  load_weights(*model, ckpt);
  return model;
}

}  // namespace lmx
