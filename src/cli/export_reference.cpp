#include "cli/export_reference.h"

#include <fmt/format.h>
#include "torch_api.h"

#include <nlohmann/json.hpp>

#include "util/csv.h"
#include "util/error.h"

namespace lmx::cli {

namespace {

constexpr int kDocs = 4, kDocTokens = 64, kGreedy = 64, kPrompt = 4;

torch::Tensor ids_tensor(const data::Doc& ids) {
  return torch::tensor(std::vector<int64_t>(ids.begin(), ids.end())).unsqueeze(0);
}

// (T, V) next-token probabilities after each token of ids, float64.
torch::Tensor next_probs(ModernLM& model, const data::Doc& ids) {
  return torch::softmax(model->forward(ids_tensor(ids)).squeeze(0).to(torch::kFloat64), -1);
}

}  // namespace

void write_export_reference(const Checkpoint& ckpt, const data::Corpus& corpus, const std::string& path) {
  torch::NoGradGuard no_grad;
  ModernLM model = load_model(ckpt);
  model->eval();
  const int max_len = ckpt.config.model.max_seq_len;
  if (corpus.test.empty()) throw InputError(fmt::format("{}: the test split is empty", ckpt.config.source));
  nlohmann::ordered_json j;
  j["checkpoint"] = ckpt.path;
  j["vocab_size"] = ckpt.config.model.vocab_size;
  j["bos"] = corpus.vocab.bos, j["eos"] = corpus.vocab.eos, j["pad"] = corpus.vocab.pad;
  j["sequences"] = nlohmann::json::array();
  for (size_t d = 0; d < corpus.test.size() && d < kDocs; ++d) {
    const auto& doc = corpus.test[d];
    data::Doc ids(doc.begin(), doc.begin() + std::min<size_t>(doc.size(), std::min(kDocTokens, max_len)));
    const torch::Tensor p = next_probs(model, ids).contiguous();
    std::vector<std::vector<double>> rows;
    for (int64_t t = 0; t < p.size(0); ++t)
      rows.emplace_back(p[t].data_ptr<double>(), p[t].data_ptr<double>() + p.size(1));
    j["sequences"].push_back({{"ids", ids}, {"probs", rows}});
  }
  const auto& first = corpus.test.front();
  data::Doc tokens(first.begin(), first.begin() + std::min<size_t>(first.size(), kPrompt));
  const data::Doc prompt = tokens;
  std::vector<double> margins;  // top-1 minus top-2 probability at each greedy step
  for (int i = 0; i < kGreedy && static_cast<int>(tokens.size()) < max_len; ++i) {
    const torch::Tensor p = next_probs(model, tokens)[-1];
    const auto top = p.topk(2);
    margins.push_back((std::get<0>(top)[0] - std::get<0>(top)[1]).item<double>());
    tokens.push_back(static_cast<int32_t>(std::get<1>(top)[0].item<int64_t>()));
  }
  j["greedy"] = {{"prompt", prompt}, {"tokens", data::Doc(tokens.begin() + prompt.size(), tokens.end())},
                 {"margins", margins}};
  data::Doc inner;
  for (int32_t t : first)
    if (t != corpus.vocab.bos && t != corpus.vocab.eos && t != corpus.vocab.pad) inner.push_back(t);
  const std::string text = corpus.vocab.decode(inner);
  j["text"] = {{"text", text}, {"ids", corpus.vocab.encode(text)}};
  write_file_atomic(path, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace lmx::cli
