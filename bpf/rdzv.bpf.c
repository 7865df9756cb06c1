// SPDX-License-Identifier: GPL-2.0
/* rdzvscope attach: the kernel side. Records, for the target processes only, the socket calls
 * of a rendezvous (connect, bind, listen, accept, close), what the kernel decided about them
 * (TCP state changes, socket errors), getaddrinfo (uprobe on the target's libc), fork and
 * exit. Every event leaves as a ready trace record through one ring buffer; events that do not
 * fit are counted per CPU in `lost`.
 *
 * Only program types that work on the test bed's kernel (design/testbed.md): raw_tp (syscall
 * enter/exit: no tracefs needed), tp_btf (sock:, sched:) and uprobes. No kprobes, no fentry.
 * x86_64 only: syscall numbers and pt_regs fields below are that ABI's. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "rdzv.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader between open and load. */
const volatile bool trace_all = false;    /* --all: every process (still filtered by port) */
const volatile bool filter_ports = false; /* --port given: per-call events on these ports only */
const volatile __u32 self_tgid = 0;       /* the loader itself, never traced */
const volatile __u16 ports[RDZV_BPF_MAX_PORTS] = {}; /* store ports; 0 = unused */

#define NR_close 3
#define NR_connect 42
#define NR_accept 43
#define NR_bind 49
#define NR_listen 50
#define NR_accept4 288

#define AF_INET 2
#define AF_INET6 10
#define SOCK_STREAM 1
#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define O_NONBLOCK 04000
#define EINPROGRESS 115
#define EAGAIN 11
#define EINTR 4
#define AI_PASSIVE 1
#define TCP_SYN_SENT 2
#define TCP_CLOSE 7

/* tgid -> 1. The explicit targets (--pid, --comm), their children, and with --all every
 * process the loader has already seen. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 8192);
  __type(key, __u32);
  __type(value, __u8);
} targets SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, RDZV_BPF_RINGBUF_BYTES);
} events SEC(".maps");

/* Events that found the ring buffer full: the loader sums the CPUs into header.lost. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} lost SEC(".maps");

/* A syscall between its enter and its exit, per thread: the record as far as it is known. */
struct call {
  __u64 id;
  void *sk; /* connect: the socket, to forget a pending connect that finished synchronously */
  struct rdzv_record rec;
};
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);
  __type(value, struct call);
} calls SEC(".maps");

/* getaddrinfo between its entry and its return, per thread. */
struct gai_call {
  __u64 res_ptr;
  struct rdzv_record rec;
};
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u32);
  __type(value, struct gai_call);
} gai_calls SEC(".maps");

/* Which target owns a socket: state changes and errors arrive in softirq context, on whatever
 * task happens to run, so the owner is remembered when the target itself touches the socket. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, __u64);
  __type(value, __u32);
} sk_owner SEC(".maps");

/* Non-blocking connects still in SYN_SENT: their CONNECT record, reused for CONNECT_DONE. */
struct pending {
  __u32 tgid;
  __u32 reserved;
  struct rdzv_record rec;
};
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 4096);
  __type(key, __u64);
  __type(value, struct pending);
} pending_connects SEC(".maps");

/* Scratch space: records are too big for the 512-byte BPF stack several times over. */
union scratch_space {
  struct call call;
  struct gai_call gai;
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, union scratch_space);
} scratch SEC(".maps");

/* Addresses of getaddrinfo's struct addrinfo (x86_64 glibc layout). */
struct user_addrinfo {
  int ai_flags;
  int ai_family;
  int ai_socktype;
  int ai_protocol;
  __u32 ai_addrlen;
  void *ai_addr;
  char *ai_canonname;
  struct user_addrinfo *ai_next;
};

static __always_inline bool is_target(__u32 tgid) {
  if (tgid == self_tgid) return false;
  if (trace_all) return true;
  return bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

static __always_inline bool known_target(__u32 tgid) {
  return tgid != self_tgid && bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

static __always_inline bool is_store_port(__u16 port) {
  if (!port) return false;
  for (int i = 0; i < RDZV_BPF_MAX_PORTS; i++) {
    if (ports[i] == port) return true;
  }
  return false;
}

/* Per-call events: with --port, only those on the given ports. */
static __always_inline bool wanted_port(__u16 a, __u16 b) {
  return !filter_ports || is_store_port(a) || is_store_port(b);
}

static __always_inline void count_lost(void) {
  __u32 zero = 0;
  __u64 *n = bpf_map_lookup_elem(&lost, &zero);
  if (n) __sync_fetch_and_add(n, 1);
}

static __always_inline void emit(__u32 tgid, const struct rdzv_record *rec) {
  struct rdzv_bpf_event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
  if (!ev) {
    count_lost();
    return;
  }
  ev->tgid = tgid;
  ev->reserved = 0;
  __builtin_memcpy(&ev->rec, rec, sizeof(*rec));
  ev->rec.seal = 0;
  bpf_ringbuf_submit(ev, 0);
}

static __always_inline struct rdzv_record *scratch_record(void) {
  __u32 zero = 0;
  union scratch_space *s = bpf_map_lookup_elem(&scratch, &zero);
  if (!s) return NULL;
  __builtin_memset(s, 0, sizeof(*s));
  return &s->gai.rec;
}

/* The struct socket behind a descriptor of the current task, or NULL when it is not one. */
static __always_inline struct socket *socket_of_fd(long fd) {
  struct task_struct *task = (struct task_struct *)bpf_get_current_task();
  struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
  if (!fdt || fd < 0 || fd >= BPF_CORE_READ(fdt, max_fds)) return NULL;
  struct file **fds = BPF_CORE_READ(fdt, fd);
  struct file *file = NULL;
  bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]);
  if (!file) return NULL;
  umode_t mode = BPF_CORE_READ(file, f_inode, i_mode);
  if ((mode & S_IFMT) != S_IFSOCK) return NULL;
  return (struct socket *)BPF_CORE_READ(file, private_data);
}

static __always_inline __u32 file_flags_of_fd(long fd) {
  struct task_struct *task = (struct task_struct *)bpf_get_current_task();
  struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
  if (!fdt || fd < 0 || fd >= BPF_CORE_READ(fdt, max_fds)) return 0;
  struct file **fds = BPF_CORE_READ(fdt, fd);
  struct file *file = NULL;
  bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]);
  return file ? BPF_CORE_READ(file, f_flags) : 0;
}

/* A TCP socket of an inet family, else NULL. */
static __always_inline struct sock *tcp_sock_of_fd(long fd) {
  struct socket *sock = socket_of_fd(fd);
  if (!sock || BPF_CORE_READ(sock, type) != SOCK_STREAM) return NULL;
  struct sock *sk = BPF_CORE_READ(sock, sk);
  if (!sk) return NULL;
  __u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
  return (family == AF_INET || family == AF_INET6) ? sk : NULL;
}

static __always_inline void sk_addrs(const struct sock *sk, struct rdzv_sockaddr *local,
                                     struct rdzv_sockaddr *peer) {
  __u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
  __u16 lport = BPF_CORE_READ(sk, __sk_common.skc_num);
  __u16 dport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
  if (family == AF_INET) {
    bpf_core_read(local->addr, 4, &sk->__sk_common.skc_rcv_saddr);
    bpf_core_read(peer->addr, 4, &sk->__sk_common.skc_daddr);
  } else if (family == AF_INET6) {
    bpf_core_read(local->addr, 16, &sk->__sk_common.skc_v6_rcv_saddr);
    bpf_core_read(peer->addr, 16, &sk->__sk_common.skc_v6_daddr);
  } else {
    return;
  }
  local->family = family;
  local->port = lport;
  if (dport) {
    peer->family = family;
    peer->port = dport;
  }
}

/* A user sockaddr (as given to connect/bind) -> trace address; false when not inet. */
static __always_inline bool user_sockaddr(const void *uaddr, __u32 len, struct rdzv_sockaddr *out) {
  __u16 family = 0;
  if (!uaddr || bpf_probe_read_user(&family, sizeof(family), uaddr)) return false;
  if (family == AF_INET && len >= sizeof(struct sockaddr_in)) {
    struct sockaddr_in in = {};
    if (bpf_probe_read_user(&in, sizeof(in), uaddr)) return false;
    out->family = AF_INET;
    out->port = bpf_ntohs(in.sin_port);
    __builtin_memcpy(out->addr, &in.sin_addr, 4);
    return true;
  }
  if (family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
    struct sockaddr_in6 in6 = {};
    if (bpf_probe_read_user(&in6, sizeof(in6), uaddr)) return false;
    out->family = AF_INET6;
    out->port = bpf_ntohs(in6.sin6_port);
    out->scope_id = in6.sin6_scope_id;
    __builtin_memcpy(out->addr, &in6.sin6_addr, 16);
    return true;
  }
  return false;
}

static __always_inline __u16 store_flag(__u16 a, __u16 b) {
  return (is_store_port(a) || is_store_port(b)) ? RDZV_F_STORE : 0;
}

static __always_inline void remember_owner(const struct sock *sk, __u32 tgid) {
  __u64 key = (__u64)sk;
  bpf_map_update_elem(&sk_owner, &key, &tgid, BPF_ANY);
}

SEC("raw_tp/sys_enter")
int BPF_PROG(rdzv_sys_enter, struct pt_regs *regs, long id) {
  if (id != NR_connect && id != NR_bind && id != NR_listen && id != NR_accept &&
      id != NR_accept4 && id != NR_close)
    return 0;
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  __u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
  if (!is_target(tgid)) return 0;

  long fd = (long)BPF_CORE_READ(regs, di);
  struct sock *sk = tcp_sock_of_fd(fd);
  if (!sk) return 0; /* nscd's AF_UNIX, the resolver's UDP sockets, files */

  __u32 zero = 0;
  union scratch_space *s = bpf_map_lookup_elem(&scratch, &zero);
  if (!s) return 0;
  __builtin_memset(s, 0, sizeof(*s));
  struct call *c = &s->call;
  struct rdzv_record *r = &c->rec;
  c->id = id;
  r->tid = tid;
  r->ts_ns = bpf_ktime_get_ns();
  r->fd = fd;
  r->u.net.timeout_ms = -1;
  bool nonblock = file_flags_of_fd(fd) & O_NONBLOCK;

  if (id == NR_connect || id == NR_bind) {
    struct rdzv_sockaddr a = {};
    if (!user_sockaddr((const void *)BPF_CORE_READ(regs, si), (__u32)BPF_CORE_READ(regs, dx), &a))
      return 0;
    if (!wanted_port(a.port, 0)) return 0;
    if (id == NR_connect) {
      r->kind = RDZV_EV_CONNECT;
      r->op = RDZV_OP_CONNECT;
      r->flags = store_flag(a.port, 0) | (nonblock ? RDZV_F_NONBLOCK : 0);
      r->u.net.peer = a;
      c->sk = sk;
      remember_owner(sk, tgid);
      if (nonblock) {
        /* Its outcome may be decided (loopback) before the syscall even returns. */
        struct pending p = {};
        p.tgid = tgid;
        __builtin_memcpy(&p.rec, r, sizeof(p.rec));
        __u64 key = (__u64)sk;
        bpf_map_update_elem(&pending_connects, &key, &p, BPF_ANY);
      }
    } else {
      r->kind = RDZV_EV_BIND;
      r->op = RDZV_OP_BIND;
      r->flags = store_flag(a.port, 0);
      r->u.net.local = a;
    }
  } else {
    struct rdzv_sockaddr local = {}, peer = {};
    sk_addrs(sk, &local, &peer);
    if (!wanted_port(local.port, peer.port)) return 0;
    r->flags = store_flag(local.port, peer.port);
    if (id == NR_listen) {
      r->kind = RDZV_EV_LISTEN;
      r->op = RDZV_OP_LISTEN;
      r->u.net.local = local;
      r->u.net.size = (__u64)BPF_CORE_READ(regs, si);
    } else if (id == NR_close) {
      /* As the shim: only the closing of a store socket is worth a record. */
      if (!r->flags) return 0;
      r->kind = RDZV_EV_CLOSE;
      r->op = RDZV_OP_CLOSE;
      r->u.close.local = local;
      r->u.close.peer = peer;
      r->u.close.tcp_state = BPF_CORE_READ(sk, __sk_common.skc_state);
      r->u.close.bytes_recv = 0; /* shares its bytes with net.timeout_ms */
    } else {
      r->kind = RDZV_EV_ACCEPT;
      r->op = id == NR_accept ? RDZV_OP_ACCEPT : RDZV_OP_ACCEPT4;
      if (id == NR_accept4 && (BPF_CORE_READ(regs, r10) & O_NONBLOCK)) r->flags |= RDZV_F_NONBLOCK;
      r->u.net.local = local;
    }
  }
  bpf_map_update_elem(&calls, &tid, c, BPF_ANY);
  return 0;
}

SEC("raw_tp/sys_exit")
int BPF_PROG(rdzv_sys_exit, struct pt_regs *regs, long ret) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  __u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
  struct call *c = bpf_map_lookup_elem(&calls, &tid);
  if (!c) return 0; /* the common case: one lookup */
  struct rdzv_record *r = &c->rec;
  long id = BPF_CORE_READ(regs, orig_ax);
  if (id != (long)c->id) return 0; /* not the call we saw enter (cannot happen, but cheap) */

  r->dur_ns = bpf_ktime_get_ns() - r->ts_ns;
  /* As libc returns it: -1 and errno. */
  r->ret = ret < 0 ? -1 : ret;
  r->err = ret < 0 ? -ret : 0;

  if (c->id == NR_connect) {
    if (ret != -EINPROGRESS) {
      __u64 key = (__u64)c->sk;
      bpf_map_delete_elem(&pending_connects, &key);
    }
    if (ret == 0 && c->sk) {
      struct rdzv_sockaddr peer = {};
      sk_addrs(c->sk, &r->u.net.local, &peer);
    }
  } else if ((c->id == NR_accept || c->id == NR_accept4)) {
    if (ret < 0 && (-ret == EAGAIN || -ret == EINTR)) goto out; /* as the shim */
    if (ret >= 0) {
      r->fd = ret;
      struct sock *nsk = tcp_sock_of_fd(ret);
      if (nsk) {
        sk_addrs(nsk, &r->u.net.local, &r->u.net.peer);
        remember_owner(nsk, tgid);
      }
    }
  } else if (c->id == NR_listen) {
    struct sock *sk = tcp_sock_of_fd(r->fd);
    if (sk) remember_owner(sk, tgid);
  }
  emit(tgid, r);
out:
  bpf_map_delete_elem(&calls, &tid);
  return 0;
}

/* The kernel's view of a connection: SYN_SENT -> CLOSE is a failed connect, blocking or not. */
SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(rdzv_set_state, const struct sock *sk, int oldstate, int newstate) {
  if (BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP) return 0;
  __u64 key = (__u64)sk;
  __u32 *owner = bpf_map_lookup_elem(&sk_owner, &key);
  if (!owner) return 0;
  __u32 tgid = *owner;
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  if (oldstate == TCP_CLOSE && (pid_tgid >> 32) != tgid) {
    /* Leaving CLOSE happens in the task that connects or listens: a socket reused by
     * another process (entries outlive CLOSE, for the error report that follows it). */
    bpf_map_delete_elem(&sk_owner, &key);
    return 0;
  }
  struct rdzv_record *r = scratch_record();
  if (!r) return 0;
  sk_addrs(sk, &r->u.net.local, &r->u.net.peer);
  if (!wanted_port(r->u.net.local.port, r->u.net.peer.port)) return 0;
  r->kind = RDZV_EV_TCP_STATE;
  r->op = RDZV_OP_KERNEL;
  r->flags = store_flag(r->u.net.local.port, r->u.net.peer.port);
  r->tid = (pid_tgid >> 32) == tgid ? (__u32)pid_tgid : 0;
  r->ts_ns = bpf_ktime_get_ns();
  r->fd = -1;
  r->u.net.timeout_ms = -1;
  r->u.net.tcp_state = newstate;
  r->u.net.size = oldstate;
  r->err = newstate == TCP_CLOSE ? BPF_CORE_READ(sk, sk_err) : 0;
  emit(tgid, r);

  if (oldstate == TCP_SYN_SENT) {
    struct pending *p = bpf_map_lookup_elem(&pending_connects, &key);
    if (p) {
      /* The outcome of a non-blocking connect, as SO_ERROR would report it. */
      p->rec.kind = RDZV_EV_CONNECT_DONE;
      p->rec.op = RDZV_OP_KERNEL; /* decided by the kernel, not read by a libc call */
      p->rec.dur_ns = r->ts_ns - p->rec.ts_ns;
      p->rec.ts_ns = r->ts_ns;
      p->rec.err = newstate == TCP_CLOSE ? r->err : 0;
      p->rec.ret = p->rec.err ? -1 : 0;
      p->rec.u.net.local = r->u.net.local;
      p->rec.u.net.tcp_state = newstate;
      emit(p->tgid, &p->rec);
      bpf_map_delete_elem(&pending_connects, &key);
    }
  }
  return 0;
}

/* The socket error (ECONNREFUSED, ETIMEDOUT, EPIPE, ECONNRESET...). Recorded as a tcp_state
 * record whose old and new states are equal and whose errno is the error. */
SEC("tp_btf/inet_sk_error_report")
int BPF_PROG(rdzv_error_report, const struct sock *sk) {
  __u64 key = (__u64)sk;
  __u32 *owner = bpf_map_lookup_elem(&sk_owner, &key);
  if (!owner) return 0;
  __u32 tgid = *owner;
  int err = BPF_CORE_READ(sk, sk_err);
  if (!err) return 0; /* tcp_disconnect reports "no error" on close */
  struct rdzv_record *r = scratch_record();
  if (!r) return 0;
  sk_addrs(sk, &r->u.net.local, &r->u.net.peer);
  if (!wanted_port(r->u.net.local.port, r->u.net.peer.port)) return 0;
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  __u32 state = BPF_CORE_READ(sk, __sk_common.skc_state);
  r->kind = RDZV_EV_TCP_STATE;
  r->op = RDZV_OP_KERNEL;
  r->flags = store_flag(r->u.net.local.port, r->u.net.peer.port);
  r->tid = (pid_tgid >> 32) == tgid ? (__u32)pid_tgid : 0;
  r->ts_ns = bpf_ktime_get_ns();
  r->fd = -1;
  r->ret = -1;
  r->err = err;
  r->u.net.timeout_ms = -1;
  r->u.net.tcp_state = state;
  r->u.net.size = state;
  emit(tgid, r);
  return 0;
}

SEC("uprobe")
int BPF_KPROBE(rdzv_gai_enter, const char *node, const char *service,
               const struct user_addrinfo *hints, void *res) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  __u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
  if (!(trace_all ? known_target(tgid) : is_target(tgid))) return 0;
  __u32 zero = 0;
  union scratch_space *s = bpf_map_lookup_elem(&scratch, &zero);
  if (!s) return 0;
  __builtin_memset(s, 0, sizeof(*s));
  struct gai_call *g = &s->gai;
  struct rdzv_record *r = &g->rec;
  g->res_ptr = (__u64)res;
  r->kind = RDZV_EV_RESOLVE;
  r->op = RDZV_OP_GETADDRINFO;
  r->tid = tid;
  r->ts_ns = bpf_ktime_get_ns();
  r->fd = -1;
  if (node) {
    long n = bpf_probe_read_user_str(r->u.resolve.host, sizeof(r->u.resolve.host), node);
    if (n == sizeof(r->u.resolve.host)) r->flags |= RDZV_F_TRUNCATED;
  }
  if (service) bpf_probe_read_user_str(r->u.resolve.service, sizeof(r->u.resolve.service), service);
  if (hints) {
    struct user_addrinfo h = {};
    if (!bpf_probe_read_user(&h, sizeof(h), hints)) {
      r->u.resolve.family = h.ai_family;
      r->u.resolve.socktype = h.ai_socktype;
      r->u.resolve.ai_flags = h.ai_flags;
      if (h.ai_flags & AI_PASSIVE) r->flags |= RDZV_F_PASSIVE;
    }
  }
  bpf_map_update_elem(&gai_calls, &tid, g, BPF_ANY);
  return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(rdzv_gai_exit, int ret) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  __u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
  struct gai_call *g = bpf_map_lookup_elem(&gai_calls, &tid);
  if (!g) return 0;
  struct rdzv_record *r = &g->rec;
  r->dur_ns = bpf_ktime_get_ns() - r->ts_ns;
  r->ret = ret;
  if (ret == 0 && g->res_ptr) {
    struct user_addrinfo *ai = NULL;
    bpf_probe_read_user(&ai, sizeof(ai), (void *)g->res_ptr);
    for (int i = 0; i < 16 && ai; i++) {
      struct user_addrinfo cur = {};
      if (bpf_probe_read_user(&cur, sizeof(cur), ai)) break;
      if (i == 0) user_sockaddr(cur.ai_addr, cur.ai_addrlen, &r->u.resolve.first);
      r->u.resolve.naddrs++;
      ai = cur.ai_next;
    }
  }
  emit(tgid, r);
  bpf_map_delete_elem(&gai_calls, &tid);
  return 0;
}

/* A target's children are targets: the loader opens their files on their first event. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(rdzv_fork, struct task_struct *parent, struct task_struct *child) {
  __u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);
  if (ptgid == ctgid || !known_target(ptgid)) return 0; /* a new thread, or not ours */
  __u8 one = 1;
  bpf_map_update_elem(&targets, &ctgid, &one, BPF_ANY);
  struct rdzv_record *r = scratch_record();
  if (!r) return 0;
  r->kind = RDZV_EV_FORK;
  r->op = RDZV_OP_KERNEL;
  r->tid = BPF_CORE_READ(parent, pid);
  r->ts_ns = bpf_ktime_get_ns();
  r->fd = -1;
  r->ret = ctgid;
  r->u.proc.child_pid = ctgid;
  emit(ptgid, r);
  return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(rdzv_exit, struct task_struct *task) {
  __u32 tgid = BPF_CORE_READ(task, tgid);
  if (BPF_CORE_READ(task, pid) != tgid || !known_target(tgid)) return 0; /* leader only */
  struct rdzv_record *r = scratch_record();
  if (!r) return 0;
  int code = BPF_CORE_READ(task, exit_code);
  r->kind = RDZV_EV_PROC_EXIT;
  r->op = RDZV_OP_KERNEL;
  r->tid = tgid;
  r->ts_ns = bpf_ktime_get_ns();
  r->fd = -1;
  r->u.proc.child_pid = -1;
  /* wait(2) encoding: the signal number when killed, else the exit code. */
  r->u.proc.status = (code & 0x7f) ? (code & 0x7f) : ((code >> 8) & 0xff);
  emit(tgid, r);
  bpf_map_delete_elem(&targets, &tgid);
  return 0;
}
