#include "report/report.h"
#include "report_runs.h"

namespace rdzvscope {

using ojson = nlohmann::ordered_json;

ojson runs_json(const std::vector<RunResult>& runs, const RunComparison& c, const std::vector<Error>& skipped) {
  ojson j;
  j["schema"] = "rdzvscope.runs/1";
  ojson hosts = ojson::array();
  for (std::size_t i = 0; i < runs.size() && i < c.outcomes.size(); ++i)
    hosts.push_back({{"run", runs[i].id},
                     {"initiating_host", json_opt(runs[i].diagnosis.verdict.initiating_host)},
                     {"failed_hosts", c.outcomes[i].failed_hosts}});
  j["comparison"] = {{"pattern", c.pattern},
                     {"class", c.cls ? nlohmann::ordered_json(name_of(*c.cls)) : nlohmann::ordered_json(nullptr)},
                     {"summary", c.summary},
                     {"next_step", c.next_step},
                     {"hosts", hosts}};
  ojson list = ojson::array();
  for (std::size_t i = 0; i < runs.size() && i < c.outcomes.size(); ++i) {
    const RunOutcome& o = c.outcomes[i];
    list.push_back({{"id", runs[i].id},
                    {"path", runs[i].path},
                    {"failed_ranks", o.failed_ranks},
                    {"failed_hosts", o.failed_hosts},
                    {"seconds_to_failure", json_opt(o.seconds_to_failure)},
                    {"diagnosis", diagnosis_json(runs[i].diagnosis)}});
  }
  j["runs"] = list;
  ojson left_out = ojson::array();
  for (const Error& e : skipped) left_out.push_back({{"path", e.file}, {"problem", e.detail}});
  j["skipped"] = left_out;
  return j;
}

}  // namespace rdzvscope
