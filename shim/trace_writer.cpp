#include "trace_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "guard.h"
#include "process_info.h"
#include "store_ports.h"
#include "text.h"

namespace rdzv {
namespace {

enum State : int { kClosed = 0, kOpening = 1, kOpen = 2, kDisabled = 3 };

constexpr uint64_t kDefaultMaxMb = 2;
constexpr uint64_t kMaxMaxMb = 1024;
constexpr int kMaxNameAttempts = 1000;

// How long a thread waits for another thread that is creating the file: far longer than any
// sane open (a large RDZVSCOPE_MAX_MB on tmpfs fallocates for tens of ms), short enough that a
// hung file system cannot hang the host's threads for long.
constexpr uint64_t kOpenWaitNs = 2000000000ull;

int g_state = kClosed;
// Events of threads that gave up waiting for the file, moved into the header's `lost` once it
// is open (by whichever thread sees it open first: the exchange moves each count once).
uint64_t g_lost_while_opening = 0;
rdzv_file_header* g_header = nullptr;
rdzv_record* g_records = nullptr;
uint64_t g_capacity = 0;
size_t g_map_len = 0;

char g_dir[4096];
uint64_t g_max_bytes = kDefaultMaxMb << 20;
bool g_group_read = false;
bool g_configured = false;

void say_once(const char* what, int err) {
  // One line on stderr, then the job runs on untraced (DEVELOPERS.md: never harm the host).
  char line[512];
  TextBuf msg(line, sizeof line);
  msg.str("rdzvscope: cannot trace pid ").i64(getpid()).str(": ").str(what);
  if (err) msg.str(": ").str(strerror(err));
  msg.str(" (").str(g_dir).str("); running untraced\n");
  ssize_t ignored = write(STDERR_FILENO, msg.c_str(), msg.size());
  (void)ignored;
}

// Host names may hold characters that do not belong in a file name.
void sanitize_for_filename(const char* in, char* out, size_t cap) {
  size_t n = 0;
  for (; in[n] && n + 1 < cap; ++n) {
    char c = in[n];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.';
    out[n] = ok ? c : '_';
  }
  out[n] = '\0';
  if (n == 0) copy_cut(out, cap, "unknown-host");
}

// When <host>.<pid>[.n].rzt exists, it is either an earlier image of this very process (it
// exec'd; same pid, same start time) or a stranger whose pid was reused. Reading its header
// tells which, so that exec_generation counts execs rather than file-name clashes.
bool earlier_image_of_us(const char* path, uint64_t our_start_ns, uint32_t* generation) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  rdzv_file_header h;
  bool ok = pread(fd, &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h);
  close(fd);
  if (!ok || memcmp(h.magic, RDZV_MAGIC, RDZV_MAGIC_LEN) != 0 || h.pid != getpid()) return false;
  // Both start times come from the same tick count, read at slightly different moments.
  uint64_t diff = h.start_realtime_ns > our_start_ns ? h.start_realtime_ns - our_start_ns
                                                     : our_start_ns - h.start_realtime_ns;
  if (!our_start_ns || diff > 50'000'000) return false;
  if (h.exec_generation + 1 > *generation) *generation = h.exec_generation + 1;
  return true;
}

// O_EXCL|O_NOFOLLOW: never follow a planted symlink, never overwrite another file. A second
// image of the same pid (after exec) or a reused pid takes the next free suffix.
int create_file(const char* host, uint64_t our_start_ns, uint32_t* generation) {
  const mode_t mode = g_group_read ? 0640 : 0600;
  *generation = 0;
  for (int n = 0; n < kMaxNameAttempts; ++n) {
    char path[sizeof g_dir + 128];
    TextBuf p(path, sizeof path);
    p.str(g_dir).ch('/').str(host).ch('.').i64(getpid());
    if (n > 0) p.ch('.').i64(n);
    p.str(RDZV_FILE_SUFFIX);
    if (p.truncated()) {
      errno = ENAMETOOLONG;
      return -1;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd >= 0) {
      fchmod(fd, mode);  // the umask must not widen or narrow what we promised
      return fd;
    }
    if (errno != EEXIST) return -1;
    earlier_image_of_us(path, our_start_ns, generation);
  }
  errno = EEXIST;
  return -1;
}

bool ensure_dir() {
  const mode_t mode = g_group_read ? 0750 : 0700;
  if (mkdir(g_dir, mode) == 0) {
    chmod(g_dir, mode);  // as for the files: the umask does not decide what we promised
    return true;
  }
  if (errno != EEXIST) return false;
  struct stat st;
  if (stat(g_dir, &st) != 0) return false;
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return false;
  }
  return true;
}

void write_start_record() {
  Slot s = reserve_record(Create::OnlyIfOpen);
  if (!s) return;
  s.rec->kind = RDZV_EV_PROC_START;
  s.rec->op = RDZV_OP_INIT;
  s.rec->tid = static_cast<uint32_t>(syscall(SYS_gettid));
  // Dated at the process start (exec or fork), on the monotonic clock, so that it sorts
  // before the call that made us create the file.
  const rdzv_file_header* h = g_header;
  uint64_t age = (h->features & RDZV_FEAT_PROC_START) && h->clock_realtime_ns > h->start_realtime_ns
                     ? h->clock_realtime_ns - h->start_realtime_ns
                     : 0;
  s.rec->ts_ns = h->clock_monotonic_ns > age ? h->clock_monotonic_ns - age : 0;
  s.rec->fd = -1;
  s.rec->u.proc.child_pid = -1;
  copy_cut(s.rec->u.proc.path, sizeof s.rec->u.proc.path, g_header->exe);
  commit_record(s);
}

// Runs once per process image (and once per fork child), with the guard held.
bool open_trace() {
  writer_configure();
  if (!g_dir[0]) return false;
  if (!ensure_dir()) {
    say_once("trace directory unusable", errno);
    return false;
  }
  char raw_host[256];
  if (gethostname(raw_host, sizeof raw_host) != 0) raw_host[0] = '\0';
  raw_host[sizeof raw_host - 1] = '\0';
  char host[128];
  sanitize_for_filename(raw_host, host, sizeof host);

  // The process facts are gathered first: the start time decides the exec generation.
  static rdzv_file_header facts;  // one page; static, as this may run on a small thread stack
  memset(&facts, 0, sizeof facts);
  fill_process(&facts);
  uint32_t generation = 0;
  int fd = create_file(host, facts.start_realtime_ns, &generation);
  if (fd < 0) {
    say_once("cannot create trace file", errno);
    return false;
  }
  uint64_t capacity = (g_max_bytes - RDZV_HEADER_SIZE) / RDZV_RECORD_SIZE;
  if (capacity > UINT32_MAX) capacity = UINT32_MAX;
  size_t len = RDZV_HEADER_SIZE + capacity * RDZV_RECORD_SIZE;
  // Blocks are allocated now: a store into a mapped hole on a full disk would be a SIGBUS in
  // the host process, while a failure here only costs us the trace.
  int err = posix_fallocate(fd, 0, static_cast<off_t>(len));
  if (err != 0 && err != EOPNOTSUPP && err != EINVAL) {
    close(fd);
    say_once("cannot allocate trace file", err);
    return false;
  }
  if (err != 0 && ftruncate(fd, static_cast<off_t>(len)) != 0) {
    err = errno;
    close(fd);
    say_once("cannot size trace file", err);
    return false;
  }
  void* map = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  err = errno;
  close(fd);  // the mapping keeps the file; no fd of ours stays open for the host to trip on
  if (map == MAP_FAILED) {
    say_once("cannot map trace file", err);
    return false;
  }

  auto* h = static_cast<rdzv_file_header*>(map);
  memcpy(h, &facts, sizeof facts);  // magic is still zero in facts: stored last, below
  h->version = RDZV_FORMAT_VERSION;
  h->header_size = RDZV_HEADER_SIZE;
  h->record_size = RDZV_RECORD_SIZE;
  h->features |= RDZV_FEAT_SNAPSHOTS | RDZV_FEAT_STORE_IO;
  h->source = RDZV_SOURCE_SHIM;
  h->capacity = static_cast<uint32_t>(capacity);
  h->exec_generation = generation;
  fill_identity(&h->ident);
  store_ports_export(h->store_ports);

  g_records = reinterpret_cast<rdzv_record*>(static_cast<char*>(map) + RDZV_HEADER_SIZE);
  g_capacity = capacity;
  g_map_len = len;
  g_header = h;
  // The magic goes last: a reader that sees it sees a complete header.
  char magic[RDZV_MAGIC_LEN];
  memcpy(magic, RDZV_MAGIC, RDZV_MAGIC_LEN);
  uint64_t magic_word;
  memcpy(&magic_word, magic, sizeof magic_word);
  __atomic_store_n(reinterpret_cast<uint64_t*>(h->magic), magic_word, __ATOMIC_RELEASE);
  return true;
}

}  // namespace

void writer_configure() {
  if (g_configured) return;
  g_configured = true;
  copy_cut(g_dir, sizeof g_dir, env_nonempty("RDZVSCOPE_DIR"));
  int64_t mb;
  if (parse_i64(env_nonempty("RDZVSCOPE_MAX_MB"), &mb) && mb > 0)
    g_max_bytes = static_cast<uint64_t>(mb > static_cast<int64_t>(kMaxMaxMb) ? kMaxMaxMb : mb)
                  << 20;
  const char* gr = env_nonempty("RDZVSCOPE_GROUP_READ");
  g_group_read = gr && strcmp(gr, "0") != 0;
  store_ports_init();
}

const char* trace_dir() {
  writer_configure();
  return g_dir;
}

namespace {

// Another thread is creating the file: wait for it (an event given up here is lost), first
// yielding, then sleeping in short steps, for at most kOpenWaitNs. False when it is still
// being created after that.
bool wait_while_opening() {
  const uint64_t deadline = mono_ns() + kOpenWaitNs;
  for (int i = 0; __atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == kOpening; ++i) {
    if (i < 100) {
      sched_yield();
      continue;
    }
    if (mono_ns() > deadline) return false;
    const struct timespec step = {0, 50000};
    nanosleep(&step, nullptr);
  }
  return true;
}

void account_lost_while_opening() {
  const uint64_t n = __atomic_exchange_n(&g_lost_while_opening, 0, __ATOMIC_ACQ_REL);
  if (n) __atomic_fetch_add(&g_header->lost, n, __ATOMIC_RELAXED);
}

}  // namespace

namespace {

// The slow path of reserve_record: the file is not open yet. True once it is open.
bool open_or_wait() {
  const int state = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
  if (state == kOpen) return true;
  if (state == kDisabled) return false;
  {
    int expected = kClosed;
    if (__atomic_compare_exchange_n(&g_state, &expected, kOpening, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
      bool ok = open_trace();
      __atomic_store_n(&g_state, ok ? kOpen : kDisabled, __ATOMIC_RELEASE);
      if (ok) write_start_record();
      if (ok) account_lost_while_opening();
    } else if (!wait_while_opening()) {
      __atomic_fetch_add(&g_lost_while_opening, 1, __ATOMIC_RELAXED);
      // The file may have opened just after we gave up: then nobody else would move the count.
      if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == kOpen) account_lost_while_opening();
      return false;
    }
  }
  return __atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == kOpen;
}

}  // namespace

Slot reserve_record(Create create) {
  if (__builtin_expect(__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != kOpen, 0)) {
    if (create == Create::OnlyIfOpen || !open_or_wait()) return {};
  }
  uint64_t index = __atomic_fetch_add(&g_header->next_slot, 1, __ATOMIC_RELAXED);
  if (index >= g_capacity) {
    __atomic_fetch_add(&g_header->dropped, 1, __ATOMIC_RELAXED);
    return {};
  }
  return Slot{&g_records[index], index};
}

void writer_open_if_rank() {
  // A rank that is killed while it still loads (torchrun's agent stops every worker once one
  // fails) may never make a socket call; its file, made at load, still says it was launched.
  // Processes without RANK keep the lazy creation: a job script's helpers leave no files.
  if (g_dir[0] && env_nonempty("RANK")) open_or_wait();
}

void commit_record(const Slot& slot) {
  __atomic_store_n(&slot.rec->seal, rdzv_seal_for(slot.index), __ATOMIC_RELEASE);
}

bool trace_is_open() { return __atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == kOpen; }

uint64_t process_start_realtime_ns() { return trace_is_open() ? g_header->start_realtime_ns : 0; }

void writer_sync_store_ports() {
  if (trace_is_open()) store_ports_export(g_header->store_ports);
}

void writer_forget_after_fork() {
  // Only the forking thread exists in the child, so plain stores are enough here.
  if (g_state == kOpen && g_header) munmap(g_header, g_map_len);
  g_header = nullptr;
  g_records = nullptr;
  g_capacity = 0;
  g_map_len = 0;
  g_lost_while_opening = 0;  // the parent's, counted in its own file
  g_state = (!g_configured || g_dir[0]) ? kClosed : kDisabled;
}

}  // namespace rdzv
