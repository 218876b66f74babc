#include "distributed/dist.h"

// Debian's libtorch-dev ships the c10d headers; ProcessGroupGloo.hpp is guarded by this
// macro (the library itself is built with Gloo) and needs libgloo-dev's headers.
// LMX_WITH_GLOO=0 (CMake -DLMX_WITH_GLOO=OFF, e.g. against a LibTorch without Gloo headers)
// builds lmx without the Gloo backend. LMX_WITH_NCCL=1 (CMake turns it on for a CUDA LibTorch
// whose NCCL headers it finds) adds the NCCL backend for CUDA tensors. Without either,
// Group::connect refuses with a clear error.
#ifndef LMX_WITH_GLOO
#define LMX_WITH_GLOO 1
#endif
#ifndef LMX_WITH_NCCL
#define LMX_WITH_NCCL 0
#endif
#define LMX_WITH_C10D (LMX_WITH_GLOO || LMX_WITH_NCCL)
#if LMX_WITH_GLOO
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if LMX_WITH_NCCL
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL 1
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#if LMX_WITH_C10D
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif
#include <fmt/format.h>
#include <fmt/ranges.h>
#include "torch_api.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "kernels/torch_runtime.h"
#include "util/env.h"
#include "util/error.h"
#include "util/faults.h"
#include "util/log.h"
#include "util/runtime.h"
#include "util/signals.h"

namespace lmx::dist {

namespace {

std::string first_line(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  // c10 messages end with "Exception raised from ... (most recent call first)" noise.
  const auto pos = line.find("Exception raised from");
  if (pos != std::string::npos) line = line.substr(0, pos);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\n')) line.pop_back();
  return line;
}

std::string error_text(const std::exception& e) {
  if (auto* ce = dynamic_cast<const c10::Error*>(&e)) return first_line(ce->what_without_backtrace());
  return first_line(e.what());
}

// Never destroyed at exit: after a failure, a process group's destructor may wait on a dead
// peer; the clean path calls shutdown().
std::unique_ptr<Group>& current_ptr() {
  static auto* g = new std::unique_ptr<Group>();
  return *g;
}

}  // namespace

std::vector<std::string> backends() {
  std::vector<std::string> b;
  if (LMX_WITH_GLOO) b.push_back("gloo");
  if (LMX_WITH_NCCL) b.push_back("nccl");
  return b;
}

std::string choose_backend(DeviceKind device, const char* requested, bool gpu_per_rank) {
  const auto built = backends();
  const auto has = [&](const std::string& b) { return std::find(built.begin(), built.end(), b) != built.end(); };
  if (requested && *requested) {
    const std::string b = requested;
    if (b != "gloo" && b != "nccl")
      throw InputError(fmt::format("LMX_DIST_BACKEND={}: expected gloo or nccl", b));
    if (!has(b))
      throw InputError(fmt::format("LMX_DIST_BACKEND={}: this lmx was built without it (built: {})", b,
                                   built.empty() ? "none" : fmt::format("{}", fmt::join(built, ", "))),
                       b == "nccl" ? "rebuild against a CUDA LibTorch with NCCL's headers (README)"
                                   : "install libgloo-dev and rebuild (scripts/bootstrap.sh)");
    if (b == "nccl" && device != DeviceKind::Cuda)
      throw InputError("LMX_DIST_BACKEND=nccl needs train.device cuda (NCCL reduces GPU tensors only)",
                       "use --device cuda, or LMX_DIST_BACKEND=gloo");
    return b;
  }
  if (device == DeviceKind::Cuda && has("nccl") && (gpu_per_rank || !has("gloo"))) return "nccl";
  if (has("gloo")) return "gloo";
  if (has("nccl"))
    throw InputError("this lmx was built without Gloo, so it trains data-parallel on CUDA only (NCCL)",
                     "use --device cuda, or install libgloo-dev and rebuild (scripts/bootstrap.sh)");
  throw InputError("this lmx was built without Gloo or NCCL (LMX_WITH_GLOO=OFF), so it cannot train data-parallel",
                   "install libgloo-dev and rebuild (scripts/bootstrap.sh), or run one process");
}

#if LMX_WITH_C10D

namespace {

// TCPStoreOptions::useLibUV (LibTorch >= 2.3, on by default since 2.4) picks the libuv store
// server, which a LibTorch built without libuv (Debian's) refuses; the classic server is in every
// build and plenty for lmx's world sizes. USE_LIBUV=1 asks for libuv (as in PyTorch).
template <class Options>
auto set_libuv(Options& o, bool on, int) -> decltype(o.useLibUV = on, void()) {
  o.useLibUV = on;
}
template <class Options>
void set_libuv(Options&, bool, long) {}

// The base class of c10d's process groups: ProcessGroup in LibTorch 1.x, Backend from 2.0.
#if LMX_WITH_GLOO
using AnyGroup = c10d::ProcessGroupGloo;
#else
using AnyGroup = c10d::ProcessGroupNCCL;
#endif
using Collectives =
    std::conditional_t<std::is_base_of_v<c10d::Backend, AnyGroup>, c10d::Backend, c10d::ProcessGroup>;

#if LMX_WITH_GLOO
c10::intrusive_ptr<Collectives> connect_gloo(const c10::intrusive_ptr<c10d::Store>& store, const Env& env,
                                             std::chrono::milliseconds timeout) {
  auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  if (ifname && *ifname) {
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
  } else if (env.master_addr == "localhost" || env.master_addr.rfind("127.", 0) == 0) {
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  } else {
    opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  opts->threads = 2;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.world, opts);
}
#endif

#if LMX_WITH_NCCL
c10::intrusive_ptr<c10d::ProcessGroupNCCL> connect_nccl(const c10::intrusive_ptr<c10d::Store>& store, const Env& env,
                                                        std::chrono::milliseconds timeout) {
  // Blocking wait: a collective that outlives the timeout throws in wait() (our one-line error)
  // instead of the watchdog aborting the process. The launcher's own setting wins.
  setenv("TORCH_NCCL_BLOCKING_WAIT", "1", 0);
  setenv("NCCL_BLOCKING_WAIT", "1", 0);  // its name before LibTorch 2.2
  auto opts = c10d::ProcessGroupNCCL::Options::create();
  opts->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, env.rank, env.world, opts);
}

// ProcessGroupNCCL::shutdown() (LibTorch >= 2.2): the clean end of its communicators, without
// which its destructor warns (and in some releases waits on the watchdog).
template <class PG>
auto shutdown_nccl(PG& pg, int) -> decltype(pg.shutdown(), void()) {
  pg.shutdown();
}
template <class PG>
void shutdown_nccl(PG&, long) {}
#endif

}  // namespace

struct Group::Impl {
  int rank = 0, world = 1, local_rank = 0;
  std::chrono::milliseconds timeout{0};
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<Collectives> pg;
#if LMX_WITH_NCCL
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;  // pg, when the backend is NCCL
#endif
  double collective_seconds = 0;
  int64_t collectives = 0;
};

Group::Group() : impl_(std::make_unique<Impl>()) {}
Group::~Group() {
#if LMX_WITH_NCCL
  if (impl_->nccl) shutdown_nccl(*impl_->nccl, 0);
#endif
}
int Group::rank() const { return impl_->rank; }
int Group::world() const { return impl_->world; }
int Group::local_rank() const { return impl_->local_rank; }
double Group::collective_seconds() const { return impl_->collective_seconds; }
int64_t Group::collectives() const { return impl_->collectives; }

void Group::fail(const std::string& what, const std::exception& e) const {
  throw RuntimeError(
      fmt::format("rank {} of {}: {} failed: {}: another worker died or hung (LMX_DIST_TIMEOUT={}s)", impl_->rank,
                  impl_->world, what, error_text(e), impl_->timeout.count() / 1000.0),
      "see the first failing rank's error; the unfinished seed has no final checkpoint or result");
}

std::unique_ptr<Group> Group::connect(const Env& env, std::chrono::milliseconds timeout, const std::string& backend) {
  std::unique_ptr<Group> g(new Group());
  g->impl_->rank = env.rank;
  g->impl_->world = env.world;
  g->impl_->local_rank = env.local_rank;
  g->impl_->timeout = timeout;
  const std::string where = fmt::format("{}:{}", env.master_addr, env.master_port);
  try {
    c10d::TCPStoreOptions so;
    so.port = static_cast<uint16_t>(env.master_port);
    so.isServer = env.rank == 0 && !env.agent_store;
    so.numWorkers = env.agent_store ? c10::nullopt : c10::optional<std::size_t>(env.world);
    so.waitWorkers = !env.agent_store;
    so.timeout = timeout;
    const char* libuv = std::getenv("USE_LIBUV");
    set_libuv(so, libuv && std::string(libuv) == "1", 0);
    auto tcp = c10::make_intrusive<c10d::TCPStore>(env.master_addr, so);
    g->impl_->store = c10::make_intrusive<c10d::PrefixStore>(env.store_prefix, tcp);
  } catch (const std::exception& e) {
    throw RuntimeError(fmt::format("rank {} of {}: rendezvous at MASTER_ADDR:MASTER_PORT = {} failed: {}", env.rank,
                                   env.world, where, error_text(e)),
                       env.rank == 0 ? "is the port free? every rank must start within LMX_DIST_TIMEOUT"
                                     : "is rank 0 running and MASTER_ADDR reachable from this host?");
  }
  try {
#if LMX_WITH_NCCL
    if (backend == "nccl") g->impl_->pg = g->impl_->nccl = connect_nccl(g->impl_->store, env, timeout);
#endif
#if LMX_WITH_GLOO
    if (backend == "gloo") g->impl_->pg = connect_gloo(g->impl_->store, env, timeout);
#endif
    if (!g->impl_->pg) throw std::runtime_error("backend '" + backend + "' is not built in");
  } catch (const std::exception& e) {
    throw RuntimeError(fmt::format("rank {} of {}: connecting the {} process group via {} failed: {}", env.rank,
                                   env.world, backend, where, error_text(e)),
                       backend == "gloo" ? "set GLOO_SOCKET_IFNAME to the network interface the hosts share"
                                         : "NCCL_DEBUG=INFO shows why; LMX_DIST_BACKEND=gloo avoids NCCL");
  }
  return g;
}
void Group::allreduce_sum(const std::vector<torch::Tensor>& tensors, const std::string& what, int64_t bucket_bytes) {
  // Buckets of same-dtype tensors, in order.
  std::vector<std::vector<torch::Tensor>> buckets;
  int64_t bytes = 0;
  for (const auto& t : tensors) {
    if (!t.defined()) continue;
    const int64_t b = t.numel() * static_cast<int64_t>(t.element_size());
    if (buckets.empty() || bytes + b > bucket_bytes || buckets.back().front().scalar_type() != t.scalar_type()) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().push_back(t);
    bytes += b;
  }
  std::vector<torch::Tensor> flat;
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    for (auto& bucket : buckets) {
      std::vector<torch::Tensor> views;
      for (auto& t : bucket) views.push_back(t.reshape(-1));
      flat.push_back(torch::cat(views));
      std::vector<torch::Tensor> one{flat.back()};
      works.push_back(impl_->pg->allreduce(one));
    }
    for (auto& w : works) w->wait();
  } catch (const std::exception& e) {
    fail(what, e);
  }
  impl_->collective_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++impl_->collectives;
  torch::NoGradGuard no_grad;
  for (size_t k = 0; k < buckets.size(); ++k) {
    int64_t offset = 0;
    for (auto& t : buckets[k]) {
      t.copy_(flat[k].narrow(0, offset, t.numel()).view_as(t));
      offset += t.numel();
    }
  }
}

void Group::broadcast(const std::vector<torch::Tensor>& tensors, const std::string& what) {
  try {
    for (const auto& t : tensors) {
      if (!t.defined()) continue;
      torch::NoGradGuard no_grad;
      auto c = t.detach().contiguous();
      std::vector<torch::Tensor> one{c};
      impl_->pg->broadcast(one)->wait();
      if (c.data_ptr() != t.data_ptr()) t.detach().copy_(c);
    }
  } catch (const std::exception& e) {
    fail(what, e);
  }
}

std::string Group::broadcast_string(const std::string& key, const std::string& value) {
  try {
    if (impl_->rank == 0) {
      impl_->store->set(key, std::vector<uint8_t>(value.begin(), value.end()));
      return value;
    }
    auto v = impl_->store->get(key);  // waits up to the store's timeout
    return std::string(v.begin(), v.end());
  } catch (const std::exception& e) {
    fail(fmt::format("receiving '{}' from rank 0", key), e);
  }
}

#else  // !LMX_WITH_C10D

struct Group::Impl {
  int rank = 0, world = 1, local_rank = 0;
};

Group::Group() : impl_(std::make_unique<Impl>()) {}
Group::~Group() = default;
int Group::rank() const { return impl_->rank; }
int Group::world() const { return impl_->world; }
int Group::local_rank() const { return impl_->local_rank; }
double Group::collective_seconds() const { return 0; }
int64_t Group::collectives() const { return 0; }

void Group::fail(const std::string& what, const std::exception& e) const {
  throw RuntimeError(fmt::format("rank {} of {}: {} failed: {}", impl_->rank, impl_->world, what, error_text(e)));
}

// Unreachable: choose_backend refuses first, and no Group exists without a backend.
std::unique_ptr<Group> Group::connect(const Env& env, std::chrono::milliseconds, const std::string& backend) {
  throw RuntimeError(fmt::format("rank {} of {}: backend '{}' is not built in", env.rank, env.world, backend));
}
void Group::allreduce_sum(const std::vector<torch::Tensor>&, const std::string& what, int64_t) {
  fail(what, std::runtime_error("no backend"));
}
void Group::broadcast(const std::vector<torch::Tensor>&, const std::string& what) {
  fail(what, std::runtime_error("no backend"));
}
std::string Group::broadcast_string(const std::string& key, const std::string&) {
  fail(key, std::runtime_error("no backend"));
}

#endif  // LMX_WITH_C10D

Group* current() { return current_ptr().get(); }

Group* init_from_env(DeviceKind device) {
  if (current()) return current();
  const Env env = read_env();
  if (env.world <= 1) return nullptr;
  torch_runtime::check_device(device);  // before any rank waits for the others
  // NCCL cannot put two ranks on one GPU: more workers on this node than GPUs take Gloo.
  const bool gpu_per_rank =
      device != DeviceKind::Cuda || runtime::local_world_size() <= static_cast<int>(torch::cuda::device_count());
  const std::string backend = choose_backend(device, lmx::env::get("LMX_DIST_BACKEND"), gpu_per_rank);
  const auto timeout = timeout_from_env();
  log::info("dist", "rank {} of {} (local rank {}, {}, {}): rendezvous at {}:{}", env.rank, env.world, env.local_rank,
            env.launcher == "slurm" ? "srun" : "RANK/WORLD_SIZE", backend, env.master_addr, env.master_port);
  current_ptr() = Group::connect(env, timeout, backend);
  return current();
}

void shutdown() { current_ptr().reset(); }

void fault_point() {
  static int64_t calls = 0;
  const int64_t step = calls++;
  const faults::Plan fault = faults::plan();
  if (fault.worker_mode.empty() || fault.worker_rank != rank() || fault.worker_call != step) return;
  if (fault.worker_mode == "die") {
    fmt::print(stderr, "lmx: LMX_FAULT: rank {} exits at step {}\n", fault.worker_rank, fault.worker_call);
    _exit(9);
  }
  if (fault.worker_mode == "int") {
    fmt::print(stderr, "lmx: LMX_FAULT: rank {} is interrupted at step {}\n", fault.worker_rank, fault.worker_call);
    signals::raise_interrupt();
  }
  if (fault.worker_mode == "hang") {
    fmt::print(stderr, "lmx: LMX_FAULT: rank {} hangs at step {}\n", fault.worker_rank, fault.worker_call);
    raise(SIGSTOP);
  }
}

}  // namespace lmx::dist
