// String helpers for messages: the closest valid name to a typo, a list joined for a message.
#pragma once
#include <string>
#include <vector>

namespace lmx {

// The valid key closest to `key` among `candidates` (edit distance), or "" if none is close.
std::string closest(const std::string& key, const std::vector<std::string>& candidates);

// "a, b, c"
std::string join(const std::vector<std::string>& items, const std::string& sep = ", ");

}  // namespace lmx
