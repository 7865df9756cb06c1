#include "rank_facts.h"

#include <cerrno>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "reader/names.h"

namespace rdzvscope {

bool ProcessFacts::failed() const {
  if (proc->vanished()) return true;
  return proc->exit_status && *proc->exit_status != 0;
}

namespace {

bool in_store_ports(const ProcessHeader& h, std::uint16_t port) {
  if (port == 0) return false;
  for (auto p : h.store_ports)
    if (p == port) return true;
  return false;
}

bool rendezvous_lookup(const Process& p, const rdzv_record& r) {
  if (r.flags & (RDZV_F_PASSIVE | RDZV_F_REVERSE)) return false;
  const std::string host = bounded_string(r.u.resolve.host);
  const std::string service = bounded_string(r.u.resolve.service);
  const std::string master = bounded_string(p.header.ident.master_addr);
  if (!master.empty() && host == master) return true;
  char* end = nullptr;
  long port = std::strtol(service.c_str(), &end, 10);
  return end && *end == '\0' && !service.empty() && in_store_ports(p.header, static_cast<std::uint16_t>(port));
}

void note_error(ProcessFacts& f, const Event* e) {
  if (!f.first_error || e->wall_ns < f.first_error->wall_ns) f.first_error = e;
}

void note_peer_connection(ProcessFacts& f, const Event& e) {
  if (!f.peer_connected_ns && (f.connected_ns || f.listen_ns) && !(e.rec.flags & RDZV_F_PREEXISTING))
    f.peer_connected_ns = end_ns(e);
}

void derive_one(ProcessFacts& f) {
  const Process& p = *f.proc;
  for (const Event& e : p.events) {
    const rdzv_record& r = e.rec;
    const bool store = r.flags & RDZV_F_STORE;
    switch (r.kind) {
      case RDZV_EV_RESOLVE:
        if (!rendezvous_lookup(p, r)) break;
        f.resolves.push_back(&e);
        if (r.ret != 0) {
          f.failed_resolves.push_back(&e);
          note_error(f, &e);
        }
        break;
      case RDZV_EV_CONNECT:
      case RDZV_EV_CONNECT_DONE: {
        if (!store) {
          if (r.ret == 0 && r.err == 0) note_peer_connection(f, e);
          break;
        }
        // Found already connected by attach: connected by then, but not an attempt made then
        // (its time is attach's, which would make every attached rank look late).
        const bool found = r.flags & RDZV_F_PREEXISTING;
        if (r.kind == RDZV_EV_CONNECT && !found && !f.first_store_attempt_ns) f.first_store_attempt_ns = e.wall_ns;
        if (!f.store_port) f.store_port = r.u.net.peer.port;
        const bool pending = r.kind == RDZV_EV_CONNECT && r.err == EINPROGRESS;
        if (r.ret == 0 && r.err == 0) {
          if (!f.connected_ns) f.connected_ns = e.wall_ns + static_cast<std::int64_t>(r.dur_ns);
        } else if (!pending && r.err == ECONNREFUSED) {
          f.refused.push_back(&e);
          note_error(f, &e);
        } else if (!pending && r.err == ETIMEDOUT) {
          f.connect_timeouts.push_back(&e);
          note_error(f, &e);
        } else if (!pending && r.err != EINTR) {
          f.connect_other_failures.push_back(&e);
          note_error(f, &e);
        }
        break;
      }
      case RDZV_EV_POLL:
        if (!store) break;
        if (r.flags & RDZV_F_NONBLOCK) {  // a wait on a connect in progress gave up
          f.connect_timeouts.push_back(&e);
        } else {
          f.wait_timeouts.push_back(&e);
          if (plausible_timeout_ms(r.u.net.timeout_ms) && !f.timeout_ms) f.timeout_ms = r.u.net.timeout_ms;
        }
        note_error(f, &e);
        break;
      case RDZV_EV_CLOSE:
        if (store && (r.flags & RDZV_F_ABANDONED)) {
          f.connect_timeouts.push_back(&e);
          note_error(f, &e);
        }
        break;
      case RDZV_EV_BIND:
        if (store && r.ret != 0) {
          if (!f.bind_failure) f.bind_failure = &e;
          note_error(f, &e);
        }
        break;
      case RDZV_EV_LISTEN:
        if (store && r.ret == 0 && !f.listen_ns) {
          f.listen_ns = e.wall_ns;
          f.listen_port = r.u.net.local.port;
        }
        if (store && r.ret == 0) f.listen_ports.push_back(r.u.net.local.port);
        break;
      case RDZV_EV_ACCEPT:
        if (store && r.ret >= 0) ++f.accepts;
        if (!store && r.ret >= 0) note_peer_connection(f, e);
        break;
      case RDZV_EV_SEND:
      case RDZV_EV_RECV:
        if (!store) break;
        if (r.flags & RDZV_F_ZERO_READ) {
          // The store's end of a client's connection reading 0 bytes is that client hanging
          // up (a torchrun agent closing its own client at its end, say): the client's story.
          if (f.listens_on(r.u.net.local.port)) break;
          f.zero_reads.push_back(&e);
          note_error(f, &e);
        } else if (r.ret < 0 && (r.flags & RDZV_F_TIMEOUT)) {
          f.wait_timeouts.push_back(&e);
          note_error(f, &e);
        } else if (r.ret < 0) {
          f.io_failures.push_back(&e);
          note_error(f, &e);
        }
        break;
      case RDZV_EV_SOCKOPT:
        if (store && r.u.net.size == SO_RCVTIMEO && plausible_timeout_ms(r.u.net.timeout_ms))
          f.timeout_ms = r.u.net.timeout_ms;
        break;
      case RDZV_EV_SNAPSHOT:
        if (!f.arrival_snapshot && (r.op == RDZV_SNAP_FIRST_STORE_CONNECT ||
                                    (r.op == RDZV_SNAP_FAILURE && f.first_store_attempt_ns)))
          f.arrival_snapshot = &e;
        break;
      default:
        break;
    }
  }
}

// A refused connect that c10d retried and that a later connect made good (the store not
// listening yet at start) is no failure of this process: its first error is the first one
// that mattered (issue 17, item 3). The refusals stay in `refused` for the rules.
void forget_benign_refusals(ProcessFacts& f) {
  if (!f.connected_ns || !f.first_error || f.first_error->rec.err != ECONNREFUSED) return;
  if (f.first_error->rec.kind != RDZV_EV_CONNECT && f.first_error->rec.kind != RDZV_EV_CONNECT_DONE) return;
  const std::int64_t connected = *f.connected_ns;
  f.first_error = nullptr;
  for (const auto* list : {&f.failed_resolves, &f.connect_timeouts, &f.connect_other_failures, &f.wait_timeouts,
                           &f.io_failures, &f.zero_reads})
    for (const Event* e : *list) note_error(f, e);
  for (const Event* e : f.refused)
    if (e->wall_ns > connected) note_error(f, e);
  if (f.bind_failure) note_error(f, f.bind_failure);
}

}  // namespace

std::vector<ProcessFacts> derive_facts(const std::vector<Process>& processes) {
  std::vector<ProcessFacts> out;
  out.reserve(processes.size());
  for (const Process& p : processes) {
    // Workers of an attempt torchrun restarted are not part of the attempt diagnosed.
    if (p.role == Role::EarlierAttempt) continue;
    ProcessFacts f;
    f.proc = &p;
    derive_one(f);
    forget_benign_refusals(f);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace rdzvscope
