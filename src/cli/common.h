// Helpers shared by the verbs: seeds, output directories, the tokenizer a checkpoint was trained with.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lmx {
struct Checkpoint;  // formats/checkpoint.h
struct Table;       // util/csv.h
namespace data {
struct Corpus;  // data/corpus.h
}
}  // namespace lmx

namespace lmx::cli {

// InputError (exit 2) when the checkpoint records a tokenizer file (tokenizer_hash) other than
// the one the corpus loaded (a SentencePiece model changed since training).
void check_tokenizer(const Checkpoint& ck, const data::Corpus& corpus);

// "a,b,c" -> {a, b, c} (empty items dropped).
std::vector<std::string> parse_list(const std::string& list);

// "6,12,24" -> {6,12,24}; InputError naming the flag and the bad item.
std::vector<int> parse_int_list(const std::string& flag, const std::string& list);

// "0,1,2" -> {0,1,2}; empty list -> n_seeds seeds from global_seed (or 0). InputError on junk.
std::vector<uint64_t> parse_seeds(const std::string& list, int n_seeds = 1, long long global_seed = -1);

// runs/<name>/<YYYYmmdd-HHMMSS>
std::string default_out_dir(const std::string& name);

// Creates a fresh, writable output directory; refuses a non-empty one and an unwritable one
// (InputError, exit 2) before any work starts. Takes the directory's lock (lock_out_dir) first,
// then opens its log, dir/lmx.log (open_folder_log).
void prepare_out_dir(const std::string& dir);

// Holds an exclusive flock on DIR/.lmx.lock for the rest of this process (not inherited by
// children), so that two lmx processes never write one run or sweep folder. InputError (exit
// 2) naming the holder's pid when another process holds it. dir must exist.
void lock_out_dir(const std::string& dir);

// From now on the log lines also go to dir/lmx.log (appended, with date and time), instead of
// the previous output folder's.
void open_folder_log(const std::string& dir);

// InputError (exit 2) when a file cannot be created in dir (permissions, read-only, full) or dir
// names a file.
void check_writable(const std::string& dir);

// The output directory of a sweep-like verb (sweep, ablate): with --resume DIR, DIR after
// checking it holds an interrupted sweep (runs/) and is writable (and opening its log); otherwise --out (or
// runs/<default_name>-<stamp>) prepared by prepare_out_dir.
std::string sweep_out_dir(const std::string& resume, const std::string& out, const std::string& default_name);

// summary.csv (seed rows + aggregates) and summary.md in out; the Markdown also to stdout.
void write_summary(const std::string& out, const Table& seeds);

// InputError (exit 2) when the file system of dir has less than needed_bytes free.
void check_free_space(const std::string& dir, double needed_bytes, const std::string& what);

}  // namespace lmx::cli
