/* The store-socket table (rdzv_maps.bpf.h: store_socks) kept true to the descriptors behind
 * the calls it is learnt from: copies made by dup/dup2/dup3/fcntl(F_DUPFD, F_DUPFD_CLOEXEC)
 * are tracked like the original, as the shim does (shim/hooks_fd.cpp); a forked child gets
 * its parent's entries; close_range drops (and records) the ones it closes; exec drops the
 * ones closed on exec; exit drops the process's entries. Without this a copy's I/O went
 * unseen and a closed number, reused by a pipe or a file, was taken for the store socket.
 * Included once, by rdzv.bpf.c, after store_io.bpf.h. */
#ifndef RDZVSCOPE_BPF_FD_COPIES_BPF_H
#define RDZVSCOPE_BPF_FD_COPIES_BPF_H

static __always_inline bool is_fd_call(long id) {
  return id == NR_dup || id == NR_dup2 || id == NR_dup3 || id == NR_fcntl;
}

/* An entry for a copy of the socket: the same socket, peer and age; counters, record budget
 * and SO_*TIMEO restart, and a pending connect is no longer pending on the copy (as the
 * shim's fd_copy_classification and, after fork, fd_table_reset_counters). */
static __always_inline void fresh_copy(struct store_sock *copy, bool keep_timeouts) {
  copy->bytes_sent = copy->bytes_recv = copy->calls_send = copy->calls_recv = 0;
  copy->events_recorded = copy->failures_recorded = 0;
  if (!keep_timeouts) copy->rcvtimeo_ms = copy->sndtimeo_ms = -1;
}

/* sys_enter of dup & co.: kept only when the descriptor copied is a store socket, or when
 * dup2/dup3 would silently close one (newfd). Other descriptors: one or two lookups. */
static __always_inline int fd_call_enter(struct pt_regs *regs, long id, __u32 tgid, __u32 tid) {
  long oldfd = (long)regs->di;
  long newfd = -1;
  if (id == NR_fcntl) {
    long cmd = (long)regs->si;
    if (cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC) return 0;
  } else if (id != NR_dup) {
    newfd = (int)regs->si;
  }
  __u64 key = fd_key(tgid, oldfd);
  bool copied = bpf_map_lookup_elem(&store_socks, &key) != NULL;
  bool over = false;
  if (newfd >= 0 && newfd != oldfd) {
    key = fd_key(tgid, newfd);
    over = bpf_map_lookup_elem(&store_socks, &key) != NULL;
  }
  if (!copied && !over) return 0;
  __u32 zero = 0;
  union scratch_space *s = bpf_map_lookup_elem(&scratch, &zero);
  if (!s) return 0;
  struct call *c = &s->call;
  __builtin_memset(c, 0, sizeof(*c));
  c->id = id;
  c->user_ptr = (__u64)newfd;
  c->rec.tid = tid;
  c->rec.fd = oldfd;
  keep_call(c);
  return 0;
}

/* sys_exit of dup & co.: the store socket dup2/dup3 closed gets its CLOSE record (state 0:
 * already gone, as the shim records it); the new descriptor becomes a copy of the old one. */
static __always_inline void fd_call_exit(struct call *c, __u32 tgid, long ret) {
  long oldfd = c->rec.fd;
  if (ret < 0 || ret == oldfd) return;
  __u64 nkey = fd_key(tgid, ret);
  struct store_sock *over = bpf_map_lookup_elem(&store_socks, &nkey);
  if (over && over->peer_socket) peer_forget(tgid); /* closed without a record, as the shim's */
  if (over && !over->peer_socket && (c->id == NR_dup2 || c->id == NR_dup3)) {
    struct rdzv_record *r = &c->rec; /* the dup itself is not recorded: its slot is free */
    r->ts_ns = bpf_ktime_get_ns();
    r->fd = ret;
    fill_close(r, over, 0);
    emit(tgid, r);
  }
  __u64 okey = fd_key(tgid, oldfd);
  struct store_sock *from = bpf_map_lookup_elem(&store_socks, &okey);
  if (!from) {
    if (over) bpf_map_delete_elem(&store_socks, &nkey);
    return;
  }
  __u32 zero = 0;
  union scratch_space *s = bpf_map_lookup_elem(&scratch, &zero);
  if (!s) return;
  struct store_sock *copy = &s->ss;
  __builtin_memcpy(copy, from, sizeof(*copy));
  fresh_copy(copy, false);
  copy->pending = 0;
  bpf_map_update_elem(&store_socks, &nkey, copy, BPF_ANY);
}

/* fork: the child's descriptors are the parent's, so are its store sockets. Done in the kernel,
 * in sched_process_fork, which runs before the child is first scheduled: the loader would learn
 * of the fork up to a poll interval later, after the child may have used or closed them. */
struct fork_copy {
  __u32 parent;
  __u32 child;
  __u32 copied;
};

static long copy_to_child(void *map, __u64 *key, struct store_sock *ss, struct fork_copy *ctx) {
  if ((__u32)(*key >> 32) != ctx->parent) return 0;
  struct store_sock copy;
  __builtin_memcpy(&copy, ss, sizeof(copy));
  fresh_copy(&copy, true); /* the child's own totals, as the shim's after fork */
  __u64 ckey = fd_key(ctx->child, (__u32)*key);
  /* A flag, not a count: a counter would make each callback run a new state to the verifier. */
  if (!bpf_map_update_elem(&store_socks, &ckey, &copy, BPF_ANY)) ctx->copied = 1;
  return 0;
}

static __always_inline void inherit_store_socks(__u32 parent, __u32 child) {
  if (!bpf_map_lookup_elem(&has_store, &parent)) return; /* most forks: this one lookup */
  struct fork_copy ctx = {.parent = parent, .child = child};
  bpf_for_each_map_elem(&store_socks, copy_to_child, &ctx, 0);
  if (ctx.copied) {
    __u8 one = 1;
    bpf_map_update_elem(&has_store, &child, &one, BPF_ANY);
  }
}

/* close_range(first, last, flags): each store socket in the range gets the CLOSE record close()
 * would give it (as the shim's close_range hook), and is forgotten. Done at sys_enter, while
 * the sockets still exist to be read; a call the kernel will refuse (EINVAL) is recognised
 * from its arguments; CLOSE_RANGE_CLOEXEC closes nothing now (exec does, below). */
struct range_close {
  __u32 tgid;
  __u32 tid;
  __u32 first;
  __u32 last;
  __u64 now;
};

static long close_in_range(void *map, __u64 *key, struct store_sock *ss, struct range_close *ctx) {
  if ((__u32)(*key >> 32) != ctx->tgid) return 0;
  __u32 fd = (__u32)*key;
  if (fd < ctx->first || fd > ctx->last) return 0;
  if (!store_identify(ctx->tgid, fd, ss)) return 0; /* found by the loader, since closed */
  if (ss->peer_socket) { /* forgotten without a record, as the shim's */
    peer_forget(ctx->tgid);
    bpf_map_delete_elem(&store_socks, key);
    return 0;
  }
  struct rdzv_record *r = scratch_record();
  if (!r) return 0;
  r->tid = ctx->tid;
  r->ts_ns = ctx->now;
  r->fd = fd;
  fill_close(r, ss, store_sock_state(ss));
  emit(ctx->tgid, r);
  bpf_map_delete_elem(&store_socks, key);
  return 0;
}

static __always_inline int close_range_enter(struct pt_regs *regs, __u32 tgid, __u32 tid) {
  __u32 first = (__u32)regs->di, last = (__u32)regs->si;
  __u32 flags = (__u32)regs->dx;
  if (first > last || (flags & ~(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC)) || (flags & CLOSE_RANGE_CLOEXEC))
    return 0;
  if (!bpf_map_lookup_elem(&has_store, &tgid)) return 0;
  struct range_close ctx = {.tgid = tgid, .tid = tid, .first = first, .last = last, .now = bpf_ktime_get_ns()};
  bpf_for_each_map_elem(&store_socks, close_in_range, &ctx, 0);
  return 0;
}

/* exec: descriptors marked close-on-exec are closed by now (sched_process_exec runs after
 * the kernel's do_close_on_exec). Each entry of the process is checked against its fd table:
 * gone, or another socket under that number, and it is dropped; a store socket that survives
 * the exec stays a store socket, since it is the same socket (the shim, whose table dies with
 * the image, loses it). No CLOSE record: the program closed nothing itself, and the shim
 * writes none there either. */
static long drop_if_closed(void *map, __u64 *key, struct store_sock *ss, __u32 *tgid) {
  if ((__u32)(*key >> 32) != *tgid) return 0;
  /* Found by the loader and not used since: the same ports under that number, or dropped. */
  if (!ss->sk) {
    store_identify(*tgid, (__u32)*key, ss);
    return 0;
  }
  struct socket *sock = socket_of_fd((__u32)*key);
  if (!sock || (__u64)BPF_CORE_READ(sock, sk) != ss->sk) bpf_map_delete_elem(&store_socks, key);
  return 0;
}

/* exit of the last thread: every entry of the process goes (a later process may get its pid). */
static long drop_all(void *map, __u64 *key, struct store_sock *ss, __u32 *tgid) {
  if ((__u32)(*key >> 32) == *tgid) bpf_map_delete_elem(&store_socks, key);
  return 0;
}

#endif /* RDZVSCOPE_BPF_FD_COPIES_BPF_H */
