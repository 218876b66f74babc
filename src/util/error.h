// Errors that reach the user: one readable line, an optional hint, an exit code.
//   exit 2: usage and input errors (bad flag, bad config, missing or corrupt file)
//   exit 1: runtime failures (I/O during a run, divergence of every seed, ...)
#pragma once
#include <stdexcept>
#include <string>

namespace lmx {

class Error : public std::runtime_error {
 public:
  Error(int exit_code, std::string message, std::string hint = {})
      : std::runtime_error(std::move(message)), exit_code_(exit_code), hint_(std::move(hint)) {}
  int exit_code() const { return exit_code_; }
  const std::string& hint() const { return hint_; }

 private:
  int exit_code_;
  std::string hint_;
};

// Bad input: a config, a flag, a file the user gave us. Exit code 2.
struct InputError : Error {
  explicit InputError(std::string message, std::string hint = {})
      : Error(2, std::move(message), std::move(hint)) {}
};

// Something failed while running a valid job. Exit code 1.
struct RuntimeError : Error {
  explicit RuntimeError(std::string message, std::string hint = {})
      : Error(1, std::move(message), std::move(hint)) {}
};

}  // namespace lmx
