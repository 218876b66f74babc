// liblmxspm.so: SentencePiece behind data/spm_backend.h (see there why it is a module).
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include "spm_backend.h"

namespace {

using lmx::data::SpmBackend;

class Backend : public SpmBackend {
 public:
  std::string load(const std::string& serialized) override {
    const auto status = sp_.LoadFromSerializedProto(serialized);
    return status.ok() ? "" : std::string(status.message());
  }
  std::vector<int> encode(const std::string& text, std::string* error) const override {
    std::vector<int> ids;
    const auto status = sp_.Encode(text, &ids);
    if (!status.ok()) *error = status.message();
    return ids;
  }
  std::string decode(const std::vector<int>& ids, std::string* error) const override {
    std::string out;
    const auto status = sp_.Decode(ids, &out);
    if (!status.ok()) *error = status.message();
    return out;
  }
  int size() const override { return sp_.GetPieceSize(); }
  std::string piece(int id) const override { return sp_.IdToPiece(id); }
  int special(int which) const override {
    switch (which) {
      case 0: return sp_.unk_id();
      case 1: return sp_.bos_id();
      case 2: return sp_.eos_id();
      default: return sp_.pad_id();
    }
  }

 private:
  sentencepiece::SentencePieceProcessor sp_;
};

class Texts : public sentencepiece::SentenceIterator {
 public:
  explicit Texts(const std::vector<std::string>& texts) : texts_(texts) {}
  bool done() const override { return i_ >= texts_.size(); }
  void Next() override { ++i_; }
  const std::string& value() const override { return texts_[i_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  const std::vector<std::string>& texts_;
  size_t i_ = 0;
};

}  // namespace

extern "C" SpmBackend* lmx_spm_new() { return new Backend(); }

extern "C" std::string lmx_spm_train(const std::vector<std::string>& texts,
                                     const std::unordered_map<std::string, std::string>& args, std::string* model) {
  Texts it(texts);
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &it, model);
  return status.ok() ? "" : std::string(status.message());
}
