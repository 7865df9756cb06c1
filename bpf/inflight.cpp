#include "inflight.h"

#include <algorithm>
#include <cstring>

#include "rdzvscope/recorder_core.h"

namespace rdzvscope::bpf {
namespace {

// x86_64 syscall numbers of the waits whose descriptors are in a pollfd array.
constexpr std::uint64_t kPoll = 7, kPpoll = 271;
// A poll's descriptors looked at for a store socket (the shim looks at all of them).
constexpr std::size_t kPollScan = 64;

bool owned(const rdzv_inflight& s) { return __atomic_load_n(&s.seal, __ATOMIC_ACQUIRE) != 0; }

bool same_call(const rdzv_inflight& s, const SlotCall& c) {
  return s.owner == c.tid && s.start_ns == c.start_ns && s.kind == c.kind && s.op == c.op && s.fd == c.fd;
}

void publish(rdzv_file_header* h, const SlotCall& c) {
  if (c.kind == RDZV_EV_RESOLVE)
    rdzv_inflight_begin_lookup(h, c.tid, c.op, c.flags, c.host.c_str(), c.start_ns);
  else
    rdzv_inflight_begin_socket(h, c.tid, c.kind, c.op, c.flags, c.fd, c.start_ns, c.timeout_ms, &c.peer);
}

// The first store socket among a poll's descriptors, with its entry.
int poll_store_fd(int pid, const call& c, const CallContext& ctx, store_sock* ss) {
  const std::size_t n = std::min<std::size_t>(c.rec.u.net.nfds, kPollScan);
  const std::string raw = ctx.read_memory(pid, c.user_ptr, n * 8);  // struct pollfd: int, short, short
  for (std::size_t i = 0; i < raw.size() / 8; ++i) {
    std::int32_t fd;
    std::memcpy(&fd, raw.data() + i * 8, sizeof fd);
    if (fd >= 0 && ctx.store_sock_of(pid, fd, ss)) return fd;
  }
  return -1;
}

// A wait on store socket fd: its flags and peer, as the shim's (store; nonblock while its
// connect is in progress).
void wait_on(SlotCall& s, const store_sock& ss) {
  s.flags |= RDZV_F_STORE | (ss.pending ? RDZV_F_NONBLOCK : 0);
  s.peer = ss.peer;
}

std::optional<SlotCall> from_enter(int pid, const call& c, SlotCall s, const CallContext& ctx) {
  const rdzv_record& r = c.rec;
  s.kind = r.kind;
  s.op = r.op;
  s.fd = r.fd;
  s.start_ns = r.ts_ns;
  store_sock ss{};
  switch (r.kind) {
    case RDZV_EV_RECV:
      // A peer socket's call is not published, as the shim's (its entry says so from the
      // enter, store_io.bpf.h: io_fill); the store's I/O is, its flags made at the exit.
      if (r.flags & RDZV_F_PEER) return std::nullopt;
      s.flags = RDZV_F_STORE | (c.dontwait ? RDZV_F_NONBLOCK : 0);
      if (ctx.store_sock_of(pid, r.fd, &ss)) s.peer = ss.peer;
      break;
    case RDZV_EV_CONNECT:
      s.flags = r.flags & (RDZV_F_STORE | RDZV_F_NONBLOCK);
      s.peer = r.u.net.peer;
      break;
    case RDZV_EV_ACCEPT:
      s.flags = r.flags & (RDZV_F_STORE | RDZV_F_NONBLOCK);
      s.peer = r.u.net.local;  // the listener's address, as the shim's
      break;
    case RDZV_EV_POLL:
      s.timeout_ms = r.u.net.timeout_ms;
      if (c.id == kPoll || c.id == kPpoll) {
        s.fd = poll_store_fd(pid, c, ctx, &ss);
        if (s.fd < 0) return std::nullopt;
        wait_on(s, ss);
      } else if (r.op == RDZV_OP_SELECT || r.op == RDZV_OP_PSELECT) {
        if (!ctx.store_sock_of(pid, r.fd, &ss)) return std::nullopt;
        wait_on(s, ss);
      } else {  // epoll: as the shim, only while a store connect is in progress; the epoll fd
        if (!ctx.connect_pending(pid)) return std::nullopt;
        s.flags = RDZV_F_STORE;
      }
      break;
    default:
      return std::nullopt;  // sends, setsockopt, close, bind, listen
  }
  return s;
}

}  // namespace

std::optional<SlotCall> slot_of(const rdzv_bpf_inflight& in, const CallContext& ctx) {
  const int pid = static_cast<int>(in.tgid);
  const rdzv_record& r = in.c.rec;
  SlotCall s;
  s.tid = in.tid;
  std::optional<SlotCall> out;
  switch (in.from) {
    case RDZV_BPF_FROM_LOOKUP:
      s.kind = RDZV_EV_RESOLVE;
      s.op = r.op;
      s.start_ns = r.ts_ns;
      s.host.assign(r.u.resolve.host, strnlen(r.u.resolve.host, sizeof r.u.resolve.host));
      out = s;
      break;
    case RDZV_BPF_FROM_FOUND:
      if (r.kind == RDZV_EV_POLL) {  // a wait found at attach, its record made then (seed.cpp)
        store_sock ss{};
        if (!ctx.store_sock_of(pid, r.fd, &ss)) return std::nullopt;
        s.kind = r.kind;
        s.op = r.op;
        s.fd = r.fd;
        s.start_ns = r.ts_ns;
        s.timeout_ms = r.u.net.timeout_ms;
        s.flags = RDZV_F_PREEXISTING;
        wait_on(s, ss);
        out = s;
      } else {
        out = ctx.found_call(pid, in.tid);
      }
      break;
    case RDZV_BPF_FROM_ENTER:
      out = from_enter(pid, in.c, s, ctx);
      break;
    default:
      return std::nullopt;
  }
  if (out && !rdzv_inflight_publishes(out->kind, out->flags, out->timeout_ms)) return std::nullopt;
  return out;
}

void InflightSlots::sync(rdzv_file_header* h, const std::vector<SlotCall>& calls,
                         const std::set<std::uint32_t>& alive) {
  std::vector<bool> shown(calls.size(), false);
  std::set<std::uint32_t> missing;
  for (rdzv_inflight& s : h->inflight) {
    if (!owned(s)) continue;
    const std::uint32_t tid = s.owner;
    if (final_.count(tid)) continue;
    bool still = false;
    for (std::size_t i = 0; i < calls.size(); ++i)
      if (!shown[i] && same_call(s, calls[i])) still = shown[i] = true;
    if (still) continue;
    const bool in_another = std::any_of(calls.begin(), calls.end(), [&](const SlotCall& c) { return c.tid == tid; });
    if (in_another || alive.count(tid) || missing_.count(tid)) {
      rdzv_inflight_release(&s);
    } else {
      missing.insert(tid);  // gone: killed in the call, or over; the next pass tells
    }
  }
  missing_ = std::move(missing);
  for (std::size_t i = 0; i < calls.size(); ++i)
    if (!shown[i] && !final_.count(calls[i].tid)) publish(h, calls[i]);
}

void InflightSlots::returned(rdzv_file_header* h, const rdzv_record& r) {
  if (final_.count(r.tid)) return;
  for (rdzv_inflight& s : h->inflight)
    if (owned(s) && s.owner == r.tid && s.start_ns == r.ts_ns) rdzv_inflight_release(&s);
}

void InflightSlots::died(rdzv_file_header* h, std::uint32_t tid, const std::optional<SlotCall>& call) {
  // A second notice is no repeat: a thread killed in a lookup is told of twice, at the exit of
  // the resolver's own syscall (no slot of its own) and at its end (the lookup).
  final_.insert(tid);
  missing_.erase(tid);
  for (const rdzv_inflight& s : h->inflight)
    if (owned(s) && s.owner == tid) return;  // published at a pass: kept as it is
  if (call) publish(h, *call);
}

void InflightSlots::finish(rdzv_file_header* h) {
  for (rdzv_inflight& s : h->inflight)
    if (owned(s) && missing_.count(s.owner) && !final_.count(s.owner)) rdzv_inflight_release(&s);
  missing_.clear();
}

}  // namespace rdzvscope::bpf
