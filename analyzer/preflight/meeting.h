// The preflight meeting (--world-size N, N counting nodes): the store host's preflight keeps
// the socket of its bind check listening on the endpoint's port and waits for the N-1 other
// nodes; each of them connects, says hello with its own results and takes a clock sample
// (hello.h). The store host then knows which nodes can reach the store, which failed what,
// and which never showed up; it closes the port before the job starts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "preflight/check.h"
#include "preflight/connect.h"
#include "preflight/hello.h"

namespace rdzvscope::preflight {

// A node that said hello, as the store host saw it.
struct Peer {
  std::string host;
  std::string address;        // where it connected from
  unsigned world_size = 0;    // the --world-size it was given
  std::vector<Check> checks;  // its own results
  std::optional<ClockSample> clock;
  std::optional<unsigned> node_rank = std::nullopt;  // from its hello
};

// A node of another job that said hello here, turned away (hello.h: "refused").
struct OtherJob {
  std::string host;
  std::string address;
  std::string job;  // its job key; "" when its hello had none
};

struct Meeting {
  std::vector<Peer> peers;            // in the order they arrived
  std::vector<std::string> problems;  // one line each: garbage, cut connections
  std::vector<OtherJob> other_jobs;   // hellos of another job, turned away
  double waited_s = 0;
};

// The store host's side: accepts on listen_fd until `expected_peers` distinct hosts of job
// `job` ("" when this node has no job key: every hello is welcome) have said hello (and sent
// their clock line, or closed) or the deadline passes.
Meeting wait_for_peers(int listen_fd, unsigned expected_peers, const std::string& self_host,
                       const std::string& job, Clock::time_point deadline);

struct Exchange {
  bool ok = false;
  std::string problem;     // why not, one line
  std::string store_host;  // the welcome's host
  ClockSample clock;
  std::optional<Refused> refused;  // the store host belongs to another job
  std::string job;                 // this node's job key, for the wording
};

// A node's side, on a connected socket: hello, welcome, clock line.
Exchange exchange_hello(int fd, const Hello& hello, Clock::time_point deadline);

// The wording: the node's view of the exchange (the clock check, or why the exchange failed).
Check exchange_check(const std::string& endpoint, const Exchange& e);
Check clock_check(const std::string& other_host, const ClockSample& c, bool this_is_store_host);

// The store host's summary: who came, who did not (named when the node names are known),
// whose checks failed. expected_nodes: N, this node included.
std::vector<Check> meeting_checks(const Meeting& m, unsigned expected_nodes,
                                  const std::string& self_host,
                                  const std::vector<std::string>& node_names, double timeout_s,
                                  const std::string& job = "");

// How a job key is shown after "job": 'KEY', or "(none)".
std::string job_words(const std::string& job);

}  // namespace rdzvscope::preflight
