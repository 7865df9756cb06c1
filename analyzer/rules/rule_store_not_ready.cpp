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

// The refused store connects that say the store was not up yet, with the store each client
// could have reached: the one listening on the port, and for a loopback destination only one
// in the client's own network namespace (another namespace's 127.0.0.1 is another endpoint).
struct Refusals {
  std::uint16_t port = 0;
  std::int64_t first_ns = 0, last_ns = 0;
  int count = 0;
  std::vector<int> ranks;
  const ProcessFacts* server = nullptr;     // the store the refused clients could reach
  const ProcessFacts* elsewhere = nullptr;  // a store on the port that they could not reach
  std::string client_scope;                 // where a client's loopback led, when it did
};

// Refusals after the store host ended are a consequence of its death, not of its start;
// refusals after it listened are not about its start either.
bool before_store_was_up(const ProcessFacts* server, const Event& e) {
  if (!server) return true;
  if (server->proc->exit_ns && e.wall_ns > *server->proc->exit_ns) return false;
  if (server->proc->vanished() && e.wall_ns > server->proc->last_event_ns()) return false;
  return e.wall_ns <= *server->listen_ns;
}

Refusals find_refusals(const Context& c) {
  Refusals r;
  for (const auto& f : c.facts) {
    // Refused where its lookup sent it, an address where no process reached the store: not
    // the store's start (store_unreachable, resolved_elsewhere).
    if (f.refused.empty() || c.misdirected_of(f)) continue;
    const Event& first = *f.refused.front();
    r.port = first.peer().port;
    const ProcessFacts* server = c.store_reached(f, first);
    if (!server && is_loopback(first.peer()) && c.store_server(r.port)) {
      r.elsewhere = c.store_server(r.port);
      r.client_scope = loopback_scope(*f.proc);
    }
    if (server && !r.server) r.server = server;
    for (const Event* e : f.refused) {
      if (!before_store_was_up(server, *e)) continue;
      if (!r.count || e->wall_ns < r.first_ns) r.first_ns = e->wall_ns;
      r.last_ns = std::max(r.last_ns, e->wall_ns);
      ++r.count;
      if (f.proc->rank >= 0) r.ranks.push_back(f.proc->rank);
    }
  }
  std::sort(r.ranks.begin(), r.ranks.end());
  r.ranks.erase(std::unique(r.ranks.begin(), r.ranks.end()), r.ranks.end());
  return r;
}

void word_late_store(const Context& c, const Refusals& r, Verdict& v, Finding& fd) {
  const ProcessFacts& server = *r.server;
  const double late_s = seconds(r.first_ns, *server.listen_ns);
  v.initiating_rank = rank_of(server);
  v.initiating_host = server.proc->host;
  fd.evidence.push_back(server.proc->label() + " was launched at " + rel(c, server.proc->launched_ns) +
                        " and listened at " + rel(c, *server.listen_ns) + ", " + fmt_seconds(late_s) +
                        " after the first client tried");
  v.summary = "the store host " + server.proc->label() + " listened " + fmt_seconds(late_s) +
              " after the first client tried; clients were refused (and retried silently) meanwhile";
  v.next_step = "start the store host first, or give the clients a timeout that covers its start-up; look at what " +
                server.proc->label() + " did before init_process_group";
  const std::string act = activity(server);
  if (!act.empty()) fd.evidence.push_back(server.proc->label() + " before listening: " + act);
}

// The process that would have hosted the store, when the traces show it ended before it ever
// listened: rank 0 started by hand (init_process_group's TCPStore server is rank 0's), not under
// a launcher agent (torchrun's agent hosts the store there), that died on its own.
const ProcessFacts* store_host_dead_before_listening(const Context& c) {
  const ProcessFacts* r0 = c.rank(0);
  if (!r0 || r0->listen_ns || c.parent_is_agent(*r0->proc) || !c.died_on_its_own(*r0) || !c.ending(*r0).over_ns)
    return nullptr;
  return r0;
}

void word_absent_store(const Context& c, const Refusals& r, Verdict& v, Finding& fd) {
  if (const ProcessFacts* dead = r.elsewhere ? nullptr : store_host_dead_before_listening(c)) {
    const std::string crash = crash_words(c, *dead);
    v.initiating_rank = rank_of(*dead);
    v.initiating_host = dead->proc->host;
    v.summary = "nothing ever listened on the store port " + std::to_string(r.port) + ": " + dead->proc->label() +
                ", which hosts the store, " + ending_words(c, *dead) + " before it listened" +
                (crash.empty() ? std::string() : " (" + crash + ")") +
                "; the others' refused connects and their timeouts are consequences of its death";
    v.next_step = c.ending(*dead).how == Ending::How::Exited
                      ? "read " + dead->proc->label() + "'s crash" +
                            (crash.empty() ? std::string(" in its own log") : " (" + crash + ")") +
                            " and fix what it died of before init_process_group"
                      : "find what killed " + dead->proc->label() + ": `journalctl -k | grep -i -E 'oom|killed'` on " +
                            dead->proc->host + ", and its own log";
    fd.evidence.push_back(dead->proc->label() + " " + ending_words(c, *dead) + ", with no listen on the store port");
    return;
  }
  if (!r.elsewhere) {
    v.summary = "nothing ever listened on the store port " + std::to_string(r.port) +
                ": the store host never started (or was not traced)";
    v.next_step = "check that the store host (MASTER_ADDR) really runs rank 0 / the rendezvous, and that it started: its own log";
    return;
  }
  // A loopback MASTER_ADDR across containers: each network namespace has its own 127.0.0.1.
  fd.evidence.push_back(r.elsewhere->proc->label() + " listened on port " + std::to_string(r.port) +
                        " in another network namespace; the refused clients' loopback leads to " + r.client_scope);
  v.summary = "nothing ever listened on the store port " + std::to_string(r.port) +
              " of the refused clients' own loopback: the store host " + r.elsewhere->proc->label() +
              " listens on the loopback of another network namespace, which they cannot reach";
  v.next_step = "give MASTER_ADDR (or the rendezvous endpoint) an address every rank can reach, not 127.0.0.1 / "
                "localhost: containers or pods with their own network each have their own loopback";
}

// c10d retries a refused connect until its timeout: a client refused while the store was not
// up yet, that connected once it was, lost time and nothing else. When every refused client
// connected and a rank failed all the same, the store's late start is not why (the failure
// came later: a rank that died, an error after the rendezvous), and a start-up race is no
// verdict for it. A job that succeeded is still told of the race, the near miss it was.
bool survived(const Context& c) {
  for (const auto& f : c.facts)
    if (!f.refused.empty() && !f.connected_ns) return false;
  return c.any_rank_failed();
}

// A client's connect timeout is printed alike whatever kept the connect from succeeding: c10d
// retries refused connects silently (no store yet), waits out a late store host the same way,
// and retries a SYN nobody answers until the same deadline. The log cannot tell them apart.
std::vector<Alternative> client_timeout_alternatives(const LogEvent& e) {
  const std::string store = e.host.empty() ? std::string("the store host") : e.host;
  const std::string nc_host = e.host.empty() ? std::string("<store host>") : e.host;
  return {
      {FailureClass::StragglerTimeout, std::nullopt,
       "the store host (rank 0, or the first node's agent) started but reached init_process_group late, after "
       "the clients' timeout: they print the same line",
       "rank 0's own log (when did it start the store?) or a trace of rank 0 (rdzvscope run) shows when it "
       "listened"},
      {FailureClass::ConnectTimeout, std::nullopt,
       "the store was up but the path to " + store + " dropped the SYNs (a firewall, a route): c10d retries until "
       "the same deadline",
       "`rdzvscope preflight` (or `nc -vz " + nc_host + " PORT`) from the failing node while the store runs"},
  };
}

// Refused connects and no timeout line: c10d's "is not yet listening (errno: 111 - Connection
// refused), will retry" (1.x: "No socket on (H, P) is listening yet, will retry"). Nothing
// listened at that port: the store not up yet, or a store that these clients were not sent to.
// Refused is no dropped SYN, so not connect_timeout's.
std::vector<Alternative> refused_alternatives(const LogEvent& e) {
  std::vector<Alternative> out = client_timeout_alternatives(e);
  out.pop_back();  // connect_timeout
  out.push_back({FailureClass::ConfigMismatch, std::nullopt,
                 "the store listens on another port or host than these clients were given (one side's MASTER_PORT, or "
                 "a script's init_method port other than torchrun's --rdzv-endpoint: under torchrun the workers only "
                 "connect, and the agent hosts the store)",
                 "the store host's log (which port did it listen on?) beside the clients' MASTER_ADDR / MASTER_PORT "
                 "or init_method"});
  return out;
}

bool says_timeout(const LogEvent* e) {
  return e->family == LogFamily::ClientConnectTimeout || e->family == LogFamily::ConnectTimeoutLegacy;
}

}  // namespace

std::optional<Candidate> rule_store_not_ready(const Context& c) {
  const Refusals r = find_refusals(c);
  const bool never_listened = r.count > 0 && !r.server;
  const std::int64_t window = r.server && r.count ? *r.server->listen_ns - r.first_ns : 0;
  const bool traced_case = never_listened || (r.count > 0 && window >= kRaceNs && !survived(c));

  auto log_hits = c.logs.of({LogFamily::NotListeningYet, LogFamily::ClientConnectTimeout,
                             LogFamily::ConnectTimeoutLegacy});
  // Issue 29: clients that waited out their timeout on a loopback store are straggler_timeout's
  // (the store host, rank 0, late), with this class as the alternative.
  const bool log_case = !c.has_traces() && !log_hits.empty() && !loopback_store_never_up(c.logs);
  if (!traced_case && !log_case) return std::nullopt;

  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::StoreNotReady;
  if (traced_case) {
    v.confidence = "high";
    Finding fd;
    fd.cls = FailureClass::StoreNotReady;
    fd.evidence.push_back(std::to_string(r.count) + " refused connect(s) to port " + std::to_string(r.port) +
                          " from rank(s) " + rank_list(r.ranks) + " between " + rel(c, r.first_ns) + " and " +
                          rel(c, r.last_ns));
    if (r.server)
      word_late_store(c, r, v, fd);
    else
      word_absent_store(c, r, v, fd);
    out.findings.push_back(fd);
  } else {
    v.confidence = "low";
    const LogEvent* e = log_hits.front();
    v.initiating_rank = std::nullopt;
    const bool timed_out = std::any_of(log_hits.begin(), log_hits.end(), says_timeout);
    // Issue 13: the same line is printed by a store host that came late and by a blocked path.
    if (timed_out)
      v.summary = "clients timed out connecting to the store (" + e->host +
                  ") without another error: most likely the store was not up (c10d retries refused "
                  "connects silently); a store host that arrived late (straggler_timeout) or a "
                  "blocked path (connect_timeout) print the same line, so only a trace can prove it";
    else
      v.summary = "connects to the store (" + e->host + (e->port ? ":" + std::to_string(*e->port) : std::string()) +
                  ") were refused and retried (" + e->file + ":" + std::to_string(e->line) +
                  ": nothing listened on that port yet), and no line says they ever got through: the store was not "
                  "up yet, or, if it never comes, it listens where these clients were not sent";
    v.next_step =
        "rerun with rdzvscope run to trace; meanwhile the store host's own log (did it start, and "
        "when?) and `nc -vz HOST PORT` from a failing node tell the three apart";
    out.discriminators.set("candidates", NameList{{"store_not_ready", "straggler_timeout", "connect_timeout"}});
    out.alternatives = timed_out ? client_timeout_alternatives(*e) : refused_alternatives(*e);
    out.findings.push_back(log_finding(FailureClass::StoreNotReady, *e));
  }
  out.discriminators.set("refused_connects", std::int64_t{r.count});
  out.discriminators.set("seconds_refused_before_listen",
                         Seconds{r.server && r.count ? seconds(r.first_ns, *r.server->listen_ns) : 0.0});
  return out;
}

}  // namespace rdzvscope
