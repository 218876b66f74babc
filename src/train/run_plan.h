// The run API: what one `lmx train` output directory holds and how its seeds are trained,
// continued and skipped. `lmx train` (cli/cmd_train.cpp) plans and trains through it; sweeps
// (experiments/sweep.cpp) ask it whether a run directory is finished or can be resumed, and
// build each child `lmx train`'s command line with the CLI's train_child_args.
//
// A train output directory: train.json (the invocation: config, seeds, initial weights,
// threads), seed<k>/ per seed (model.safetensors, metrics.csv, result.csv, ...), summary.csv
// (the seeds' rows and aggregates) and summary.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/corpus.h"
#include "util/csv.h"

namespace lmx {

// What one `lmx train` runs: from the command line, or from train.json with --resume.
struct TrainPlan {
  Config cfg;  // as loaded (vocab_size may be auto)
  std::vector<uint64_t> seeds;
  std::string out;
  std::string init_from;  // a checkpoint or Hugging Face Llama folder ("" = fresh init)
  bool resume = false;
};

// train.json: written once when the directory is created, read back by --resume (the plan
// with resume set). InputError naming the file when it is missing or not lmx's.
void write_train_json(const TrainPlan& plan);
TrainPlan read_train_json(const std::string& out);

// Trains every seed of the plan in turn, each seed's result.csv and the growing summary.csv
// written as it finishes (when writer: rank 0); stops after an interrupted seed. Under resume
// a seed that finished before keeps its rows, and one with a checkpoint continues from it.
// Appends the seeds' rows to rows; returns the exit code so far (130: interrupted; 1 when no
// seed finished because every one diverged; else 0).
int train_seeds(const TrainPlan& plan, const data::Corpus& corpus, const Config& resolved, bool writer, Table& rows);

// A train output directory as a sweep sees it: finished (its summary.csv holds only ok or
// diverged seeds; rows receives them), resumable (an interrupted run left train.json), or
// neither (never got going, or not there).
bool train_out_finished(const std::string& out, Table& rows);
bool train_out_resumable(const std::string& out);

// What a child `lmx train` runs: quiet, `threads` threads, either resuming `out` or training
// `config` with one seed into `out`. Its command line is the CLI's to spell (cli/app.h:
// train_child_args), handed to the sweep as SweepOptions::child_args.
struct TrainChild {
  std::string config;
  uint64_t seed = 0;
  std::string out;
  int threads = 1;
  bool resume = false;
};

}  // namespace lmx
