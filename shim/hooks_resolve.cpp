// Name resolution: getaddrinfo, gethostbyname*, getnameinfo. The resolver's own sockets
// (DNS over UDP, nscd over AF_UNIX) run inside the guard and are not recorded.
#include <errno.h>
#include <netdb.h>
#include <string.h>

#include "clock.h"
#include "events.h"
#include "guard.h"
#include "hook.h"
#include "inflight.h"
#include "inject.h"
#include "real_calls.h"
#include "text.h"

using namespace rdzv;

namespace {

struct Lookup {
  const char* host;
  const char* service;
  int family = 0;
  int socktype = 0;
  int ai_flags = 0;
  uint16_t flags = 0;
};

void record_lookup(rdzv_op op, const Lookup& q, uint64_t t0, int64_t ret, int err,
                   uint32_t naddrs, const rdzv_sockaddr& first) {
  EventHead head{RDZV_EV_RESOLVE, static_cast<uint8_t>(op), q.flags};
  head.ts_ns = t0;
  head.dur_ns = mono_ns() - t0;
  head.ret = ret;
  head.err = err;
  Slot s = new_record(Create::IfNeeded, head);
  if (!s) return;
  rdzv_ev_resolve& r = s.rec->u.resolve;
  bool cut = copy_cut(r.host, sizeof r.host, q.host);
  cut |= copy_cut(r.service, sizeof r.service, q.service);
  if (cut) s.rec->flags |= RDZV_F_TRUNCATED;
  r.family = q.family;
  r.socktype = q.socktype;
  r.ai_flags = q.ai_flags;
  r.naddrs = naddrs;
  r.first = first;
  commit_record(s);
}

void hostent_summary(const hostent* he, uint32_t* naddrs, rdzv_sockaddr* first) {
  *naddrs = 0;
  memset(first, 0, sizeof *first);
  if (!he || !he->h_addr_list) return;
  for (char** a = he->h_addr_list; *a; ++a) ++*naddrs;
  if (*naddrs == 0) return;
  if (he->h_addrtype == AF_INET && he->h_length == 4) {
    first->family = AF_INET;
    memcpy(first->addr, he->h_addr_list[0], 4);
  } else if (he->h_addrtype == AF_INET6 && he->h_length == 16) {
    first->family = AF_INET6;
    memcpy(first->addr, he->h_addr_list[0], 16);
  }
}

// A gethostbyname* answer: he is null on failure, herr its h_errno; r is what the _r
// variants return (0 for the others).
void record_hostent(rdzv_op op, const char* name, int family, uint64_t t0, const hostent* he,
                    int herr, int r) {
  uint32_t n;
  rdzv_sockaddr first;
  hostent_summary(he, &n, &first);
  Lookup q{name, nullptr};
  q.family = family;
  record_lookup(op, q, t0, herr ? herr : r, r, n, first);
}

}  // namespace

// The hooks, in the shim's one form (hook.h), but for the guard, which is held across the
// real call too: the resolver's own sockets (DNS over UDP, nscd) are not the host's.
extern "C" {

RDZV_EXPORT int getaddrinfo(const char* node, const char* service, const struct addrinfo* hints,
                            struct addrinfo** res) {
  auto fn = real::getaddrinfo();
  if (in_guard()) return fn(node, service, hints, res);
  Guard resolver_guard;
  uint64_t t0 = mono_ns();
  // Rehearsal (inject.h): the lookup of the store host fails as if the name were unknown.
  const bool injected = inject_on() && inject_resolve_fail(node, hints ? hints->ai_flags : 0);
  rdzv_inflight* inflight = injected ? nullptr : inflight_begin_lookup(RDZV_OP_GETADDRINFO, node, t0);
  int r = injected ? EAI_NONAME : fn(node, service, hints, res);
  inflight_end(inflight);
  RecordScope scope;
  Lookup q{node, service};
  if (injected) q.flags |= RDZV_F_INJECTED;
  if (hints) {
    q.family = hints->ai_family;
    q.socktype = hints->ai_socktype;
    q.ai_flags = hints->ai_flags;
    if (hints->ai_flags & AI_PASSIVE) q.flags |= RDZV_F_PASSIVE;
  }
  uint32_t n = 0;
  rdzv_sockaddr first{};
  if (r == 0 && res && *res) {
    for (const addrinfo* ai = *res; ai; ai = ai->ai_next) ++n;
    to_trace_addr((*res)->ai_addr, (*res)->ai_addrlen, &first);
  }
  record_lookup(RDZV_OP_GETADDRINFO, q, t0, r, r == EAI_SYSTEM ? scope.call_errno() : 0, n, first);
  return r;
}

RDZV_EXPORT struct hostent* gethostbyname(const char* name) {
  auto fn = real::gethostbyname();
  if (in_guard()) return fn(name);
  Guard resolver_guard;
  uint64_t t0 = mono_ns();
  rdzv_inflight* inflight = inflight_begin_lookup(RDZV_OP_GETHOSTBYNAME, name, t0);
  hostent* he = fn(name);
  inflight_end(inflight);
  RecordScope scope;
  record_hostent(RDZV_OP_GETHOSTBYNAME, name, 0, t0, he, he ? 0 : h_errno, 0);
  return he;
}

RDZV_EXPORT struct hostent* gethostbyname2(const char* name, int af) {
  auto fn = real::gethostbyname2();
  if (in_guard()) return fn(name, af);
  Guard resolver_guard;
  uint64_t t0 = mono_ns();
  rdzv_inflight* inflight = inflight_begin_lookup(RDZV_OP_GETHOSTBYNAME2, name, t0);
  hostent* he = fn(name, af);
  inflight_end(inflight);
  RecordScope scope;
  record_hostent(RDZV_OP_GETHOSTBYNAME2, name, af, t0, he, he ? 0 : h_errno, 0);
  return he;
}

// The _r variants return ERANGE when the caller's buffer is small and the caller retries with
// a bigger one: only the final answer is recorded.
RDZV_EXPORT int gethostbyname_r(const char* name, struct hostent* ret, char* buf, size_t buflen,
                                struct hostent** result, int* h_errnop) {
  auto fn = real::gethostbyname_r();
  if (in_guard()) return fn(name, ret, buf, buflen, result, h_errnop);
  Guard resolver_guard;
  uint64_t t0 = mono_ns();
  rdzv_inflight* inflight = inflight_begin_lookup(RDZV_OP_GETHOSTBYNAME_R, name, t0);
  int r = fn(name, ret, buf, buflen, result, h_errnop);
  inflight_end(inflight);
  RecordScope scope;
  if (r != ERANGE) {
    const hostent* he = result ? *result : nullptr;
    record_hostent(RDZV_OP_GETHOSTBYNAME_R, name, 0, t0, he, he ? 0 : (h_errnop ? *h_errnop : 0),
                   r);
  }
  return r;
}

RDZV_EXPORT int gethostbyname2_r(const char* name, int af, struct hostent* ret, char* buf,
                                 size_t buflen, struct hostent** result, int* h_errnop) {
  auto fn = real::gethostbyname2_r();
  if (in_guard()) return fn(name, af, ret, buf, buflen, result, h_errnop);
  Guard resolver_guard;
  uint64_t t0 = mono_ns();
  rdzv_inflight* inflight = inflight_begin_lookup(RDZV_OP_GETHOSTBYNAME2_R, name, t0);
  int r = fn(name, af, ret, buf, buflen, result, h_errnop);
  inflight_end(inflight);
  RecordScope scope;
  if (r != ERANGE) {
    const hostent* he = result ? *result : nullptr;
    record_hostent(RDZV_OP_GETHOSTBYNAME2_R, name, af, t0, he,
                   he ? 0 : (h_errnop ? *h_errnop : 0), r);
  }
  return r;
}

// Reverse lookups: recent c10d resolves the peer's name on every connect, and a failure there
// ("The hostname of the client socket cannot be retrieved") is name-resolution evidence too.
RDZV_EXPORT int getnameinfo(const struct sockaddr* sa, socklen_t salen, char* host,
                            socklen_t hostlen, char* serv, socklen_t servlen, int flags) {
  auto fn = real::getnameinfo();
  if (in_guard()) return fn(sa, salen, host, hostlen, serv, servlen, flags);
  Guard resolver_guard;
  uint64_t t0 = mono_ns();
  int r = fn(sa, salen, host, hostlen, serv, servlen, flags);
  RecordScope scope;
  rdzv_sockaddr addr;
  to_trace_addr(sa, salen, &addr);
  Lookup q{(r == 0 && host && hostlen) ? host : nullptr,
           (r == 0 && serv && servlen) ? serv : nullptr};
  q.ai_flags = flags;
  q.family = addr.family;
  q.flags = RDZV_F_REVERSE;
  record_lookup(RDZV_OP_GETNAMEINFO, q, t0, r, r == EAI_SYSTEM ? scope.call_errno() : 0,
                addr.family ? 1 : 0, addr);
  return r;
}

}  // extern "C"
