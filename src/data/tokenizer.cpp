#include "data/tokenizer.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "data/spm_backend.h"
#include "util/csv.h"
#include "util/error.h"

namespace fs = std::filesystem;

namespace lmx::data {

namespace {

// liblmxspm.so, beside the running binary (build/lmx, build/lmx_tests), else where CMake built it.
struct Module {
  SpmNew make = nullptr;
  SpmTrain train = nullptr;
};

// dlopen(RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND). The sanitizer runtimes refuse RTLD_DEEPBIND in
// their dlopen interceptor (google/sanitizers#611: a deep-bound library resolves malloc to
// glibc's, not the sanitizer's). SentencePiece's calls are consistent either way (its own
// mallocs are freed by itself; what crosses the interface is std::string and std::vector, whose
// operator new lives in libstdc++, loaded and bound to the sanitizer before the module), so the
// sanitizer builds call glibc's dlopen itself (Debian's libsentencepiece is not instrumented
// anyway; our module's wrapper is).
void* open_module(const std::string& path) {
  constexpr int flags = RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  using Dlopen = void* (*)(const char*, int);
  if (void* libc = ::dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD))
    if (auto glibc_dlopen = reinterpret_cast<Dlopen>(::dlsym(libc, "dlopen"))) return glibc_dlopen(path.c_str(), flags);
#endif
  return ::dlopen(path.c_str(), flags);
}

const Module& module() {
  static const Module m = [] {
    std::vector<std::string> candidates;
    char exe[4096];
    const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) candidates.push_back((fs::path(std::string(exe, static_cast<size_t>(n))).parent_path() / "liblmxspm.so").string());
#ifdef LMX_SPM_MODULE
    candidates.push_back(LMX_SPM_MODULE);
#endif
    std::string errors;
    for (const auto& path : candidates) {
      void* handle = open_module(path);
      if (!handle) {
        const char* e = ::dlerror();
        errors += fmt::format("; {}", e ? e : path);
        continue;
      }
      Module found;
      found.make = reinterpret_cast<SpmNew>(::dlsym(handle, "lmx_spm_new"));
      found.train = reinterpret_cast<SpmTrain>(::dlsym(handle, "lmx_spm_train"));
      if (found.make && found.train) return found;
      errors += fmt::format("; {}: no lmx_spm_new / lmx_spm_train", path);
    }
    throw RuntimeError(fmt::format("cannot load the SentencePiece module liblmxspm.so{}", errors),
                       "it is built next to lmx (cmake --build build); libsentencepiece0 must be installed");
  }();
  return m;
}

}  // namespace

struct Tokenizer::Impl {
  std::unique_ptr<SpmBackend> sp;
};

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

std::shared_ptr<const Tokenizer> Tokenizer::load(const std::string& path) {
  const std::string hint = "train one with `lmx data tokenizer CONFIG --vocab N`, or fix data.tokenizer_model";
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw InputError(fmt::format("{}: tokenizer model not found (data.tokenizer_model)", path), hint);
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::shared_ptr<Tokenizer> t(new Tokenizer());
  t->impl_ = std::make_unique<Impl>();
  t->impl_->sp.reset(module().make());
  const std::string error = t->impl_->sp->load(ss.str());
  if (!error.empty() || t->impl_->sp->size() < 1)
    throw InputError(fmt::format("{}: not a SentencePiece model ({})", path, error.empty() ? "no pieces" : error), hint);
  if (t->bos() < 0 || t->eos() < 0 || t->pad() < 0)
    throw InputError(fmt::format("{}: the SentencePiece model lacks <bos>, <eos> or <pad>", path),
                     "lmx needs all three: train the model with `lmx data tokenizer`");
  t->path_ = path;
  t->hash_ = file_hash(path);
  return t;
}

std::vector<int32_t> Tokenizer::encode(const std::string& text) const {
  std::string error;
  const std::vector<int> ids = impl_->sp->encode(text, &error);
  if (!error.empty()) throw RuntimeError(fmt::format("{}: cannot encode: {}", path_, error));
  return std::vector<int32_t>(ids.begin(), ids.end());
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::vector<int> in;
  for (int32_t id : ids) {
    if (id < 0 || id >= size())
      throw InputError(fmt::format("token id {} is outside the tokenizer's vocabulary (0..{})", id, size() - 1));
    in.push_back(id);
  }
  std::string error;
  std::string out = impl_->sp->decode(in, &error);
  if (!error.empty()) throw RuntimeError(fmt::format("{}: cannot decode: {}", path_, error));
  return out;
}

int Tokenizer::size() const { return impl_->sp->size(); }
std::string Tokenizer::piece(int32_t id) const { return impl_->sp->piece(id); }
int32_t Tokenizer::unk() const { return impl_->sp->special(0); }
int32_t Tokenizer::bos() const { return impl_->sp->special(1); }
int32_t Tokenizer::eos() const { return impl_->sp->special(2); }
int32_t Tokenizer::pad() const { return impl_->sp->special(3); }

const std::vector<std::string>& tokenizer_types() {
  static const std::vector<std::string> names = {"bpe", "unigram"};
  return names;
}

void train_tokenizer(const std::vector<std::string>& texts, int vocab, const std::string& type,
                     const std::string& path, bool byte_fallback) {
  const auto& types = tokenizer_types();
  if (std::find(types.begin(), types.end(), type) == types.end())
    throw InputError(fmt::format("--type: unknown tokenizer type '{}'; valid: bpe, unigram", type));
  size_t longest = 0;
  for (const auto& t : texts) longest = std::max(longest, t.size());
  const std::unordered_map<std::string, std::string> args = {
      {"model_type", type},
      {"vocab_size", std::to_string(vocab)},
      {"character_coverage", "1.0"},
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"add_dummy_prefix", "false"},
      {"unk_id", "0"}, {"bos_id", "1"}, {"eos_id", "2"}, {"pad_id", "3"},
      {"max_sentence_length", std::to_string(std::max<size_t>(4192, longest + 1))},
      {"num_threads", "1"},
      {"byte_fallback", byte_fallback ? "true" : "false"},
      {"minloglevel", "2"},
  };
  std::string model;
  const std::string error = module().train(texts, args, &model);
  if (!error.empty()) {
    // SentencePiece says which way: "... smaller than required_chars ... Increase vocab_size" (every
    // character of the text needs a piece) or "Vocabulary size too high ... <= N".
    const bool too_small = error.find("Increase vocab_size") != std::string::npos ||
                           error.find("smaller than required_chars") != std::string::npos;
    const bool too_large = error.find("too high") != std::string::npos;
    throw InputError(fmt::format("SentencePiece {} training with --vocab {} failed: {}", type, vocab, error),
                     too_small   ? "a larger --vocab: every character of the training split needs a piece of its own"
                     : too_large ? "a smaller --vocab (the training split is too small for this many pieces)"
                                 : "check --vocab and the training split (lmx data stats CONFIG)");
  }
  write_file_atomic(path, model);
}

std::string file_hash(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read", path));
  uint64_t h = 1469598103934665603ULL;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    for (std::streamsize i = 0; i < in.gcount(); ++i) {
      h ^= static_cast<unsigned char>(buf[i]);
      h *= 1099511628211ULL;
    }
  }
  return fmt::format("{:016x}", h);
}

}  // namespace lmx::data
