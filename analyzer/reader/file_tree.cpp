#include "file_tree.h"

#include <dirent.h>

#include <algorithm>
#include <memory>

namespace rdzvscope {

namespace {

void walk(const std::string& dir, int depth, const std::function<bool(const std::string&, unsigned char)>& wanted,
          std::vector<std::string>& out) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
  if (!d) return;
  std::vector<std::string> files, subdirs;
  while (const dirent* e = ::readdir(d.get())) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    // A wanted name is a file to the caller whatever it is (a directory named x.rzt is a bad
    // trace, reported as such), else a directory is walked.
    if (wanted(name, e->d_type)) files.push_back(name);
    else if (e->d_type == DT_DIR && depth < kMaxFileTreeDepth) subdirs.push_back(name);
  }
  std::sort(files.begin(), files.end());
  std::sort(subdirs.begin(), subdirs.end());
  const std::string prefix = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  for (const auto& f : files) out.push_back(prefix + f);
  for (const auto& sub : subdirs) walk(prefix + sub, depth + 1, wanted, out);
}

}  // namespace

void files_below(const std::string& dir, const std::function<bool(const std::string&, unsigned char)>& wanted,
                 std::vector<std::string>& out) {
  walk(dir, 0, wanted, out);
}

}  // namespace rdzvscope
