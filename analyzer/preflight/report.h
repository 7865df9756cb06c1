// A preflight report as text (for a person at a terminal or in a job log) and as JSON
// (schema rdzvscope.preflight/1: for scripts, and the file --out writes).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "preflight/preflight.h"

namespace rdzvscope::preflight {

nlohmann::json report_json(const Report& r);
std::string report_text(const Report& r);

// "preflight.<host>.json", the host name made safe for a file name.
std::string report_file_name(const std::string& host);

// `prefix` (kept as it is: the aligned columns), then `text`'s words wrapped at `width`
// columns, continuation lines indented to the prefix's width.
std::string wrap(const std::string& prefix, const std::string& text, std::size_t width);

}  // namespace rdzvscope::preflight
