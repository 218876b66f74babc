// The LMX_* environment variables: the one place lmx reads them. Each is a row of variables()
// (name and meaning; docs/USAGE.md's "Environment variables" table lists the same names, a test
// checks both ways). Other variables (OMP_NUM_THREADS, OPENBLAS_CORETYPE, the launchers'
// RANK/WORLD_SIZE, ...) belong to other programs and are read where they are used.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace lmx::env {

struct Variable {
  const char* name;
  const char* meaning;
};

const std::vector<Variable>& variables();

// The value of a variable in the table, or nullptr when it is unset. A name not in the table is
// a std::logic_error (a variable is added to the table first).
const char* get(const char* name);

// The value as a string ("" when unset or empty).
std::string text(const char* name);

// Any variable: an LMX_ one through the table (get), another program's (OMP_NUM_THREADS, the
// launchers' RANK, ...) as it is. For readers that take both kinds of name.
const char* any(const char* name);

}  // namespace lmx::env
