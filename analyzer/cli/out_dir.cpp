#include "out_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace rdzvscope::cli {

std::string default_out_dir(const char* slurm_job_id, std::time_t now) {
  if (slurm_job_id != nullptr && *slurm_job_id != '\0') {
    return std::string("rdzvscope-") + slurm_job_id;
  }
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "rdzvscope-%Y%m%d-%H%M%S", &tm);
  return buf;
}

Result<std::string> prepare_out_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path abs = fs::absolute(dir, ec).lexically_normal();
  if (ec) return Error{dir, ec.message(), std::nullopt};

  // mkdir -p by hand, so that every directory we create gets 0700 (not umask's default).
  fs::path partial;
  for (const auto& part : abs) {
    partial /= part;
    if (partial == partial.root_path()) continue;
    if (::mkdir(partial.c_str(), 0700) == 0) {
      // The umask may have taken bits away; the owner needs all three.
      ::chmod(partial.c_str(), 0700);
    } else if (errno != EEXIST) {
      return Error{partial.string(), std::string("cannot create directory: ") + std::strerror(errno),
                   std::nullopt};
    }
  }
  std::string out = abs.string();
  if (out.size() > 1 && out.back() == '/') out.pop_back();  // "x/" normalizes to "x/"
  struct stat st {};
  if (::stat(out.c_str(), &st) != 0) {
    return Error{out, std::strerror(errno), std::nullopt};
  }
  if (!S_ISDIR(st.st_mode)) return Error{out, "exists and is not a directory", std::nullopt};
  if (::access(out.c_str(), W_OK | X_OK) != 0) {
    return Error{out, "directory is not writable", std::nullopt};
  }
  return out;
}

}  // namespace rdzvscope::cli
