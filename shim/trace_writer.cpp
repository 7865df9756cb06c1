#include "trace_writer.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "guard.h"
#include "inflight.h"
#include "text.h"

namespace rdzv {
namespace {

enum State : int { kClosed = 0, kOpening = 1, kOpen = 2, kDisabled = 3 };

// How long a thread waits for another thread that is creating the file: far longer than any
// sane open (a large RDZVSCOPE_MAX_MB on tmpfs fallocates for tens of ms), short enough that a
// hung file system cannot hang the host's threads for long.
constexpr uint64_t kOpenWaitNs = 2000000000ull;

int g_state = kClosed;
// Events of threads that gave up waiting for the file, moved into the header's `lost` once it
// is open (by whichever thread sees it open first: the exchange moves each count once).
uint64_t g_lost_while_opening = 0;
rdzv_trace g_trace;

rdzv_config g_config;  // RDZVSCOPE_DIR, RDZVSCOPE_MAX_MB, RDZVSCOPE_GROUP_READ
bool g_configured = false;
rdzv_port_set g_store_ports;  // what counts as a store port in this process (recorder core)

void say_once(const char* what, int err) {
  // One line on stderr, then the job runs on untraced (docs/architecture.md: never harm the host).
  char line[512];
  TextBuf msg(line, sizeof line);
  msg.str("rdzvscope: cannot trace pid ").i64(getpid()).str(": ").str(what);
  if (err) msg.str(": ").str(strerror(err));
  msg.str(" (").str(g_config.dir).str("); running untraced\n");
  ssize_t ignored = write(STDERR_FILENO, msg.c_str(), msg.size());
  (void)ignored;
}

void write_start_record() {
  Slot s = reserve_record(Create::OnlyIfOpen);
  if (!s) return;
  rdzv_proc_start_record(s.rec, g_trace.header, static_cast<uint32_t>(syscall(SYS_gettid)));
  commit_record(s);
}

// Runs once per process image (and once per fork child), with the guard held.
bool open_trace() {
  writer_configure();
  if (!g_config.dir[0]) return false;
  if (rdzv_trace_dir_ensure(g_config.dir, g_config.group_read) != 0) {
    say_once("trace directory unusable", errno);
    return false;
  }
  // The process facts are gathered first: the start time decides the exec generation.
  static rdzv_file_header facts;  // one page; static, as this may run on a small thread stack
  memset(&facts, 0, sizeof facts);
  rdzv_process_fill(&facts, 0);
  rdzv_identity_fill(&facts.ident, rdzv_env_self, nullptr);
  rdzv_ports_export(&g_store_ports, facts.store_ports);
  facts.features |= RDZV_FEAT_SNAPSHOTS | RDZV_FEAT_STORE_IO | RDZV_FEAT_INFLIGHT | RDZV_FEAT_STORE_RECV;
  facts.source = RDZV_SOURCE_SHIM;

  char host[128];
  rdzv_file_host(host, sizeof host);
  rdzv_trace_request req{};
  req.dir = g_config.dir;
  req.host = host;
  req.pid = facts.pid;
  req.max_bytes = g_config.max_bytes;
  req.group_read = g_config.group_read;
  req.count_exec_generation = 1;  // one file per image: an earlier image's file is in the way
  static char path[sizeof g_config.dir + 128];  // static for the same reason
  rdzv_trace_step failed = RDZV_TRACE_OK;
  rdzv_trace trace{};
  if (int err = rdzv_trace_create(&req, &facts, &trace, path, sizeof path, &failed)) {
    say_once(rdzv_trace_step_text(failed), err);
    return false;
  }
  g_trace = trace;
  rdzv_trace_publish(&g_trace);  // the magic goes last: a reader that sees it sees the header
  return true;
}

}  // namespace

void writer_configure() {
  if (g_configured) return;
  g_configured = true;
  rdzv_config_read(&g_config, rdzv_env_self, nullptr);
  rdzv_ports_from_env(&g_store_ports, rdzv_env_self, nullptr);
}

const char* trace_dir() {
  writer_configure();
  return g_config.dir;
}

bool is_store_port(uint16_t port) {
  // MASTER_PORT learnt just now (set by the script at run time): the header's copy follows.
  if (rdzv_ports_refresh(&g_store_ports, rdzv_env_self, nullptr) && trace_is_open())
    rdzv_ports_export(&g_store_ports, g_trace.header->store_ports);
  return rdzv_ports_contains(&g_store_ports, port);
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
  if (n) __atomic_fetch_add(&g_trace.header->lost, n, __ATOMIC_RELAXED);
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
      if (ok) __atomic_store_n(&g_inflight_header, g_trace.header, __ATOMIC_RELEASE);
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
  Slot s;
  s.rec = rdzv_trace_reserve(&g_trace, &s.index);
  return s;
}

void writer_open_if_rank() {
  // A rank that is killed while it still loads (torchrun's agent stops every worker once one
  // fails) may never make a socket call; its file, made at load, still says it was launched.
  // Processes without RANK keep the lazy creation: a job script's helpers leave no files.
  if (g_config.dir[0] && env_nonempty("RANK")) open_or_wait();
}

void commit_record(const Slot& slot) { rdzv_trace_commit(slot.rec, slot.index); }

bool ensure_trace_open() {
  return __atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == kOpen || open_or_wait();
}

bool trace_is_open() { return __atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == kOpen; }

uint64_t process_start_realtime_ns() {
  return trace_is_open() ? g_trace.header->start_realtime_ns : 0;
}

namespace {
int g_torch_version_looked;  // for the open file: a fork child's new file looks again
rdzv_torch_scan g_torch_scan;  // scratch of the one look (static: too large for a small stack)
}  // namespace

void record_torch_version_once() {
  if (__atomic_load_n(&g_torch_version_looked, __ATOMIC_RELAXED) || !trace_is_open()) return;
  if (__atomic_exchange_n(&g_torch_version_looked, 1, __ATOMIC_ACQ_REL)) return;
  rdzv_file_header* h = g_trace.header;
  if (!rdzv_torch_version_self(h->torch_version, sizeof h->torch_version, &g_torch_scan)) return;
  // The string first, then the bit that says it is there (a reader of a killed process's
  // file sees either no bit or the whole string).
  __atomic_fetch_or(&h->features, RDZV_FEAT_TORCH_VERSION, __ATOMIC_RELEASE);
}

void writer_forget_after_fork() {
  // Only the forking thread exists in the child, so plain stores are enough here.
  inflight_forget_after_fork();
  if (g_state == kOpen) rdzv_trace_close(&g_trace);
  g_trace = rdzv_trace{};
  g_lost_while_opening = 0;  // the parent's, counted in its own file
  g_torch_version_looked = 0;
  g_state = (!g_configured || g_config.dir[0]) ? kClosed : kDisabled;
}

}  // namespace rdzv
