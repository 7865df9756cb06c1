// transient_recv: a failed rank read 0 bytes from a store socket whose other end was still
// alive, with no other cause: a connection blip during bootstrap. Relaunch first.
#include "rules.h"

namespace rdzvscope {

std::optional<Candidate> rule_transient_recv(const Context& c) {
  const ProcessFacts* first = nullptr;
  for (const auto& f : c.facts)
    if (f.failed() && !f.zero_reads.empty() &&
        (!first || f.zero_reads.front()->wall_ns < first->zero_reads.front()->wall_ns))
      first = &f;
  auto log_hits = c.logs.of({LogFamily::RecvZero});
  // PyTorch >= 2.4 retries a connection that closes during its connect/validate step and says
  // so ("failed to connect/validate ... - retrying (...): Failed to recv, got 0 bytes"): the
  // close was absorbed, not a failure. Traces in which no rank failed settle it the same way.
  // The recvValue warning above such a retry line (a C++ backtrace may stand between them) is
  // the same absorbed close.
  auto is_retry = [](const LogEvent& e) { return e.text.find(" - retrying (") != std::string::npos; };
  auto retried_below = [&](const LogEvent* e) {
    for (const LogEvent& r : c.logs.events)
      if (is_retry(r) && r.has(LogFamily::RecvZero) && r.file == e->file && r.line >= e->line &&
          r.line <= e->line + 64)
        return true;
    return false;
  };
  // Issue 29: a 0-byte read after the store's constructor is the server's end closing, which it
  // does only when it ends (broken_pipe's case); a reset inside the constructor (its backtrace
  // through TCPStore::TCPStore, its validation ping, the count of workers) is a fresh connection
  // dropped before the store was ever used, with the server just up: a transient close too.
  std::erase_if(log_hits, [&](const LogEvent* e) {
    return is_retry(*e) || retried_below(e) || (c.has_traces() && !c.any_rank_failed()) ||
           closed_after_store_constructor(c.logs, *e);
  });
  if (!c.has_traces())
    for (const LogEvent* e : c.logs.of({LogFamily::ConnectionReset}))
      if (in_store_constructor(c.logs, *e) && !is_retry(*e) && !retried_below(e)) log_hits.push_back(e);
  if (!first && log_hits.empty()) return std::nullopt;
  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::TransientRecv;
  v.next_step = "relaunch the job; investigate only if it reproduces (then trace the store host as well)";
  if (first) {
    const Event* e = first->zero_reads.front();
    v.initiating_rank = rank_of(*first);
    v.initiating_host = first->proc->host;
    v.confidence = "medium";
    v.summary = first->proc->label() + " read 0 bytes from its store connection at " + rel(c, e->wall_ns) +
                " (the other end closed it) with no other failure: a transient close during bootstrap";
    Finding fd = finding_for(FailureClass::TransientRecv, *first, e->wall_ns);
    fd.evidence.push_back(first->proc->label() + ": " + describe(*e));
    out.findings.push_back(fd);
  } else {
    const LogEvent* e = log_hits.front();
    v.initiating_rank = rank_of(*e);
    v.confidence = "low";
    v.summary = e->has(LogFamily::RecvZero)
                    ? "a store read got 0 bytes (the other end closed the connection), from the logs"
                    : "a store connection was reset inside TCPStore's constructor (its backtrace shows " +
                          std::string("the store's connect and validation): the connection was dropped before the ") +
                          "store was ever used, with the store just up (a server swamped by connects at scale), from the logs";
    out.findings.push_back(log_finding(FailureClass::TransientRecv, *e));
  }
  return out;
}

}  // namespace rdzvscope
