#include "run_inputs.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <system_error>

#include "model/launcher_options.h"

namespace rdzvscope {

namespace fs = std::filesystem;

namespace {

constexpr int kMaxDepth = 8;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void walk(const fs::path& dir, int depth, const std::string& suffix, std::vector<std::string>& out) {
  std::error_code ec;
  fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const fs::directory_entry& e = *it;
    std::error_code ec2;
    const std::string name = e.path().filename().string();
    if (e.is_symlink(ec2)) {
      // A link to a file counts (traces copied by links); a link to a directory is not
      // followed (it could loop).
      if (ends_with(name, suffix) && fs::is_regular_file(e.path(), ec2)) out.push_back(e.path().string());
      continue;
    }
    if (e.is_directory(ec2)) {
      if (depth < kMaxDepth) walk(e.path(), depth + 1, suffix, out);
    } else if (ends_with(name, suffix) && e.is_regular_file(ec2)) {
      out.push_back(e.path().string());
    }
  }
}

bool is_dir(const std::string& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// The directory of runs case: no trace or log at the top, two or more subdirectories with traces.
std::optional<std::vector<std::string>> subdirectory_runs(const std::string& path) {
  std::vector<std::string> subdirs;
  std::error_code ec;
  fs::directory_iterator it(path, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code ec2;
    const std::string name = it->path().filename().string();
    if (!it->is_symlink(ec2) && it->is_directory(ec2)) subdirs.push_back(it->path().string());
    else if (ends_with(name, RDZV_FILE_SUFFIX) || ends_with(name, ".log")) return std::nullopt;
  }
  std::size_t with_traces = 0;
  for (const auto& d : subdirs) with_traces += !files_below(d, RDZV_FILE_SUFFIX).empty();
  if (with_traces < 2) return std::nullopt;
  std::sort(subdirs.begin(), subdirs.end());
  return subdirs;
}

std::string dir_name(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  std::string name = fs::path(p).filename().string();
  return name.empty() || name == "." || name == ".." ? p : name;
}

// Ids carried by the processes: TORCHELASTIC_RUN_ID / SLURM_JOB_ID (job_key); torchrun agents
// are not given TORCHELASTIC_RUN_ID (only their workers are), so theirs is the --rdzv-id of
// their command line.
std::map<std::string, int> ids_carried(const TraceInputs& traces) {
  std::map<std::string, int> count;
  for (const Process& p : traces.processes) {
    std::string id = p.job_key;
    if (id.empty() && p.role == Role::Agent) {
      const auto options = torchrun_options(p.header.cmdline);
      if (auto it = options.find("rdzv-id"); it != options.end()) id = it->second;
    }
    if (!id.empty() && id != "none") ++count[id];
  }
  return count;
}

}  // namespace

std::vector<std::string> files_below(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  walk(dir, 0, suffix, out);
  std::sort(out.begin(), out.end());
  return out;
}

RunDirs find_runs(const std::vector<std::string>& paths) {
  RunDirs out;
  std::vector<std::string> dirs = paths;
  if (paths.size() == 1 && is_dir(paths[0]))
    if (auto subs = subdirectory_runs(paths[0])) dirs = *subs;
  for (const auto& d : dirs) {
    if (!is_dir(d)) {
      out.errors.push_back(Error{d, "not a directory (with --runs, every path is one run's directory)", std::nullopt});
      continue;
    }
    RunDir run{d, files_below(d, RDZV_FILE_SUFFIX), files_below(d, ".log")};
    if (run.traces.empty() && run.logs.empty()) {
      out.errors.push_back(Error{d, std::string("no *") + RDZV_FILE_SUFFIX + " trace file and no *.log below this run directory: run left out", std::nullopt});
      continue;
    }
    out.runs.push_back(std::move(run));
  }
  return out;
}

std::string run_id(const TraceInputs& traces, const std::string& path) {
  const std::map<std::string, int> count = ids_carried(traces);
  std::string best;
  int most = 0;
  for (const auto& [key, n] : count)
    if (n > most) best = key, most = n;
  return best.empty() ? dir_name(path) : best;
}

void disambiguate_ids(std::vector<std::string>& ids, const std::vector<std::string>& paths) {
  std::map<std::string, int> count;
  for (const auto& id : ids) ++count[id];
  for (std::size_t i = 0; i < ids.size() && i < paths.size(); ++i)
    if (count[ids[i]] > 1 && ids[i] != dir_name(paths[i])) ids[i] += " (" + dir_name(paths[i]) + ")";
}

}  // namespace rdzvscope
