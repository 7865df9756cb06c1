#include "real_calls.h"

#include <dlfcn.h>

#include "guard.h"

namespace rdzv {

__thread int t_guard_depth __attribute__((tls_model("initial-exec")));

namespace real {

// A symbol missing from libc (close_range on an old glibc, say) resolves to null; the hook
// then fails with ENOSYS exactly as a libc without it would have made the program fail to
// link, which is the closest honest answer.
void* resolve(const char* name) {
  Guard guard;
  return dlsym(RTLD_NEXT, name);
}

}  // namespace real
}  // namespace rdzv
