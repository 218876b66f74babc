// The launcher environment of a data-parallel run (dist.h: Env, read_env, slurm_first_host,
// timeout_from_env): plain parsing, no c10d.
#include "distributed/dist.h"

#include <fmt/format.h>

#include <cstdlib>

#include "util/env.h"
#include "util/error.h"

namespace lmx::dist {

namespace {

int parse_int(const GetEnv& getenv, const char* name, int lo, int hi) {
  const char* v = getenv(name);
  if (!v || !*v) throw InputError(fmt::format("{} is not set", name));
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < lo || n > hi)
    throw InputError(fmt::format("{}={}: expected an integer in [{}, {}]", name, v, lo, hi),
                     "set by torchrun, srun or lmx launch; unset it to train in one process");
  return static_cast<int>(n);
}

bool is_set(const GetEnv& getenv, const char* name) {
  const char* v = getenv(name);
  return v && *v;
}

}  // namespace

std::string slurm_first_host(const std::string& nodelist) {
  // The first entry ends at a comma outside brackets.
  std::string first;
  int depth = 0;
  for (char c : nodelist) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) break;
    first += c;
  }
  const auto open = first.find('[');
  if (open == std::string::npos) return first;
  std::string range = first.substr(open + 1);
  const auto cut = range.find_first_of(",]");
  range = range.substr(0, cut);
  const auto dash = range.find('-');
  return first.substr(0, open) + (dash == std::string::npos ? range : range.substr(0, dash));
}

Env read_env(const GetEnv& getenv) {
  Env env;
  const char* off = getenv("LMX_DIST");
  if (off && std::string(off) == "0") return env;
  if (is_set(getenv, "WORLD_SIZE") || is_set(getenv, "RANK")) {
    env.world = parse_int(getenv, "WORLD_SIZE", 1, 1 << 20);
    env.rank = parse_int(getenv, "RANK", 0, env.world - 1);
    env.local_rank = is_set(getenv, "LOCAL_RANK") ? parse_int(getenv, "LOCAL_RANK", 0, 1 << 20) : 0;
    env.launcher = "env";
    if (env.world > 1) {
      if (!is_set(getenv, "MASTER_ADDR"))
        throw InputError(fmt::format("rank {}: MASTER_ADDR is not set (WORLD_SIZE={})", env.rank, env.world),
                         "launch with torchrun --no_python, srun or lmx launch, which set it");
      env.master_addr = getenv("MASTER_ADDR");
      env.master_port = parse_int(getenv, "MASTER_PORT", 1, 65535);
    }
    const char* agent = getenv("TORCHELASTIC_USE_AGENT_STORE");
    env.agent_store = agent && std::string(agent) == "True";
    const char* restart = getenv("TORCHELASTIC_RESTART_COUNT");
    if (restart && *restart) env.store_prefix = fmt::format("lmx/{}", restart);
  } else if (is_set(getenv, "SLURM_STEP_NUM_TASKS") && is_set(getenv, "SLURM_PROCID")) {
    // srun sets SLURM_STEP_NUM_TASKS (the tasks of this step); a batch script or an salloc
    // shell, where SLURM_NTASKS is the whole allocation's, is one process.
    env.world = parse_int(getenv, "SLURM_STEP_NUM_TASKS", 1, 1 << 20);
    env.rank = parse_int(getenv, "SLURM_PROCID", 0, env.world - 1);
    env.local_rank = is_set(getenv, "SLURM_LOCALID") ? parse_int(getenv, "SLURM_LOCALID", 0, 1 << 20) : 0;
    env.launcher = "slurm";
    if (env.world > 1) {
      if (is_set(getenv, "MASTER_ADDR")) {
        env.master_addr = getenv("MASTER_ADDR");
      } else {
        const char* list = getenv("SLURM_JOB_NODELIST");
        if (!list || !*list) list = getenv("SLURM_NODELIST");
        if (!list || !*list)
          throw InputError(fmt::format("rank {}: neither MASTER_ADDR nor SLURM_JOB_NODELIST is set", env.rank),
                           "run under srun (or export MASTER_ADDR=<first host>)");
        env.master_addr = slurm_first_host(list);
      }
      if (is_set(getenv, "MASTER_PORT")) {
        env.master_port = parse_int(getenv, "MASTER_PORT", 1, 65535);
      } else if (is_set(getenv, "SLURM_JOB_ID")) {
        // One port per job, so that jobs sharing a node do not meet in one store.
        env.master_port = 20000 + static_cast<int>(std::strtoul(getenv("SLURM_JOB_ID"), nullptr, 10) % 20000);
      }
      if (is_set(getenv, "SLURM_JOB_ID")) env.store_prefix = fmt::format("lmx/{}", getenv("SLURM_JOB_ID"));
    }
  }
  return env;
}

Env read_env() {
  return read_env(lmx::env::any);
}

std::chrono::milliseconds timeout_from_env() {
  const char* v = lmx::env::get("LMX_DIST_TIMEOUT");
  if (!v || !*v) return std::chrono::seconds(120);
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  if (*end != '\0' || !(s > 0) || s > 86400)
    throw InputError(fmt::format("LMX_DIST_TIMEOUT={}: expected seconds in (0, 86400]", v));
  return std::chrono::milliseconds(static_cast<int64_t>(s * 1000));
}

}  // namespace lmx::dist
