// Not fmt: a stand-in for the other fmt a pip LibTorch bundles, just enough for core_side.cpp.
// Any code written for the real fmt (spdlog's) fails to compile against it.
#pragma once
#include <string>
#define FMT_VERSION 990000
namespace fmt {
inline namespace v99 {
inline std::string format(const char* pattern, const std::string& arg) {
  std::string out(pattern);
  const auto at = out.find("{}");
  if (at != std::string::npos) out.replace(at, 2, arg);
  return out;
}
}  // namespace v99
}  // namespace fmt
