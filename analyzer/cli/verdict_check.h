// A verdict that contradicts its own facts (rules/consistency.h) is a bug of rdzvscope's: said
// on stderr by whichever command made it (analyze, run --verdict), and under
// RDZVSCOPE_STRICT=1 (every test of the suite runs with it) the command fails with
// kExitContradiction, after its report.
#pragma once

#include <string>

#include "model/diagnosis.h"

namespace rdzvscope::cli {

// Warns of each contradiction as `rdzvscope COMMAND: ...`; true when that must fail the run.
bool contradicts_itself(const Diagnosis& d, const std::string& command);

}  // namespace rdzvscope::cli
