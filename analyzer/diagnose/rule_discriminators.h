// For now the rules still write their discriminators as JSON (Candidate::discriminators in
// context.h); diagnose() types them here, once, as it adopts the winning candidate: integers,
// seconds (a float), text, null, rank lists (integer arrays), name lists (string arrays) and
// config_mismatch's mismatched_settings. Goes away when each rule sets typed values itself
// (Discriminators::set), which needs context.h and every rule_*.cpp changed together.
#pragma once

#include <nlohmann/json.hpp>

#include "diagnosis.h"

namespace rdzvscope {

Discriminators discriminators_of_rule(const nlohmann::ordered_json& rule_json);

}  // namespace rdzvscope
