/* rdzv.bpf.c's configuration (set by the loader between open and load), constants of the
 * x86_64 syscall ABI, and every map the programs share. Included once, by rdzv.bpf.c. */
#ifndef RDZVSCOPE_BPF_MAPS_BPF_H
#define RDZVSCOPE_BPF_MAPS_BPF_H

/* Set by the loader between open and load. */
const volatile bool trace_all = false;    /* --all: every process (still filtered by port) */
const volatile bool filter_ports = false; /* --port given: per-call events on these ports only */
const volatile __u32 self_tgid = 0;       /* the loader itself, never traced */
const volatile __u16 ports[RDZV_BPF_MAX_PORTS] = {}; /* store ports; 0 = unused */
/* --comm: processes that exec an image of one of these names become targets then (ranks that
 * start after attach); "" = unused. */
const volatile char comms[RDZV_BPF_MAX_COMMS][RDZV_BPF_COMM_LEN] = {};
/* Per store socket, as the shim (shim/hooks_io.cpp): the first io_detail calls are recorded
 * one by one (0: every call), after that only failures and 0-byte reads, io_failures of them.
 * The defaults are the recorder core's limits (rdzvscope/recorder_core.h), the shim's too. */
const volatile __u32 io_detail = RDZV_IO_DETAIL_EVENTS;
const volatile __u32 io_failures = RDZV_IO_FAILURE_EVENTS;

/* x86_64 syscall numbers. */
#define NR_read 0
#define NR_write 1
#define NR_close 3
#define NR_poll 7
#define NR_writev 20
#define NR_connect 42
#define NR_accept 43
#define NR_sendto 44
#define NR_recvfrom 45
#define NR_sendmsg 46
#define NR_recvmsg 47
#define NR_bind 49
#define NR_listen 50
#define NR_setsockopt 54
#define NR_readv 19
#define NR_select 23
#define NR_dup 32
#define NR_dup2 33
#define NR_fcntl 72
#define NR_epoll_wait 232
#define NR_pselect6 270
#define NR_ppoll 271
#define NR_epoll_pwait 281
#define NR_accept4 288
#define NR_dup3 292
#define NR_close_range 436
#define NR_epoll_pwait2 441
#define NR_recvmmsg 299
#define NR_sendmmsg 307

#define AF_INET 2
#define AF_INET6 10
#define SOCK_STREAM 1
#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define O_NONBLOCK 04000
#define MSG_DONTWAIT 0x40
#define SOL_SOCKET 1
#define SO_RCVTIMEO_OLD 20
#define SO_SNDTIMEO_OLD 21
#define SO_RCVTIMEO_NEW 66
#define SO_SNDTIMEO_NEW 67
#define EINPROGRESS 115
#define EAGAIN 11
#define EINTR 4
#define ERESTARTSYS 512 /* kernel-internal: the call is restarted after a signal handler */
#define ERESTART_RESTARTBLOCK 516
#define EPIPE 32
#define ECONNREFUSED 111
#define ECONNRESET 104
#define AI_PASSIVE 1
#define F_DUPFD 0
#define F_DUPFD_CLOEXEC 1030
#define CLOSE_RANGE_UNSHARE (1u << 1)
#define CLOSE_RANGE_CLOEXEC (1u << 2)
#define TCP_ESTABLISHED 1
#define TCP_SYN_SENT 2
#define TCP_CLOSE 7
#define TCP_CLOSE_WAIT 8

/* port -> 1: store ports the loader learnt after load, from the environment of a process it
 * saw exec (torchrun's c10d agent gives its workers a MASTER_PORT picked at run time). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 256);
  __type(key, __u16);
  __type(value, __u8);
} learnt_ports SEC(".maps");

/* A filter in front of `targets`: bit (tgid % RDZV_BPF_TARGET_BITS) is set for every tgid
 * ever made a target, here or by the loader (through the mmapped .bss). A clear bit says "not
 * a target" without a map lookup: the case of every syscall of every other process, whose
 * cost is attach's cost to the rest of the machine. Never cleared: a set bit only costs the
 * lookup. */
__u64 target_bits[RDZV_BPF_TARGET_BITS / 64] = {};

static __always_inline bool maybe_target(__u32 tgid) {
  return target_bits[rdzv_target_word(tgid)] & rdzv_target_mask(tgid);
}

/* tgid -> 1. The explicit targets (--pid, --comm), their children, and with --all every
 * process the loader has already seen; each also marked in target_bits (add_target). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 8192);
  __type(key, __u32);
  __type(value, __u8);
} targets SEC(".maps");

static __always_inline void add_target(__u32 tgid) {
  __u8 one = 1;
  bpf_map_update_elem(&targets, &tgid, &one, BPF_ANY);
  __sync_fetch_and_or(&target_bits[rdzv_target_word(tgid)], rdzv_target_mask(tgid));
}

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

/* A syscall between its enter and its exit, per thread: struct call (rdzv.h), in the thread's
 * own storage. A hash map keyed by tid cost a bucket lock (with interrupts off) at every enter
 * and exit of a recorded call: about half of attach's cost on a store socket's send loop. The
 * storage exists only for threads of targets that made a recorded call (other processes'
 * threads stop at the target_bits test before it). */
struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct call);
} thread_calls SEC(".maps");

/* The loader's entries for calls already blocked when attach started (seed.cpp), keyed by tid:
 * user space cannot reach a thread's storage by its tid. Looked up only once the loader has
 * made one (late_calls_made), so that no other thread pays for it. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);
  __type(value, struct call);
} late_calls SEC(".maps");
volatile __u32 late_calls_made = 0; /* set by the loader (skeleton .bss) */

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

/* Store sockets, keyed by (tgid << 32 | fd): struct store_sock (rdzv.h). The key of every
 * per-call event: a send on any other descriptor costs this one lookup. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH); /* fds closed behind our back (exit, exec) age out */
  __uint(max_entries, 16384);
  __type(key, __u64);
  __type(value, struct store_sock);
} store_socks SEC(".maps");

/* tgid -> 1 once a store socket of that process is known: the whole-table walks (fork, exec,
 * exit) and the select/epoll checks run only for such processes, so that other processes'
 * forks and waits cost one lookup. Forgotten at exit. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 8192);
  __type(key, __u32);
  __type(value, __u8);
} has_store SEC(".maps");

/* tgid -> the start (CLOCK_MONOTONIC) of the process's latest receive on a store socket that
 * returned bytes (the recorder core's rdzv_store_recv_moves): the loader copies it into the
 * header's last_store_recv_ns at each pass, as the shim stores it there itself. Not forgotten
 * at exit (the loader's last pass comes after the kill): LRU ages out the processes gone. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 8192);
  __type(key, __u32);
  __type(value, __u64);
} store_recv_last SEC(".maps");

/* tgid -> struct proc_peers (rdzv.h). Made when a store connect succeeds (or by the loader for
 * a process found connected to its store); forgotten at exec and exit. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 8192);
  __type(key, __u32);
  __type(value, struct proc_peers);
} proc_peers SEC(".maps");

/* Scratch space: records are too big for the 512-byte BPF stack several times over. */
union scratch_space {
  struct call call;
  struct gai_call gai;
  struct store_sock ss;
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, union scratch_space);
} scratch SEC(".maps");

/* This thread's call entry, made on first use; the caller sets in_call once it is filled. */
static __always_inline struct call *thread_call(void) {
  return bpf_task_storage_get(&thread_calls, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
}

/* sys_enter: `c` (scratch) is the call this thread is in, until its sys_exit. */
static __always_inline void keep_call(const struct call *c) {
  struct call *kept = thread_call();
  if (!kept) return;
  __builtin_memcpy(kept, c, sizeof(*kept));
  kept->in_call = 1;
}

/* sys_exit: the call this thread is in, kept at its enter or made by the loader (*late then
 * says so: the entry is dropped with forget_call), else NULL. */
static __always_inline struct call *current_call(__u32 tid, bool *late) {
  struct call *c = bpf_task_storage_get(&thread_calls, bpf_get_current_task_btf(), 0, 0);
  *late = false;
  if (c && c->in_call) {
    /* Seen entering. A loader's entry for this thread is then this very call, found blocked
     * too because it began while attach was starting, or an older one: dropped, else it would
     * be published beside this one and, the thread's storage taking every exit from now on,
     * for good. Only while the loader has entries (late_calls_made). */
    if (late_calls_made) bpf_map_delete_elem(&late_calls, &tid);
    return c;
  }
  if (!late_calls_made) return NULL;
  c = bpf_map_lookup_elem(&late_calls, &tid);
  *late = c != NULL;
  return c;
}

static __always_inline void forget_call(struct call *c, __u32 tid, bool late) {
  if (late)
    bpf_map_delete_elem(&late_calls, &tid);
  else
    c->in_call = 0;
}

#endif /* RDZVSCOPE_BPF_MAPS_BPF_H */
