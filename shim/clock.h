#pragma once

#include <stdint.h>
#include <time.h>

#include "rdzvscope/recorder_core.h"

namespace rdzv {

inline uint64_t clock_ns(clockid_t id) { return rdzv_clock_ns(id); }

// Record timestamps: CLOCK_MONOTONIC, put on the wall clock through the header's clock pair.
inline uint64_t mono_ns() { return clock_ns(CLOCK_MONOTONIC); }

}  // namespace rdzv
