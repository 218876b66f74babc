// Experiment specs (experiments/*.yaml): a base config, fixed overrides, named points and
// grid axes (their product is the grid), seeds, and the overrides of --quick.
//
//   kind: train                      # the job each grid point runs
//   base: ../configs/textbook.yaml   # relative to the spec
//   seeds: [0, 1]
//   set: {train.epochs: 6}           # every point
//   points:                          # named points, in order (optional)
//     relu: {model.ffn: relu}
//     swiglu: {model.ffn: swiglu, model.d_ff: auto}
//     llama: {base: ../configs/llama.yaml}   # a point may start from its own base config
//   grid:                            # axes (optional): key -> list of values
//     train.lr: [0.01, 0.03]
//   quick: {train.steps: 30}         # --quick: these overrides and the first seed only
//   match_params: relu               # optional: re-match every other point's d_ff to this point's
//                                    # parameter count (within 1%), as lmx ablate does
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"

namespace lmx {

struct GridPoint {
  std::string name;                    // "swiglu" or "swiglu,train.lr=0.01"
  std::vector<std::string> overrides;  // key=value, applied after the spec's `set`
  Config config;                       // base + set + overrides (+ quick), validated
  std::string base_name;               // the point's name without the grid part ("swiglu")
};

struct ExperimentSpec {
  std::string path;
  std::string kind = "train";
  std::string base;                    // resolved path of the base config
  std::vector<uint64_t> seeds = {0};
  std::vector<std::string> set;        // key=value for every point
  std::vector<std::pair<std::string, std::vector<std::string>>> points;  // name -> key=value
  std::vector<std::pair<std::string, std::vector<std::string>>> grid;    // key -> values
  std::vector<std::string> quick;
  std::string match_params;            // a point whose parameter count the others match (d_ff)
};

// Parses and checks a spec (unknown keys, types) naming file:line:column; InputError.
ExperimentSpec load_spec(const std::string& path);

// Adds command-line axes: "key=a,b,c" is a grid axis, "key=v" a fixed override.
void add_cli_sets(ExperimentSpec& spec, const std::vector<std::string>& sets);

// Expands points × grid into validated configs (every one is loaded before anything runs).
std::vector<GridPoint> expand(const ExperimentSpec& spec, bool quick);

}  // namespace lmx
