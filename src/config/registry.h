// Component catalog: per component kind (and the corpora), one row per variant {name,
// description, traits}, free
// of LibTorch, below every layer that needs it: config validation, `lmx list`, --help, the
// parameter and memory arithmetic, the exporters and the probes read these rows. Code asks a
// row's traits (registry::ffn(cfg).gated), never compares a component's name. The rows come
// from the layer that builds the modules: each built-in variant is one row of
// model/registry.cpp {name, description, traits, factory}, added here when the program starts
// (static initialization), before main() and before anything reads the catalog.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"

namespace lmx::registry {

enum class Kind { Ffn, Norm, Attention, Position, Corpus };

// What the code outside a component's own file asks of it: capabilities and counts, never its
// name. One struct for every kind; a kind's rows set only the fields marked with it.
struct Traits {
  bool gated = false;          // ffn: W2·(φ(W1x) ⊙ W3x), three matrices (plain: two)
  int vectors = 1;             // norm: learned vectors of width C per norm: γ (1), or γ and β (2)
  bool latent = false;         // attention: keys and values from one cached low-rank latent (MLA),
                               //   not per-head K/V projections (no n_kv_heads, no K/V heads to pool)
  bool rotary = false;         // position: rotates queries and keys (even head dims; MLA's decoupled part)
  bool bounded_length = false; // position: no position at or past model.max_seq_len (a table of that length)
  // position: its parameters in the whole model (null: none); ffn: one layer's (null: its linear
  // layers, plain or gated), for the arithmetic of model/sizes.h.
  int64_t (*params)(const ModelConfig&) = nullptr;
  // ffn: the weights one token multiplies in one layer (null: every one; MoE: router, top-k and
  // shared experts), for the FLOPs of model/sizes.h.
  int64_t (*active_matmul)(const ModelConfig&) = nullptr;
  // A model row's own checks of its keys: a message naming the key, or "" when they hold.
  std::string (*model_check)(const ModelConfig&) = nullptr;
  // The model.* keys only this variant reads: `lmx ablate` moves them with the component.
  std::vector<std::string> keys;
  // corpus (data.kind):
  bool has_truth = false;      // knows its exact distribution (Truth: the floors of plots and tables)
  bool doc_counts = false;     // its splits hold data.train_docs / val_docs / test_docs documents
  bool text_source = false;    // cut from data.text_path's text: takes data.tokenizer (subwords), and
                               //   `lmx data tokenizer` trains on it
  // The corpus's own checks of the data fields: a message naming the key, or "" when they hold.
  std::string (*check)(const DataConfig&) = nullptr;
  bool llama = false;          // the variant Llama uses: the HF / GGUF exporters accept only these
};

// A row's traits, composable: llama(gated()) is Llama's gated FFN.
Traits gated();
Traits latent();
Traits rotary();
Traits llama(Traits t);

struct Entry {
  std::string name;
  std::string description;
  Traits traits;
};

const std::vector<Kind>& kinds();
const char* kind_name(Kind kind);          // "ffn", "norm", "attention", "position", "corpus"
const char* kind_key(Kind kind);           // the config key that names a row: "model.ffn", ..., "data.kind"
const std::vector<Entry>& entries(Kind kind);  // in table order
std::vector<std::string> names(Kind kind);  // in table order
// The row of `name`; an InputError naming the valid ones when there is none.
const Entry& find(Kind kind, const std::string& name);

// Adds a row after those there (model/registry.h's add_ffn and friends call it with the
// factory beside it: for the built-in rows at start, for a program's or test's own component
// later). A name that exists is a std::logic_error.
void add(Kind kind, Entry entry);

// The rows a model config chose.
const Traits& ffn(const ModelConfig& m);
const Traits& norm(const ModelConfig& m);
const Traits& attention(const ModelConfig& m);
const Traits& position(const ModelConfig& m);
const Traits& corpus(const DataConfig& d);

// The name of the variant Llama uses (Traits::llama) in a kind, for messages.
std::string llama_name(Kind kind);

}  // namespace lmx::registry
