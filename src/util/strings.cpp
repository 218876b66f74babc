#include "util/strings.h"

#include <algorithm>

namespace lmx {

std::string closest(const std::string& key, const std::vector<std::string>& candidates) {
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t diag = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
        diag = up;
      }
    }
    return row[b.size()];
  };
  std::string best;
  size_t best_d = std::max<size_t>(3, key.size() / 2) + 1;
  for (const auto& c : candidates) {
    size_t d = distance(key, c);
    // A key that is a prefix/suffix of a valid one (d_ff vs d_ff_plain) also counts as close.
    if (d < best_d) best_d = d, best = c;
  }
  return best;
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

}  // namespace lmx
