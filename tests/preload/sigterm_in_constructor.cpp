// A library constructor that sends its process SIGTERM: loaded with LD_PRELOAD into lmx, it
// runs after lmx's .preinit_array and before main(), as LibTorch's constructors do
// (test_train_signals: such an early signal still exits 130).
#include <signal.h>
#include <unistd.h>

__attribute__((constructor)) static void sigterm_now() { kill(getpid(), SIGTERM); }
