#include "out_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include <rdzvscope/recorder_core.h>

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

namespace {

// "traces/%j/%h" -> {"traces", "%j/%h"}: the directories that exist for every process, and
// the placeholder part each process expands for itself.
std::pair<std::string, std::string> split_at_placeholder(const std::string& dir) {
  const std::size_t pct = dir.find('%');
  if (pct == std::string::npos) return {dir, ""};
  const std::size_t slash = dir.rfind('/', pct);
  if (slash == std::string::npos) return {".", dir};
  return {slash == 0 ? "/" : dir.substr(0, slash), dir.substr(slash + 1)};
}

Result<std::string> prepare_plain_dir(const std::string& dir) {
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

}  // namespace

Result<std::string> prepare_out_dir(const std::string& dir) {
  const auto [base, placeholders] = split_at_placeholder(dir);
  auto prepared = prepare_plain_dir(base);
  if (!prepared || placeholders.empty()) return prepared;
  return (prepared.value() == "/" ? "" : prepared.value()) + "/" + placeholders;
}

std::string expand_out_dir(const std::string& pattern) {
  if (pattern.find('%') == std::string::npos) return pattern;
  char host[256];
  rdzv_file_host(host, sizeof host);
  std::string out(pattern.size() + 4096, '\0');
  if (rdzv_trace_dir_expand(out.data(), out.size(), pattern.c_str(), rdzv_env_self, nullptr, host,
                            std::time(nullptr)) != 0)
    return pattern;
  out.resize(std::strlen(out.c_str()));
  return out;
}

std::string job_trace_root(const std::string& pattern) {
  const std::size_t host_at = pattern.find("%h");
  if (host_at == std::string::npos) return expand_out_dir(pattern);
  const std::size_t cut = pattern.rfind('/', host_at);
  if (cut == std::string::npos) return ".";
  return expand_out_dir(cut == 0 ? "/" : pattern.substr(0, cut));
}

}  // namespace rdzvscope::cli
