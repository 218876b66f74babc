// Fault injection for the tests: one plan per process, and the few points of lmx that ask it.
// The plan comes from the environment (LMX_FAULT_NAN_STEP, LMX_FAULT: so that a test can put a
// fault into an lmx process it starts) unless a test in the same process sets one (Scope). An
// empty plan, the default, injects nothing; no run option or trainer argument carries a fault.
#pragma once
#include <cstdint>
#include <string>

namespace lmx::faults {

struct Plan {
  int64_t nan_loss_step = -1;         // the loss of this step (0-based, every seed) is NaN
  int64_t nan_grad_step = -1;         // this step's gradient of the parameter nan_grad_param is NaN
  std::string nan_grad_param;         //   (a name from named_parameters, e.g. model.layers.1.mlp.up_proj.weight)
  int64_t interrupt_after_step = -1;  // as if SIGINT came during step interrupt_after_step − 1
  // A data-parallel worker's fault (LMX_FAULT=MODE:RANK:CALL): at its CALL-th gradient
  // all-reduce (counted from 0), rank RANK exits with code 9 (die), stops itself with SIGSTOP
  // (hang) or is interrupted as by SIGINT (int). Empty mode: none.
  std::string worker_mode;
  int worker_rank = -1;
  int64_t worker_call = -1;
};

// The plan in force: a Scope's if one is open, else the environment's (read once per process).
Plan plan();

// A test's plan for the lifetime of this object (in this process), replacing the environment's.
class Scope {
 public:
  explicit Scope(Plan plan);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
};

// While one lives on this thread, loss_poisoned() is `on`: the training loop arms it around the
// step plan().nan_loss_step, and the step multiplies its loss by NaN.
class PoisonLoss {
 public:
  explicit PoisonLoss(bool on);
  ~PoisonLoss();
  PoisonLoss(const PoisonLoss&) = delete;
  PoisonLoss& operator=(const PoisonLoss&) = delete;

 private:
  bool was_;
};
bool loss_poisoned();

}  // namespace lmx::faults
