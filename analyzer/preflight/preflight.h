// rdzvscope preflight: the checks of one node, run before the job starts, in the order the
// job itself will meet them. Every node resolves the endpoint (resolve.h). The store host (the
// node the endpoint resolves to) binds the port as c10d will (bind_port.h) and checks its
// limits (limits.h); the other nodes connect to it (connect.h). With world_size N, the
// store host's preflight listens on the port and the others say hello (meeting.h), so that its
// report covers every node.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "preflight/check.h"
#include "preflight/endpoint.h"

namespace rdzvscope::preflight {

struct Options {
  Endpoint endpoint;
  unsigned world_size = 0;              // nodes taking part in the meeting; 0: no meeting
  std::vector<std::string> node_names;  // the nodes expected, to name the missing ones
  unsigned long ranks = 1;              // processes that will connect to the store at once
  std::string ranks_source;             // where `ranks` came from, for the report
  double timeout_s = 30;
  std::string hostname;  // this node's name (gethostname)
  std::optional<unsigned> node_rank;  // which node this is (job_size.h: node_id), for the report
  std::string node_rank_source;
  std::string job;  // the job key (job_size.h: job_key): the meeting is this job's; "" for none
  std::string job_source;
  std::function<void(const std::string&)> progress = [](const std::string&) {};  // -v
};

enum class Role { StoreHost, Node };

struct Report {
  std::string host;
  std::optional<unsigned> node_rank;
  std::string node_rank_source;
  std::string job, job_source;
  Endpoint endpoint;
  Role role = Role::Node;
  std::string role_reason;
  unsigned world_size = 0;
  unsigned long ranks = 0;
  std::string ranks_source;
  double timeout_s = 0;
  std::int64_t started_ns = 0;
  double took_s = 0;
  std::vector<Check> checks;

  Verdict verdict() const { return worst(checks); }
  bool can_rendezvous() const { return verdict() != Verdict::Fail; }
};

// Whether this node hosts the store: the endpoint names this node (its host name,
// "localhost") or resolves to one of its addresses or to loopback, as torchrun's c10d backend
// decides it (_matches_machine_hostname). The reason, for the report.
Role role_of(const std::string& endpoint_host, const std::string& hostname,
             const std::vector<std::string>& resolved, const std::vector<std::string>& local,
             std::string& reason);

Report run_preflight(const Options& opt);

std::string this_hostname();

}  // namespace rdzvscope::preflight
