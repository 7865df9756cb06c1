// A fresh directory under $TMPDIR (or /tmp) for one test, removed with everything in it
// when the test ends, so that tests can run in parallel and leave nothing behind.
#pragma once

#include <string>

namespace rdzvscope::test {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace rdzvscope::test
