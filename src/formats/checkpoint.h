// Checkpoints: one safetensors file holding the model's parameters (HF-style names, see
// lm.h), the resolved config as YAML in the metadata key "lmx_config", and whatever extra
// tensors the trainer adds ("optim.*", "state.*": ignored when loading the model).
// A checkpoint travels: a SentencePiece tokenizer is copied beside it as tokenizer.model (its
// hash in the metadata key "tokenizer_hash"), and reading it takes that copy, checking the hash;
// file paths in the config (data.text_path, data.grammar) are absolute.
#pragma once
#include <map>
#include <string>

#include "config/config.h"
#include "formats/safetensors.h"
#include "model/lm.h"

namespace lmx {

struct Checkpoint {
  std::string path;
  Config config;                                // parsed from metadata "lmx_config"
  NamedTensors tensors;                         // every tensor in the file, in file order
  std::map<std::string, std::string> metadata;  // every metadata entry, lmx_config included
};

// Writes path atomically (path.tmp, then rename). extra_tensors must not clash with
// parameter names; extra_metadata must not use the key "lmx_config".
void save_checkpoint(const std::string& path, ModernLMImpl& model, const Config& cfg,
                     const NamedTensors& extra_tensors = {},
                     const std::map<std::string, std::string>& extra_metadata = {});
inline void save_checkpoint(const std::string& path, ModernLM& model, const Config& cfg,
                            const NamedTensors& extra_tensors = {},
                            const std::map<std::string, std::string>& extra_metadata = {}) {
  save_checkpoint(path, *model, cfg, extra_tensors, extra_metadata);
}

// Reads a checkpoint; InputError when the file is not a valid safetensors file or has no
// (valid) lmx_config, or when the tokenizer.model beside it is not the one it recorded. A directory is read as a Hugging Face Llama folder (formats/hf_llama.h).
Checkpoint read_checkpoint(const std::string& path);

// Builds a ModernLM from the checkpoint's config (on the CPU) and copies the weights in.
// Names, shapes and dtypes must match the built model exactly; an InputError lists what
// is missing, unexpected, or of another shape / dtype. Tensors named "optim.*" or "state.*"
// are skipped.
ModernLM load_model(const Checkpoint& ckpt);

// Copies the checkpoint's weights into an existing model (same checks as load_model).
void load_weights(ModernLMImpl& model, const Checkpoint& ckpt);

}  // namespace lmx
