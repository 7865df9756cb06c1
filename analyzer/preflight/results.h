// `analyze` beside `preflight`: the reports that `rdzvscope preflight --out DIR` wrote into the
// trace directory (DIR/preflight.<host>.json, schema rdzvscope.preflight/1, report.h), read back
// and shown with the job's traces: per node its role, verdict and the checks that failed (a
// node that could not rendezvous before the job started is often why the job failed).
//
// JSON, under the diagnosis' top-level "preflight" key (present only when a file was found):
//   { "files": N, "can_rendezvous": every node could,
//     "nodes": [ { "host", "node_rank" | null, "role", "time", "endpoint", "verdict",
//                  "can_rendezvous", "failed": [ { "name", "measured", "fix" } ],
//                  "warnings": [ "name", ... ], "file" } ],
//     "problems": [ "FILE: what is wrong", ... ] }
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rdzvscope::preflight {

struct NodeResult {
  std::string file;
  std::string host;
  std::optional<unsigned> node_rank;
  std::string role;  // "store_host", "node"
  std::string time;  // ISO-8601, as written
  std::string endpoint;
  std::string verdict;  // "ok", "warn", "fail"
  bool can_rendezvous = true;
  struct Failed {
    std::string name, measured, fix;
  };
  std::vector<Failed> failed;
  std::vector<std::string> warnings;  // names of the checks that warned
};

struct Results {
  std::vector<NodeResult> nodes;      // sorted by node rank, then host
  std::vector<std::string> problems;  // files that could not be read as preflight reports
  bool empty() const { return nodes.empty() && problems.empty(); }
};

// "preflight.*.json" in the directories among paths and below them (8 levels, symbolic links not
// followed, as the trace files are found); files given directly are not looked at.
Results load_results(const std::vector<std::string>& paths);

// One file's text (tests); an Error message in problems when it is not a preflight report.
std::optional<NodeResult> parse_result(const std::string& file, const std::string& text,
                                       std::string& problem);

nlohmann::ordered_json results_json(const Results& r);
// The report sections: "" when there is nothing to show.
std::string results_text(const Results& r);
std::string results_markdown(const Results& r);

// Whether every node whose report was read could rendezvous (true with none).
bool every_node_could_rendezvous(const Results& r);
// One line for a run of analyze --runs: "3 node(s), every one could rendezvous", or "3 node(s);
// could not rendezvous: node2 (resolve), ..."; "" when there is nothing to show.
std::string results_summary(const Results& r);

// The words of the views, shared by the text, Markdown and HTML (cli/analyze_preflight.h).
std::string node_label(const NodeResult& n);  // "host (node R)"
std::string role_text(const std::string& role);  // "store host", "node"

}  // namespace rdzvscope::preflight
