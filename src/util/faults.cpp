#include "util/faults.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "util/env.h"

namespace lmx::faults {

namespace {

std::mutex scope_mutex;
std::unique_ptr<Plan>& scoped() {
  static std::unique_ptr<Plan> plan;
  return plan;
}
thread_local bool poisoned = false;

Plan from_environment() {
  Plan p;
  if (const char* v = env::get("LMX_FAULT_NAN_STEP")) p.nan_loss_step = std::atoll(v);
  if (const char* v = env::get("LMX_FAULT")) {
    char mode[8] = {0};
    long long call = -1;
    if (std::sscanf(v, "%7[a-z]:%d:%lld", mode, &p.worker_rank, &call) == 3) p.worker_mode = mode, p.worker_call = call;
  }
  return p;
}

}  // namespace

Plan plan() {
  {
    std::lock_guard<std::mutex> lock(scope_mutex);
    if (scoped()) return *scoped();
  }
  static const Plan environment = from_environment();  // a process's environment is fixed for it
  return environment;
}

Scope::Scope(Plan plan) {
  std::lock_guard<std::mutex> lock(scope_mutex);
  scoped() = std::make_unique<Plan>(std::move(plan));
}
Scope::~Scope() {
  std::lock_guard<std::mutex> lock(scope_mutex);
  scoped().reset();
}

PoisonLoss::PoisonLoss(bool on) : was_(poisoned) { poisoned = on; }
PoisonLoss::~PoisonLoss() { poisoned = was_; }
bool loss_poisoned() { return poisoned; }

}  // namespace lmx::faults
