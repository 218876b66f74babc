// One training run: a config, a seed, a run directory. Writes metrics.csv (every step),
// config.yaml (resolved) and model.safetensors (final weights) into the run directory.
#pragma once
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/optim/adamw.h>

#include <array>

#include "config/config.h"
#include "train/optimizer.h"
#include "data/corpus.h"
#include "train/evaluate.h"
#include "train/run_status.h"

namespace lmx {

struct RunOptions {
  RunOptions(uint64_t seed_ = 0, std::string run_dir_ = {}, bool progress_ = false)
      : seed(seed_), run_dir(std::move(run_dir_)), progress(progress_) {}
  uint64_t seed = 0;      // model init and data order
  std::string run_dir;    // created by the caller; results go here
  bool progress = false;  // live progress line (stderr is a terminal)
  bool resume = false;    // continue the interrupted run in run_dir from its checkpoint
  bool check_memory = true;  // refuse (InputError) a config whose estimate exceeds MemAvailable
  std::string init_from;  // checkpoint whose weights replace the initialization (uptraining)
};

struct RunResult {
  uint64_t seed = 0;
  RunStatus status = RunStatus::Ok;  // ok | diverged | interrupted
  std::string message;        // why, when status is not ok
  int64_t params = 0;
  int64_t steps = 0;          // optimizer steps taken
  double final_train_loss = std::nan("");   // the last step's batch loss
  double train_loss_last_epoch = std::nan("");  // token-weighted mean train loss over the last epoch's steps
  double train_loss_first = std::nan("");       // the same over the first kFirstSteps steps
  double best_val_ppl = std::nan("");
  double final_val_ppl = std::nan("");
  EvalResult test;            // on the test split at the end
  double unigram_test_ppl = std::nan("");  // baseline: training-split unigram model on test
  double wall_s = 0;
  double tokens_per_s = 0;
  double peak_rss_mib = 0;
};

// Steps whose mean train loss RunResult::train_loss_first reports (how fast a run starts).
constexpr int64_t kFirstSteps = 50;

// Optimizer steps of a run: ceil(train.max_tokens / targets_per_batch) where max_tokens > 0,
// else train.steps, else train.epochs passes of batches_per_epoch.
int64_t total_steps(const TrainConfig& t, int64_t batches_per_epoch, double targets_per_batch);
// The same for a config on a corpus (one process).
int64_t planned_steps(const Config& cfg, const data::Corpus& corpus);

// Resolves data-dependent fields (vocab_size) of a config against a corpus.
Config resolve_for_corpus(Config cfg, const data::Corpus& corpus);

RunResult train_run(const Config& cfg, const data::Corpus& corpus, const RunOptions& opt);

int64_t count_parameters(const ModernLM& model);

// Global gradient norm before clipping; scales the gradients down to max_norm when
// max_norm > 0 and the norm exceeds it.
double clip_gradients(ModernLM& model, double max_norm);

// The optimizer train.optimizer names, weight decay on matrices only (not on biases, norm
// scales or position/bias tables of rank < 2), as in nanoGPT and Llama training. Groups: 0 the
// decayed matrices, 1 the rest; adam: both with the decay as an L2 term (GroupRule::AdamL2);
// muon: group 2, the 2-D weights inside the blocks, by Muon at train.muon_lr's peak.
std::unique_ptr<FusedAdamW> make_optimizer(ModernLM& model, const TrainConfig& t);

// One training step, as train_run takes it (and lmx bench times it): set the learning rate,
// forward, cross-entropy (kIgnore targets skipped), backward, clip to grad_clip, then the
// AdamW step only when the loss and the gradient norm are finite (stepped = false otherwise;
// the gradients are left for inspection). Under faults::PoisonLoss the loss is NaN (tests).
// precision "bf16": forward and loss under autocast (kernels/precision.h).
// Under dist::current() (data-parallel) the loss and gradients are those of the global batch:
// token losses over the global token count (global_tokens, Batch::global_tokens; required
// there), gradients sum-all-reduced across the ranks.
struct StepResult {
  double loss = 0;
  double grad_norm = 0;
  bool stepped = false;
  int64_t tokens = 0;  // target tokens of the (global) batch
  // Data-parallel: a rank had SIGINT/SIGTERM by this step's all-reduce (the flag rides in the
  // gradient bucket), so every rank stops after this same step.
  bool interrupted = false;
  // Wall time of the step's phases (lmx bench --breakdown): forward + loss, backward (with the
  // data-parallel all-reduce), clipping, AdamW.
  std::array<double, 4> phase_ms{};
};
StepResult train_step(ModernLM& model, torch::optim::AdamW& optimizer, const torch::Tensor& inputs,
                      const torch::Tensor& targets, double lr, double grad_clip, Precision precision = Precision::Fp32, int64_t global_tokens = -1,
                      int parts = 1, double z_loss = 0);
// The batch's rows in micro-batches (train.micro_batch_size): rows sorted by length (up to the
// last target that counts; stable) and cut into groups of `size` rows, each trimmed to its
// longest row, so that a doc-layout group pads to nearly its own length instead of the
// batch's longest. size 0 or >= the batch, or rows all of one length (packed layout): the
// batch as it is, one micro-batch.
struct MicroBatch {
  torch::Tensor inputs, targets;
  // Padding-free (ModernLM::forward_packed): inputs and targets (1, N) hold sequences of these
  // lengths end to end. Empty: an ordinary (B, T) batch.
  std::vector<int64_t> lengths;
};
std::vector<MicroBatch> micro_batches(const torch::Tensor& inputs, const torch::Tensor& targets, int64_t size);
// The batch padding-free (train.padding_free): every row cut at its last target that counts and
// the rows laid end to end in one (1, N) row, in their order; rows without a target are left
// out. Rows all of one length (packed layout), or none with a target: the batch as it is.
MicroBatch padding_free_batch(const torch::Tensor& inputs, const torch::Tensor& targets);
// The same step over micro-batches: forward and backward of each in turn, the gradients
// accumulated, then one clip and one AdamW step. With several, each one's token losses are
// summed over the whole batch's token count: the loss and gradient of the whole batch, up to
// float rounding (the gradients are summed in parts). One micro-batch: exactly the step above.
// `parts` (step_parts): the batch cut into that many parts (split_step), at once on
// concurrent_parts threads; 1: the batch in one pass.
// z_loss > 0 (train.z_loss): the gradient is that of the loss plus z_loss · the mean over the
// counted targets of logsumexp(logits)² (PaLM's z-loss); StepResult::loss stays the
// cross-entropy.
StepResult train_step(ModernLM& model, torch::optim::AdamW& optimizer, const std::vector<MicroBatch>& micro, double lr,
                      double grad_clip, Precision precision = Precision::Fp32,
                      int64_t global_tokens = -1, int parts = 1, double z_loss = 0);


// The parts a training step's batch is cut into (train.step_parts) on the CPU; 1 elsewhere.
// Each part runs its forward and backward on its own and the parts' gradients are summed in part
// order, so the step's bits follow from the parts, not from the threads: a step in 2 parts rounds
// as the same step over its parts as micro-batches (split_step) on one thread, not as the
// 1-part step. How many of them run at once is concurrent_parts'.
int step_parts(const TrainConfig& t, const c10::Device& device);
// How many parts of a step run at once, one per thread with one-thread GEMMs and kernels:
// runtime::threads() on the CPU where LibTorch's own ops run on one thread (--threads <= 2,
// runtime::thread_split); else 1, the parts one after another with each op split over the
// threads (whose kernels give the same bits at any thread count).
int concurrent_parts(const c10::Device& device);
// The step's micro-batches as `parts` lists, one per thread, each at least one micro-batch
// (fewer lists when there are fewer pieces to share): one padding-free micro-batch is cut between
// sequences into runs of about equal token counts, one (B, T) batch into row blocks, several
// micro-batches dealt out largest first to the list with the fewest tokens so far.
std::vector<std::vector<MicroBatch>> split_step(const std::vector<MicroBatch>& micro, int parts);

// After a step that took no update (StepResult::stepped false): ", first non-finite gradient in
// NAME (parameter group GROUP)" for the first parameter whose gradient is not finite; "" if none is.
std::string bad_gradient_note(ModernLM& model);

double peak_rss_mib();

}  // namespace lmx
