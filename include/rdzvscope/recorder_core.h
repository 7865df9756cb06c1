/*
 * rdzvscope recorder core: what both recorders of the trace format (the LD_PRELOAD shim inside
 * a process, the bpf loader of `rdzvscope attach` outside it) must do the same way, once.
 *
 * Plain macros and static inline functions, also read by the BPF programs (rdzv_maps.bpf.h,
 * env_ports.bpf.h), come first; the rest is hidden from them:
 *
 *   - limits:            the per-socket sampling limits, the file size cap, the snapshot rate
 *   - store-port policy: the variables that name store ports and how their values read
 *   - the latest store receive: which calls move header.last_store_recv_ns
 *
 * Then the functions, grouped by the file of core/ that implements them (one static library,
 * rdzvscope_core, linked into the shim, the loader, the CLI, the SPANK plugin and the tests):
 *
 *   - core/text.c:       bounded, allocation-free string building and strict number parsing
 *   - core/config.c:     environment (one lookup interface over our own environ or a
 *                        /proc/PID/environ copy), configuration (RDZVSCOPE_DIR,
 *                        RDZVSCOPE_MAX_MB, RDZVSCOPE_GROUP_READ), identity (RANK, LOCAL_RANK,
 *                        WORLD_SIZE, MASTER_ADDR/PORT, TORCHELASTIC_*, SLURM_*), store ports
 *                        (which TCP ports count as the store's: the policy applied)
 *   - core/trace_dir.c:  the trace directory: its placeholders expanded, it and its parents made
 *   - core/process.c:    process facts (pid, ppid, start time, host, executable, command line,
 *                        clock pair) and origin (boot id, namespaces, NSpid, container id)
 *   - core/trace_file.c: trace files: naming, exclusive creation, modes, preallocation,
 *                        mapping, the header, the PROC_START record, slot reservation, and the
 *                        failure-snapshot rate
 *
 * Plain C11 on libc only. Nothing here allocates, takes a lock or uses stdio: the shim calls
 * these functions from its hooks (in forked children and between vfork and exec too), so
 * every one is limited to async-signal-safe libc calls (open/read/pread/close, mmap,
 * clock_gettime, readlink, ...) and caller-owned buffers. Functions that take a `struct
 * rdzv_port_set` or a `struct rdzv_trace` use atomics where the shim's threads share them.
 */
#ifndef RDZVSCOPE_RECORDER_CORE_H
#define RDZVSCOPE_RECORDER_CORE_H

#include "rdzvscope/trace_format.h"

/* ---------------------------------------------------------------- limits (BPF too): macros only */

/* Per store socket: the first RDZV_IO_DETAIL_EVENTS send/recv calls are recorded one by one
 * (the rendezvous handshake and first queries), after that only failures and 0-byte reads,
 * at most RDZV_IO_FAILURE_EVENTS of them (a client spinning on recv() == 0 after the store
 * went away must not fill the file); the rest count in the socket's totals at close. */
#define RDZV_IO_DETAIL_EVENTS 32u
#define RDZV_IO_FAILURE_EVENTS 16u
/* Per peer socket (RDZV_F_PEER): the first calls that move data, enough for a pair's opening
 * exchange (gloo 2.x: the connecting side's 8-byte pair number) and the first collective's
 * first messages, which show whether and when the process entered it; then failures and
 * 0-byte reads, RDZV_IO_FAILURE_EVENTS of them, as on store sockets. */
#define RDZV_PEER_DETAIL_EVENTS 6u

/* Failure snapshots: at most one per this many ns per process (a retry loop must not fill the
 * file with them). */
#define RDZV_FAILURE_SNAPSHOT_GAP_NS 250000000ull

/* Size cap of one trace file: RDZVSCOPE_MAX_MB for the shim, --max-mb for both CLIs. */
#define RDZV_TRACE_DEFAULT_MAX_MB 2u
#define RDZV_TRACE_MAX_MB 1024u

/* Names tried for one process's file: <host>.<pid>.rzt, then .1 ... */
#define RDZV_TRACE_NAME_ATTEMPTS 1000

/* Store ports every process has besides its environment's: torchelastic's c10d rendezvous
 * endpoint default and TCPStore's (MASTER_PORT's) default. */
#define RDZV_PORT_C10D_DEFAULT 29400u
#define RDZV_PORT_TCPSTORE_DEFAULT 29500u

/* ---------------------------------------------------------------- store-port policy (BPF too)
 * Here, static inline; core/config.c's rdzv_ports_from_env applies it for the shim and the
 * loader. */

/* The environment variables that name store ports, and how their values read. Both recorders
 * apply them: the shim and the loader look them up by name (rdzv_ports_from_env); attach's
 * kernel side scans a new image's environment entry by entry at exec (bpf/env_ports.bpf.h),
 * so that a port is known before the image runs its first instruction, with no race against
 * a program that connects at once. Static inline, no libc, and written for the BPF verifier:
 * loops are short and bounded, and a list is read one character a call (the kernel side
 * feeds it from a bpf_loop step). */
#define RDZV_ENV_MASTER_PORT "MASTER_PORT"
#define RDZV_ENV_RDZV_ENDPOINT "PET_RDZV_ENDPOINT"
#define RDZV_ENV_EXTRA_PORTS "RDZVSCOPE_PORTS"
/* The longest value looked at: an endpoint with a 253-byte DNS name and a port fits. */
#define RDZV_PORT_VALUE_MAX 288u
/* A port's text: at most this many characters (digits, leading zeros allowed). */
#define RDZV_PORT_TEXT_MAX 7u

/* text[0..len) as a strict decimal port (digits only, 1..65535), else 0. */
static inline rdzv_u16 rdzv_port_of_text(const char *text, unsigned len) {
  if (len == 0 || len > RDZV_PORT_TEXT_MAX) return 0;
  rdzv_u32 v = 0;
  for (unsigned i = 0; i < RDZV_PORT_TEXT_MAX && i < len; i++) {
    const char c = text[i];
    if (c < '0' || c > '9') return 0;
    v = v * 10 + (rdzv_u32)(c - '0');
  }
  return v >= 1 && v <= 65535 ? (rdzv_u16)v : 0;
}

/* The port of an endpoint "host:port" or "[v6]:port": what follows the last colon, unless that
 * colon is inside the brackets (a bare "[v6]"); 0 when there is none. Looked for from the end:
 * a port is at most RDZV_PORT_TEXT_MAX characters. */
static inline rdzv_u16 rdzv_port_of_endpoint(const char *text, unsigned len) {
  /* Signed 64-bit index arithmetic: the verifier then bounds text + i by the ranges of len and
   * k, where 32-bit unsigned wrap-around would leave it unbounded. */
  for (long k = 1; k <= (long)RDZV_PORT_TEXT_MAX + 1 && k <= (long)len; k++) {
    const long i = (long)len - k;
    if (text[i] == ']') return 0;
    if (text[i] == ':') return rdzv_port_of_text(text + i + 1, (unsigned)(k - 1));
  }
  return 0;
}

/* A comma-separated list of ports, fed one character a call (c == 0 after the last one):
 * returns the port an item completes, 0 for an item that is not a strict port (skipped) and
 * between items. Start from a zeroed state. */
struct rdzv_port_list_state {
  rdzv_u32 value, digits, bad;
};
static inline rdzv_u16 rdzv_port_list_feed(struct rdzv_port_list_state *st, char c) {
  if (c == ',' || c == 0) {
    const rdzv_u16 port = !st->bad && st->digits >= 1 && st->value >= 1 && st->value <= 65535 ? (rdzv_u16)st->value : 0;
    st->value = st->digits = st->bad = 0;
    return port;
  }
  if (c < '0' || c > '9' || st->digits >= RDZV_PORT_TEXT_MAX) {
    st->bad = 1;
    return 0;
  }
  st->value = st->value * 10 + (rdzv_u32)(c - '0');
  st->digits++;
  return 0;
}

/* Which store-port variable an environment entry "NAME=value" of `len` bytes sets, and where
 * its value starts (*value_at). */
enum rdzv_port_var { RDZV_PORT_VAR_NONE, RDZV_PORT_VAR_MASTER_PORT, RDZV_PORT_VAR_ENDPOINT, RDZV_PORT_VAR_LIST };

static inline int rdzv_env_entry_is(const char *entry, unsigned len, const char *name, unsigned name_len) {
  if (len <= name_len) return 0;
  for (unsigned i = 0; i < name_len && i < 32; i++)
    if (entry[i] != name[i]) return 0;
  return entry[name_len] == '=';
}

static inline enum rdzv_port_var rdzv_env_entry_port_var(const char *entry, unsigned len, unsigned *value_at) {
#define RDZV_NAME_LEN(s) ((unsigned)(sizeof(s) - 1))
  if (rdzv_env_entry_is(entry, len, RDZV_ENV_MASTER_PORT, RDZV_NAME_LEN(RDZV_ENV_MASTER_PORT))) {
    *value_at = RDZV_NAME_LEN(RDZV_ENV_MASTER_PORT) + 1;
    return RDZV_PORT_VAR_MASTER_PORT;
  }
  if (rdzv_env_entry_is(entry, len, RDZV_ENV_RDZV_ENDPOINT, RDZV_NAME_LEN(RDZV_ENV_RDZV_ENDPOINT))) {
    *value_at = RDZV_NAME_LEN(RDZV_ENV_RDZV_ENDPOINT) + 1;
    return RDZV_PORT_VAR_ENDPOINT;
  }
  if (rdzv_env_entry_is(entry, len, RDZV_ENV_EXTRA_PORTS, RDZV_NAME_LEN(RDZV_ENV_EXTRA_PORTS))) {
    *value_at = RDZV_NAME_LEN(RDZV_ENV_EXTRA_PORTS) + 1;
    return RDZV_PORT_VAR_LIST;
  }
#undef RDZV_NAME_LEN
  return RDZV_PORT_VAR_NONE;
}

/* ---------------------------------------------------------------- the latest store receive (BPF too)
 * RDZV_FEAT_STORE_RECV (header.last_store_recv_ns): the calls that move it. A receive on a
 * store socket that returned bytes (its server read a request, its client a reply), at that
 * call's start on CLOCK_MONOTONIC; the latest wins. Records stop after a socket's first calls:
 * this says a store host kept receiving when nothing else does (store_unresponsive, cause
 * network). The shim applies it in its receive hook; attach's kernel side at the receive's
 * exit, into a per-process map whose value the loader copies into the header
 * (rdzv_note_store_recv) at each pass. */
static inline int rdzv_store_recv_moves(rdzv_s64 ret, rdzv_u8 kind, int on_store_socket) {
  return ret > 0 && kind == RDZV_EV_RECV && on_store_socket;
}

/* ---------------------------------------------------------------- peer sockets (BPF too)
 * Which socket is a peer socket (RDZV_F_PEER, trace_format.h), for the shim and attach alike:
 * a TCP connection this process made (a connect that succeeded, blocking or not) or accepted,
 * on no store port, once the process had reached a store (a store connect succeeded): the
 * process group's own connections, gloo's pairs, opened in init_process_group right after the
 * rendezvous. At most RDZV_PEER_SOCKETS_MAX of them per process at once; later ones stay
 * plain sockets. What is recorded of one: its connect or accept and, of its sends and
 * receives, the first RDZV_PEER_DETAIL_EVENTS (sizes, results, times; never a byte of what
 * they carry), then failures and 0-byte reads (RDZV_IO_FAILURE_EVENTS, as on store sockets);
 * no wait on it, no CLOSE record, no call in flight (those are the store's). */
#define RDZV_PEER_SOCKETS_MAX 512u
static inline int rdzv_is_peer_socket(int store_reached, int on_store_port, rdzv_u32 peers_open) {
  return store_reached && !on_store_port && peers_open < RDZV_PEER_SOCKETS_MAX;
}

#if !defined(__bpf__) && !defined(__BPF__)

#include <stddef.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================ core/text.c
 * text and numbers */


/* Appends to a caller's fixed buffer; always NUL-terminated (when cap > 0); `truncated` is
 * set once anything did not fit. */
struct rdzv_text {
  char *buf;
  size_t cap;
  size_t len;
  int truncated;
};
void rdzv_text_init(struct rdzv_text *t, char *buf, size_t cap);
void rdzv_text_str(struct rdzv_text *t, const char *s); /* NULL appends nothing */
void rdzv_text_strn(struct rdzv_text *t, const char *s, size_t n);
void rdzv_text_ch(struct rdzv_text *t, char c);
void rdzv_text_u64(struct rdzv_text *t, rdzv_u64 v);
void rdzv_text_i64(struct rdzv_text *t, rdzv_s64 v);

/* Copies at most cap-1 bytes and terminates (NULL src: ""); returns 1 when src did not fit. */
int rdzv_copy_cut(char *dst, size_t cap, const char *src);

/* Strict decimal: an optional '-', then digits, nothing else (no blanks, no '+'); no
 * overflow. Returns 1 and sets *out, or 0. */
int rdzv_parse_i64(const char *s, rdzv_s64 *out);

/* ================================================================ core/config.c
 * environment, configuration, identity, store ports */

/* ---------------------------------------------------------------- environment */

/* A variable's value, or NULL when it is absent or empty (both recorders treat an empty
 * value as unset). */
typedef const char *(*rdzv_env_fn)(void *ctx, const char *name);

/* This process's environment (getenv); ctx unused. */
const char *rdzv_env_self(void *ctx, const char *name);

/* A copy of another process's environment, as /proc/PID/environ holds it: NAME=value
 * entries, each ended by a NUL. An entry cut at the end of the copy (no NUL within len) is
 * ignored. The first entry of a name wins, as for getenv. ctx: a struct rdzv_env_block. */
struct rdzv_env_block {
  const char *data;
  size_t len;
};
const char *rdzv_env_block_get(void *ctx, const char *name);

/* A yes/no setting: set, not empty and not "0". */
int rdzv_env_flag(const char *value);

/* ---------------------------------------------------------------- configuration */

struct rdzv_config {
  char dir[4096];     /* RDZVSCOPE_DIR, placeholders expanded; "" = tracing off */
  rdzv_u64 max_bytes; /* RDZVSCOPE_MAX_MB in bytes (rdzv_max_bytes_for_mb) */
  int group_read;     /* RDZVSCOPE_GROUP_READ: files 0640 and a new directory 0750 */
};
void rdzv_config_read(struct rdzv_config *cfg, rdzv_env_fn env, void *ctx);

/* A size cap in MiB as bytes: mb <= 0 gives the default, more than RDZV_TRACE_MAX_MB gives
 * RDZV_TRACE_MAX_MB. */
rdzv_u64 rdzv_max_bytes_for_mb(rdzv_s64 mb);

/* ---------------------------------------------------------------- identity */

/* RANK, LOCAL_RANK, WORLD_SIZE, GROUP_RANK, MASTER_PORT, TORCHELASTIC_RESTART_COUNT,
 * SLURM_PROCID, SLURM_NODEID (strict decimal within int32, else -1), MASTER_ADDR,
 * TORCHELASTIC_RUN_ID, SLURM_JOB_ID (cut to fit, else ""). Every field is written. */
void rdzv_identity_fill(struct rdzv_identity *id, rdzv_env_fn env, void *ctx);

/* ---------------------------------------------------------------- store ports */

/* At most RDZV_MAX_STORE_PORTS ports, in the order they were added; 0 = free entry. Entries
 * are only ever added, each with a compare-and-swap, so threads may add and read at once.
 * Zero-initialise before use. */
struct rdzv_port_set {
  rdzv_u16 port[RDZV_MAX_STORE_PORTS];
};

/* Adds port (1..65535); returns 1 when it was not in the set before, 0 otherwise (also when
 * it is out of range or the set is full). */
int rdzv_ports_add(struct rdzv_port_set *set, rdzv_s64 port);
int rdzv_ports_contains(const struct rdzv_port_set *set, rdzv_u16 port);

/* The policy: MASTER_PORT, the port of PET_RDZV_ENDPOINT ("host:port", "[v6]:port"), 29400,
 * 29500, then RDZVSCOPE_PORTS (comma separated), in that order. Items that are not a strict
 * decimal port are skipped. */
void rdzv_ports_from_env(struct rdzv_port_set *set, rdzv_env_fn env, void *ctx);

/* MASTER_PORT again (a training script often sets it itself just before
 * init_process_group); returns 1 when that added a port. */
int rdzv_ports_refresh(struct rdzv_port_set *set, rdzv_env_fn env, void *ctx);

/* Copies the set's ports into a header's store_ports, each entry with an atomic store and
 * only the set ones: a slower exporter never erases what a faster one has just written. */
void rdzv_ports_export(const struct rdzv_port_set *set, rdzv_u16 out[RDZV_MAX_STORE_PORTS]);

/* ================================================================ core/trace_dir.c
 * the trace directory: placeholders and directories */

/* RDZVSCOPE_DIR's placeholders, for a per-job, per-host layout (BASE/%Y/%m/%d/%j/%h): %h this
 * host (rdzv_file_host), %j the job (SLURM_JOB_ID, else TORCHELASTIC_RUN_ID, else "nojob";
 * characters unfit for a path become '_'), %Y %m %d the date of `now` (UTC: the same on every
 * node whatever its time zone), %% a '%'. Any other %x is kept as written. Returns 0, or -1
 * when the result does not fit in cap. */
int rdzv_trace_dir_expand(char *out, size_t cap, const char *pattern, rdzv_env_fn env, void *ctx,
                          const char *host, time_t now);

/* Makes the trace directory and its missing parents (each 0700, 0750 with group_read,
 * whatever the umask) unless they exist; returns 0, or -1 with errno (ENOTDIR when one is
 * something else). */
int rdzv_trace_dir_ensure(const char *dir, int group_read);

/* ================================================================ core/process.c
 * process facts and origin */


static inline rdzv_u64 rdzv_clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (rdzv_u64)ts.tv_sec * 1000000000ull + (rdzv_u64)ts.tv_nsec;
}

/* Reads up to cap-1 bytes of a (small, /proc) file into buf and terminates it; returns the
 * bytes read or -1. */
long rdzv_read_file(const char *path, char *buf, size_t cap);

/* The number after `key` in a "key: value" /proc text (/proc/PID/io, status); 0 if absent. */
rdzv_u64 rdzv_proc_field(const char *text, const char *key);

/* Fills pid, ppid, the clock pair, created_monotonic_ns, start_realtime_ns (and
 * RDZV_FEAT_PROC_START) when known, origin (and RDZV_FEAT_ORIGIN) when the process could be
 * placed, host, exe, cmdline and cmdline_truncated of `h`, for this
 * process (pid 0: /proc/self, getppid) or another one (/proc/PID; its host is the name of its
 * UTS namespace, entered for the one call where it is not the caller's, which takes root:
 * else the caller's host). Other fields are left
 * alone. Returns 0, or -1 when /proc/PID/stat could not be read (the process is gone; the
 * pid and clocks are set anyway). */
int rdzv_process_fill(struct rdzv_file_header *h, int pid);

/* Fills `o` for this process (pid 0) or another one (/proc/PID): the boot id, the PID and
 * network namespaces, NSpid, the container id, and start_ticks (passed in: the caller has
 * read /proc/PID/stat already; -1 when unknown). Fields that cannot be read stay zero.
 * Returns 1 when the process could be placed (boot id and PID namespace known), else 0. */
int rdzv_origin_fill(struct rdzv_origin *o, int pid, rdzv_s64 start_ticks);

/* The parsers behind it, for the tests: a boot id's text ("8-4-4-4-12" hex digits) into 16
 * bytes; a namespace link ("pid:[4026531836]") into its inode; /proc/PID/status's NSpid line
 * into the first and last pid (returns how many there are, 0 when the line is absent); the
 * innermost container id (64 hex digits, as docker, containerd, cri-o and podman name their
 * cgroups) in a /proc/PID/cgroup text. Each returns 0 (or leaves out untouched) on a
 * malformed input. */
int rdzv_parse_boot_id(const char *text, rdzv_u8 out[16]);
rdzv_u64 rdzv_parse_ns_link(const char *link);
int rdzv_parse_nspid(const char *status, rdzv_s32 *first, rdzv_s32 *last);
int rdzv_find_container_id(const char *cgroup, char *out, size_t cap);

/* ---------------------------------------------------------------- the PyTorch it loaded */

/* Which PyTorch this process has loaded (torch.__version__), read from its files, never from
 * Python: /proc/self/maps names the mapped torch extension (torch/_C*.so) or a bundled
 * library (torch/lib/...), whose package directory holds version.py (pip wheels and
 * Debian's python3-torch alike); failing that, the version in the soname of a library
 * installed as libtorch*.so.X.Y[.Z] or libc10.so.X.Y[.Z] (Debian's /usr/lib/<triplet>).
 * Reads a few hundred KiB of /proc text: once per process, never on a per-call path.
 * `scan` is the caller's scratch space (no allocation; too large for a small thread stack).
 * Returns 1 with `out` set (cut to fit), 0 when no PyTorch is mapped. */
struct rdzv_torch_scan {
  char chunk[8192];
  char path[4352];
  char text[2048];
};
int rdzv_torch_version_self(char *out, size_t cap, struct rdzv_torch_scan *scan);

/* The parsers behind it, for the tests. One /proc/PID/maps line (no newline needed): the
 * torch package directory with its trailing '/' (1), or 0 when the line maps no file of it;
 * the version in the soname of such a line ("libc10.so.1.13.0" -> "1.13.0"; 1 or 0); and
 * version.py's text ("__version__ = '2.13.0+cpu'" -> "2.13.0+cpu"; 1 or 0). */
int rdzv_torch_dir_of_mapping(const char *line, size_t len, char *dir, size_t cap);
int rdzv_torch_soname_version(const char *line, size_t len, char *out, size_t cap);
int rdzv_parse_torch_version_py(const char *text, char *out, size_t cap);

/* ================================================================ core/trace_file.c
 * trace files and the failure-snapshot rate */

/* ---------------------------------------------------------------- trace files */

/* gethostname(), made safe for a file name: characters other than [A-Za-z0-9._-] become '_',
 * "unknown-host" when empty. */
void rdzv_file_host(char *out, size_t cap);

/* DIR/HOST.PID.rzt, or DIR/HOST.PID.N.rzt for n > 0. Returns 0, or -1 when it does not fit. */
int rdzv_trace_name(char *out, size_t cap, const char *dir, const char *host, int pid, int n);

/* One mapped trace file. */
struct rdzv_trace {
  struct rdzv_file_header *header;
  struct rdzv_record *records;
  rdzv_u64 capacity;
  size_t map_len;
};

/* The step at which rdzv_trace_create failed. */
enum rdzv_trace_step {
  RDZV_TRACE_OK = 0,
  RDZV_TRACE_NAME,     /* the path does not fit (ENAMETOOLONG) */
  RDZV_TRACE_CREATE,   /* open(O_CREAT|O_EXCL|O_NOFOLLOW) failed, or every name is taken */
  RDZV_TRACE_ALLOCATE, /* posix_fallocate: no room on the file system */
  RDZV_TRACE_SIZE,     /* ftruncate, where the file system cannot preallocate */
  RDZV_TRACE_MAP       /* mmap */
};
const char *rdzv_trace_step_text(enum rdzv_trace_step step); /* "cannot create trace file"... */

struct rdzv_trace_request {
  const char *dir;  /* exists (rdzv_trace_dir_ensure) */
  const char *host; /* rdzv_file_host */
  int pid;
  rdzv_u64 max_bytes; /* clamped to one record .. RDZV_TRACE_MAX_MB */
  int group_read;     /* 0640 rather than 0600, whatever the umask */
  /* Read the headers of files of the same pid found in the way: one of this very process
   * (same pid, same start time: it exec'd) makes this file's exec_generation one more than
   * that file's. The shim writes one file per image; attach keeps one file per process. */
  int count_exec_generation;
};

/* The file's record capacity and mapped length for a size cap (clamped as above). */
void rdzv_trace_geometry(rdzv_u64 max_bytes, rdzv_u64 *capacity, size_t *map_len);

/* Creates the process's file, never over another file or through a symbolic link
 * (O_CREAT|O_EXCL|O_NOFOLLOW; a taken name goes on to the next suffix), sets its mode,
 * allocates its blocks (a store into a mapped hole on a full disk would be a SIGBUS), maps it
 * MAP_SHARED and copies `facts` into the header (magic left zero; the format fields, capacity,
 * counters and exec_generation are set here). No descriptor stays open. The file's name is
 * built in path (path_cap bytes). Returns 0, or an errno value with *failed (may be NULL)
 * saying which step failed; *out is then untouched. */
int rdzv_trace_create(const struct rdzv_trace_request *req, const struct rdzv_file_header *facts,
                      struct rdzv_trace *out, char *path, size_t path_cap,
                      enum rdzv_trace_step *failed);

/* Stores the magic, last and with release order: a reader that sees it sees the header. */
void rdzv_trace_publish(struct rdzv_trace *t);

/* The first record of every file: PROC_START, dated at the process start on the monotonic
 * clock (so that it sorts before the call that made the file), path = the executable. Fills
 * every field of *r but the seal. */
void rdzv_proc_start_record(struct rdzv_record *r, const struct rdzv_file_header *h, rdzv_u32 tid);

/* Reserves the next slot (atomic): its record, or NULL when the file is full (then counted in
 * header.dropped). Fill every field, then rdzv_trace_commit. */
struct rdzv_record *rdzv_trace_reserve(struct rdzv_trace *t, rdzv_u64 *slot);

/* Seals the record: stores its seal last, with release order. */
static inline void rdzv_trace_commit(struct rdzv_record *r, rdzv_u64 slot) {
  __atomic_store_n(&r->seal, rdzv_seal_for(slot), __ATOMIC_RELEASE);
}

/* Unmaps (after an asynchronous msync); the pages already stored stay in the file. */
void rdzv_trace_close(struct rdzv_trace *t);

/* ---------------------------------------------------------------- in-flight calls
 * (trace_format.h, struct rdzv_inflight). Static inline: the shim calls them around every
 * blocking call on a store socket, where a function call more would cost its budget. */

/* Claims a free slot for thread tid among the others (core/trace_file.c); NULL when all are
 * taken (the call is then not published). */
struct rdzv_inflight *rdzv_inflight_claim_other(struct rdzv_file_header *h, rdzv_u32 tid);

/* Claims a free slot of the header for thread tid, trying first the one its id points at (the
 * slot that thread had last, free again: one compare-and-swap); NULL when all are taken. */
static inline struct rdzv_inflight *rdzv_inflight_claim(struct rdzv_file_header *h, rdzv_u32 tid) {
  struct rdzv_inflight *s = &h->inflight[tid % RDZV_INFLIGHT_SLOTS];
  rdzv_u32 expected = 0;
  if (__builtin_expect(__atomic_compare_exchange_n(&s->owner, &expected, tid, 0,
                                                   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED), 1))
    return s;
  return rdzv_inflight_claim_other(h, tid);
}

/* The fields every published call writes; `has` says that none of the others is (the caller
 * adds them, or uses rdzv_inflight_begin_socket / _lookup). */
static inline void rdzv_inflight_fill(struct rdzv_inflight *s, rdzv_u8 kind, rdzv_u8 op, rdzv_u16 flags,
                                      rdzv_s32 fd, rdzv_u64 start_ns) {
  s->kind = kind;
  s->op = op;
  s->flags = flags;
  s->fd = fd;
  s->has = 0;
  s->start_ns = start_ns;
}

/* Which calls are published in flight, by the record they will write (kind, flags as the
 * record has them: RDZV_F_STORE, RDZV_F_NONBLOCK) and their own timeout (-1 none): a receive,
 * a connect or an accept on a blocking store socket; a wait (poll, ppoll, select, pselect,
 * epoll) on a store socket or a connect in progress, with a timeout other than 0; every
 * resolver call. Never a send (a TCPStore request is a few bytes the kernel takes whether or
 * not the server runs). The shim's hooks apply it inline, each for its own calls; attach's
 * loader applies it to the calls the kernel side holds between their enter and their exit. */
static inline int rdzv_inflight_publishes(rdzv_u8 kind, rdzv_u16 flags, rdzv_s64 timeout_ms) {
  switch (kind) {
    case RDZV_EV_RECV:
    case RDZV_EV_CONNECT:
    case RDZV_EV_ACCEPT:
      return (flags & RDZV_F_STORE) && !(flags & RDZV_F_NONBLOCK);
    case RDZV_EV_POLL:
      return (flags & (RDZV_F_STORE | RDZV_F_NONBLOCK)) && timeout_ms != 0;
    case RDZV_EV_RESOLVE:
      return 1;
    default:
      return 0;
  }
}

/* Claim, fill and publish in one, for the calls that are not hot (core/trace_file.c): a socket
 * call with its own timeout (-1: none) and peer (NULL or family 0: not known), or a resolver
 * call with the name asked for (cut to RDZV_INFLIGHT_HOST_MAX - 1 bytes, flag truncated). NULL
 * when every slot is taken. */
struct rdzv_inflight *rdzv_inflight_begin_socket(struct rdzv_file_header *h, rdzv_u32 tid, rdzv_u8 kind,
                                                 rdzv_u8 op, rdzv_u16 flags, rdzv_s32 fd, rdzv_u64 start_ns,
                                                 rdzv_s64 timeout_ms, const struct rdzv_sockaddr *peer);
struct rdzv_inflight *rdzv_inflight_begin_lookup(struct rdzv_file_header *h, rdzv_u32 tid, rdzv_u8 op,
                                                 rdzv_u16 flags, const char *host, rdzv_u64 start_ns);

/* The slot's fields are filled: the call is published as in flight (seal last, release). */
static inline void rdzv_inflight_publish(struct rdzv_inflight *s) {
  __atomic_store_n(&s->seal, rdzv_inflight_seal(s->start_ns), __ATOMIC_RELEASE);
}

/* The call returned: the slot reads as empty, then is free for any thread. */
static inline void rdzv_inflight_release(struct rdzv_inflight *s) {
  __atomic_store_n(&s->seal, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&s->owner, 0, __ATOMIC_RELEASE);
}

/* ---------------------------------------------------------------- the latest store receive
 * One relaxed store (the shim's store-socket hot path): the latest wins, and any recent one
 * says as much. */
static inline void rdzv_note_store_recv(struct rdzv_file_header *h, rdzv_u64 start_ns) {
  __atomic_store_n(&h->last_store_recv_ns, start_ns, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------- snapshots */

/* Whether a failure snapshot may be taken now: 1 (and *last_ns = now_ns) when none was in the
 * last RDZV_FAILURE_SNAPSHOT_GAP_NS; atomic, so racing threads take one between them. */
int rdzv_failure_snapshot_due(rdzv_u64 *last_ns, rdzv_u64 now_ns);

#ifdef __cplusplus
}
#endif

#endif /* !__bpf__ */

#endif /* RDZVSCOPE_RECORDER_CORE_H */
