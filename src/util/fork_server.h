// A fork server: one lmx process, started once, that starts each of a sweep's runs by fork()
// instead of each run starting lmx afresh. An lmx process spends ~0.7 s before main() mapping
// and relocating the ~290 libraries Debian's LibTorch pulls in and running their static
// constructors (docs/PERFORMANCE.md, "Start-up"); a process forked from one that has done so,
// and nothing else, starts where main() would, at no such cost.
//
// The server is this executable, exec'd with LMX_FORK_SERVER_FD in its environment; main()
// hands over to serve_if_asked before anything else (no signal thread, no log, no LibTorch
// call), so every run it forks starts from the state a fresh process has at main(). Each run is
// forked twice (the middle process exits at once) so that it is reparented to the client, which
// made itself the subreaper of its descendants: the run is then the client's child as a
// posix_spawn'ed one is (waitpid, its process group, signals forwarded), in its own process
// group, with its environment, stdout and stderr as the request says, and the signal mask empty.
// What a fresh exec would do differently: nothing reads the environment again before main()
// (libraries that read it in their constructors, e.g. OMP_NUM_THREADS, see the client's
// environment at the time the server started; lmx sets its thread counts itself).
//
// LMX_FORK_SERVER=0 turns it off (every run exec'd as before); a server that cannot start or
// stops answering is replaced by exec'ing each run, said once.
#pragma once

#include <string>
#include <vector>

namespace lmx::fork_server {

// First thing in main(): in a process started as a fork server, serves until its client closes
// the connection, then exits (never returns); in any other, returns at once. main_fn is what
// each forked run calls with its arguments, as main() would.
void serve_if_asked(int (*main_fn)(int, char**));

// LMX_FORK_SERVER: unset, empty or 1 (fork runs from a server) or 0 (exec each); another value
// is an InputError naming it.
bool wanted();

// The client's end: starts the server (exec_path, this process's environment) on first use;
// with LMX_FORK_SERVER=0, never (spawn returns -1, and the caller execs).
class Client {
 public:
  Client();
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Starts argv (argv[0] the name to show) with the environment env ("KEY=VALUE", the whole
  // environment), stdout and stderr to log_path (appended when append; empty: inherited), in
  // the directory cwd (empty: the one this process had when the server started; a relative
  // log_path is from there).
  // Returns the run's pid, a child of this process, or -1 when the server did not start it (the
  // caller then starts it itself); *why is set when the server is given up for good (it could
  // not start, or stopped answering: later calls return -1 at once), empty for one run's failure.
  int spawn(const std::string& exec_path, const std::vector<std::string>& argv, const std::vector<std::string>& env,
            const std::string& log_path, bool append, std::string* why, const std::string& cwd = "");

 private:
  bool start(const std::string& exec_path, std::string* why);
  void stop();
  int fd_ = -1;
  int pid_ = -1;
  bool failed_;  // off, or given up: spawn returns -1 at once
};

}  // namespace lmx::fork_server
