/* Waits that time out on store sockets, as shim/hooks_wait.cpp records them: one POLL record
 * with flag timeout, dated from the start of the wait, which lasted its timeout. poll/ppoll
 * are examined in store_io.bpf.h; select/pselect6 and epoll_wait/epoll_pwait/epoll_pwait2
 * here. Included once, by rdzv.bpf.c, before store_io.bpf.h. */
#ifndef RDZVSCOPE_BPF_WAITS_BPF_H
#define RDZVSCOPE_BPF_WAITS_BPF_H

#define RDZV_SELECT_MAX_FDS 1024 /* FD_SETSIZE: what an fd_set holds */

static __always_inline bool is_wait_call(long id) {
  return id == NR_select || id == NR_pselect6 || id == NR_epoll_wait || id == NR_epoll_pwait ||
         id == NR_epoll_pwait2;
}

/* The timed-out wait's record; ss is the store socket waited on (NULL for epoll, whose
 * descriptors are not known: the record then names the epoll fd, as the shim's does). */
static __always_inline void wait_timed_out(struct rdzv_record *r, const struct store_sock *ss, __u32 tgid) {
  __u64 now = bpf_ktime_get_ns();
  __u64 waited = r->u.net.timeout_ms > 0 ? (__u64)r->u.net.timeout_ms * 1000000 : 0;
  r->flags = RDZV_F_TIMEOUT | RDZV_F_STORE | (r->flags & RDZV_F_PREEXISTING);
  if (ss) {
    if (ss->pending) {
      r->flags |= RDZV_F_NONBLOCK;
      r->u.net.tcp_state = store_sock_state(ss);
    }
    r->u.net.peer = ss->peer;
    r->u.net.local = ss->local;
  }
  r->ts_ns = now > waited ? now - waited : 0;
  r->dur_ns = waited;
  emit(tgid, r);
}

static __always_inline __u64 fd_set_word(const __u64 *set, __u32 i) {
  __u64 w = 0;
  if (set) bpf_probe_read_user(&w, sizeof(w), set + i);
  return w;
}

/* One select's scan, one descriptor a step (bpf_loop: the verifier checks one step, whatever
 * the number of descriptors; a step not in the sets costs a few instructions). */
struct select_scan {
  const __u64 *sets[3]; /* read, write, except; NULL when not given */
  __u64 bits;           /* the sets' current 64-descriptor word, or'ed together */
  __u32 tgid;
  long found;
};

static long select_step(__u32 fd, struct select_scan *s) {
  if (!(fd & 63))
    s->bits = fd_set_word(s->sets[0], fd / 64) | fd_set_word(s->sets[1], fd / 64) |
              fd_set_word(s->sets[2], fd / 64);
  if (!((s->bits >> (fd & 63)) & 1)) return 0;
  __u64 key = fd_key(s->tgid, fd);
  const struct store_sock *ss = bpf_map_lookup_elem(&store_socks, &key);
  if (!ss || ss->peer_socket) return 0; /* waits on peer sockets are not recorded, as the shim's */
  s->found = fd;
  return 1; /* the first store socket, as the shim's */
}

/* select/pselect6 with a timeout: the kernel clears the sets when it times out, so the store
 * socket waited on is found now, as the shim finds it before the call. */
static __always_inline int select_enter(struct pt_regs *regs, long id, __u32 tgid, __u32 tid, struct call *c) {
  const void *uto = (const void *)regs->r8;
  if (!uto) return 0; /* no timeout: it cannot time out */
  __s64 ms;
  if (id == NR_select) {
    struct user_timeval tv = {};
    if (bpf_probe_read_user(&tv, sizeof(tv), uto)) return 0;
    ms = to_ms(tv.tv_sec, tv.tv_usec, 1000);
  } else {
    struct __kernel_timespec ts = {};
    if (bpf_probe_read_user(&ts, sizeof(ts), uto)) return 0;
    ms = to_ms(ts.tv_sec, ts.tv_nsec, 1000000);
  }
  if (ms <= 0 || !bpf_map_lookup_elem(&has_store, &tgid)) return 0;
  int nfds = (int)regs->di;
  if (nfds <= 0) return 0;
  struct select_scan scan = {
      .sets = {(const void *)regs->si, (const void *)regs->dx,
               (const void *)regs->r10},
      .tgid = tgid,
      .found = -1,
  };
  bpf_loop(nfds < RDZV_SELECT_MAX_FDS ? nfds : RDZV_SELECT_MAX_FDS, select_step, &scan, 0);
  long found = scan.found;
  if (found < 0) return 0;
  struct rdzv_record *r = &c->rec;
  __builtin_memset(c, 0, sizeof(*c));
  c->id = id;
  r->kind = RDZV_EV_POLL;
  /* glibc's select() is pselect6 without a signal mask (its pselect() always passes one):
   * named as the program called it, as the shim names it. */
  r->op = (id == NR_select || !regs->r9) ? RDZV_OP_SELECT : RDZV_OP_PSELECT;
  r->tid = tid;
  r->ts_ns = bpf_ktime_get_ns();
  r->fd = found;
  r->u.net.timeout_ms = ms;
  r->u.net.nfds = nfds;
  keep_call(c);
  return 0;
}

static __always_inline void select_exit(struct call *c, __u32 tgid, long ret) {
  if (ret != 0) return;
  __u64 key = fd_key(tgid, c->rec.fd);
  struct store_sock *ss = bpf_map_lookup_elem(&store_socks, &key);
  if (ss && !ss->peer_socket && store_identify(tgid, c->rec.fd, ss)) wait_timed_out(&c->rec, ss, tgid);
}

/* epoll reports user data, not descriptors: as the shim, a timeout is recorded only while a
 * connect to a store port is in progress in the process, and names the epoll fd. */
static __always_inline int epoll_enter(struct pt_regs *regs, long id, __u32 tgid, __u32 tid, struct call *c) {
  __s64 ms;
  if (id == NR_epoll_pwait2) {
    const struct __kernel_timespec *uts = (const void *)regs->r10;
    struct __kernel_timespec ts = {};
    if (!uts || bpf_probe_read_user(&ts, sizeof(ts), uts)) return 0;
    ms = to_ms(ts.tv_sec, ts.tv_nsec, 1000000);
  } else {
    ms = (int)regs->r10;
  }
  if (ms <= 0 || !bpf_map_lookup_elem(&has_store, &tgid)) return 0;
  struct rdzv_record *r = &c->rec;
  __builtin_memset(c, 0, sizeof(*c));
  c->id = id;
  r->kind = RDZV_EV_POLL;
  r->op = id == NR_epoll_wait ? RDZV_OP_EPOLL_WAIT : RDZV_OP_EPOLL_PWAIT; /* pwait2: a pwait */
  r->tid = tid;
  r->ts_ns = bpf_ktime_get_ns();
  r->fd = (long)regs->di;
  r->u.net.timeout_ms = ms;
  keep_call(c);
  return 0;
}

struct pending_find {
  __u32 tgid;
  __u32 found;
};

static long find_pending(void *map, __u64 *key, struct store_sock *ss, struct pending_find *ctx) {
  if ((__u32)(*key >> 32) != ctx->tgid || !ss->pending) return 0;
  ctx->found = 1;
  return 1; /* stop */
}

/* Only a wait that timed out walks the table, and a timeout takes its milliseconds anyway. */
static __always_inline void epoll_exit(struct call *c, __u32 tgid, long ret) {
  if (ret != 0) return;
  struct pending_find ctx = {.tgid = tgid};
  bpf_for_each_map_elem(&store_socks, find_pending, &ctx, 0);
  if (ctx.found) wait_timed_out(&c->rec, NULL, tgid);
}

#endif /* RDZVSCOPE_BPF_WAITS_BPF_H */
