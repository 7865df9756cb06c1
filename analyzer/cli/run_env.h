// The environment `rdzvscope run` hands to the traced command. Pure functions, kept apart
// from cmd_run.cpp so that unit tests can check them without exec'ing anything.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "reader/error.h"

namespace rdzvscope::cli {

// "29500,29400" -> the ports; each must be an integer in 1..65535. Duplicates are kept out.
Result<std::vector<std::uint16_t>> parse_ports(std::string_view text);
std::string join_ports(const std::vector<std::uint16_t>& ports);

// The --inject values (each FAULT[:rank=R][:DURATION]...) -> RDZVSCOPE_INJECT, checked with the
// shim's own parser (shim/inject_spec.h), so that a spec the shim would refuse is a usage
// error here rather than a rehearsal that silently injects nothing.
Result<std::string> inject_env(const std::vector<std::string>& faults);

// LD_PRELOAD with the shim first, so its hooks win over any other preloaded library, then
// the entries already there. An entry that is a librdzvscope.so (this one or another copy)
// is dropped: two shims in one process would record every event twice into one file.
std::string merge_ld_preload(const std::string& shim_abs, const char* existing);

}  // namespace rdzvscope::cli
