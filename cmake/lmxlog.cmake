# lmxlog: util/log_sink.cpp linked with spdlog, and nothing else (no LibTorch, no lmxcore):
# its include folders are src/util's own header and spdlog's (Debian's, with Debian's fmt).
# Included by CMakeLists.txt and by tests/fmt_isolation (which fakes a LibTorch with another fmt).
add_library(lmxlog STATIC ${CMAKE_CURRENT_LIST_DIR}/../src/util/log_sink.cpp)
target_link_libraries(lmxlog PRIVATE spdlog::spdlog)
set_target_properties(lmxlog PROPERTIES POSITION_INDEPENDENT_CODE ON)
