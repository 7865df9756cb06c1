#pragma once

#include <stdint.h>
#include <time.h>

namespace rdzv {

inline uint64_t clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Record timestamps: CLOCK_MONOTONIC, put on the wall clock through the header's clock pair.
inline uint64_t mono_ns() { return clock_ns(CLOCK_MONOTONIC); }

}  // namespace rdzv
