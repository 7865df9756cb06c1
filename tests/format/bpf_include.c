/* The trace format must compile for the BPF target exactly as the bpf/ probes will include
 * it (kernel fixed-width types, no libc), with the same record and header sizes. */
#include <linux/types.h>

#include "rdzvscope/trace_format.h"

_Static_assert(sizeof(struct rdzv_record) == RDZV_RECORD_SIZE, "record size under BPF");
_Static_assert(sizeof(struct rdzv_file_header) == RDZV_HEADER_SIZE, "header size under BPF");
_Static_assert(__builtin_offsetof(struct rdzv_record, seal) == RDZV_RECORD_SIZE - 4, "seal last");
_Static_assert(RDZV_F_INJECTED <= 0xFFFFu && !(RDZV_F_INJECTED & RDZV_F_PREEXISTING),
               "record.flags is 16 bits; injected is a bit of its own");

struct rdzv_record rdzv_probe_record;
