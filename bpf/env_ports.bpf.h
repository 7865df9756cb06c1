/* Store ports from a new image's environment, read by the kernel side at exec, before the
 * image runs its first instruction: a program that connects at once (a C client, a rank whose
 * launcher set MASTER_PORT only in its environment) finds its store port known, whatever the
 * loader's scheduling. The policy (which variables, how values read) is the recorder core's
 * (rdzvscope/recorder_core.h), shared with the shim and the loader. Included once, by
 * rdzv.bpf.c, after rdzv_sock.bpf.h. */
#ifndef RDZVSCOPE_BPF_ENV_PORTS_BPF_H
#define RDZVSCOPE_BPF_ENV_PORTS_BPF_H

/* One entry read at a time: every entry that can name a store port fits (an endpoint with a
 * 253-byte host name); longer ones (PATH, LS_COLORS) are skipped a buffer at a time. */
#define RDZV_ENV_ENTRY_READ 320
/* Steps of one scan (an entry, a buffer of a long one, or a character of a port list): about
 * 1.3 MiB of environment, far beyond a real one. */
#define RDZV_ENV_SCAN_STEPS 4096

/* The entry buffer, with room past what is read: the verifier bounds the parsers' indexes by
 * the ranges of the value's length and offset, not by the length of what was read. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, char[RDZV_ENV_ENTRY_READ + 64]);
} env_entry SEC(".maps");

struct env_scan {
  __u64 pos, end;           /* user addresses: the next entry (or the rest of a long one), the end */
  __u64 list_pos, list_end; /* RDZVSCOPE_PORTS being read, a character a step */
  __u32 inside;             /* pos is inside an entry longer than a buffer */
  __u32 in_list;            /* the steps read list_pos.. until list_end */
  __u32 learnt;
  struct rdzv_port_list_state list;
};

static __always_inline void learn_port(__u16 port, struct env_scan *s) {
  if (!port) return;
  __u8 one = 1;
  bpf_map_update_elem(&learnt_ports, &port, &one, BPF_ANY);
  s->learnt++;
}

/* An entry of `len` bytes (its NUL not counted) read at s->pos. */
static __always_inline void read_entry(const char *entry, __u32 len, struct env_scan *s) {
  unsigned at = 0;
  enum rdzv_port_var var = rdzv_env_entry_port_var(entry, len, &at);
  /* Bounds the verifier can follow (they hold anyway: a name is short, an entry fits): checked
   * in 64 bits on the very register that is used, where a 32-bit difference would be checked
   * on a zero-extended copy and used unchecked. */
  __u64 vlen = (__u64)len - (__u64)at;
  if (at > 32 || vlen >= RDZV_ENV_ENTRY_READ) return;
  switch (var) {
    case RDZV_PORT_VAR_MASTER_PORT:
      learn_port(rdzv_port_of_text(entry + at, (unsigned)vlen), s);
      break;
    case RDZV_PORT_VAR_ENDPOINT:
      learn_port(rdzv_port_of_endpoint(entry + at, (unsigned)vlen), s);
      break;
    case RDZV_PORT_VAR_LIST: /* the next steps feed it */
      s->list_pos = s->pos + at;
      s->list_end = s->pos + (len < at + RDZV_PORT_VALUE_MAX ? len : at + RDZV_PORT_VALUE_MAX);
      __builtin_memset(&s->list, 0, sizeof(s->list));
      s->in_list = 1;
      break;
    default:
      break;
  }
}

static long env_step(__u32 step, struct env_scan *s) {
  if (s->in_list) {
    char c = 0; /* past its end (or unreadable): 0 completes the last item */
    if (s->list_pos < s->list_end && bpf_probe_read_user(&c, 1, (const void *)s->list_pos)) c = 0;
    s->list_pos++;
    if (!c) s->in_list = 0;
    learn_port(rdzv_port_list_feed(&s->list, c), s);
    return 0;
  }
  if (s->pos >= s->end) return 1;
  __u32 zero = 0;
  char *buf = bpf_map_lookup_elem(&env_entry, &zero);
  if (!buf) return 1;
  long n = bpf_probe_read_user_str(buf, RDZV_ENV_ENTRY_READ, (const void *)s->pos);
  if (n <= 0 || n > RDZV_ENV_ENTRY_READ) return 1;
  if (!s->inside && n < RDZV_ENV_ENTRY_READ) read_entry(buf, (__u32)n - 1, s);
  /* A full buffer: the entry goes on past it (its last byte is the NUL the helper added). */
  s->inside = n == RDZV_ENV_ENTRY_READ;
  s->pos += s->inside ? (__u64)n - 1 : (__u64)n;
  return 0;
}

/* The store ports named in the environment of `task` (the exec'ing process, whose new image's
 * strings the kernel has just copied onto its stack) go into learnt_ports; returns how many. */
static __always_inline __u32 learn_env_ports(struct task_struct *task) {
  struct env_scan s = {
      .pos = BPF_CORE_READ(task, mm, env_start),
      .end = BPF_CORE_READ(task, mm, env_end),
  };
  if (!s.pos || s.end <= s.pos) return 0;
  bpf_loop(RDZV_ENV_SCAN_STEPS, env_step, &s, 0);
  return s.learnt;
}

#endif /* RDZVSCOPE_BPF_ENV_PORTS_BPF_H */
