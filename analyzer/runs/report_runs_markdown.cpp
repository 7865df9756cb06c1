// --format markdown with --runs: the section a ticket needs when the job was retried: did the
// failure reproduce, and where.
#include <algorithm>

#include "model/context.h"
#include "report/report.h"
#include "report_runs.h"

namespace rdzvscope {

namespace {

std::string reproduced(const RunComparison& c) {
  if (c.pattern == pattern::kSingleRun) return "unknown (one run given)";
  if (c.pattern == pattern::kAllHealthy) return "no failure in any run";
  if (c.pattern == pattern::kMixedClasses) return "no: the runs failed differently";
  if (c.pattern == pattern::kSameHost) return "yes, on the same host every time";
  if (c.pattern == pattern::kSameRank) return "yes, started by the same rank every time";
  if (c.pattern == pattern::kMoving) return "the class yes, the place no: it moved between ranks/hosts";
  return "yes, the same class (no initiating rank to compare)";
}

// A run whose preflight failed is marked in bold, with what failed.
std::string preflight_cell(const RunResult& r) {
  if (r.preflight.empty()) return "-";
  return r.preflight_failed ? "**failed**: " + md_inline(r.preflight) : "ok: " + md_inline(r.preflight);
}

}  // namespace

std::string runs_markdown(const std::vector<RunResult>& runs, const RunComparison& c,
                          const std::vector<Error>& skipped) {
  std::string s = "## Rendezvous failure across " + std::to_string(runs.size()) + " run(s): `" + c.pattern + "`\n\n";
  s += "**Reproduced across runs:** " + reproduced(c) + "\n\n";
  s += "**Verdict:** " + md_inline(c.summary) + "\n\n";
  s += "**Next step:** " + md_inline(c.next_step) + "\n\n";
  const bool preflight = std::any_of(runs.begin(), runs.end(), [](const RunResult& r) { return !r.preflight.empty(); });
  s += preflight ? "| Run | Class | Initiating rank | Host | Failed ranks | Failed after | Preflight |\n|---|---|---|---|---|---|---|\n"
                 : "| Run | Class | Initiating rank | Host | Failed ranks | Failed after |\n|---|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < runs.size() && i < c.outcomes.size(); ++i) {
    const Verdict& v = runs[i].diagnosis.verdict;
    const RunOutcome& o = c.outcomes[i];
    s += "| " + md_inline(runs[i].id) + " | " + md_inline(std::string(name_of(v.cls)) + (v.cause ? " (" + *v.cause + ")" : "")) + " | " +
         (v.initiating_rank ? std::to_string(*v.initiating_rank) : std::string("-")) + " | " +
         md_inline(v.initiating_host.value_or("-")) + " | " +
         (o.failed_ranks.empty() ? std::string("-") : rank_list(o.failed_ranks)) + " | " +
         (o.seconds_to_failure ? fmt_seconds(*o.seconds_to_failure) : std::string("-")) + " |" +
         (preflight ? " " + preflight_cell(runs[i]) + " |" : std::string()) + "\n";
  }
  for (const Error& e : skipped) s += "\nLeft out: " + md_inline(e.message()) + "\n";
  s += "\n_Each run's own report: `rdzvscope analyze RUN_DIR --format markdown`._\n";
  return s;
}

}  // namespace rdzvscope
