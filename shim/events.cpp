#include "events.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "rdzvscope/recorder_core.h"
#include "real_calls.h"

namespace rdzv {

Slot new_record(Create create, const EventHead& head) {
  Slot s = reserve_record(create);
  if (!s) return s;
  rdzv_record* r = s.rec;
  r->kind = head.kind;
  r->op = head.op;
  r->flags = head.flags;
  r->tid = static_cast<uint32_t>(syscall(SYS_gettid));
  r->ts_ns = head.ts_ns;
  r->dur_ns = head.dur_ns;
  r->ret = head.ret;
  r->fd = head.fd;
  r->err = head.err;
  return s;
}

EventHead call_head(rdzv_kind kind, rdzv_op op, uint16_t flags, int fd, uint64_t t0, int64_t r,
                    int err) {
  EventHead head{static_cast<uint8_t>(kind), static_cast<uint8_t>(op), flags};
  head.fd = fd;
  head.ts_ns = t0;
  head.dur_ns = mono_ns() - t0;
  head.ret = r;
  head.err = r < 0 ? err : 0;
  return head;
}

void record_net(const EventHead& head, const rdzv_ev_net& net) {
  if (Slot s = new_record(Create::IfNeeded, head)) {
    s.rec->u.net = net;
    commit_record(s);
  }
}

void to_trace_addr(const struct sockaddr* sa, socklen_t len, rdzv_sockaddr* out) {
  memset(out, 0, sizeof *out);
  if (!sa || len < static_cast<socklen_t>(sizeof(sa_family_t))) return;
  if (sa->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    out->family = AF_INET;
    out->port = ntohs(in->sin_port);
    memcpy(out->addr, &in->sin_addr, 4);
  } else if (sa->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    out->family = AF_INET6;
    out->port = ntohs(in6->sin6_port);
    out->scope_id = in6->sin6_scope_id;
    memcpy(out->addr, &in6->sin6_addr, 16);
  }
}

void local_addr_of(int fd, rdzv_sockaddr* out) {
  sockaddr_storage ss;
  socklen_t len = sizeof ss;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0)
    to_trace_addr(ss, len, out);
  else
    memset(out, 0, sizeof *out);
}

uint32_t tcp_state_of(int fd) {
  struct tcp_info info;
  socklen_t len = sizeof info;
  if (real::getsockopt()(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 || len < 1) return 0;
  return info.tcpi_state;
}

bool is_tcp_socket(int fd) {
  int domain = 0, type = 0;
  socklen_t len = sizeof domain;
  auto gso = real::getsockopt();
  if (gso(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0) return false;
  if (domain != AF_INET && domain != AF_INET6) return false;
  len = sizeof type;
  return gso(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
}

bool is_nonblocking(int fd) {
  int fl = real::fcntl()(fd, F_GETFL);
  return fl >= 0 && (fl & O_NONBLOCK);
}

namespace {
uint64_t g_last_failure_snapshot_ns;
}  // namespace

void record_snapshot(Create create, rdzv_snapshot_reason reason) {
  uint64_t now = mono_ns();
  if (reason == RDZV_SNAP_FAILURE && !rdzv_failure_snapshot_due(&g_last_failure_snapshot_ns, now))
    return;
  EventHead head{RDZV_EV_SNAPSHOT, static_cast<uint8_t>(reason)};
  head.ts_ns = now;
  Slot s = new_record(create, head);
  if (!s) return;
  rdzv_ev_snapshot& snap = s.rec->u.snap;
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) == 0) {
    snap.utime_us = static_cast<uint64_t>(ru.ru_utime.tv_sec) * 1000000 +
                    static_cast<uint64_t>(ru.ru_utime.tv_usec);
    snap.stime_us = static_cast<uint64_t>(ru.ru_stime.tv_sec) * 1000000 +
                    static_cast<uint64_t>(ru.ru_stime.tv_usec);
    snap.vol_ctxsw = static_cast<uint64_t>(ru.ru_nvcsw);
    snap.invol_ctxsw = static_cast<uint64_t>(ru.ru_nivcsw);
    snap.maxrss_kb = static_cast<uint64_t>(ru.ru_maxrss);
  }
  char io[512];
  if (rdzv_read_file("/proc/self/io", io, sizeof io) > 0) {
    snap.rchar = rdzv_proc_field(io, "rchar:");
    snap.wchar = rdzv_proc_field(io, "wchar:");
    snap.read_bytes = rdzv_proc_field(io, "\nread_bytes:");
    snap.write_bytes = rdzv_proc_field(io, "\nwrite_bytes:");
  }
  uint64_t start = process_start_realtime_ns();
  uint64_t rt = clock_ns(CLOCK_REALTIME);
  snap.since_start_ns = (start && rt > start) ? rt - start : 0;
  commit_record(s);
}

}  // namespace rdzv
