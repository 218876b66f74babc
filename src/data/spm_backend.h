// The interface between the data layer (data/tokenizer.cpp) and liblmxspm.so, the module that wraps
// Debian's SentencePiece. libsentencepiece carries its own copy of protobuf whose symbols clash
// with the libprotobuf LibTorch loads (a crash while the libraries initialize), so the module is
// loaded with dlopen(RTLD_LOCAL | RTLD_DEEPBIND): its protobuf stays its own. Standard types only.
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

namespace lmx::data {

struct SpmBackend {
  virtual ~SpmBackend() = default;
  virtual std::string load(const std::string& serialized_model) = 0;  // "" or the error
  virtual std::vector<int> encode(const std::string& text, std::string* error) const = 0;
  virtual std::string decode(const std::vector<int>& ids, std::string* error) const = 0;
  virtual int size() const = 0;
  virtual std::string piece(int id) const = 0;
  virtual int special(int which) const = 0;  // 0 <unk>, 1 <bos>, 2 <eos>, 3 <pad>; -1 = none
};

// The module's entry points (extern "C" names for dlsym).
using SpmNew = SpmBackend* (*)();
using SpmTrain = std::string (*)(const std::vector<std::string>& texts,
                                 const std::unordered_map<std::string, std::string>& args, std::string* model);

}  // namespace lmx::data
