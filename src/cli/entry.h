// The whole lmx program, called by main() (cli/main.cpp): parses the command line, applies the
// global options and runs the verb; returns the exit code.
#pragma once

namespace lmx::cli {

int run_main(int argc, char** argv);

}  // namespace lmx::cli
