// SIGINT / SIGTERM: the first asks the running job to stop at the next step boundary (it
// then checkpoints and writes its results); a second one exits at once with code 130.
// Child processes registered with add_child (sweep runs, in their own process group so a
// terminal's Ctrl-C reaches only the parent) get every signal forwarded.
#pragma once

namespace lmx::signals {

void install();        // idempotent
bool interrupted();    // a first signal has arrived
void reset();          // for tests
void raise_interrupt();  // fault injection: as if a first signal had arrived (no message)

void add_child(int pid);     // forward SIGINT / SIGTERM to this process
void remove_child(int pid);

}  // namespace lmx::signals
