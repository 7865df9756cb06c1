// Files the commands write beside their report (--timeline, --html, --prom).
#pragma once

#include <string>

#include "reader/error.h"

namespace rdzvscope::cli {

// Writes `text` to `path` whole: into a temporary file in the same directory, then renamed
// over `path`, so that a reader (a metrics scrape, a browser reload) never sees half a file.
// Returns the error (naming the file) when it cannot.
std::optional<Error> write_file_atomically(const std::string& path, const std::string& text);

}  // namespace rdzvscope::cli
