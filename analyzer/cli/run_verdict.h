// `rdzvscope run --verdict`: once the command has failed or was cancelled, the verdict on
// stderr, at the end of the job's own output, where the user looks first.
#pragma once

#include <string>

#include "supervise.h"

namespace rdzvscope::cli {

// Analyzes the traces the command left in dir and writes the verdict on stderr, headed by
// how the command ended. Returns true when the verdict contradicted its own facts under
// RDZVSCOPE_STRICT=1 (verdict_check.h): the run must then fail.
bool print_run_verdict(const std::string& dir, const ChildEnd& end);

}  // namespace rdzvscope::cli
