#include "shim_locator.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

namespace rdzvscope::cli {
namespace {

bool usable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), R_OK) == 0;
}

std::string absolute(const std::string& path) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

}  // namespace

std::vector<std::string> shim_candidates(const std::string& exe_dir, const std::string& libdir) {
  std::vector<std::string> out;
  const std::filesystem::path dir(exe_dir);
  out.push_back((dir / ".." / "lib" / kShimName).lexically_normal().string());
  const std::filesystem::path lib(libdir);
  const auto other = lib.is_absolute() ? (lib / kShimName).lexically_normal()
                                       : (dir / ".." / lib / kShimName).lexically_normal();
  if (std::find(out.begin(), out.end(), other.string()) == out.end()) out.push_back(other.string());
  return out;
}

Result<std::string> find_shim(const std::string& explicit_path, const std::string& exe_dir,
                              const std::string& libdir) {
  // A path the user named is the only one tried: silently using another shim than the
  // one asked for would trace with the wrong build.
  std::vector<std::string> tried =
      explicit_path.empty() ? shim_candidates(exe_dir, libdir)
                            : std::vector<std::string>{absolute(explicit_path)};
  for (const auto& path : tried) {
    if (usable(path)) return path;
  }
  std::string list;
  for (const auto& path : tried) list += (list.empty() ? "" : ", ") + path;
  return Error{"", "cannot find the shim " + std::string(kShimName) + " (looked at: " + list +
                       "); pass --shim PATH or set RDZVSCOPE_SHIM",
               std::nullopt};
}

}  // namespace rdzvscope::cli
