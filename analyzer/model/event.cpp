#include "event.h"

#include "reader/names.h"

namespace rdzvscope {

namespace {

template <typename Body>
const Body& body_or_empty(const Event& e) {
  static const Body empty{};
  const Body* b = std::get_if<Body>(&e.body);
  return b ? *b : empty;
}

ResolveCall resolve_of(const rdzv_ev_resolve& r) {
  return ResolveCall{bounded_string(r.host), bounded_string(r.service), r.naddrs, r.first};
}

SocketCall socket_of(const rdzv_ev_net& n) {
  return SocketCall{n.peer, n.local, n.size, n.timeout_ms, n.nfds, n.tcp_state};
}

CloseCall close_of(const rdzv_ev_close& c) {
  return CloseCall{c.peer, c.local, c.bytes_sent, c.bytes_recv, c.calls_send, c.calls_recv, c.open_ns, c.tcp_state};
}

ProcessCall process_of(const rdzv_ev_proc& p) { return ProcessCall{p.status, p.child_pid, bounded_string(p.path)}; }

}  // namespace

const ResolveCall& Event::resolve() const { return body_or_empty<ResolveCall>(*this); }
const SocketCall& Event::socket() const { return body_or_empty<SocketCall>(*this); }
const CloseCall& Event::close() const { return body_or_empty<CloseCall>(*this); }
const ProcessCall& Event::process() const { return body_or_empty<ProcessCall>(*this); }
const Snapshot& Event::snapshot() const { return body_or_empty<Snapshot>(*this); }

const rdzv_sockaddr& Event::peer() const {
  if (const auto* c = std::get_if<CloseCall>(&body)) return c->peer;
  return socket().peer;
}

const rdzv_sockaddr& Event::local() const {
  if (const auto* c = std::get_if<CloseCall>(&body)) return c->local;
  return socket().local;
}

Event decode_event(std::int64_t wall_ns, const rdzv_record& r) {
  Event e;
  e.wall_ns = wall_ns;
  e.dur_ns = r.dur_ns;
  e.ret = r.ret;
  e.fd = r.fd;
  e.err = r.err;
  e.tid = r.tid;
  e.kind = r.kind;
  e.op = r.op;
  e.flags = r.flags;
  switch (rdzv_payload_of(r.kind)) {
    case RDZV_PAYLOAD_RESOLVE: e.body = resolve_of(r.u.resolve); break;
    case RDZV_PAYLOAD_NET: e.body = socket_of(r.u.net); break;
    case RDZV_PAYLOAD_CLOSE: e.body = close_of(r.u.close); break;
    case RDZV_PAYLOAD_PROC: e.body = process_of(r.u.proc); break;
    case RDZV_PAYLOAD_SNAPSHOT: e.body = r.u.snap; break;
    case RDZV_PAYLOAD_NONE: break;  // a kind this reader does not know: its times and outcome only
  }
  return e;
}

Event decode_inflight(std::int64_t wall_ns, const rdzv_inflight& s) {
  Event e;
  e.wall_ns = wall_ns;
  e.fd = s.fd;
  e.tid = s.owner;
  e.kind = s.kind;
  e.op = s.op;
  e.flags = s.flags;
  if (s.kind == RDZV_EV_RESOLVE) {
    ResolveCall r;
    if (s.has & RDZV_INFLIGHT_HAS_HOST) r.host = bounded_string(s.u.host);
    e.body = std::move(r);
    return e;
  }
  SocketCall n;
  if (s.has & RDZV_INFLIGHT_HAS_PEER) n.peer = s.u.peer;
  if (s.has & RDZV_INFLIGHT_HAS_TIMEOUT) n.timeout_ms = s.timeout_ms;
  if (s.has & RDZV_INFLIGHT_HAS_SIZE) n.size = s.size;
  e.body = n;
  return e;
}

}  // namespace rdzvscope
