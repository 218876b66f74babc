// The safetensors file format (Hugging Face): 8 bytes little-endian u64 N, then an N-byte
// JSON header {"__metadata__": {str: str}, name: {"dtype", "shape", "data_offsets": [b, e]}},
// then the raw little-endian tensor bytes (offsets relative to the end of the header).
// Supported dtypes: F32, F16, BF16, I64, I32.
#pragma once
#include <torch/types.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace lmx {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

struct SafetensorsFile {
  NamedTensors tensors;                         // in file order (by data offset)
  std::map<std::string, std::string> metadata;  // the header's __metadata__
};

// Writes path + ".tmp", then renames it to path, so a crash never leaves a half file.
// Tensors may live on any device (copied to the CPU). Throws RuntimeError on I/O failure,
// InputError for an unsupported dtype or a duplicate name.
void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Reads a whole file. A missing, truncated or corrupt file is an InputError naming the
// file and what is wrong (with the byte offset where it applies).
SafetensorsFile read_safetensors(const std::string& path);

}  // namespace lmx
