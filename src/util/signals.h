// SIGINT / SIGTERM: the first asks the running job to stop at the next step boundary (it
// then checkpoints and writes its results); a second one exits at once with code 130.
#pragma once

namespace lmx::signals {

void install();        // idempotent
bool interrupted();    // a first signal has arrived
void reset();          // for tests

}  // namespace lmx::signals
