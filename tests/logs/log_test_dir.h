// A scratch directory for the log reader's tests (the unit tests' TempDir) that also writes
// files into it, making the directories on the way.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <string>

#include "temp_dir.h"

namespace rdzv::logs::test {

struct LogDir : rdzvscope::test::TempDir {
  // Writes content (bytes as given) to DIR/name; returns the file's path.
  std::string write(const std::string& name, const std::string& content) const {
    const std::string f = file(name);
    const std::string mk = "mkdir -p '" + f.substr(0, f.rfind('/')) + "'";
    REQUIRE(std::system(mk.c_str()) == 0);
    std::ofstream out(f, std::ios::binary);
    out << content;
    return f;
  }
};

}  // namespace rdzv::logs::test
