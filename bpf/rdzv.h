/* What rdzv.bpf.c sends to the loader through the ring buffer: a finished trace record (in
 * the shared format, unsealed) and the process it belongs to. The loader only adds the seal.
 * Plain C with fixed-width types: included by the BPF program (after vmlinux.h) and by the
 * C++ loader. */
#ifndef RDZVSCOPE_BPF_RDZV_H
#define RDZVSCOPE_BPF_RDZV_H

#include "rdzvscope/recorder_core.h" /* its limits: the BPF part of it */
#include "rdzvscope/trace_format.h"

#define RDZV_BPF_MAX_PORTS RDZV_MAX_STORE_PORTS
/* --comm NAME: at most this many names, each as the kernel keeps a comm (15 bytes + NUL). */
#define RDZV_BPF_MAX_COMMS 8
#define RDZV_BPF_COMM_LEN 16
#define RDZV_BPF_RINGBUF_BYTES (8u << 20)
/* The loader is woken once this much is waiting (about 5,000 events), else at its poll
 * interval: 8 MiB hold 40,000 events, most of a second at 50,000 events per second. */
#define RDZV_BPF_RINGBUF_WAKE_BYTES (1u << 20)
#define RDZV_BPF_POLL_MS 50
/* The filter in front of the targets map (rdzv_maps.bpf.h: target_bits), in bits, and where
 * a tgid's bit is: the word and the mask, for the programs and the loader alike. */
#define RDZV_BPF_TARGET_BITS 32768
static inline rdzv_u32 rdzv_target_word(rdzv_u32 tgid) { return (tgid & (RDZV_BPF_TARGET_BITS - 1)) / 64; }
static inline rdzv_u64 rdzv_target_mask(rdzv_u32 tgid) { return (rdzv_u64)1 << (tgid % 64); }

struct rdzv_bpf_event {
  rdzv_u32 tgid; /* the process whose file gets the record */
  rdzv_u32 what; /* RDZV_BPF_EV_* */
  struct rdzv_record rec;
};
/* A record for the process's file. */
#define RDZV_BPF_EV_RECORD 0
/* Not a record: the thread rec.tid died in the call `rec` (as far as it is known; for a call
 * found blocked at attach, rec.kind is 0), killed by a signal while the call was in progress.
 * The loader keeps that call in flight in the file for good (bpf/inflight.cpp). */
#define RDZV_BPF_EV_DIED_IN_CALL 1

/* A syscall between its enter and its exit, per thread (thread_calls): the record as far as
 * it is known. Also written by the loader (late_calls), with `late` set and nothing else but
 * the syscall number, for a thread it found blocked in a call on a store socket found in /proc
 * (seed.cpp): its sys_enter was never seen, so the record is rebuilt at its exit
 * (late_io_exit). */
struct call {
  rdzv_u64 id;
  void *sk;          /* connect: the socket, to forget a pending connect that finished synchronously */
  rdzv_u64 user_ptr; /* poll/ppoll: the pollfd array; sendmmsg/recvmmsg: the messages */
  rdzv_u32 dontwait; /* send/recv: MSG_DONTWAIT given */
  rdzv_u32 late;     /* began before attach: only id is set (by the loader), or rebuilt at exit */
  rdzv_u32 in_call;  /* the thread's storage holds a call between its enter and its exit */
  rdzv_u32 reserved;
  struct rdzv_record rec;
};

/* One call in progress, as the iterator rdzv_calls_in_flight writes it for the loader: the
 * thread's call between its enter and its exit (RDZV_BPF_FROM_ENTER), the loader's entry for
 * a call it found blocked at attach (RDZV_BPF_FROM_FOUND), or a getaddrinfo between its
 * uprobe and its uretprobe (RDZV_BPF_FROM_LOOKUP: its record in c.rec). */
#define RDZV_BPF_FROM_ENTER 0
#define RDZV_BPF_FROM_FOUND 1
#define RDZV_BPF_FROM_LOOKUP 2
/* A thread of a target in none of those: it is alive (c is zero). */
#define RDZV_BPF_FROM_NONE 3
struct rdzv_bpf_inflight {
  rdzv_u32 tgid;
  rdzv_u32 tid;
  rdzv_u32 from; /* RDZV_BPF_FROM_* */
  rdzv_u32 reserved;
  struct call c;
};

/* A store socket (the store_socks map, keyed by tgid << 32 | fd), as the shim's fd table knows
 * it, or a peer socket (peer_socket set: gloo's pairs, learnt when its connection is made, never
 * found by the loader; its own record limits, no wait, close or call in flight): learnt when a connect to a store port succeeds or is in progress, when a bind to one
 * succeeds, and for every socket accepted on such a listener; forgotten at close. Also
 * written by the loader for the store sockets a target already had when attach started
 * (seed.cpp): those have sk 0 ("identity unknown") until the first call on the descriptor
 * reads it from the fd table (store_identify, store_io.bpf.h), and totals from attach on. */
struct store_sock {
  rdzv_u64 sk;        /* struct sock *; 0: not known yet (found by the loader) */
  rdzv_u64 opened_ns; /* connect start or accept time; attach time when found by the loader */
  struct rdzv_sockaddr peer;
  struct rdzv_sockaddr local;
  rdzv_u64 bytes_sent, bytes_recv, calls_send, calls_recv; /* totals for the CLOSE record */
  rdzv_s64 rcvtimeo_ms, sndtimeo_ms; /* last SO_*TIMEO values (-1: never set), as I/O records carry */
  rdzv_u32 events_recorded;   /* per-call records so far */
  rdzv_u32 failures_recorded; /* failure / 0-byte records written after those */
  rdzv_u32 pending;           /* a non-blocking connect whose outcome the kernel has not decided */
  rdzv_u32 peer_socket;       /* a peer socket (recorder_core.h: rdzv_is_peer_socket), not a store one */
};

/* Per process (the proc_peers map), what decides a peer socket (recorder_core.h:
 * rdzv_is_peer_socket): whether it reached a store, and how many peer sockets it has open
 * (copies made by dup not counted; at most RDZV_PEER_SOCKETS_MAX learnt). */
struct proc_peers {
  rdzv_u32 reached;
  rdzv_u32 open;
};

#endif /* RDZVSCOPE_BPF_RDZV_H */
