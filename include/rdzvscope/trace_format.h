/*
 * rdzvscope trace format, version 1.
 *
 * One file per traced process, written by exactly one writer (the LD_PRELOAD shim inside the
 * process, or the bpf loader on its behalf). Plain C with fixed-width little-endian fields so
 * that the shim (C++ without its runtime), the BPF programs (clang -target bpf, which include
 * vmlinux.h instead of <stdint.h>) and the analyzer all read the same bytes.
 *
 * Layout:   [ struct rdzv_file_header : RDZV_HEADER_SIZE bytes ]
 *           [ struct rdzv_record      : RDZV_RECORD_SIZE bytes ] x header.capacity
 *
 * Crash safety (why the rules below exist): the writer maps the file MAP_SHARED, so the page
 * cache keeps every store even when the process is SIGKILLed. A reader must be able to tell a
 * finished record from one that was being written at the moment of death, so:
 *   1. the writer fills in the whole header and stores `magic` last, with release order;
 *      a file without the magic is "not (yet) a trace" and is reported as such;
 *   2. a record slot is reserved with an atomic increment of header.next_slot;
 *   3. the writer fills in every field of the record and stores `seal` last, with release
 *      order; seal == rdzv_seal_for(slot) marks the record as complete. A zero or foreign seal
 *      is an unfinished (torn) record: the reader counts it and goes on with the next slot.
 * Slots are never reused: the first `capacity` events of a process (its rendezvous) are kept,
 * later ones only increment header.dropped.
 */
#ifndef RDZVSCOPE_TRACE_FORMAT_H
#define RDZVSCOPE_TRACE_FORMAT_H

#if defined(__bpf__) || defined(__BPF__)
/* BPF programs include vmlinux.h, which provides the kernel's fixed-width types. */
typedef __u8 rdzv_u8;
typedef __u16 rdzv_u16;
typedef __u32 rdzv_u32;
typedef __s32 rdzv_s32;
typedef __u64 rdzv_u64;
typedef __s64 rdzv_s64;
#else
#include <stdint.h>
typedef uint8_t rdzv_u8;
typedef uint16_t rdzv_u16;
typedef uint32_t rdzv_u32;
typedef int32_t rdzv_s32;
typedef uint64_t rdzv_u64;
typedef int64_t rdzv_s64;
#endif

#define RDZV_MAGIC "RDZVTRC1" /* 8 bytes, no terminator stored */
#define RDZV_MAGIC_LEN 8
#define RDZV_FORMAT_VERSION 1u
#define RDZV_HEADER_SIZE 4096u
#define RDZV_RECORD_SIZE 192u
#define RDZV_SEAL_BASE 0x565A4452u /* "RDZV" little-endian */
#define RDZV_FILE_SUFFIX ".rzt"

/* header.features: what the writer was able to provide. */
#define RDZV_FEAT_PROC_START (1u << 0)  /* start_realtime_ns is valid */
#define RDZV_FEAT_SNAPSHOTS (1u << 1)   /* resource snapshots are recorded */
#define RDZV_FEAT_STORE_IO (1u << 2)    /* per-call events on store sockets */
#define RDZV_FEAT_LOST_COUNTER (1u << 3) /* header.lost is maintained (bpf ring buffer) */
#define RDZV_FEAT_ORIGIN (1u << 4)       /* header.origin is valid (files before it: zeros) */
#define RDZV_FEAT_INFLIGHT (1u << 5)     /* header.inflight is maintained (files before it: zeros) */
/* header.torch_version is valid. Set after the header was published (an atomic OR, release
 * order, once the string is written), by the shim, when the process had loaded PyTorch by
 * its first store connect, store bind or exit; attach leaves it unset. */
#define RDZV_FEAT_TORCH_VERSION (1u << 6)
/* header.last_store_recv_ns is maintained (files before it: zeros). */
#define RDZV_FEAT_STORE_RECV (1u << 7)

enum rdzv_source { RDZV_SOURCE_SHIM = 1, RDZV_SOURCE_BPF = 2 };

/* What happened. */
enum rdzv_kind {
  RDZV_EV_PROC_START = 1, /* first record of every file */
  RDZV_EV_PROC_EXIT = 2,  /* proc.status; flags STATUS_UNKNOWN when main() returned */
  RDZV_EV_FORK = 3,       /* proc.child_pid (parent side) */
  RDZV_EV_EXEC = 4,       /* proc.path; written before the exec, ret/err when it failed */
  RDZV_EV_SPAWN = 5,      /* posix_spawn*, vfork: proc.child_pid, proc.path */
  RDZV_EV_SNAPSHOT = 6,   /* snap; op = enum rdzv_snapshot_reason */
  RDZV_EV_RESOLVE = 7,    /* resolve; ret = resolver return code (EAI_* or h_errno) */
  RDZV_EV_CONNECT = 8,    /* net; ret/err of connect(); EINPROGRESS when non-blocking */
  RDZV_EV_CONNECT_DONE = 9, /* net; outcome of a non-blocking connect, err = SO_ERROR */
  RDZV_EV_BIND = 10,      /* net.local */
  RDZV_EV_LISTEN = 11,    /* net.local, net.size = backlog */
  RDZV_EV_ACCEPT = 12,    /* net.peer, net.local; fd = the new socket (ret) */
  RDZV_EV_SEND = 13,      /* net.size = bytes asked; ret = bytes sent; store sockets only */
  RDZV_EV_RECV = 14,      /* likewise; ret == 0 sets RDZV_F_ZERO_READ */
  RDZV_EV_POLL = 15,      /* a wait that timed out or failed: net.timeout_ms, net.nfds */
  RDZV_EV_SOCKOPT = 16,   /* SO_RCVTIMEO/SO_SNDTIMEO: net.timeout_ms; net.size = optname */
  RDZV_EV_CLOSE = 17,     /* close: byte/call totals of a store socket or fate of a pending connect */
  RDZV_EV_TCP_STATE = 18, /* bpf only: net.tcp_state new state, net.size old state */
  /* kill/killpg by this process: proc.child_pid = the target as given (killpg: the process
   * group), proc.status = the signal; ret/err of the call. Signal 0 (a probe) is not recorded. */
  RDZV_EV_SIGNAL = 19,
  /* waitpid/wait4/wait that reaped a child: proc.child_pid = the child, proc.status = its wait
   * status (WIFEXITED: exit status; WIFSIGNALED: the signal that ended it). */
  RDZV_EV_REAP = 20,
  RDZV_EV_KIND_MAX = 20
};

/* Which call (or probe) produced the record. */
enum rdzv_op {
  RDZV_OP_NONE = 0,
  RDZV_OP_GETADDRINFO, RDZV_OP_GETHOSTBYNAME, RDZV_OP_GETHOSTBYNAME2, RDZV_OP_GETHOSTBYNAME_R,
  RDZV_OP_GETHOSTBYNAME2_R, RDZV_OP_GETNAMEINFO,
  RDZV_OP_CONNECT, RDZV_OP_BIND, RDZV_OP_LISTEN, RDZV_OP_ACCEPT, RDZV_OP_ACCEPT4,
  RDZV_OP_SEND, RDZV_OP_SENDTO, RDZV_OP_SENDMSG, RDZV_OP_WRITE, RDZV_OP_WRITEV,
  RDZV_OP_RECV, RDZV_OP_RECVFROM, RDZV_OP_RECVMSG, RDZV_OP_READ,
  RDZV_OP_POLL, RDZV_OP_PPOLL, RDZV_OP_SELECT, RDZV_OP_PSELECT, RDZV_OP_EPOLL_WAIT,
  RDZV_OP_EPOLL_PWAIT, RDZV_OP_GETSOCKOPT, RDZV_OP_SETSOCKOPT, RDZV_OP_CLOSE,
  RDZV_OP_FORK, RDZV_OP_VFORK, RDZV_OP_POSIX_SPAWN, RDZV_OP_POSIX_SPAWNP, RDZV_OP_EXEC,
  RDZV_OP_EXIT, RDZV_OP_UNDERSCORE_EXIT, RDZV_OP_DESTRUCTOR, RDZV_OP_INIT,
  RDZV_OP_KERNEL, /* bpf: seen from a kernel tracepoint rather than a libc call */
  /* Several messages in one call: size is what the messages asked for, ret the bytes of those
   * done (not the count of messages the call returns), so that they read as any send/recv. */
  RDZV_OP_SENDMMSG, RDZV_OP_RECVMMSG,
  RDZV_OP_KILL, RDZV_OP_KILLPG, RDZV_OP_WAITPID, RDZV_OP_WAIT4, RDZV_OP_WAIT,
  RDZV_OP_MAX
};

enum rdzv_snapshot_reason {
  RDZV_SNAP_FIRST_STORE_CONNECT = 1,
  RDZV_SNAP_FAILURE = 2,
  RDZV_SNAP_EXIT = 3
};

/* record.flags */
#define RDZV_F_STORE (1u << 0)          /* the socket is a store (rendezvous) socket */
#define RDZV_F_NONBLOCK (1u << 1)       /* the socket was non-blocking at the call */
#define RDZV_F_TIMEOUT (1u << 2)        /* a wait ended by its timeout */
#define RDZV_F_ZERO_READ (1u << 3)      /* recv/read returned 0: peer closed */
#define RDZV_F_ABANDONED (1u << 4)      /* pending connect closed before its outcome was read */
#define RDZV_F_STATUS_UNKNOWN (1u << 5) /* exit status not known (main returned) */
#define RDZV_F_TRUNCATED (1u << 6)      /* a string field was cut to fit */
#define RDZV_F_PASSIVE (1u << 7)        /* resolver: AI_PASSIVE (a server looking up its bind address) */
#define RDZV_F_REVERSE (1u << 8)        /* resolver: address -> name lookup */
/* tcp_state records (bpf): which kernel probe wrote it. None of the three: a state change
 * (net.size old state -> net.tcp_state new state). With one of them, old and new state are
 * both the state the socket was in and errno is the error. Appended bits: readers that do not
 * know them name them "bitN" and keep the record. */
#define RDZV_F_SOCK_ERROR (1u << 9)      /* the kernel reported a socket error (errno) */
#define RDZV_F_RESET_RECEIVED (1u << 10) /* the peer reset the connection (what this side sees) */
#define RDZV_F_RESET_SENT (1u << 11)     /* this side reset it (ECONNRESET: what the peer will see) */
/* bpf: a CONNECT, ACCEPT or LISTEN record of a store socket that was already open when attach
 * started (found in /proc, no call seen): dated when it was found, ret 0, dur 0. The process
 * was connected (or listening) by then; when it first tried is unknown. On a SEND or RECV
 * record: a call already in progress then (a blocked recv), dated when the socket was found,
 * its duration from then (it began earlier). */
#define RDZV_F_PREEXISTING (1u << 12)
/* shim: the call's result (or its delay) was made up by fault injection (`rdzvscope run
 * --inject`, RDZVSCOPE_INJECT), a rehearsal: EAI_NONAME, ECONNREFUSED, ETIMEDOUT or EADDRINUSE
 * returned without the real call, or a first store connect that was held back on purpose. */
#define RDZV_F_INJECTED (1u << 13)
/* shim: a SEND, RECV or CONNECT_DONE record of a peer socket: a TCP connection to or from
 * another process that is not the store, made once this process had reached a store (the
 * process group's own connections: gloo's pairs). Its first RDZV_PEER_DETAIL_EVENTS calls and
 * its failures are recorded (recorder_core.h). */
#define RDZV_F_PEER (1u << 14)
/* attach: a PROC_EXIT whose status is the signal that ended the process (the kernel's exit
 * code said so), not an exit status. The shim never writes one: a process killed by a signal
 * writes nothing more. */
#define RDZV_F_SIGNALED (1u << 15)

/* Address as the socket API saw it; port in host byte order. AF_INET uses addr[0..3]. */
struct rdzv_sockaddr {
  rdzv_u16 family; /* AF_INET, AF_INET6, 0 = none */
  rdzv_u16 port;
  rdzv_u32 scope_id;
  rdzv_u8 addr[16];
};

struct rdzv_ev_net {
  struct rdzv_sockaddr peer;
  struct rdzv_sockaddr local;
  rdzv_u64 size;       /* bytes asked for (I/O), backlog (listen), optname (sockopt) */
  rdzv_s64 timeout_ms; /* poll timeout or SO_*TIMEO value; -1 = infinite / not set */
  rdzv_u32 nfds;       /* poll/select: number of descriptors waited on */
  rdzv_u32 tcp_state;  /* TCP state when known (linux TCP_ESTABLISHED = 1 ...), else 0 */
  rdzv_u64 reserved;
};

#define RDZV_HOST_MAX 88
#define RDZV_SERVICE_MAX 16
struct rdzv_ev_resolve {
  char host[RDZV_HOST_MAX];       /* NUL-terminated, cut (flag TRUNCATED) when longer */
  char service[RDZV_SERVICE_MAX]; /* port or service name given to the resolver */
  rdzv_s32 family;                /* hints: AF_UNSPEC/AF_INET/AF_INET6 */
  rdzv_s32 socktype;
  rdzv_s32 ai_flags;
  rdzv_u32 naddrs;                /* addresses returned */
  struct rdzv_sockaddr first;     /* the first address returned */
};

struct rdzv_ev_close {
  struct rdzv_sockaddr peer;
  struct rdzv_sockaddr local;
  rdzv_u64 bytes_sent;
  rdzv_u64 bytes_recv;
  rdzv_u64 calls_send;
  rdzv_u64 calls_recv;
  rdzv_u64 open_ns;   /* time since the connect/accept that made the socket */
  rdzv_u32 tcp_state; /* state at close, from TCP_INFO */
  rdzv_u32 reserved;
};

struct rdzv_ev_snapshot {
  rdzv_u64 utime_us;
  rdzv_u64 stime_us;
  rdzv_u64 rchar;       /* /proc/self/io: bytes read through read-like calls */
  rdzv_u64 wchar;
  rdzv_u64 read_bytes;  /* /proc/self/io: bytes fetched from storage */
  rdzv_u64 write_bytes;
  rdzv_u64 vol_ctxsw;   /* voluntary context switches: waiting */
  rdzv_u64 invol_ctxsw; /* involuntary: preempted while computing */
  rdzv_u64 maxrss_kb;
  rdzv_u64 since_start_ns; /* process age at the snapshot */
};

#define RDZV_PATH_MAX 128
struct rdzv_ev_proc {
  rdzv_s32 status;    /* exit code, or signal number when signaled */
  rdzv_s32 child_pid;
  char path[RDZV_PATH_MAX];
  rdzv_u64 reserved;
};

#define RDZV_PAYLOAD_SIZE 144
struct rdzv_record {
  rdzv_u8 kind;   /* enum rdzv_kind */
  rdzv_u8 op;     /* enum rdzv_op */
  rdzv_u16 flags; /* RDZV_F_* */
  rdzv_u32 tid;
  rdzv_u64 ts_ns;  /* CLOCK_MONOTONIC when the call began */
  rdzv_u64 dur_ns; /* how long the call took */
  rdzv_s64 ret;    /* the call's return value */
  rdzv_s32 fd;
  rdzv_s32 err;    /* errno after the call when it failed, else 0 */
  union {
    struct rdzv_ev_net net;
    struct rdzv_ev_resolve resolve;
    struct rdzv_ev_close close;
    struct rdzv_ev_snapshot snap;
    struct rdzv_ev_proc proc;
    rdzv_u8 raw[RDZV_PAYLOAD_SIZE];
  } u;
  rdzv_u32 reserved;
  rdzv_u32 seal; /* stored last, release order: == rdzv_seal_for(slot) when complete */
};

/* Identity found in the process environment; -1 / "" when absent. */
struct rdzv_identity {
  rdzv_s32 rank;
  rdzv_s32 local_rank;
  rdzv_s32 world_size;
  rdzv_s32 group_rank;
  rdzv_s32 master_port;
  rdzv_s32 restart_count; /* TORCHELASTIC_RESTART_COUNT */
  rdzv_s32 slurm_procid;
  rdzv_s32 slurm_nodeid;
  char master_addr[64];
  char run_id[64];        /* TORCHELASTIC_RUN_ID */
  char slurm_job_id[32];
};

/* Which process this is, in a way that survives containers: a host name and a pid are not
 * unique when processes run in PID namespaces of their own (every container's first process
 * is pid 1, and `--net=host` containers share the host's name). The boot, the PID namespace,
 * the pid in it and the start time are. Both recorders fill it from /proc/PID (the shim for
 * itself, attach for a process it follows, which it sees by host pid), so the two describe
 * one process alike. Zero where unknown. */
#define RDZV_PIDNS_INIT_INODE 0xEFFFFFFCu /* the kernel's initial PID namespace, always */
#define RDZV_CONTAINER_ID_MAX 72
struct rdzv_origin {
  rdzv_u8 boot_id[16];     /* /proc/sys/kernel/random/boot_id: one machine, one boot */
  rdzv_u64 pidns_inode;    /* /proc/PID/ns/pid: the PID namespace ns_pid is counted in */
  rdzv_u64 netns_inode;    /* /proc/PID/ns/net: where its loopback addresses lead */
  rdzv_u64 start_ticks;    /* /proc/PID/stat field 22: clock ticks from boot to its start */
  rdzv_s32 ns_pid;         /* the pid the process sees (NSpid's last entry) */
  rdzv_s32 host_pid;       /* its pid in the recorder's /proc view when that is an outer
                              PID namespace (attach on the host), else 0 */
  char container_id[RDZV_CONTAINER_ID_MAX]; /* from /proc/PID/cgroup (docker, containerd,
                                               cri-o, podman, kubepods); "" when none */
};

/* A call that has begun and not returned (RDZV_FEAT_INFLIGHT): records are written when a call
 * returns, so a call that never returns (a store that stopped answering, a rank that never
 * comes, a job cancelled while it waits) would leave no trace. The writer fills a slot when a
 * blocking call on a store socket (connect, accept, a receive, a wait on it) or a resolver call
 * begins and empties it when the call returns; the file is MAP_SHARED, so a slot still full
 * after SIGKILL or SIGTERM says what the thread was waiting in, and since when.
 *
 * A slot belongs to one thread for the length of one call: claimed by a compare-and-swap of
 * `owner` (0 -> the thread id), the fields filled, then `seal` stored last with release order
 * (== rdzv_inflight_seal(start_ns)); on return `seal` is stored 0, then `owner` 0. A reader
 * takes a slot whose seal matches its start as a call in flight at the moment the file was
 * read. A live reader copies the slot, and reads the seal once more: a different seal means the
 * call ended (or another began) while it copied, and the slot is read as empty.
 *
 * On a store socket's receive (the host's hot path) only kind, op, flags, fd and start are
 * written; `has` says which of the other fields are (RDZV_INFLIGHT_HAS_*). A reader finds the
 * peer and the socket's timeout of such a call from the records of its fd (the connect or
 * accept that made it, its SOCKOPT records). */
#define RDZV_INFLIGHT_SLOTS 16
#define RDZV_INFLIGHT_HOST_MAX 32
#define RDZV_INFLIGHT_SEAL_BASE 0x464C4954u /* "TILF" */
struct rdzv_inflight {
  rdzv_u32 seal;       /* stored last, release order; 0 = empty */
  rdzv_u32 owner;      /* thread id of the caller while the slot is claimed, else 0 */
  rdzv_u8 kind;        /* the record kind the call will write when it returns (enum rdzv_kind) */
  rdzv_u8 op;          /* enum rdzv_op */
  rdzv_u16 flags;      /* RDZV_F_* as the record would have them (STORE, NONBLOCK) */
  rdzv_s32 fd;         /* -1 for the resolver */
  rdzv_u32 has;        /* RDZV_INFLIGHT_HAS_*: which of the fields below this call wrote */
  rdzv_u32 reserved;
  rdzv_u64 start_ns;   /* CLOCK_MONOTONIC when the call began */
  rdzv_s64 timeout_ms; /* the call's own timeout (poll's), -1 = none */
  rdzv_u64 size;       /* bytes asked for */
  union {
    struct rdzv_sockaddr peer;           /* socket calls: the other end, when known */
    char host[RDZV_INFLIGHT_HOST_MAX];   /* resolver: the name asked for, cut to fit */
  } u;
};

#define RDZV_INFLIGHT_HAS_TIMEOUT (1u << 0)
#define RDZV_INFLIGHT_HAS_SIZE (1u << 1)
#define RDZV_INFLIGHT_HAS_PEER (1u << 2)
#define RDZV_INFLIGHT_HAS_HOST (1u << 3)

/* Never 0 (the base's lowest bit is 0, the start's is set); two calls of one slot that began
 * at different nanoseconds have different seals but one in 2^31. */
static inline rdzv_u32 rdzv_inflight_seal(rdzv_u64 start_ns) {
  return RDZV_INFLIGHT_SEAL_BASE ^ ((rdzv_u32)start_ns | 1u);
}

#define RDZV_MAX_STORE_PORTS 16
#define RDZV_CMDLINE_MAX 512
#define RDZV_TORCH_VERSION_MAX 32
struct rdzv_file_header {
  char magic[RDZV_MAGIC_LEN]; /* stored last, release order */
  rdzv_u32 version;
  rdzv_u32 header_size;
  rdzv_u32 record_size;
  rdzv_u32 features;
  rdzv_u32 source; /* enum rdzv_source */
  rdzv_s32 pid;
  rdzv_s32 ppid;
  rdzv_u32 capacity; /* record slots after the header */
  rdzv_u64 start_realtime_ns; /* when the process was started (exec'd or forked) */
  rdzv_u64 clock_realtime_ns; /* CLOCK_REALTIME and CLOCK_MONOTONIC read together, */
  rdzv_u64 clock_monotonic_ns; /* to put record timestamps on the wall clock */
  rdzv_u64 created_monotonic_ns;
  /* Live counters, updated atomically by the writer. */
  rdzv_u64 next_slot; /* slots reserved; may exceed capacity (then see dropped) */
  rdzv_u64 dropped;   /* events not stored because the file was full */
  rdzv_u64 lost;      /* events lost before the writer saw them (bpf) */
  rdzv_u16 store_ports[RDZV_MAX_STORE_PORTS]; /* what counted as a store port; 0 = unused */
  struct rdzv_identity ident;
  char host[64];
  char exe[256];
  char cmdline[RDZV_CMDLINE_MAX]; /* argv joined by single spaces, cut to fit */
  rdzv_u32 cmdline_truncated;
  rdzv_u32 exec_generation; /* 0 for the first image of this pid, +1 per traced exec */
  struct rdzv_origin origin; /* RDZV_FEAT_ORIGIN */
  /* RDZV_FEAT_TORCH_VERSION: torch.__version__ of the PyTorch this process loaded
   * ("2.13.0+cpu", "1.13.0a0"), NUL-terminated; zeros where unknown. */
  char torch_version[RDZV_TORCH_VERSION_MAX];
  /* RDZV_FEAT_STORE_RECV: CLOCK_MONOTONIC start of the latest receive on one of this process's
   * store sockets that returned bytes (relaxed stores, coarse past a socket's detail limit):
   * that its store traffic still moved, when no record says so any more (a store host still
   * serving its own client, beyond the first calls of each socket). 0 = none yet. */
  rdzv_u64 last_store_recv_ns;
  rdzv_u8 reserved[RDZV_HEADER_SIZE - 1160 - 120 - RDZV_TORCH_VERSION_MAX - 8 - RDZV_INFLIGHT_SLOTS * 80];
  /* Taken from the end of the header: what is added after `origin` comes out of `reserved`. */
  struct rdzv_inflight inflight[RDZV_INFLIGHT_SLOTS]; /* RDZV_FEAT_INFLIGHT */
};

/* Which member of record.u a record of this kind fills (the kinds' comments above say the
 * same): every reader decodes the union by this, never by a list of its own. */
enum rdzv_payload {
  RDZV_PAYLOAD_NONE = 0, /* a kind this header does not know */
  RDZV_PAYLOAD_NET,
  RDZV_PAYLOAD_RESOLVE,
  RDZV_PAYLOAD_CLOSE,
  RDZV_PAYLOAD_SNAPSHOT,
  RDZV_PAYLOAD_PROC
};
static inline enum rdzv_payload rdzv_payload_of(unsigned kind) {
  switch (kind) {
    case RDZV_EV_PROC_START: case RDZV_EV_PROC_EXIT: case RDZV_EV_FORK: case RDZV_EV_EXEC:
    case RDZV_EV_SPAWN: case RDZV_EV_SIGNAL: case RDZV_EV_REAP: return RDZV_PAYLOAD_PROC;
    case RDZV_EV_SNAPSHOT: return RDZV_PAYLOAD_SNAPSHOT;
    case RDZV_EV_RESOLVE: return RDZV_PAYLOAD_RESOLVE;
    case RDZV_EV_CLOSE: return RDZV_PAYLOAD_CLOSE;
    case RDZV_EV_CONNECT: case RDZV_EV_CONNECT_DONE: case RDZV_EV_BIND: case RDZV_EV_LISTEN:
    case RDZV_EV_ACCEPT: case RDZV_EV_SEND: case RDZV_EV_RECV: case RDZV_EV_POLL:
    case RDZV_EV_SOCKOPT: case RDZV_EV_TCP_STATE: return RDZV_PAYLOAD_NET;
    default: return RDZV_PAYLOAD_NONE;
  }
}

static inline rdzv_u32 rdzv_seal_for(rdzv_u64 slot) {
  return RDZV_SEAL_BASE ^ (rdzv_u32)(slot * 2654435761u);
}

static inline rdzv_u64 rdzv_record_offset(rdzv_u64 slot) {
  return (rdzv_u64)RDZV_HEADER_SIZE + slot * (rdzv_u64)RDZV_RECORD_SIZE;
}

#ifdef __cplusplus
static_assert(sizeof(struct rdzv_sockaddr) == 24, "rdzv_sockaddr layout");
static_assert(sizeof(struct rdzv_ev_net) <= RDZV_PAYLOAD_SIZE, "net payload fits");
static_assert(sizeof(struct rdzv_ev_resolve) == RDZV_PAYLOAD_SIZE, "resolve payload fits");
static_assert(sizeof(struct rdzv_ev_close) <= RDZV_PAYLOAD_SIZE, "close payload fits");
static_assert(sizeof(struct rdzv_ev_snapshot) <= RDZV_PAYLOAD_SIZE, "snapshot payload fits");
static_assert(sizeof(struct rdzv_ev_proc) <= RDZV_PAYLOAD_SIZE, "proc payload fits");
static_assert(sizeof(struct rdzv_record) == RDZV_RECORD_SIZE, "record size");
static_assert(__builtin_offsetof(struct rdzv_record, seal) == RDZV_RECORD_SIZE - 4, "seal is last");
static_assert(sizeof(struct rdzv_identity) == 192, "identity layout");
static_assert(sizeof(struct rdzv_origin) == 120, "origin layout");
static_assert(__builtin_offsetof(struct rdzv_file_header, origin) == 1160, "origin after exec_generation");
static_assert(sizeof(struct rdzv_inflight) == 80, "inflight slot layout");
static_assert(__builtin_offsetof(struct rdzv_file_header, inflight) ==
                  RDZV_HEADER_SIZE - RDZV_INFLIGHT_SLOTS * 80, "inflight slots end the header");
static_assert(__builtin_offsetof(struct rdzv_file_header, torch_version) == 1280, "torch_version after origin");
static_assert(__builtin_offsetof(struct rdzv_file_header, last_store_recv_ns) == 1312, "last_store_recv_ns after torch_version");
static_assert(sizeof(struct rdzv_file_header) == RDZV_HEADER_SIZE, "header size");
#elif !defined(__bpf__) && !defined(__BPF__)
_Static_assert(sizeof(struct rdzv_record) == RDZV_RECORD_SIZE, "record size");
_Static_assert(sizeof(struct rdzv_file_header) == RDZV_HEADER_SIZE, "header size");
#endif

#endif /* RDZVSCOPE_TRACE_FORMAT_H */
