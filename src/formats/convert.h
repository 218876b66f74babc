// Checkpoint conversion: MHA -> GQA / MQA "uptraining" (Ainslie et al. 2023, GQA §2.1).
// The query heads are split into n_kv_heads groups of consecutive heads (head h reads KV
// head h / (H / Hk), as in attention/mha.cpp); each group's K and V projection heads become
// one head, initialized by
//   mean   the mean of the group's heads (the paper's choice),
//   first  the group's first head,
//   random a fresh initialization (init.h), i.e. the K/V knowledge is thrown away.
// Every other parameter is copied unchanged.
#pragma once
#include <string>
#include <vector>

#include "formats/checkpoint.h"
#include "model/lm.h"

namespace lmx {

// The names accepted by --init.
const std::vector<std::string>& kv_pool_inits();

// The InputErrors of convert_kv_heads, without building anything.
void check_kv_conversion(const Checkpoint& ckpt, int kv_heads, const std::string& init);

// Builds the converted model (its config is ckpt.config with model.n_kv_heads = kv_heads).
// InputError when the checkpoint is not MHA/GQA attention, kv_heads does not divide its KV
// heads, or init is unknown. The random init draws from torch's global generator.
ModernLM convert_kv_heads(const Checkpoint& ckpt, int kv_heads, const std::string& init);

}  // namespace lmx
