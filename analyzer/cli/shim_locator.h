// Where `rdzvscope run` looks for the shim, in order: --shim, $RDZVSCOPE_SHIM, then beside
// the rdzvscope executable. The build tree mirrors the install tree (bin/ next to
// ${CMAKE_INSTALL_LIBDIR}/), so the same relative rule finds the shim in both.
#pragma once

#include <string>
#include <vector>

#include "reader/error.h"

namespace rdzvscope::cli {

inline constexpr const char* kShimName = "librdzvscope.so";

// The places to look when neither --shim nor $RDZVSCOPE_SHIM is given: exe_dir/../lib/ and
// exe_dir/../<libdir>/ (libdir as an absolute path when it is one), without duplicates.
std::vector<std::string> shim_candidates(const std::string& exe_dir, const std::string& libdir);

// explicit_path: --shim, else $RDZVSCOPE_SHIM, else "". Returns the absolute path of the
// first readable regular file; the error names every place looked at.
Result<std::string> find_shim(const std::string& explicit_path, const std::string& exe_dir,
                              const std::string& libdir);

}  // namespace rdzvscope::cli
