// lmx: a command-line experiment runner for Transformer architecture research.
// The program is cli/entry.cpp, compiled with the rest of the cli layer; this file includes no
// LibTorch, CLI11 or fmt header, so the executable's own unit compiles in a fraction of a second.
#include "cli/entry.h"

int main(int argc, char** argv) { return lmx::cli::run_main(argc, argv); }
