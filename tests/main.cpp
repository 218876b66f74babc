// Catch2 v2 builds its main() here; v3 links Catch2::Catch2WithMain instead (CMakeLists.txt).
#if __has_include(<catch2/catch.hpp>)
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#endif
