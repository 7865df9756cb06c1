/* What rdzv.bpf.c sends to the loader through the ring buffer: a finished trace record (in
 * the shared format, unsealed) and the process it belongs to. The loader only adds the seal.
 * Plain C with fixed-width types: included by the BPF program (after vmlinux.h) and by the
 * C++ loader. */
#ifndef RDZVSCOPE_BPF_RDZV_H
#define RDZVSCOPE_BPF_RDZV_H

#include "rdzvscope/trace_format.h"

#define RDZV_BPF_MAX_PORTS RDZV_MAX_STORE_PORTS
#define RDZV_BPF_RINGBUF_BYTES (8u << 20)
/* The loader is woken once this much is waiting (about 5,000 events), else at its poll
 * interval: 8 MiB hold 40,000 events, most of a second at 50,000 events per second. */
#define RDZV_BPF_RINGBUF_WAKE_BYTES (1u << 20)
#define RDZV_BPF_POLL_MS 50

struct rdzv_bpf_event {
  rdzv_u32 tgid; /* the process whose file gets the record */
  rdzv_u32 reserved;
  struct rdzv_record rec;
};

#endif /* RDZVSCOPE_BPF_RDZV_H */
