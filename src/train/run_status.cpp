#include "train/run_status.h"

#include <array>

namespace lmx {

namespace {
const std::array<std::string, 4>& names() {
  static const std::array<std::string, 4> list = {"ok", "diverged", "interrupted", "running"};  // enum order
  return list;
}
}  // namespace

const std::string& status_name(RunStatus s) { return names().at(static_cast<size_t>(s)); }

std::optional<RunStatus> parse_status(std::string_view name) {
  for (size_t i = 0; i < names().size(); ++i)
    if (names()[i] == name) return static_cast<RunStatus>(i);
  return std::nullopt;
}

}  // namespace lmx
