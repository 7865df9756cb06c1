// A verdict never contradicts its own facts (issue 32): checked on every diagnosis, from the
// typed evidence and the rank table only, never from the words. The CLI reports what it finds
// on stderr; with RDZVSCOPE_STRICT=1 (every test of the suite sets it) it fails instead, so
// every verdict the suite produces is checked.
#pragma once

#include <string>
#include <vector>

#include "model/diagnosis.h"

namespace rdzvscope {

// One line per contradiction; empty when the verdict agrees with its facts.
std::vector<std::string> contradictions(const Diagnosis& d);

}  // namespace rdzvscope
