// Catch2 v2 (Debian bookworm's catch2, single header) or v3 (newer distributions): the tests
// use v2's spelling, which this header maps onto v3 where needed.
#pragma once
#if __has_include(<catch2/catch.hpp>)
#include <catch2/catch.hpp>
#else
#include <catch2/catch_all.hpp>

#include <string>
using Catch::Approx;
namespace Catch {
// v2's string matcher; v3 renamed it (its Matchers::Contains matches range elements).
inline Matchers::StringContainsMatcher Contains(const std::string& s,
                                                CaseSensitive cs = CaseSensitive::Yes) {
  return Matchers::ContainsSubstring(s, cs);
}
}  // namespace Catch
#endif
