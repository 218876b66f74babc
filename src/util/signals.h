// SIGINT / SIGTERM: the first asks the running job to stop at the next step boundary (it
// then checkpoints and writes its results); a second one exits at once with code 130.
// Child processes registered with add_child (sweep runs, in their own process group so a
// terminal's Ctrl-C reaches only the parent) get every signal forwarded.
#pragma once

namespace lmx::signals {

void install();        // idempotent
// Until install(): SIGINT and SIGTERM end the process at once with exit code 130 (nothing is
// being written that an atomic write would not protect), so both read the same to a caller.
void install_early();
bool interrupted();    // a first signal has arrived
void reset();          // for tests
void raise_interrupt();  // fault injection: as if a first signal had arrived (no message)

void add_child(int pid);     // forward SIGINT / SIGTERM to this process
void remove_child(int pid);

}  // namespace lmx::signals
