// Job slots shared by several processes: a named pipe holding one byte per free slot, in the
// manner of GNU make's jobserver (not its protocol: no implicit token, no MAKEFLAGS). With
// LMX_JOBSERVER=PATH set, lmx sweep and lmx ablate take a byte before starting each run and
// put it back when the run ends, so that independent sweeps started together (the lecture's
// sections, scripts/lecture/all.sh) never run more than the pipe's slots at once and never
// leave a slot idle while any of them has a run waiting.
#pragma once
#include <optional>
#include <string>

namespace lmx {

class Jobserver {
 public:
  // The pipe named by LMX_JOBSERVER; nullopt when it is unset or empty. InputError when it
  // names no named pipe.
  static std::optional<Jobserver> from_env();
  explicit Jobserver(const std::string& path);
  Jobserver(Jobserver&& other) noexcept;
  Jobserver(const Jobserver&) = delete;
  Jobserver& operator=(const Jobserver&) = delete;
  Jobserver& operator=(Jobserver&&) = delete;
  ~Jobserver();  // gives back every slot still held

  bool try_acquire();           // takes a free slot if there is one now
  void wait(int timeout_ms);    // until a slot may be free (or timeout_ms; -1: no limit; an interrupt ends it)
  void release();               // gives one held slot back
  int held() const { return held_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  int held_ = 0;
};

}  // namespace lmx
