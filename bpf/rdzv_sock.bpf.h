/* Helpers of rdzv.bpf.c: target filtering, the ring buffer, and reading sockets, file
 * descriptors and user addresses. Included once, by rdzv.bpf.c, after rdzv_maps.bpf.h. */
#ifndef RDZVSCOPE_BPF_SOCK_BPF_H
#define RDZVSCOPE_BPF_SOCK_BPF_H

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

static __always_inline bool known_target(__u32 tgid) {
  return tgid != self_tgid && maybe_target(tgid) && bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

static __always_inline bool is_target(__u32 tgid) {
  if (trace_all) return tgid != self_tgid;
  return known_target(tgid);
}

static __always_inline bool is_store_port(__u16 port) {
  if (!port) return false;
  for (int i = 0; i < RDZV_BPF_MAX_PORTS; i++) {
    if (ports[i] == port) return true;
  }
  return bpf_map_lookup_elem(&learnt_ports, &port) != NULL;
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

/* `urgent`: wake the loader now (it must act before the process goes on, e.g. read the
 * environment of an exec'd image). `what`: RDZV_BPF_EV_* (rdzv.h). */
static __always_inline void emit_event(__u32 tgid, const struct rdzv_record *rec, __u32 what, bool urgent) {
  struct rdzv_bpf_event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
  if (!ev) {
    count_lost();
    return;
  }
  ev->tgid = tgid;
  ev->what = what;
  __builtin_memcpy(&ev->rec, rec, sizeof(*rec));
  ev->rec.seal = 0;
  /* A wakeup per event costs the loader a context switch per event (7x the cost of a send
   * at 50k events/s): wake it only when the buffer fills up; it also drains every poll
   * interval by itself (loader.cpp). */
  __u64 pending = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
  bpf_ringbuf_submit(ev, urgent || pending > RDZV_BPF_RINGBUF_WAKE_BYTES ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

static __always_inline void emit_wake(__u32 tgid, const struct rdzv_record *rec, bool urgent) {
  emit_event(tgid, rec, RDZV_BPF_EV_RECORD, urgent);
}

static __always_inline void emit(__u32 tgid, const struct rdzv_record *rec) { emit_wake(tgid, rec, false); }

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

static __always_inline __u32 store_sock_state(const struct store_sock *ss) {
  const struct sock *sk = (const void *)ss->sk;
  return sk ? BPF_CORE_READ(sk, __sk_common.skc_state) : 0;
}

struct user_timeval {
  long tv_sec;
  long tv_usec;
};

/* sec + sub / per_ms in milliseconds; BPF has no signed division, and the kernel refuses
 * negative times anyway (0 then). */
static __always_inline __s64 to_ms(__s64 sec, __s64 sub, __u64 per_ms) {
  if (sec < 0 || sub < 0) return 0;
  return (__s64)((__u64)sec * 1000 + (__u64)sub / per_ms);
}

static __always_inline __u64 fd_key(__u32 tgid, long fd) { return ((__u64)tgid << 32) | (__u32)fd; }

/* The socket has the ports the loader saw in /proc for a found store socket; its local port
 * may have been released since, when a reset closed it. */
static __always_inline bool found_ports_match(const struct sock *sk, const struct store_sock *ss) {
  struct rdzv_sockaddr local = {}, peer = {};
  sk_addrs(sk, &local, &peer);
  return peer.port == ss->peer.port && (local.port == ss->local.port || !local.port);
}

/* A store socket the loader found at attach time has no socket pointer (rdzv.h): it is read
 * from the fd table by the first call of the process that concerns the descriptor. The socket
 * there must still have the ports found in /proc, else the descriptor was closed (and maybe
 * reused) between the loader's look and the seeding, unseen: the entry is dropped (false).
 * From then on the socket is known like any other, its owner too (resets, errors). */
static __always_inline bool store_identify(__u32 tgid, long fd, struct store_sock *ss) {
  if (ss->sk) return true;
  struct sock *sk = tcp_sock_of_fd(fd);
  if (!sk || !found_ports_match(sk, ss)) {
    __u64 key = fd_key(tgid, fd);
    bpf_map_delete_elem(&store_socks, &key);
    return false;
  }
  ss->sk = (__u64)sk;
  remember_owner(sk, tgid);
  return true;
}

#endif /* RDZVSCOPE_BPF_SOCK_BPF_H */
