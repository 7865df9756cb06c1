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

bool rendezvous_lookup(const Process& p, const Event& e) {
  if (e.has(RDZV_F_PASSIVE) || e.has(RDZV_F_REVERSE)) return false;
  const ResolveCall& r = e.resolve();
  const std::string master = bounded_string(p.header.ident.master_addr);
  if (!master.empty() && r.host == master) return true;
  char* end = nullptr;
  long port = std::strtol(r.service.c_str(), &end, 10);
  return end && *end == '\0' && !r.service.empty() && in_store_ports(p.header, static_cast<std::uint16_t>(port));
}

void note_error(ProcessFacts& f, const Event* e) {
  if (!f.first_error || e->wall_ns < f.first_error->wall_ns) f.first_error = e;
}

// A failure of one of the lists below: kept there, and a candidate for the first error.
void note_failure(ProcessFacts& f, std::vector<const Event*>& list, const Event& e) {
  list.push_back(&e);
  note_error(f, &e);
}

void note_peer_connection(ProcessFacts& f, const Event& e) {
  if (!f.peer_connected_ns && (f.connected_ns || f.listen_ns) && !e.has(RDZV_F_PREEXISTING))
    f.peer_connected_ns = end_ns(e);
}

void note_resolve(ProcessFacts& f, const Event& e) {
  if (!rendezvous_lookup(*f.proc, e)) return;
  f.resolves.push_back(&e);
  if (e.ret != 0) note_failure(f, f.failed_resolves, e);
}

void note_connect(ProcessFacts& f, const Event& e) {
  if (!e.on_store_socket()) {
    if (e.succeeded()) note_peer_connection(f, e);
    else if (e.err == ECONNREFUSED) f.peer_refused.push_back(&e);
    return;
  }
  // Found already connected by attach: connected by then, but not an attempt made then (its
  // time is attach's, which would make every attached rank look late).
  const bool found = e.has(RDZV_F_PREEXISTING);
  if (e.kind == RDZV_EV_CONNECT && !found && !f.first_store_attempt_ns) f.first_store_attempt_ns = e.wall_ns;
  if (!f.store_port) f.store_port = e.peer().port;
  const bool pending = e.kind == RDZV_EV_CONNECT && e.err == EINPROGRESS;
  if (e.succeeded()) {
    if (!f.connected_ns) f.connected_ns = end_ns(e);
  } else if (pending || e.err == EINTR) {
    // not an outcome: a non-blocking connect's outcome comes later, an interrupted one is retried
  } else if (e.err == ECONNREFUSED) {
    note_failure(f, f.refused, e);
  } else if (e.err == ETIMEDOUT) {
    note_failure(f, f.connect_timeouts, e);
  } else {
    note_failure(f, f.connect_other_failures, e);
  }
}

void note_wait_timeout(ProcessFacts& f, const Event& e) {
  if (!e.on_store_socket()) return;
  if (e.has(RDZV_F_NONBLOCK)) {  // a wait on a connect in progress gave up
    note_failure(f, f.connect_timeouts, e);
    return;
  }
  const std::int64_t ms = e.socket().timeout_ms;
  if (plausible_timeout_ms(ms) && !f.timeout_ms) f.timeout_ms = ms;
  note_failure(f, f.wait_timeouts, e);
}

void note_listen(ProcessFacts& f, const Event& e) {
  if (!e.on_store_socket() || e.ret != 0) return;
  if (!f.listen_ns) {
    f.listen_ns = e.wall_ns;
    f.listen_port = e.local().port;
  }
  f.listen_ports.push_back(e.local().port);
}

void note_store_io(ProcessFacts& f, const Event& e) {
  if (!e.on_store_socket()) return;
  if (e.has(RDZV_F_ZERO_READ)) {
    // The store's end of a client's connection reading 0 bytes is that client hanging up (a
    // torchrun agent closing its own client at its end, say): the client's story.
    if (!f.listens_on(e.local().port)) note_failure(f, f.zero_reads, e);
  } else if (e.ret < 0 && e.has(RDZV_F_TIMEOUT)) {
    note_failure(f, f.wait_timeouts, e);
  } else if (e.ret < 0) {
    note_failure(f, f.io_failures, e);
  }
}

void note_timeout_setting(ProcessFacts& f, const Event& e) {
  const SocketCall& s = e.socket();
  if (e.on_store_socket() && s.size == SO_RCVTIMEO && plausible_timeout_ms(s.timeout_ms)) f.timeout_ms = s.timeout_ms;
}

void note_snapshot(ProcessFacts& f, const Event& e) {
  if (!f.arrival_snapshot &&
      (e.op == RDZV_SNAP_FIRST_STORE_CONNECT || (e.op == RDZV_SNAP_FAILURE && f.first_store_attempt_ns)))
    f.arrival_snapshot = &e;
}

void note_event(ProcessFacts& f, const Event& e) {
  switch (e.kind) {
    case RDZV_EV_RESOLVE: note_resolve(f, e); break;
    case RDZV_EV_CONNECT:
    case RDZV_EV_CONNECT_DONE: note_connect(f, e); break;
    case RDZV_EV_POLL: note_wait_timeout(f, e); break;
    case RDZV_EV_CLOSE:
      if (e.on_store_socket() && e.has(RDZV_F_ABANDONED)) note_failure(f, f.connect_timeouts, e);
      break;
    case RDZV_EV_BIND:
      if (e.on_store_socket() && e.ret != 0) {
        if (!f.bind_failure) f.bind_failure = &e;
        note_error(f, &e);
      }
      break;
    case RDZV_EV_LISTEN: note_listen(f, e); break;
    case RDZV_EV_ACCEPT:
      if (e.on_store_socket() && e.ret >= 0) ++f.accepts;
      if (!e.on_store_socket() && e.ret >= 0) note_peer_connection(f, e);
      break;
    case RDZV_EV_SEND:
    case RDZV_EV_RECV: note_store_io(f, e); break;
    case RDZV_EV_SOCKOPT: note_timeout_setting(f, e); break;
    case RDZV_EV_SNAPSHOT: note_snapshot(f, e); break;
    default: break;
  }
}

// A refused connect that c10d retried and that a later connect made good (the store not
// listening yet at start) is no failure of this process: its first error is the first one
// that mattered (issue 17, item 3). The refusals stay in `refused` for the rules.
void forget_benign_refusals(ProcessFacts& f) {
  if (!f.connected_ns || !f.first_error || f.first_error->err != ECONNREFUSED) return;
  if (!f.first_error->is_connect()) return;
  const std::int64_t connected = *f.connected_ns;
  f.first_error = nullptr;
  for (const auto* list : {&f.failed_resolves, &f.connect_timeouts, &f.connect_other_failures, &f.wait_timeouts,
                           &f.io_failures, &f.zero_reads})
    for (const Event* e : *list) note_error(f, e);
  for (const Event* e : f.refused)
    if (e->wall_ns > connected) note_error(f, e);
  if (f.bind_failure) note_error(f, f.bind_failure);
}

bool is_process_store_port(const ProcessFacts& f, std::uint16_t port) {
  if (port == 0) return false;
  if (port == f.store_port) return true;
  const auto& ports = f.proc->header.store_ports;
  return std::find(std::begin(ports), std::end(ports), port) != std::end(ports);
}

// The calls in flight, sorted into the waits the rules read (rank_facts.h).
void note_inflight(ProcessFacts& f, const Event& call) {
  auto first = [](const Event*& slot, const Event& e) {
    if (!slot) slot = &e;
  };
  if (call.kind == RDZV_EV_RESOLVE) return first(f.lookup_wait, call);
  const bool pending_connect = call.kind == RDZV_EV_POLL && call.has(RDZV_F_NONBLOCK);
  if ((call.kind == RDZV_EV_CONNECT && call.on_store_socket()) || pending_connect)
    return first(f.connect_wait, call);
  const bool io = call.kind == RDZV_EV_RECV || call.kind == RDZV_EV_SEND || call.kind == RDZV_EV_POLL;
  if (!io || !call.on_store_socket() || !is_process_store_port(f, call.peer().port)) return;
  // The program's own call (its main thread) before a helper thread's: torch 1.13's client
  // keeps a listener thread waiting on a second store connection for as long as it lives.
  const auto main_thread = [&](const Event* e) { return e && e->tid == static_cast<std::uint32_t>(f.proc->pid); };
  if (main_thread(&call) && !main_thread(f.store_wait)) f.store_wait = nullptr;
  if (!main_thread(&call) && main_thread(f.store_wait)) return;
  first(f.store_wait, call);
  // 2.x waits for the store's reply in a poll whose timeout is the store's: the configured one.
  if (!f.timeout_ms && call.kind == RDZV_EV_POLL && plausible_timeout_ms(call.socket().timeout_ms))
    f.timeout_ms = call.socket().timeout_ms;
}

// The events are in time order: the last one that fits is the nearest before the wait.
const Event* request_before(const Process& p, const Event& wait) {
  for (auto it = p.events.rbegin(); it != p.events.rend(); ++it)
    if (it->kind == RDZV_EV_SEND && it->on_store_socket() && it->fd == wait.fd && it->tid == wait.tid &&
        it->wall_ns <= wait.wall_ns)
      return &*it;
  return nullptr;
}

}  // namespace

const Event* ProcessFacts::waiting_in() const {
  const Event* best = nullptr;
  for (const Event* e : {store_wait, connect_wait, lookup_wait})
    if (e && (!best || e->wall_ns < best->wall_ns)) best = e;
  return best;
}

std::vector<ProcessFacts> derive_facts(const std::vector<Process>& processes) {
  std::vector<ProcessFacts> out;
  out.reserve(processes.size());
  for (const Process& p : processes) {
    // Workers of an attempt torchrun restarted are not part of the attempt diagnosed.
    if (p.role == Role::EarlierAttempt) continue;
    ProcessFacts f;
    f.proc = &p;
    for (const Event& e : p.events) note_event(f, e);
    forget_benign_refusals(f);
    for (const Event& call : p.inflight) note_inflight(f, call);
    if (f.store_wait) f.store_request = request_before(p, *f.store_wait);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace rdzvscope
