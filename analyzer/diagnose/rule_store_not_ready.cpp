// store_not_ready: clients were refused on the store port before the store host listened, or
// the store never listened. c10d retries refused connects silently, so the log shows only a
// connect timeout at the end: the trace is what proves this case.
#include <algorithm>

#include "reader/names.h"
#include "rules.h"

namespace rdzvscope {

namespace {
// A refusal window shorter than this is the ordinary start-up race (ranks start together and
// the first retry, one second later, connects).
constexpr std::int64_t kRaceNs = 1'500'000'000;
}  // namespace

std::optional<Candidate> rule_store_not_ready(const Context& c) {
  std::uint16_t port = 0;
  std::int64_t first_refused = 0, last_refused = 0;
  int refused = 0;
  std::vector<int> ranks;
  for (const auto& f : c.facts) {
    if (f.refused.empty()) continue;
    port = f.refused.front()->rec.u.net.peer.port;
    const ProcessFacts* server = c.store_server(port);
    for (const Event* e : f.refused) {
      // Refusals after the store host ended are a consequence of its death, not of its start.
      if (server && server->proc->exit_ns && e->wall_ns > *server->proc->exit_ns) continue;
      if (server && server->proc->vanished() && e->wall_ns > server->proc->last_event_ns()) continue;
      if (server && e->wall_ns > *server->listen_ns) continue;
      if (!refused || e->wall_ns < first_refused) first_refused = e->wall_ns;
      last_refused = std::max(last_refused, e->wall_ns);
      ++refused;
      if (f.proc->rank >= 0) ranks.push_back(f.proc->rank);
    }
  }
  const ProcessFacts* server = port ? c.store_server(port) : nullptr;
  const bool never_listened = refused > 0 && !server;
  std::int64_t window = server && refused ? *server->listen_ns - first_refused : 0;
  bool traced_case = never_listened || (refused > 0 && window >= kRaceNs);

  auto log_hits = c.logs.of({LogFamily::NotListeningYet, LogFamily::ClientConnectTimeout,
                             LogFamily::ConnectTimeoutLegacy});
  const bool log_case = !c.has_traces() && !log_hits.empty();
  if (!traced_case && !log_case) return std::nullopt;

  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::StoreNotReady;
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  if (traced_case) {
    v.confidence = "high";
    Finding fd;
    fd.cls = FailureClass::StoreNotReady;
    fd.evidence.push_back(std::to_string(refused) + " refused connect(s) to port " + std::to_string(port) +
                          " from rank(s) " + rank_list(ranks) + " between " + rel(c, first_refused) + " and " +
                          rel(c, last_refused));
    if (server) {
      v.initiating_rank = rank_of(*server);
      v.initiating_host = server->proc->host;
      fd.evidence.push_back(server->proc->label() + " was launched at " + rel(c, server->proc->launched_ns) +
                            " and listened at " + rel(c, *server->listen_ns) + ", " +
                            fmt_seconds(seconds(first_refused, *server->listen_ns)) + " after the first client tried");
      v.summary = "the store host " + server->proc->label() + " listened " + fmt_seconds(seconds(first_refused, *server->listen_ns)) +
                  " after the first client tried; clients were refused (and retried silently) meanwhile";
      v.next_step = "start the store host first, or give the clients a timeout that covers its start-up; look at what " +
                    server->proc->label() + " did before init_process_group";
      const std::string act = activity(*server);
      if (!act.empty()) fd.evidence.push_back(server->proc->label() + " before listening: " + act);
    } else {
      v.summary = "nothing ever listened on the store port " + std::to_string(port) + ": the store host never started (or was not traced)";
      v.next_step = "check that the store host (MASTER_ADDR) really runs rank 0 / the rendezvous, and that it started: its own log";
    }
    out.findings.push_back(fd);
  } else {
    v.confidence = "low";
    const LogEvent* e = log_hits.front();
    v.initiating_rank = std::nullopt;
    // Issue 13: the same line is printed by a store host that came late and by a blocked path.
    v.summary = "clients timed out connecting to the store (" + e->host +
                ") without another error: most likely the store was not up (c10d retries refused "
                "connects silently); a store host that arrived late (straggler_timeout) or a "
                "blocked path (connect_timeout) print the same line, so only a trace can prove it";
    v.next_step =
        "rerun with rdzvscope run to trace; meanwhile the store host's own log (did it start, and "
        "when?) and `nc -vz HOST PORT` from a failing node tell the three apart";
    out.discriminators["candidates"] = {"store_not_ready", "straggler_timeout", "connect_timeout"};
    out.findings.push_back(log_finding(FailureClass::StoreNotReady, *e));
  }
  out.discriminators["refused_connects"] = refused;
  out.discriminators["seconds_refused_before_listen"] = server && refused ? seconds(first_refused, *server->listen_ns) : 0.0;
  return out;
}

}  // namespace rdzvscope
