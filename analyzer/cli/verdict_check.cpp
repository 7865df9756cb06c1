#include "verdict_check.h"

#include <cstdlib>
#include <string_view>
#include <vector>

#include "diagnostics.h"
#include "rules/consistency.h"

namespace rdzvscope::cli {

bool contradicts_itself(const Diagnosis& d, const std::string& command) {
  const std::vector<std::string> found = contradictions(d);
  for (const std::string& c : found)
    log_for(command)->warn("this verdict contradicts its own facts (please report it): {}", c);
  const char* strict = std::getenv("RDZVSCOPE_STRICT");
  return !found.empty() && strict && std::string_view(strict) == "1";
}

}  // namespace rdzvscope::cli
