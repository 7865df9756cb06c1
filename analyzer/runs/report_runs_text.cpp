#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "model/context.h"
#include "report_runs.h"

namespace rdzvscope {

namespace {

std::string cut(const std::string& s, std::size_t n) { return s.size() > n ? s.substr(0, n - 3) + "..." : s; }

std::string initiating(const Verdict& v) {
  if (!v.initiating_rank && !v.initiating_host) return "-";
  std::string s = v.initiating_rank ? "rank " + std::to_string(*v.initiating_rank) : std::string("?");
  if (v.initiating_host) s += " (" + *v.initiating_host + ")";
  return s;
}

// Words wrapped at 80 columns, the lines after the first indented under the first word.
std::string wrap9(const std::string& text) {
  std::string out, line;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(pos, end - pos);
    if (!line.empty() && line.size() + 1 + word.size() > 80) {
      out += line + "\n         ";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    pos = end + 1;
  }
  return out + line;
}

// The preflight column: what rdzvscope preflight said before the run, when any run has it.
std::string preflight_cell(const RunResult& r) {
  if (r.preflight.empty()) return "-";
  return r.preflight_failed ? "FAILED" : "ok";
}

}  // namespace

std::string runs_text(const std::vector<RunResult>& runs, const RunComparison& c, const std::vector<Error>& skipped) {
  std::string s = "VERDICT  " + wrap9(c.pattern + ": " + c.summary) + "\n";
  s += "NEXT     " + wrap9(c.next_step) + "\n\n";
  const bool preflight = std::any_of(runs.begin(), runs.end(), [](const RunResult& r) { return !r.preflight.empty(); });
  constexpr const char* kRow = " {:<20} {:<26} {:<22} {:<14} {}\n";
  constexpr const char* kRowPreflight = " {:<20} {:<26} {:<22} {:<14} {:<12} {}\n";
  if (preflight) s += fmt::format(kRowPreflight, "run", "class", "initiating", "failed ranks", "failed after", "preflight");
  else s += fmt::format(kRow, "run", "class", "initiating", "failed ranks", "failed after");
  for (std::size_t i = 0; i < runs.size() && i < c.outcomes.size(); ++i) {
    const Verdict& v = runs[i].diagnosis.verdict;
    const RunOutcome& o = c.outcomes[i];
    const std::string cls = std::string(name_of(v.cls)) + (v.cause ? " (" + *v.cause + ")" : "");
    const std::string failed = o.failed_ranks.empty() ? "-" : rank_list(o.failed_ranks);
    std::string after = "-";
    if (o.seconds_to_failure) after = fmt_seconds(*o.seconds_to_failure);
    if (preflight)
      s += fmt::format(kRowPreflight, cut(runs[i].id, 20), cut(cls, 26), cut(initiating(v), 22), cut(failed, 14), after,
                       preflight_cell(runs[i]));
    else s += fmt::format(kRow, cut(runs[i].id, 20), cut(cls, 26), cut(initiating(v), 22), cut(failed, 14), after);
  }
  s += "\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    s += " " + runs[i].id + ": " + wrap9(runs[i].diagnosis.verdict.summary) + "\n";
    if (!runs[i].preflight.empty())
      s += "         " + wrap9(std::string(runs[i].preflight_failed ? "PREFLIGHT FAILED before the job: " : "preflight before the job: ") +
                             runs[i].preflight) + "\n";
  }
  s += "\nREAD     " + std::to_string(runs.size()) + " run(s)";
  if (!skipped.empty()) s += ", " + std::to_string(skipped.size()) + " left out";
  s += "\n";
  for (const Error& e : skipped) s += "         left out: " + e.message() + "\n";
  s += "         more: --format json (every run's full diagnosis), --format markdown\n";
  return s;
}

}  // namespace rdzvscope
