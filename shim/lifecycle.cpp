// Load and unload of the library, and the fork child's reset.
#include <errno.h>
#include <pthread.h>

#include "env_inject.h"
#include "fd_table.h"
#include "guard.h"
#include "hook.h"
#include "inject.h"
#include "trace_writer.h"

namespace rdzv {
void record_exit_at_unload();
}

using namespace rdzv;

namespace {

void child_after_fork() {
  writer_forget_after_fork();
  fd_table_reset_counters();
}

__attribute__((constructor)) void rdzvscope_load() {
  RecordScope scope;
  writer_configure();
  inject_init();  // first: a bad spec is dropped from the environment before it is carried
  env_inject_init();
  writer_open_if_rank();
  pthread_atfork(nullptr, nullptr, child_after_fork);
}

__attribute__((destructor)) void rdzvscope_unload() {
  RecordScope scope;
  record_exit_at_unload();
}

}  // namespace
