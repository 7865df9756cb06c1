// port_conflict: the store host could not bind its port (EADDRINUSE).
#include <cerrno>

#include "reader/names.h"
#include "rules.h"

namespace rdzvscope {

namespace {

// torchrun's c10d agent that cannot host the rendezvous store joins the one on that port as a
// client: when the port is held by another traced torchrun agent's store there (same host,
// same network namespace), the bind failure is c10d's way of joining, not a conflict; whatever
// failed afterwards (agents with different --rdzv-ids on one endpoint waiting for each other)
// is for the other rules.
bool joined_an_agents_store(const Context& c, const ProcessFacts& f) {
  if (f.proc->role != Role::Agent) return false;
  const std::uint16_t port = f.bind_failure->local().port;
  for (const auto& g : c.facts)
    if (&g != &f && g.proc->role == Role::Agent && g.listens_on(port) &&
        loopback_scope(*g.proc) == loopback_scope(*f.proc))
      return true;
  return false;
}

// Log-only (issue 29): c10d's 2.x client pings the store with a nonce of its own and wants it
// echoed (ForeignStorePeer). An answer of four printable bytes ("HTTP", "SSH-") is a text
// protocol's: another program, no store of any version, holds the port the job's store should
// have had.
std::optional<Candidate> text_answer_on_store_port(const Context& c) {
  for (const LogEvent* e : c.logs.of({LogFamily::ForeignStorePeer})) {
    if (e->setting_value != "text") continue;
    Candidate out;
    Verdict& v = out.verdict;
    v.cls = FailureClass::PortConflict;
    v.confidence = "medium";
    const std::size_t at = e->text.find("Ping failed");
    v.summary = "the store port answered this client's ping in text (" +
                e->text.substr(at == std::string::npos ? 0 : at, 120) +
                "): another program, no TCPStore, listens on the port the job's store should hold";
    v.next_step = "ss -ltnp 'sport = :PORT' on the store host to see which program holds the port; derive "
                  "MASTER_PORT / --rdzv-endpoint from the job id, away from other services' ports";
    out.findings.push_back(log_finding(FailureClass::PortConflict, *e));
    return out;
  }
  return std::nullopt;
}


// The store's listen failed on every local address and the logs hold no errno for it (see
// rule_port_conflict): a taken port, low, with what would confirm it.
Candidate listen_failure_words(const LogEvent& e) {
  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::PortConflict;
  v.confidence = "low";
  v.initiating_rank = rank_of(e);
  v.summary = "the store could not listen on any local address of its port (" + e.file + ":" +
              std::to_string(e.line) + "): every bind of the port failed, and a port already held by another "
              "process is what fails it on every address; the bind warnings above that line (their errno: 98 is "
              "EADDRINUSE, 13 EACCES) would confirm it";
  v.next_step = "on the store host: `ss -ltnp 'sport = :PORT'` shows who holds the port; derive MASTER_PORT / "
                "--rdzv-endpoint from the job id so that two jobs on one node never share it";
  out.findings.push_back(log_finding(FailureClass::PortConflict, e));
  return out;
}

}  // namespace

std::optional<Candidate> rule_port_conflict(const Context& c) {
  if (!c.has_traces())
    if (auto text = text_answer_on_store_port(c)) return text;
  Candidate out;
  const ProcessFacts* first = nullptr;
  for (const auto& f : c.facts) {
    if (!f.bind_failure || f.bind_failure->err != EADDRINUSE) continue;
    // torchrun's c10d agent that cannot host the rendezvous store joins the one on that port
    // as a client: when it then ran to a clean end, the bind failure did no harm (two jobs
    // sharing an endpoint under different --rdzv-ids both succeed; seen on 2.13).
    if (f.proc->role == Role::Agent && f.proc->exit_status == 0) continue;
    if (joined_an_agents_store(c, f)) continue;
    if (!first || f.bind_failure->wall_ns < first->bind_failure->wall_ns) first = &f;
    Finding fd = finding_for(FailureClass::PortConflict, f, f.bind_failure->wall_ns);
    fd.evidence.push_back(f.proc->label() + ": " + describe(*f.bind_failure) + " at " + rel(c, f.bind_failure->wall_ns));
    out.findings.push_back(fd);
  }
  const LogEvent* log_hit = nullptr;  // the lowest-ranked bind failure in the logs
  // c10d's "failed to listen on any local network address" with no errno of its own: every bind
  // of the store port failed (on every address), the per-address bind warnings that name the
  // errno are not in these logs. A port taken is what fails a bind on every address (the listener
  // binds the wildcard addresses, so no address can be missing); the errno would tell it from a
  // port the user may not bind (EACCES).
  const LogEvent* listen_without_errno = nullptr;
  for (const LogEvent* e : c.logs.of({LogFamily::BindFailed, LogFamily::ListenFailed})) {
    if (!e->err && !e->has(LogFamily::BindFailed)) {
      if (!listen_without_errno) listen_without_errno = e;
      continue;
    }
    // libuv reports EADDRINUSE at listen ("code: -98"); the legacy backend at bind.
    if (e->err ? *e->err != EADDRINUSE : !e->has(LogFamily::BindFailed)) continue;
    if (!log_hit || (e->rank >= 0 && (log_hit->rank < 0 || e->rank < log_hit->rank))) log_hit = e;
  }
  if (!first && !log_hit && listen_without_errno) return listen_failure_words(*listen_without_errno);
  if (!first && !log_hit) return std::nullopt;

  std::uint16_t port = first ? first->bind_failure->local().port : 0;
  Verdict& v = out.verdict;
  v.cls = FailureClass::PortConflict;
  v.confidence = first ? "high" : "medium";
  if (first) {
    v.initiating_rank = rank_of(*first);
    v.initiating_host = first->proc->host;
    // Who holds the port, when that process was traced too.
    std::string holder = "a process that was not traced";
    for (const auto& f : c.facts)
      if (&f != first && f.listen_ns && f.listen_port == port && f.proc->host == first->proc->host)
        holder = f.proc->label() + (f.proc->job_key.empty() ? "" : " of job " + f.proc->job_key);
    v.summary = "the store host " + first->proc->label() + " could not bind port " + std::to_string(port) +
                " (EADDRINUSE): it is held by " + holder + "; the other ranks then wait for a store that never starts";
    v.next_step = "on " + first->proc->host + ": ss -ltnp 'sport = :" + std::to_string(port) +
                  "' to see who holds the port; derive MASTER_PORT / --rdzv-endpoint from the job id so that two jobs on one node never share it";
    out.discriminators.set("port", std::int64_t{port});
    out.discriminators.set("port_holder", holder);
  } else {
    v.initiating_rank = rank_of(*log_hit);
    v.summary = "the store could not bind its port (Address already in use), from the logs";
    v.next_step = "ss -ltnp on the store host to see who holds the port; derive the port from the job id";
    out.findings.push_back(log_finding(FailureClass::PortConflict, *log_hit));
  }
  return out;
}

}  // namespace rdzvscope
