// Data-parallel training on LibTorch's own distributed layer (c10d): a TCPStore for the
// rendezvous and a process group for the collectives: Gloo (CPU tensors, and CUDA ones where
// LibTorch's Gloo has CUDA), or NCCL for train.device cuda where lmx was built against a CUDA
// LibTorch with NCCL's headers. LMX_DIST_BACKEND=gloo|nccl overrides the choice.
//
// The launcher environment is the standard one:
//   torchrun --no_python / lmx launch: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT
//     (TORCHELASTIC_USE_AGENT_STORE=True: torchrun's agent already hosts the store)
//   srun: SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID; the master is the first host of
//     SLURM_JOB_NODELIST (MASTER_ADDR / MASTER_PORT override it)
// LMX_DIST=0 ignores all of it (one process); LMX_DIST_TIMEOUT (seconds, default 120) bounds
// every rendezvous and collective, so a dead or hung worker ends the others with an error.
#pragma once
#include <torch/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"

namespace lmx::dist {

struct Env {
  int rank = 0;
  int world = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string launcher;      // "env" (RANK/WORLD_SIZE), "slurm", or "" (one process)
  bool agent_store = false;  // the launcher's agent hosts the TCPStore (all ranks are clients)
  std::string store_prefix = "lmx";
};

using GetEnv = std::function<const char*(const char*)>;

// The process layout the environment describes; throws InputError (naming the variable)
// on a malformed or inconsistent one.
Env read_env(const GetEnv& getenv);
Env read_env();

// The first host of a Slurm node list: "node[03-05,7],gpu1" -> "node03".
std::string slurm_first_host(const std::string& nodelist);

// The process-group backends this lmx was built with ("gloo", "nccl").
std::vector<std::string> backends();
// The backend for `device` (train.device): `requested` (LMX_DIST_BACKEND) when set, else
// NCCL for cuda where built and each rank has a GPU of its own (gpu_per_rank: NCCL refuses two
// ranks on one GPU; Gloo where built takes that case), else Gloo. Throws InputError for one
// that is unknown, not built, or unfit for the device.
std::string choose_backend(DeviceKind device, const char* requested, bool gpu_per_rank = true);

// LMX_DIST_TIMEOUT in seconds (default 120).
std::chrono::milliseconds timeout_from_env();

class Group {
 public:
  // Rendezvous at env.master_addr:master_port (rank 0 hosts the TCPStore unless the launcher
  // does) and connect a process group of `backend` (choose_backend). Throws RuntimeError after
  // `timeout`.
  static std::unique_ptr<Group> connect(const Env& env, std::chrono::milliseconds timeout, const std::string& backend);
  ~Group();
  int rank() const;
  int world() const;
  int local_rank() const;  // this rank's index on its node (its GPU: torch_runtime::make_device)

  // In-place sum over ranks. Tensors are packed into flat buckets of at most bucket_bytes
  // (one all-reduce each, all in flight together) and unpacked again; undefined ones skipped.
  void allreduce_sum(const std::vector<torch::Tensor>& tensors, const std::string& what,
                     int64_t bucket_bytes = 25 << 20);
  // Rank 0's values, in place, on every rank.
  void broadcast(const std::vector<torch::Tensor>& tensors, const std::string& what);
  // Rank 0's string (set under `key` in the store) on every rank.
  std::string broadcast_string(const std::string& key, const std::string& value);
  // Seconds spent in all-reduces (waiting included) and their count, since connect.
  double collective_seconds() const;
  int64_t collectives() const;

 private:
  Group();
  struct Impl;
  std::unique_ptr<Impl> impl_;
  [[noreturn]] void fail(const std::string& what, const std::exception& e) const;
};

// The process-wide group of a data-parallel `lmx train` (null: one process).
Group* current();
// Connects (once) when the environment describes more than one process, with the backend for
// `device` (train.device); returns current().
Group* init_from_env(DeviceKind device);
// Drops the group (after a clean run; a failed one exits with the group leaked, so that no
// exit waits on a dead peer).
void shutdown();

inline int rank() { return current() ? current()->rank() : 0; }
inline int world() { return current() ? current()->world() : 1; }
inline int local_rank() { return current() ? current()->local_rank() : 0; }
inline bool writer() { return rank() == 0; }  // only rank 0 writes results and checkpoints

// Fault injection (tests): the worker fault of faults::plan() (LMX_FAULT=die:RANK:STEP exits
// that rank with code 9 at its STEP-th call, the gradient all-reduce of each step counted from 0;
// hang:RANK:STEP stops it (SIGSTOP) there; int:RANK:STEP interrupts it there, that rank only).
void fault_point();

}  // namespace lmx::dist
