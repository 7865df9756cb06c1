// SPDX-License-Identifier: GPL-2.0
/* rdzvscope attach: the kernel side. Records, for the target processes only, the socket calls
 * of a rendezvous (connect, bind, listen, accept, close), what the kernel decided about them
 * (TCP state changes, socket errors), getaddrinfo (uprobe on the target's libc), fork and
 * exit; and, on store sockets only, every send/recv/read/write result, poll timeouts and
 * SO_*TIMEO changes (store_io.bpf.h), select and epoll timeouts (waits.bpf.h), as the shim
 * records them, on a table of store sockets kept true across dup, fork, close_range and exec
 * (fd_copies.bpf.h). Every event leaves as a ready trace record through one ring buffer;
 * events that do not fit are counted per CPU in `lost`.
 *
 * Only program types that work on the test bed's kernel (README: test bed): tp_btf (syscall
 * enter/exit, sock:, sched:; no tracefs needed; a typed pt_regs is read with plain loads, not
 * a helper call per register), uprobes, and one iterator (iter/task_file, checked here:
 * bpf.seeded_sockets) run once at start. No kprobes, no fentry.
 * x86_64 only: syscall numbers and pt_regs fields below are that ABI's. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "rdzv.h"
#include "rdzv_maps.bpf.h"
#include "rdzv_sock.bpf.h"
#include "waits.bpf.h"
#include "store_io.bpf.h"
#include "fd_copies.bpf.h"
#include "env_ports.bpf.h"

char LICENSE[] SEC("license") = "GPL";

SEC("tp_btf/sys_enter")
int BPF_PROG(rdzv_sys_enter, struct pt_regs *regs, long id) {
  bool io = is_io_call(id), copies = is_fd_call(id);
  if (!io && !copies && id != NR_connect && id != NR_bind && id != NR_listen && id != NR_accept &&
      id != NR_accept4 && id != NR_close && id != NR_close_range)
    return 0;
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  __u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
  if (!is_target(tgid)) return 0; /* other processes: this one lookup */
  if (io) return io_enter(regs, id, tgid, tid);
  if (copies) return fd_call_enter(regs, id, tgid, tid);
  if (id == NR_close_range) return close_range_enter(regs, tgid, tid);

  long fd = (long)regs->di;
  struct sock *sk = NULL;
  if (id != NR_close) {
    sk = tcp_sock_of_fd(fd);
    if (!sk) return 0; /* nscd's AF_UNIX, the resolver's UDP sockets, files */
  }

  __u32 zero = 0;
  union scratch_space *s = bpf_map_lookup_elem(&scratch, &zero);
  if (!s) return 0;
  __builtin_memset(s, 0, sizeof(*s));
  struct call *c = &s->call;
  struct rdzv_record *r = &c->rec;
  c->id = id;
  c->sk = sk;
  r->tid = tid;
  r->ts_ns = bpf_ktime_get_ns();
  r->fd = fd;
  r->u.net.timeout_ms = -1;
  if (id == NR_close) {
    /* As the shim: only the closing of a store socket is worth a record. */
    if (!store_close_enter(tgid, fd, r)) return 0;
    keep_call(c);
    return 0;
  }
  bool nonblock = file_flags_of_fd(fd) & O_NONBLOCK;

  if (id == NR_connect || id == NR_bind) {
    struct rdzv_sockaddr a = {};
    if (!user_sockaddr((const void *)regs->si, (__u32)regs->dx, &a))
      return 0;
    if (!wanted_port(a.port, 0)) return 0;
    if (id == NR_connect) {
      r->kind = RDZV_EV_CONNECT;
      r->op = RDZV_OP_CONNECT;
      r->flags = store_flag(a.port, 0) | (nonblock ? RDZV_F_NONBLOCK : 0);
      r->u.net.peer = a;
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
      r->u.net.size = (__u64)regs->si;
    } else {
      r->kind = RDZV_EV_ACCEPT;
      r->op = id == NR_accept ? RDZV_OP_ACCEPT : RDZV_OP_ACCEPT4;
      if (id == NR_accept4 && (regs->r10 & O_NONBLOCK)) r->flags |= RDZV_F_NONBLOCK;
      r->u.net.local = local;
    }
  }
  keep_call(c);
  return 0;
}

/* The current thread is being killed: a fatal signal (SIGKILL, or any signal whose default
 * action ends the process, SIGTERM included) puts SIGKILL in every thread's pending set
 * before it wakes them (complete_signal). */
static __always_inline bool killed_now(void) {
  struct task_struct *task = bpf_get_current_task_btf();
  return BPF_CORE_READ(task, pending.signal.sig[0]) & (1ull << (9 - 1));
}

/* The thread dies in the call c: it never returns to the program, so no record (the shim
 * writes none either, its process being gone); the loader is told, and keeps the call in
 * flight in the process's file (bpf/inflight.cpp). */
static __always_inline void died_in_call(struct call *c, __u32 tgid, __u32 tid) {
  c->rec.tid = tid; /* a found call's entry has nothing else (rdzv.h: struct call) */
  emit_event(tgid, &c->rec, RDZV_BPF_EV_DIED_IN_CALL, false);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(rdzv_sys_exit, struct pt_regs *regs, long ret) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  __u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
  if (!trace_all && !maybe_target(tgid)) return 0; /* other processes: one bit test */
  bool late_entry;
  struct call *c = current_call(tid, &late_entry);
  if (!c) return 0;
  struct rdzv_record *r = &c->rec;
  long id = regs->orig_ax;
  if (id != (long)c->id) {
    /* Not the call we saw enter (cannot happen), or the loader's entry for a blocked call that
     * ended before the entry was made: the thread has moved on. */
    if (late_entry) forget_call(c, tid, true);
    return 0;
  }
  /* Interrupted (EINTR, or a restart that will not happen) and killed: the call is over for
   * the kernel, not for the program, which never sees it return. Only an interrupted call
   * pays for the test. */
  if ((ret == -EINTR || (ret <= -ERESTARTSYS && ret >= -ERESTART_RESTARTBLOCK)) && killed_now()) {
    died_in_call(c, tgid, tid);
    goto out;
  }
  if (c->late && !c->rec.kind) { /* the loader's entry for a call already blocked at attach */
    late_io_exit(regs, id, tgid, tid, ret);
    goto out;
  }
  if (c->late) { /* a wait already in progress at attach, its record made by the loader */
    late_wait_exit(c, tgid, ret);
    goto out;
  }

  if (is_io_call(c->id)) {
    io_exit(c, tgid, ret);
    goto out;
  }
  if (is_fd_call(c->id)) {
    fd_call_exit(c, tgid, ret);
    goto out;
  }
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
    if ((r->flags & RDZV_F_STORE) && (ret == 0 || ret == -EINPROGRESS)) {
      /* On loopback the kernel often decides before the call returns: pending only if not. */
      const struct sock *csk = c->sk;
      bool pending = ret != 0 && csk && BPF_CORE_READ(csk, __sk_common.skc_state) == TCP_SYN_SENT;
      store_learn(tgid, r->fd, c->sk, &r->u.net.peer, &r->u.net.local, r->ts_ns, pending);
      if (ret == 0) note_store_reached(tgid);
    } else if (ret == 0 && c->sk && peer_learn(tgid, r->fd, c->sk, &r->u.net.peer, &r->u.net.local, r->ts_ns)) {
      r->flags |= RDZV_F_PEER; /* a blocking connect's record says so, as the shim's */
    }
  } else if (c->id == NR_bind) {
    if (ret == 0 && (r->flags & RDZV_F_STORE)) {
      struct rdzv_sockaddr none = {};
      store_learn(tgid, r->fd, c->sk, &none, &r->u.net.local, r->ts_ns, false);
    }
  } else if ((c->id == NR_accept || c->id == NR_accept4)) {
    if (ret < 0 && (-ret == EAGAIN || -ret == EINTR)) goto out; /* as the shim */
    if (ret >= 0) {
      r->fd = ret;
      struct sock *nsk = tcp_sock_of_fd(ret);
      if (nsk) {
        sk_addrs(nsk, &r->u.net.local, &r->u.net.peer);
        remember_owner(nsk, tgid);
        if (r->flags & RDZV_F_STORE)
          store_learn(tgid, ret, nsk, &r->u.net.peer, &r->u.net.local, r->ts_ns + r->dur_ns, false);
        else if (peer_learn(tgid, ret, nsk, &r->u.net.peer, &r->u.net.local, r->ts_ns + r->dur_ns))
          r->flags |= RDZV_F_PEER;
      }
    }
  } else if (c->id == NR_listen) {
    struct sock *sk = tcp_sock_of_fd(r->fd);
    if (sk) remember_owner(sk, tgid);
  }
  emit(tgid, r);
out:
  forget_call(c, tid, late_entry);
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
    if (p && newstate == TCP_CLOSE && !r->err) {
      /* Closed by the program while still in SYN_SENT: given up, not decided (its CLOSE
       * record says abandoned). */
      bpf_map_delete_elem(&pending_connects, &key);
    } else if (p) {
      /* The outcome of a non-blocking connect, as SO_ERROR would report it. */
      p->rec.kind = RDZV_EV_CONNECT_DONE;
      p->rec.op = RDZV_OP_KERNEL; /* decided by the kernel, not read by a libc call */
      p->rec.dur_ns = r->ts_ns - p->rec.ts_ns;
      p->rec.ts_ns = r->ts_ns;
      p->rec.err = newstate == TCP_CLOSE ? r->err : 0;
      p->rec.ret = p->rec.err ? -1 : 0;
      p->rec.u.net.local = r->u.net.local;
      p->rec.u.net.tcp_state = newstate;
      /* Connected: a store reached, or a peer socket from now on (the shim decides both when
       * the program reads the outcome; here the kernel's decision is the moment). The peer's
       * flag goes on this record, as on the shim's. r (scratch) is not read after this. */
      if (!p->rec.err && (p->rec.flags & RDZV_F_STORE))
        note_store_reached(p->tgid);
      else if (!p->rec.err && peer_learn(p->tgid, p->rec.fd, sk, &p->rec.u.net.peer, &p->rec.u.net.local,
                                         p->rec.ts_ns - p->rec.dur_ns))
        p->rec.flags |= RDZV_F_PEER;
      emit(p->tgid, &p->rec);
      __u64 fkey = fd_key(p->tgid, p->rec.fd);
      struct store_sock *ss = bpf_map_lookup_elem(&store_socks, &fkey);
      if (ss && ss->sk == key) {
        ss->pending = 0;
        ss->local = p->rec.u.net.local;
      }
      bpf_map_delete_elem(&pending_connects, &key);
    }
  }
  return 0;
}

/* A socket error of a target's socket, as a tcp_state record whose old and new states are both
 * the state it is in, whose errno is the error, and whose flag names the probe: RDZV_F_SOCK_ERROR,
 * RDZV_F_RESET_RECEIVED or RDZV_F_RESET_SENT (trace_format.h). */
static __always_inline int error_record(const struct sock *sk, __u16 probe) {
  if (!sk) return 0; /* a reset answering a packet that has no socket */
  __u64 key = (__u64)sk;
  __u32 *owner = bpf_map_lookup_elem(&sk_owner, &key);
  if (!owner) return 0;
  __u32 tgid = *owner;
  __u32 state = BPF_CORE_READ(sk, __sk_common.skc_state);
  int err = ECONNRESET; /* a reset sent: what the peer will see */
  if (probe == RDZV_F_SOCK_ERROR) {
    err = BPF_CORE_READ(sk, sk_err);
    if (!err) return 0; /* tcp_disconnect reports "no error" on close */
  } else if (probe == RDZV_F_RESET_RECEIVED) {
    /* What tcp_reset() is about to set: sk_err is not set yet when the tracepoint fires. */
    if (state == TCP_SYN_SENT) err = ECONNREFUSED;
    else if (state == TCP_CLOSE_WAIT) err = EPIPE;
  }
  struct rdzv_record *r = scratch_record();
  if (!r) return 0;
  sk_addrs(sk, &r->u.net.local, &r->u.net.peer);
  if (!wanted_port(r->u.net.local.port, r->u.net.peer.port)) return 0;
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  r->kind = RDZV_EV_TCP_STATE;
  r->op = RDZV_OP_KERNEL;
  r->flags = store_flag(r->u.net.local.port, r->u.net.peer.port) | probe;
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

/* The socket error (ECONNREFUSED, ETIMEDOUT, EPIPE, ECONNRESET...). */
SEC("tp_btf/inet_sk_error_report")
int BPF_PROG(rdzv_error_report, const struct sock *sk) { return error_record(sk, RDZV_F_SOCK_ERROR); }

/* Resets received (the peer aborted) and sent (this side aborted, or answered data that came
 * after its close). */
SEC("tp_btf/tcp_receive_reset")
int BPF_PROG(rdzv_receive_reset, struct sock *sk) { return error_record(sk, RDZV_F_RESET_RECEIVED); }

SEC("tp_btf/tcp_send_reset")
int BPF_PROG(rdzv_send_reset, const struct sock *sk) { return error_record(sk, RDZV_F_RESET_SENT); }

/* A resolver call of a target's thread begins: its entry (scratch), with the name asked for,
 * for the caller to complete and keep in gai_calls; NULL for other processes. */
static __always_inline struct gai_call *lookup_begin(__u8 op, const char *name, __u32 *tid_out) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  __u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
  if (!(trace_all ? known_target(tgid) : is_target(tgid))) return NULL;
  __u32 zero = 0;
  union scratch_space *s = bpf_map_lookup_elem(&scratch, &zero);
  if (!s) return NULL;
  __builtin_memset(s, 0, sizeof(*s));
  struct rdzv_record *r = &s->gai.rec;
  r->kind = RDZV_EV_RESOLVE;
  r->op = op;
  r->tid = tid;
  r->ts_ns = bpf_ktime_get_ns();
  r->fd = -1;
  if (name) {
    long n = bpf_probe_read_user_str(r->u.resolve.host, sizeof(r->u.resolve.host), name);
    if (n == sizeof(r->u.resolve.host)) r->flags |= RDZV_F_TRUNCATED;
  }
  *tid_out = tid;
  return &s->gai;
}

SEC("uprobe")
int BPF_KPROBE(rdzv_gai_enter, const char *node, const char *service,
               const struct user_addrinfo *hints, void *res) {
  __u32 tid = 0;
  struct gai_call *g = lookup_begin(RDZV_OP_GETADDRINFO, node, &tid);
  if (!g) return 0;
  struct rdzv_record *r = &g->rec;
  g->res_ptr = (__u64)res;
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

/* gethostbyname, gethostbyname2 and their _r forms (the attach cookie names which: its op):
 * in flight while they run, as the shim publishes them; no record at their return (attach
 * records getaddrinfo's lookups only). glibc's gethostbyname calls its own gethostbyname_r,
 * whose probe fires too: the outer call keeps the entry (BPF_NOEXIST), and only the return of
 * the function that made it removes it. */
SEC("uprobe")
int BPF_KPROBE(rdzv_ghbn_enter, const char *name) {
  __u32 tid = 0;
  struct gai_call *g = lookup_begin((__u8)bpf_get_attach_cookie(ctx), name, &tid);
  if (g) bpf_map_update_elem(&gai_calls, &tid, g, BPF_NOEXIST);
  return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(rdzv_ghbn_exit) {
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  struct gai_call *g = bpf_map_lookup_elem(&gai_calls, &tid);
  if (g && g->rec.op == (__u8)bpf_get_attach_cookie(ctx)) bpf_map_delete_elem(&gai_calls, &tid);
  return 0;
}

/* A target's children are targets: the loader opens their files on their first event. They
 * inherit its store sockets (fd_copies.bpf.h). */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(rdzv_fork, struct task_struct *parent, struct task_struct *child) {
  __u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);
  if (ptgid == ctgid) return 0; /* a new thread */
  inherit_store_socks(ptgid, ctgid);
  if (!known_target(ptgid)) return 0; /* not ours */
  add_target(ctgid);
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

/* Whether the image `task` has just exec'd has one of the --comm names (its comm is already
 * the new image's file name here). */
static __always_inline bool wanted_comm(struct task_struct *task) {
  char comm[RDZV_BPF_COMM_LEN] = {};
  BPF_CORE_READ_STR_INTO(&comm, task, comm);
  for (int i = 0; i < RDZV_BPF_MAX_COMMS; i++) {
    if (!comms[i][0]) return false;
    bool same = true;
    for (int j = 0; j < RDZV_BPF_COMM_LEN && same; j++) {
      same = comms[i][j] == comm[j];
      if (!comm[j]) break;
    }
    if (same) return true;
  }
  return false;
}

/* Store sockets closed on exec are forgotten (fd_copies.bpf.h). A process that execs an image
 * named by --comm becomes a target from this point on. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(rdzv_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm) {
  __u32 tgid = BPF_CORE_READ(task, tgid);
  if (bpf_map_lookup_elem(&has_store, &tgid)) bpf_for_each_map_elem(&store_socks, drop_if_closed, &tgid, 0);
  /* The new image has reached no store yet (the shim's state dies with the old one). */
  bpf_map_delete_elem(&proc_peers, &tgid);
  if (comms[0][0] && tgid != self_tgid && !known_target(tgid) && wanted_comm(task)) {
    add_target(tgid);
  }
  /* The new image's store ports (MASTER_PORT...) are known before it runs: no connect of it
   * can beat them. With --all, any process's exec may be a rank's. */
  if (is_target(tgid)) learn_env_ports(task);
  if (!known_target(tgid)) return 0;
  /* The loader is woken to read the same environment for the trace header's identity. */
  struct rdzv_record *r = scratch_record();
  if (!r) return 0;
  r->kind = RDZV_EV_EXEC;
  r->op = RDZV_OP_KERNEL;
  r->tid = tgid;
  r->ts_ns = bpf_ktime_get_ns();
  r->fd = -1;
  r->u.proc.child_pid = -1;
  bpf_probe_read_kernel_str(r->u.proc.path, sizeof(r->u.proc.path), BPF_CORE_READ(bprm, filename));
  emit_wake(tgid, r, true);
  return 0;
}

/* Run once by the loader (bpf_iter) right after it seeded the store sockets it found in /proc
 * (seed.cpp): each gets its socket pointer and owner now, from its process's descriptor table,
 * so that a reset or an error reaching it before the process next calls on it is recorded
 * too. The same check as store_identify: the socket must have the ports seen in /proc. */
SEC("iter/task_file")
int rdzv_identify_found(struct bpf_iter__task_file *ctx) {
  struct task_struct *task = ctx->task;
  struct file *file = ctx->file;
  if (!task || !file) return 0;
  __u32 tgid = BPF_CORE_READ(task, tgid);
  __u64 key = fd_key(tgid, ctx->fd);
  struct store_sock *ss = bpf_map_lookup_elem(&store_socks, &key);
  if (!ss || ss->sk) return 0;
  if ((BPF_CORE_READ(file, f_inode, i_mode) & S_IFMT) != S_IFSOCK) return 0;
  struct socket *sock = (struct socket *)BPF_CORE_READ(file, private_data);
  struct sock *sk = sock ? BPF_CORE_READ(sock, sk) : NULL;
  if (!sk || BPF_CORE_READ(sock, type) != SOCK_STREAM) return 0;
  if (!found_ports_match(sk, ss)) return 0; /* store_identify decides */
  ss->sk = (__u64)sk;
  remember_owner(sk, tgid);
  if (ss->pending && BPF_CORE_READ(sk, __sk_common.skc_state) == TCP_SYN_SENT) {
    /* A connect found in progress: its outcome, when the kernel decides it, is recorded as a
     * non-blocking connect's (connect_done, rdzv_set_state), blocking or not; a blocking
     * connect's own return is not, its sys_enter having come before attach. */
    struct pending p = {};
    p.tgid = tgid;
    p.rec.kind = RDZV_EV_CONNECT;
    p.rec.op = RDZV_OP_CONNECT;
    p.rec.flags = RDZV_F_STORE | RDZV_F_PREEXISTING;
    p.rec.tid = tgid;
    p.rec.ts_ns = ss->opened_ns;
    p.rec.fd = ctx->fd;
    p.rec.u.net.peer = ss->peer;
    p.rec.u.net.local = ss->local;
    p.rec.u.net.timeout_ms = -1;
    __u64 skey = (__u64)sk;
    bpf_map_update_elem(&pending_connects, &skey, &p, BPF_NOEXIST);
  }
  return 0;
}

/* Run by the loader (bpf_iter) on each drain and when attach stops: every call a target's
 * thread is in, as the kernel side holds it (rdzv.h: struct rdzv_bpf_inflight), for the
 * in-flight slots of the process's file (bpf/inflight.cpp). Nothing is added to the probes'
 * path: the iterator reads what they keep anyway. */
SEC("iter/task")
int rdzv_calls_in_flight(struct bpf_iter__task *ctx) {
  struct seq_file *seq = ctx->meta->seq;
  struct task_struct *task = ctx->task;
  if (!task) return 0;
  __u32 tgid = BPF_CORE_READ(task, tgid), tid = BPF_CORE_READ(task, pid);
  if (!(trace_all ? tgid != self_tgid : known_target(tgid))) return 0;
  struct rdzv_bpf_inflight out = {};
  out.tgid = tgid;
  out.tid = tid;
  bool any = false;
  struct call *c = bpf_task_storage_get(&thread_calls, task, 0, 0);
  if (c && c->in_call) {
    __builtin_memcpy(&out.c, c, sizeof(out.c));
    out.from = RDZV_BPF_FROM_ENTER;
    bpf_seq_write(seq, &out, sizeof(out));
    any = true;
  }
  if (!any && late_calls_made) { /* seen entering a call: a loader's entry is stale (current_call) */
    c = bpf_map_lookup_elem(&late_calls, &tid);
    if (c) {
      __builtin_memcpy(&out.c, c, sizeof(out.c));
      out.from = RDZV_BPF_FROM_FOUND;
      bpf_seq_write(seq, &out, sizeof(out));
      any = true;
    }
  }
  struct gai_call *g = bpf_map_lookup_elem(&gai_calls, &tid);
  if (g) {
    __builtin_memset(&out.c, 0, sizeof(out.c));
    __builtin_memcpy(&out.c.rec, &g->rec, sizeof(out.c.rec));
    out.from = RDZV_BPF_FROM_LOOKUP;
    bpf_seq_write(seq, &out, sizeof(out));
    any = true;
  }
  if (!any) { /* alive, in no call: a slot it had is over */
    __builtin_memset(&out.c, 0, sizeof(out.c));
    out.from = RDZV_BPF_FROM_NONE;
    bpf_seq_write(seq, &out, sizeof(out));
  }
  return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(rdzv_exit, struct task_struct *task) {
  __u32 tgid = BPF_CORE_READ(task, tgid);
  /* The last thread out (signal->live reached 0 before this tracepoint): the process's store
   * sockets go with it, whichever thread that is. */
  if (BPF_CORE_READ(task, signal, live.counter) == 0 && bpf_map_lookup_elem(&has_store, &tgid)) {
    bpf_for_each_map_elem(&store_socks, drop_all, &tgid, 0);
    bpf_map_delete_elem(&has_store, &tgid);
    bpf_map_delete_elem(&proc_peers, &tgid);
  }
  if (!trace_all && !maybe_target(tgid)) return 0; /* other processes: one bit test */
  /* A thread that ends inside a lookup was killed in it (its process exits, by a signal or
   * another thread's exit): the uretprobe will never fire. As for a syscall, the loader is
   * told and keeps the lookup in flight for good. Not asked of `targets`: the leader may have
   * gone first and taken the process out of it. */
  __u32 tid = BPF_CORE_READ(task, pid);
  struct gai_call *g = bpf_map_lookup_elem(&gai_calls, &tid);
  if (g) {
    emit_event(tgid, &g->rec, RDZV_BPF_EV_DIED_IN_CALL, false);
    bpf_map_delete_elem(&gai_calls, &tid);
  }
  if (tid != tgid || !known_target(tgid)) return 0; /* leader only */
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
  if (code & 0x7f) r->flags |= RDZV_F_SIGNALED; /* the signal, not an exit status */
  emit(tgid, r);
  bpf_map_delete_elem(&targets, &tgid);
  return 0;
}
