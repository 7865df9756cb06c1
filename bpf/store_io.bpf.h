/* Per-call events on store sockets, from the raw syscall tracepoints: what the shim records in
 * shim/hooks_io.cpp (send/recv families, read/write), shim/hooks_wait.cpp (poll/ppoll timeouts)
 * and shim/hooks_fd.cpp (SO_RCVTIMEO/SO_SNDTIMEO changes, close totals), with the same records
 * and flags, so that the analyzer cannot tell which recorder wrote them. Included once, by
 * rdzv.bpf.c, after rdzv_sock.bpf.h. */
#ifndef RDZVSCOPE_BPF_STORE_IO_BPF_H
#define RDZVSCOPE_BPF_STORE_IO_BPF_H

#define RDZV_POLL_SCAN 16 /* descriptors of one poll searched for a store socket */
#define RDZV_IOV_SCAN 8   /* iovec entries summed for the size asked */
#define RDZV_MMSG_SCAN 4  /* messages of one sendmmsg/recvmmsg summed */

/* struct mmsghdr of x86_64 user space. */
struct user_mmsghdr {
  struct user_msghdr hdr;
  __u32 len;
  __u32 pad;
};

struct user_pollfd {
  int fd;
  short events;
  short revents;
};

/* Calls whose first argument is the one descriptor they act on. */
static __always_inline bool is_fd_io_call(long id) {
  return id == NR_read || id == NR_write || id == NR_writev || id == NR_sendto || id == NR_recvfrom ||
         id == NR_sendmsg || id == NR_recvmsg || id == NR_setsockopt || id == NR_readv ||
         id == NR_sendmmsg || id == NR_recvmmsg;
}

static __always_inline bool is_io_call(long id) {
  return is_fd_io_call(id) || id == NR_poll || id == NR_ppoll || is_wait_call(id);
}

/* A store or peer socket from now on: its entry in store_socks. */
static __always_inline void sock_learn(__u32 tgid, long fd, const void *sk, const struct rdzv_sockaddr *peer,
                                       const struct rdzv_sockaddr *local, __u64 opened_ns, bool pending,
                                       bool peer_socket) {
  __u32 zero = 0;
  union scratch_space *s = bpf_map_lookup_elem(&scratch, &zero);
  if (!s) return;
  struct store_sock *ss = &s->ss;
  __builtin_memset(ss, 0, sizeof(*ss));
  ss->sk = (__u64)sk;
  ss->opened_ns = opened_ns;
  ss->peer = *peer;
  ss->local = *local;
  ss->rcvtimeo_ms = -1;
  ss->sndtimeo_ms = -1;
  ss->pending = pending;
  ss->peer_socket = peer_socket;
  __u64 key = fd_key(tgid, fd);
  bpf_map_update_elem(&store_socks, &key, ss, BPF_ANY);
  __u8 one = 1;
  bpf_map_update_elem(&has_store, &tgid, &one, BPF_ANY);
}

/* A store socket from now on (connect, bind or accept succeeded on a store port). */
static __always_inline void store_learn(__u32 tgid, long fd, const void *sk, const struct rdzv_sockaddr *peer,
                                        const struct rdzv_sockaddr *local, __u64 opened_ns, bool pending) {
  sock_learn(tgid, fd, sk, peer, local, opened_ns, pending, false);
}

/* A store connect of the process succeeded: its connections made from now on are peer
 * sockets (the shim's first store connect). */
static __always_inline void note_store_reached(__u32 tgid) {
  struct proc_peers *pp = bpf_map_lookup_elem(&proc_peers, &tgid);
  if (pp) {
    pp->reached = 1;
    return;
  }
  struct proc_peers fresh = {.reached = 1};
  bpf_map_update_elem(&proc_peers, &tgid, &fresh, BPF_ANY);
}

/* A connection on no store port was made (connect succeeded, or accepted): a peer socket when
 * the recorder core says so, learnt then (true: its records get RDZV_F_PEER). One lookup. */
static __always_inline bool peer_learn(__u32 tgid, long fd, const void *sk, const struct rdzv_sockaddr *peer,
                                       const struct rdzv_sockaddr *local, __u64 opened_ns) {
  struct proc_peers *pp = bpf_map_lookup_elem(&proc_peers, &tgid);
  if (!pp || !rdzv_is_peer_socket(pp->reached, 0, pp->open)) return false;
  __sync_fetch_and_add(&pp->open, 1);
  sock_learn(tgid, fd, sk, peer, local, opened_ns, false, true);
  return true;
}

/* A peer socket of the process is forgotten (closed): one fewer open. */
static __always_inline void peer_forget(__u32 tgid) {
  struct proc_peers *pp = bpf_map_lookup_elem(&proc_peers, &tgid);
  if (pp && pp->open) __sync_fetch_and_add(&pp->open, (__u32)-1); /* BPF has no atomic sub */
}

static __always_inline __u64 iov_bytes(const struct iovec *iov, __u64 n) {
  __u64 total = 0;
  for (int i = 0; i < RDZV_IOV_SCAN; i++) {
    if (i >= n || !iov) break;
    struct iovec v = {};
    if (bpf_probe_read_user(&v, sizeof(v), &iov[i])) break;
    total += v.iov_len;
  }
  return total;
}

static __always_inline __u64 msg_bytes(const struct user_msghdr *umsg) {
  struct user_msghdr m = {};
  if (!umsg || bpf_probe_read_user(&m, sizeof(m), umsg)) return 0;
  return iov_bytes(m.msg_iov, m.msg_iovlen);
}

/* sendmmsg/recvmmsg: what the first messages ask for, at sys_enter. */
static __always_inline __u64 mmsg_asked(const struct user_mmsghdr *vec, __u64 n) {
  __u64 total = 0;
  for (int i = 0; i < RDZV_MMSG_SCAN; i++) {
    if (i >= n || !vec) break;
    total += msg_bytes(&vec[i].hdr);
  }
  return total;
}

/* The bytes of the first n messages done (msg_len, set by the kernel), at sys_exit: the
 * records carry bytes, as every send/recv record (trace_format.h), as the shim's do. */
static __always_inline long mmsg_done(const struct user_mmsghdr *vec, long n) {
  long total = 0;
  for (int i = 0; i < RDZV_MMSG_SCAN; i++) {
    if (i >= n || !vec) break;
    __u32 len = 0;
    if (bpf_probe_read_user(&len, sizeof(len), &vec[i].len)) break;
    total += len;
  }
  return total;
}

/* poll/ppoll that can block: what is needed to examine the descriptors if it times out, and
 * to publish it in flight while it waits (an infinite wait too, timeout -1: a client waiting
 * for a reply with no timeout, as the shim publishes it); false for a zero timeout, which
 * never blocks. */
static __always_inline bool poll_fill(struct pt_regs *regs, long id, __u32 tid, struct call *c) {
  struct rdzv_record *r = &c->rec;
  __s64 ms;
  if (id == NR_poll) {
    ms = (int)regs->dx;
    if (ms == 0) return false;
    if (ms < 0) ms = -1;
    r->op = RDZV_OP_POLL;
  } else {
    const struct __kernel_timespec *uts = (const void *)regs->dx;
    struct __kernel_timespec ts = {};
    if (!uts) {
      ms = -1;
    } else {
      if (bpf_probe_read_user(&ts, sizeof(ts), uts)) return false;
      ms = to_ms(ts.tv_sec, ts.tv_nsec, 1000000);
    }
    r->op = RDZV_OP_PPOLL;
  }
  c->id = id;
  c->user_ptr = regs->di;
  r->kind = RDZV_EV_POLL;
  r->tid = tid;
  r->ts_ns = bpf_ktime_get_ns();
  r->u.net.timeout_ms = ms;
  r->u.net.nfds = (__u32)regs->si;
  return true;
}

/* A setsockopt of SO_RCVTIMEO/SO_SNDTIMEO on a store socket: the value, read before the call. */
static __always_inline int sockopt_enter(struct pt_regs *regs, struct rdzv_record *r) {
  long level = regs->si, name = regs->dx;
  if (level != SOL_SOCKET) return -1;
  if (name != SO_RCVTIMEO_OLD && name != SO_SNDTIMEO_OLD && name != SO_RCVTIMEO_NEW && name != SO_SNDTIMEO_NEW)
    return -1;
  struct user_timeval tv = {}; /* the old and new layouts are the same on x86_64 */
  const void *val = (const void *)regs->r10;
  if ((__u32)regs->r8 < sizeof(tv) || !val || bpf_probe_read_user(&tv, sizeof(tv), val)) return -1;
  r->kind = RDZV_EV_SOCKOPT;
  r->op = RDZV_OP_SETSOCKOPT;
  r->u.net.size = name;
  r->u.net.timeout_ms = to_ms(tv.tv_sec, tv.tv_usec, 1000);
  return 0;
}

/* The store socket behind the first argument of an I/O call (its descriptor), or NULL. */
static __always_inline struct store_sock *io_store_sock(struct pt_regs *regs, __u32 tgid) {
  long fd = (long)regs->di;
  __u64 key = fd_key(tgid, fd);
  struct store_sock *ss = bpf_map_lookup_elem(&store_socks, &key);
  return ss && store_identify(tgid, fd, ss) ? ss : NULL;
}

/* The record of a send/recv-family call, a read/write or a setsockopt on the store socket ss,
 * from its arguments; false when the call is not recorded. At sys_enter (late false), or at
 * sys_exit for a call that began before the socket was known (late: the registers still hold
 * its arguments; dated from when the socket was found). */
static __always_inline bool io_fill(struct pt_regs *regs, long id, __u32 tid, const struct store_sock *ss,
                                    struct call *c, bool late) {
  struct rdzv_record *r = &c->rec;
  long fd = (long)regs->di;
  __builtin_memset(c, 0, sizeof(*c));
  c->id = id;
  c->late = late;
  r->tid = tid;
  r->ts_ns = late ? ss->opened_ns : bpf_ktime_get_ns();
  r->fd = fd;
  r->u.net.timeout_ms = -1;
  r->kind = RDZV_EV_RECV;
  /* Until its exit sets the record's flags: the loader publishes no peer call in flight. */
  r->flags = ss->peer_socket ? RDZV_F_PEER : 0;
  switch (id) {
    case NR_write:
      r->kind = RDZV_EV_SEND;
      r->op = RDZV_OP_WRITE;
      r->u.net.size = regs->dx;
      break;
    case NR_writev:
      r->kind = RDZV_EV_SEND;
      r->op = RDZV_OP_WRITEV;
      r->u.net.size = iov_bytes((const void *)regs->si, regs->dx);
      break;
    case NR_sendto:
      r->kind = RDZV_EV_SEND;
      /* glibc's send() is sendto() without an address: named as the shim names it. */
      r->op = regs->r8 ? RDZV_OP_SENDTO : RDZV_OP_SEND;
      r->u.net.size = regs->dx;
      c->dontwait = (regs->r10 & MSG_DONTWAIT) != 0;
      break;
    case NR_sendmsg:
      r->kind = RDZV_EV_SEND;
      r->op = RDZV_OP_SENDMSG;
      r->u.net.size = msg_bytes((const void *)regs->si);
      c->dontwait = (regs->dx & MSG_DONTWAIT) != 0;
      break;
    case NR_sendmmsg:
    case NR_recvmmsg:
      r->kind = id == NR_sendmmsg ? RDZV_EV_SEND : RDZV_EV_RECV;
      r->op = id == NR_sendmmsg ? RDZV_OP_SENDMMSG : RDZV_OP_RECVMMSG;
      c->user_ptr = regs->si;
      r->u.net.size = mmsg_asked((const void *)regs->si, regs->dx);
      c->dontwait = (regs->r10 & MSG_DONTWAIT) != 0;
      break;
    case NR_read:
      r->op = RDZV_OP_READ;
      r->u.net.size = regs->dx;
      break;
    case NR_readv:
      /* Named read: the format has no readv op, and a new op would make older readers
       * count these records as invalid. A read of the iovecs' total size is what it is. */
      r->op = RDZV_OP_READ;
      r->u.net.size = iov_bytes((const void *)regs->si, regs->dx);
      break;
    case NR_recvfrom:
      r->op = regs->r8 ? RDZV_OP_RECVFROM : RDZV_OP_RECV; /* recv() likewise */
      r->u.net.size = regs->dx;
      c->dontwait = (regs->r10 & MSG_DONTWAIT) != 0;
      break;
    case NR_recvmsg:
      r->op = RDZV_OP_RECVMSG;
      r->u.net.size = msg_bytes((const void *)regs->si);
      c->dontwait = (regs->dx & MSG_DONTWAIT) != 0;
      break;
    default: /* NR_setsockopt */
      if (sockopt_enter(regs, r)) return false;
      break;
  }
  return true;
}

/* sys_enter of a call that may concern a store socket. Other descriptors: one map lookup. */
static __always_inline int io_enter(struct pt_regs *regs, long id, __u32 tgid, __u32 tid) {
  if (is_fd_io_call(id)) {
    /* The hot path (a store's send/recv loop): filled in the thread's storage, no copy. */
    const struct store_sock *ss = io_store_sock(regs, tgid);
    struct call *c = ss ? thread_call() : NULL;
    if (c && io_fill(regs, id, tid, ss, c, false)) c->in_call = 1;
    return 0;
  }
  __u32 zero = 0;
  union scratch_space *s = bpf_map_lookup_elem(&scratch, &zero);
  if (!s) return 0;
  struct call *c = &s->call;
  if (id == NR_poll || id == NR_ppoll) {
    __builtin_memset(c, 0, sizeof(*c));
    c->rec.fd = -1;
    if (poll_fill(regs, id, tid, c)) keep_call(c);
    return 0;
  }
  if (id == NR_select || id == NR_pselect6) return select_enter(regs, id, tgid, tid, c);
  return epoll_enter(regs, id, tgid, tid, c);
}

/* A poll that timed out with a store socket among its first descriptors. */
static __always_inline void poll_exit(struct call *c, __u32 tgid, long ret) {
  if (ret != 0 || c->rec.u.net.timeout_ms < 0) return; /* an infinite wait never times out */
  struct rdzv_record *r = &c->rec;
  const struct user_pollfd *fds = (const void *)c->user_ptr;
  for (int i = 0; i < RDZV_POLL_SCAN; i++) {
    if (i >= r->u.net.nfds) break;
    struct user_pollfd p = {};
    if (bpf_probe_read_user(&p, sizeof(p), &fds[i])) break;
    __u64 key = fd_key(tgid, p.fd);
    struct store_sock *ss = bpf_map_lookup_elem(&store_socks, &key);
    if (!ss || ss->peer_socket || !store_identify(tgid, p.fd, ss)) continue; /* waits: the store's */
    r->fd = p.fd;
    wait_timed_out(r, ss, tgid);
    return;
  }
}

static __always_inline void sockopt_exit(struct rdzv_record *r, struct store_sock *ss, __u32 tgid, long ret) {
  if (ret != 0) return;
  bool rcv = r->u.net.size == SO_RCVTIMEO_OLD || r->u.net.size == SO_RCVTIMEO_NEW;
  __s64 *last = rcv ? &ss->rcvtimeo_ms : &ss->sndtimeo_ms;
  if (*last == r->u.net.timeout_ms) return; /* c10d sets it before every wait: changes only */
  *last = r->u.net.timeout_ms;
  r->flags = ss->peer_socket ? 0 : RDZV_F_STORE; /* as the shim's, for any socket it has a slot of */
  r->dur_ns = bpf_ktime_get_ns() - r->ts_ns;
  r->u.net.peer = ss->peer;
  emit(tgid, r);
}

/* The process received bytes on a store socket, in a call that began at start_ns: the latest
 * wins, as in the shim's header (one lookup; the entry made at the first). */
static __always_inline void note_store_recv(__u32 tgid, __u64 start_ns) {
  __u64 *last = bpf_map_lookup_elem(&store_recv_last, &tgid);
  if (last)
    *last = start_ns;
  else
    bpf_map_update_elem(&store_recv_last, &tgid, &start_ns, BPF_ANY);
}

/* sys_exit of a call io_enter kept: totals, then a record when the shim would write one. */
static __always_inline void io_exit(struct call *c, __u32 tgid, long ret) {
  struct rdzv_record *r = &c->rec;
  if (c->id == NR_poll || c->id == NR_ppoll) {
    poll_exit(c, tgid, ret);
    return;
  }
  if (c->id == NR_select || c->id == NR_pselect6) {
    select_exit(c, tgid, ret);
    return;
  }
  if (is_wait_call(c->id)) {
    epoll_exit(c, tgid, ret);
    return;
  }
  __u64 key = fd_key(tgid, r->fd);
  struct store_sock *ss = bpf_map_lookup_elem(&store_socks, &key);
  if (!ss) return; /* closed by another thread meanwhile */
  if (c->id == NR_setsockopt) {
    sockopt_exit(r, ss, tgid, ret);
    return;
  }
  if ((c->id == NR_sendmmsg || c->id == NR_recvmmsg) && ret >= 0) ret = mmsg_done((const void *)c->user_ptr, ret);
  bool is_send = r->kind == RDZV_EV_SEND;
  __sync_fetch_and_add(is_send ? &ss->calls_send : &ss->calls_recv, 1);
  if (ret > 0) __sync_fetch_and_add(is_send ? &ss->bytes_sent : &ss->bytes_recv, ret);
  bool peer = ss->peer_socket;
  if (rdzv_store_recv_moves(ret, r->kind, !peer)) note_store_recv(tgid, r->ts_ns);
  if (ret == -EINTR) return;
  if (ss->pending && ret >= 0) { /* I/O worked, so the connect did (peer sockets never pend) */
    ss->pending = 0;
    note_store_reached(tgid);
  }

  bool failure = false, timeout = false, zero = false, nonblock = c->dontwait;
  if (ret < 0) {
    if (ret == -EAGAIN) {
      if (!nonblock) nonblock = file_flags_of_fd(r->fd) & O_NONBLOCK;
      if (nonblock) return; /* routine for event-loop servers */
      timeout = true;       /* SO_RCVTIMEO/SO_SNDTIMEO expired: c10d's "Socket Timeout" */
    }
    failure = true;
  } else if (ret == 0 && !is_send && r->u.net.size > 0) {
    zero = true;
  }
  /* Not atomic between threads: at worst one record more or less than the limit. A peer
   * socket's limit is the recorder core's alone (--io-events is the store sockets'). */
  bool detail = peer ? ss->events_recorded < RDZV_PEER_DETAIL_EVENTS : !io_detail || ss->events_recorded < io_detail;
  if (detail) {
    __sync_fetch_and_add(&ss->events_recorded, 1);
  } else {
    if (!failure && !zero) return;
    if (ss->failures_recorded >= io_failures) return;
    __sync_fetch_and_add(&ss->failures_recorded, 1);
  }
  if (!nonblock) nonblock = file_flags_of_fd(r->fd) & O_NONBLOCK;
  r->flags = (peer ? RDZV_F_PEER : RDZV_F_STORE) | (nonblock ? RDZV_F_NONBLOCK : 0) | (timeout ? RDZV_F_TIMEOUT : 0) |
             (zero ? RDZV_F_ZERO_READ : 0) | (c->late ? RDZV_F_PREEXISTING : 0);
  r->dur_ns = bpf_ktime_get_ns() - r->ts_ns;
  r->ret = ret < 0 ? -1 : ret;
  r->err = ret < 0 ? -ret : 0;
  r->u.net.peer = ss->peer;
  r->u.net.local = ss->local;
  __s64 t = is_send ? ss->sndtimeo_ms : ss->rcvtimeo_ms;
  r->u.net.timeout_ms = t < 0 ? -1 : t;
  emit(tgid, r);
}

/* sys_exit of a call whose sys_enter was not seen: the loader found the thread blocked in it
 * (/proc/PID/task/TID/syscall) and left a `late` entry in `late_calls`. A hung rank sits in
 * such a recv or poll, and how it ends is the news. Rebuilt from the registers, which still hold the
 * arguments at sys_exit; on a store socket the I/O record is dated from when the socket was
 * found (flag PREEXISTING: it began earlier), a poll that timed out from its timeout, as any.
 * ppoll is not rebuilt here: the kernel has already written the time left over its timeout
 * (the loader reads it beforehand: late_wait_exit). */
static __always_inline void late_io_exit(struct pt_regs *regs, long id, __u32 tgid, __u32 tid, long ret) {
  if (!is_io_call(id) || id == NR_ppoll || id == NR_setsockopt || is_wait_call(id)) return;
  /* Interrupted by a signal, to be restarted: the restart is a new call, seen entering. */
  if (ret <= -ERESTARTSYS && ret >= -ERESTART_RESTARTBLOCK) return;
  __u32 zero = 0;
  union scratch_space *s = bpf_map_lookup_elem(&scratch, &zero);
  if (!s) return;
  struct call *c = &s->call;
  if (id == NR_poll) {
    __builtin_memset(c, 0, sizeof(*c));
    c->rec.fd = -1;
    if (poll_fill(regs, id, tid, c)) poll_exit(c, tgid, ret);
    return;
  }
  const struct store_sock *ss = io_store_sock(regs, tgid);
  if (ss && io_fill(regs, id, tid, ss, c, true)) io_exit(c, tgid, ret);
}

/* sys_exit of a wait (ppoll, select, pselect6, an epoll wait) already in progress when attach
 * started: the loader found the store socket it waits on and its timeout in the process's
 * memory (seed.cpp), which by now the kernel has written over. A timeout is recorded as any
 * (dated from its timeout), flagged preexisting; a wait that ended otherwise is not. */
static __always_inline void late_wait_exit(struct call *c, __u32 tgid, long ret) {
  if (ret != 0) return;
  __u64 key = fd_key(tgid, c->rec.fd);
  struct store_sock *ss = bpf_map_lookup_elem(&store_socks, &key);
  if (ss && !ss->peer_socket && store_identify(tgid, c->rec.fd, ss)) wait_timed_out(&c->rec, ss, tgid);
}

/* A CLOSE record of a store socket: its totals, as the shim's CLOSE record has them. `state`
 * is the TCP state at the close (0 when the call already closed it, as the shim's dup2 over a
 * store socket). The caller sets tid, ts_ns and fd first. */
static __always_inline void fill_close(struct rdzv_record *r, const struct store_sock *ss, __u32 state) {
  r->kind = RDZV_EV_CLOSE;
  r->op = RDZV_OP_CLOSE;
  r->flags = RDZV_F_STORE | ((ss->pending && (state == TCP_SYN_SENT || !state)) ? RDZV_F_ABANDONED : 0);
  r->u.close.peer = ss->peer;
  r->u.close.local = ss->local;
  r->u.close.bytes_sent = ss->bytes_sent;
  r->u.close.bytes_recv = ss->bytes_recv;
  r->u.close.calls_send = ss->calls_send;
  r->u.close.calls_recv = ss->calls_recv;
  r->u.close.open_ns = r->ts_ns - ss->opened_ns;
  r->u.close.tcp_state = state;
}

/* close() of a store socket: its totals; forgotten. A peer socket is forgotten without a
 * record, as the shim's. */
static __always_inline bool store_close_enter(__u32 tgid, long fd, struct rdzv_record *r) {
  __u64 key = fd_key(tgid, fd);
  struct store_sock *ss = bpf_map_lookup_elem(&store_socks, &key);
  if (!ss || !store_identify(tgid, fd, ss)) return false;
  if (ss->peer_socket) {
    peer_forget(tgid);
    bpf_map_delete_elem(&store_socks, &key);
    return false;
  }
  fill_close(r, ss, store_sock_state(ss));
  bpf_map_delete_elem(&store_socks, &key);
  return true;
}

#endif /* RDZVSCOPE_BPF_STORE_IO_BPF_H */
