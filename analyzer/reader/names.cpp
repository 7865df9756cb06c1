#include "names.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <iterator>

#include <fmt/format.h>

namespace rdzvscope {
namespace {

template <class T>
struct Named {
  T value;
  const char* name;
};

// Linear lookup in small tables keyed by value, so that the tables cannot drift out of
// order with the enums they describe.
template <class T, std::size_t N, class V>
const char* find_name(const Named<T> (&table)[N], V value) {
  for (const auto& e : table) {
    if (static_cast<long long>(e.value) == static_cast<long long>(value)) return e.name;
  }
  return nullptr;
}

constexpr Named<rdzv_kind> kKinds[] = {
    {RDZV_EV_PROC_START, "proc_start"}, {RDZV_EV_PROC_EXIT, "proc_exit"},
    {RDZV_EV_FORK, "fork"},             {RDZV_EV_EXEC, "exec"},
    {RDZV_EV_SPAWN, "spawn"},           {RDZV_EV_SNAPSHOT, "snapshot"},
    {RDZV_EV_RESOLVE, "resolve"},       {RDZV_EV_CONNECT, "connect"},
    {RDZV_EV_CONNECT_DONE, "connect_done"}, {RDZV_EV_BIND, "bind"},
    {RDZV_EV_LISTEN, "listen"},         {RDZV_EV_ACCEPT, "accept"},
    {RDZV_EV_SEND, "send"},             {RDZV_EV_RECV, "recv"},
    {RDZV_EV_POLL, "poll"},             {RDZV_EV_SOCKOPT, "sockopt"},
    {RDZV_EV_CLOSE, "close"},           {RDZV_EV_TCP_STATE, "tcp_state"},
    {RDZV_EV_SIGNAL, "signal"},         {RDZV_EV_REAP, "reap"},
};
static_assert(std::size(kKinds) == RDZV_EV_KIND_MAX, "a name for every kind");

constexpr Named<rdzv_op> kOps[] = {
    {RDZV_OP_NONE, "none"},
    {RDZV_OP_GETADDRINFO, "getaddrinfo"},
    {RDZV_OP_GETHOSTBYNAME, "gethostbyname"},
    {RDZV_OP_GETHOSTBYNAME2, "gethostbyname2"},
    {RDZV_OP_GETHOSTBYNAME_R, "gethostbyname_r"},
    {RDZV_OP_GETHOSTBYNAME2_R, "gethostbyname2_r"},
    {RDZV_OP_GETNAMEINFO, "getnameinfo"},
    {RDZV_OP_CONNECT, "connect"},
    {RDZV_OP_BIND, "bind"},
    {RDZV_OP_LISTEN, "listen"},
    {RDZV_OP_ACCEPT, "accept"},
    {RDZV_OP_ACCEPT4, "accept4"},
    {RDZV_OP_SEND, "send"},
    {RDZV_OP_SENDTO, "sendto"},
    {RDZV_OP_SENDMSG, "sendmsg"},
    {RDZV_OP_WRITE, "write"},
    {RDZV_OP_WRITEV, "writev"},
    {RDZV_OP_RECV, "recv"},
    {RDZV_OP_RECVFROM, "recvfrom"},
    {RDZV_OP_RECVMSG, "recvmsg"},
    {RDZV_OP_READ, "read"},
    {RDZV_OP_POLL, "poll"},
    {RDZV_OP_PPOLL, "ppoll"},
    {RDZV_OP_SELECT, "select"},
    {RDZV_OP_PSELECT, "pselect"},
    {RDZV_OP_EPOLL_WAIT, "epoll_wait"},
    {RDZV_OP_EPOLL_PWAIT, "epoll_pwait"},
    {RDZV_OP_GETSOCKOPT, "getsockopt"},
    {RDZV_OP_SETSOCKOPT, "setsockopt"},
    {RDZV_OP_CLOSE, "close"},
    {RDZV_OP_FORK, "fork"},
    {RDZV_OP_VFORK, "vfork"},
    {RDZV_OP_POSIX_SPAWN, "posix_spawn"},
    {RDZV_OP_POSIX_SPAWNP, "posix_spawnp"},
    {RDZV_OP_EXEC, "exec"},
    {RDZV_OP_EXIT, "exit"},
    {RDZV_OP_UNDERSCORE_EXIT, "_exit"},
    {RDZV_OP_DESTRUCTOR, "destructor"},
    {RDZV_OP_INIT, "init"},
    {RDZV_OP_KERNEL, "kernel"},
    {RDZV_OP_SENDMMSG, "sendmmsg"},
    {RDZV_OP_RECVMMSG, "recvmmsg"},
    {RDZV_OP_KILL, "kill"},
    {RDZV_OP_KILLPG, "killpg"},
    {RDZV_OP_WAITPID, "waitpid"},
    {RDZV_OP_WAIT4, "wait4"},
    {RDZV_OP_WAIT, "wait"},
};
static_assert(std::size(kOps) == RDZV_OP_MAX, "a name for every op");

constexpr Named<unsigned> kFlags[] = {
    {RDZV_F_STORE, "store"},         {RDZV_F_NONBLOCK, "nonblock"},
    {RDZV_F_TIMEOUT, "timeout"},     {RDZV_F_ZERO_READ, "zero_read"},
    {RDZV_F_ABANDONED, "abandoned"}, {RDZV_F_STATUS_UNKNOWN, "status_unknown"},
    {RDZV_F_TRUNCATED, "truncated"}, {RDZV_F_PASSIVE, "passive"},
    {RDZV_F_REVERSE, "reverse"},     {RDZV_F_SOCK_ERROR, "sock_error"},
    {RDZV_F_RESET_RECEIVED, "reset_received"}, {RDZV_F_RESET_SENT, "reset_sent"},
    {RDZV_F_PREEXISTING, "preexisting"},       {RDZV_F_INJECTED, "injected"},
    {RDZV_F_PEER, "peer"},                     {RDZV_F_SIGNALED, "signaled"},
};

constexpr Named<unsigned> kFeatures[] = {
    {RDZV_FEAT_PROC_START, "proc_start"},
    {RDZV_FEAT_SNAPSHOTS, "snapshots"},
    {RDZV_FEAT_STORE_IO, "store_io"},
    {RDZV_FEAT_LOST_COUNTER, "lost_counter"},
    {RDZV_FEAT_ORIGIN, "origin"},
    {RDZV_FEAT_INFLIGHT, "inflight"},
    {RDZV_FEAT_TORCH_VERSION, "torch_version"},
    {RDZV_FEAT_STORE_RECV, "store_recv"},
};

constexpr Named<rdzv_snapshot_reason> kReasons[] = {
    {RDZV_SNAP_FIRST_STORE_CONNECT, "first_store_connect"},
    {RDZV_SNAP_FAILURE, "failure"},
    {RDZV_SNAP_EXIT, "exit"},
};

#define RDZV_E(name) {name, #name}
// The errnos that socket, resolver and process calls report. From <cerrno>: the analyzer
// runs on Linux like the writer, so the values agree.
constexpr Named<int> kErrnos[] = {
    RDZV_E(EPERM),        RDZV_E(ENOENT),          RDZV_E(ESRCH),
    RDZV_E(EINTR),        RDZV_E(EIO),             RDZV_E(ENXIO),
    RDZV_E(E2BIG),        RDZV_E(ENOEXEC),         RDZV_E(EBADF),
    RDZV_E(ECHILD),       RDZV_E(EAGAIN),          RDZV_E(ENOMEM),
    RDZV_E(EACCES),       RDZV_E(EFAULT),          RDZV_E(EBUSY),
    RDZV_E(EEXIST),       RDZV_E(ENODEV),          RDZV_E(ENOTDIR),
    RDZV_E(EISDIR),       RDZV_E(EINVAL),          RDZV_E(ENFILE),
    RDZV_E(EMFILE),       RDZV_E(ETXTBSY),         RDZV_E(ENOSPC),
    RDZV_E(ESPIPE),       RDZV_E(EROFS),           RDZV_E(EPIPE),
    RDZV_E(ERANGE),       RDZV_E(ENAMETOOLONG),    RDZV_E(ENOSYS),
    RDZV_E(ELOOP),        RDZV_E(ENODATA),         RDZV_E(ETIME),
    RDZV_E(EPROTO),       RDZV_E(EOVERFLOW),       RDZV_E(ENOTSOCK),
    RDZV_E(EDESTADDRREQ), RDZV_E(EMSGSIZE),        RDZV_E(EPROTOTYPE),
    RDZV_E(ENOPROTOOPT),  RDZV_E(EPROTONOSUPPORT), RDZV_E(ESOCKTNOSUPPORT),
    RDZV_E(EOPNOTSUPP),   RDZV_E(EPFNOSUPPORT),    RDZV_E(EAFNOSUPPORT),
    RDZV_E(EADDRINUSE),   RDZV_E(EADDRNOTAVAIL),   RDZV_E(ENETDOWN),
    RDZV_E(ENETUNREACH),  RDZV_E(ENETRESET),       RDZV_E(ECONNABORTED),
    RDZV_E(ECONNRESET),   RDZV_E(ENOBUFS),         RDZV_E(EISCONN),
    RDZV_E(ENOTCONN),     RDZV_E(ESHUTDOWN),       RDZV_E(ETIMEDOUT),
    RDZV_E(ECONNREFUSED), RDZV_E(EHOSTDOWN),       RDZV_E(EHOSTUNREACH),
    RDZV_E(EALREADY),     RDZV_E(EINPROGRESS),     RDZV_E(ECANCELED),
};

// glibc's values (<netdb.h>); spelled out because the GNU-only codes are hidden without
// _GNU_SOURCE and a trace from any glibc host must print the same names.
constexpr Named<int> kEai[] = {
    {-1, "EAI_BADFLAGS"},   {-2, "EAI_NONAME"},       {-3, "EAI_AGAIN"},
    {-4, "EAI_FAIL"},       {-5, "EAI_NODATA"},       {-6, "EAI_FAMILY"},
    {-7, "EAI_SOCKTYPE"},   {-8, "EAI_SERVICE"},      {-9, "EAI_ADDRFAMILY"},
    {-10, "EAI_MEMORY"},    {-11, "EAI_SYSTEM"},      {-12, "EAI_OVERFLOW"},
    {-100, "EAI_INPROGRESS"}, {-101, "EAI_CANCELED"}, {-102, "EAI_NOTCANCELED"},
    {-103, "EAI_ALLDONE"},  {-104, "EAI_INTR"},       {-105, "EAI_IDN_ENCODE"},
};
static_assert(EAI_NONAME == -2 && EAI_AGAIN == -3 && EAI_SYSTEM == -11,
              "glibc EAI_* values");

constexpr Named<int> kHErrno[] = {
    {1, "HOST_NOT_FOUND"}, {2, "TRY_AGAIN"}, {3, "NO_RECOVERY"}, {4, "NO_DATA"},
};

std::vector<std::string> bit_names(const Named<unsigned>* table, std::size_t n, unsigned bits) {
  std::vector<std::string> out;
  unsigned known = 0;
  for (std::size_t i = 0; i < n; ++i) {
    known |= table[i].value;
    if (bits & table[i].value) out.emplace_back(table[i].name);
  }
  for (unsigned b = 0; b < 32; ++b) {
    const unsigned bit = 1u << b;
    if ((bits & bit) && !(known & bit)) out.push_back("bit" + std::to_string(b));
  }
  return out;
}

template <class T, std::size_t N, class V>
std::string name_or(const Named<T> (&table)[N], V value, const char* prefix) {
  if (const char* n = find_name(table, value)) return n;
  return prefix + std::to_string(value);
}

}  // namespace

std::string kind_name(unsigned kind) { return name_or(kKinds, kind, "kind_"); }
std::string op_name(unsigned op) { return name_or(kOps, op, "op_"); }

std::vector<std::string> flag_names(unsigned flags) {
  return bit_names(kFlags, std::size(kFlags), flags);
}

std::vector<std::string> feature_names(unsigned features) {
  return bit_names(kFeatures, std::size(kFeatures), features);
}

std::string source_name(unsigned source) {
  if (source == RDZV_SOURCE_SHIM) return "shim";
  if (source == RDZV_SOURCE_BPF) return "bpf";
  return "source_" + std::to_string(source);
}

std::string snapshot_reason_name(unsigned reason) { return name_or(kReasons, reason, "reason_"); }
std::string errno_name(int err) { return name_or(kErrnos, err, "E"); }
std::string eai_name(int code) { return name_or(kEai, code, "EAI_"); }
std::string h_errno_name(int code) { return name_or(kHErrno, code, "h_errno_"); }

std::string resolver_error_name(unsigned op, std::int64_t ret) {
  switch (op) {
    case RDZV_OP_GETHOSTBYNAME:
    case RDZV_OP_GETHOSTBYNAME2:
    case RDZV_OP_GETHOSTBYNAME_R:
    case RDZV_OP_GETHOSTBYNAME2_R:
      return h_errno_name(static_cast<int>(ret));
    default:  // getaddrinfo, getnameinfo, and the bpf probe on getaddrinfo
      return eai_name(static_cast<int>(ret));
  }
}

std::optional<std::string> format_sockaddr(const rdzv_sockaddr& sa) {
  const std::string port = std::to_string(sa.port);
  char buf[INET6_ADDRSTRLEN] = {};
  switch (sa.family) {
    case 0:
      return std::nullopt;
    case AF_INET:
      inet_ntop(AF_INET, sa.addr, buf, sizeof buf);
      return std::string(buf) + ":" + port;
    case AF_INET6: {
      inet_ntop(AF_INET6, sa.addr, buf, sizeof buf);
      std::string host(buf);
      if (sa.scope_id != 0) host += "%" + std::to_string(sa.scope_id);
      return "[" + host + "]:" + port;
    }
    default:  // AF_UNIX and others carry no address in the record
      return "family_" + std::to_string(sa.family) + ":" + port;
  }
}

std::string bounded_string(const char* field, std::size_t size) {
  std::size_t n = 0;
  while (n < size && field[n] != '\0') ++n;
  return std::string(field, n);
}

std::string iso8601_utc(std::int64_t realtime_ns) {
  // Floor division, so that times before 1970 (garbage clocks) still format consistently.
  std::int64_t secs = realtime_ns / 1000000000;
  std::int64_t rem = realtime_ns % 1000000000;
  if (rem < 0) {
    rem += 1000000000;
    secs -= 1;
  }
  const std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr) return "invalid-time(" + std::to_string(realtime_ns) + "ns)";
  char date[40];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", date, static_cast<int>(rem / 1000000));
}

std::int64_t wall_ns(const rdzv_file_header& h, std::uint64_t ts_ns) {
  return static_cast<std::int64_t>(h.clock_realtime_ns + (ts_ns - h.clock_monotonic_ns));
}

}  // namespace rdzvscope
