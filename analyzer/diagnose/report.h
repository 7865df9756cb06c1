// The two forms of a diagnosis: JSON (schema rdzvscope.diagnosis/1, stable for scripts) and
// the text report (verdict and next step first, then the time line that proves it).
#pragma once

#include <string>

#include "diagnosis.h"

namespace rdzvscope {

nlohmann::ordered_json diagnosis_json(const Diagnosis& d);
std::string diagnosis_text(const Diagnosis& d);

}  // namespace rdzvscope
