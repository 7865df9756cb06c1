#include "process_info.h"

#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "text.h"

namespace rdzv {
namespace {

int32_t env_int(const char* name) {
  int64_t v;
  if (!parse_i64(env_nonempty(name), &v) || v < INT32_MIN || v > INT32_MAX) return -1;
  return static_cast<int32_t>(v);
}

void env_str(char* dst, size_t cap, const char* name) { copy_cut(dst, cap, env_nonempty(name)); }

// Field 22 of /proc/self/stat: start time in clock ticks after boot. The command name in
// field 2 may hold spaces and parentheses, so counting starts after the last ')'.
bool start_boottime_ns(uint64_t* out) {
  char buf[1024];
  if (read_proc_file("/proc/self/stat", buf, sizeof buf) <= 0) return false;
  const char* p = strrchr(buf, ')');
  if (!p) return false;
  int field = 2;
  for (; *p; ++p) {
    if (*p != ' ') continue;
    if (++field == 22) {
      int64_t ticks = 0;
      char num[24];
      size_t n = 0;
      for (++p; *p >= '0' && *p <= '9' && n + 1 < sizeof num; ++p) num[n++] = *p;
      num[n] = '\0';
      if (!parse_i64(num, &ticks)) return false;
      long hz = sysconf(_SC_CLK_TCK);
      if (hz <= 0) return false;
      *out = static_cast<uint64_t>(ticks) * (1000000000ull / static_cast<uint64_t>(hz));
      return true;
    }
  }
  return false;
}

}  // namespace

long read_proc_file(const char* path, char* buf, unsigned long cap) {
  if (cap == 0) return -1;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  long total = 0;
  while (static_cast<unsigned long>(total) + 1 < cap) {
    ssize_t n = read(fd, buf + total, cap - 1 - static_cast<unsigned long>(total));
    if (n <= 0) break;
    total += n;
  }
  close(fd);
  buf[total] = '\0';
  return total;
}

void fill_identity(rdzv_identity* id) {
  id->rank = env_int("RANK");
  id->local_rank = env_int("LOCAL_RANK");
  id->world_size = env_int("WORLD_SIZE");
  id->group_rank = env_int("GROUP_RANK");
  id->master_port = env_int("MASTER_PORT");
  id->restart_count = env_int("TORCHELASTIC_RESTART_COUNT");
  id->slurm_procid = env_int("SLURM_PROCID");
  id->slurm_nodeid = env_int("SLURM_NODEID");
  env_str(id->master_addr, sizeof id->master_addr, "MASTER_ADDR");
  env_str(id->run_id, sizeof id->run_id, "TORCHELASTIC_RUN_ID");
  env_str(id->slurm_job_id, sizeof id->slurm_job_id, "SLURM_JOB_ID");
}

void fill_process(rdzv_file_header* h) {
  h->pid = static_cast<int32_t>(getpid());
  h->ppid = static_cast<int32_t>(getppid());

  // The two clocks are read back to back; their pair maps record times onto the wall clock.
  h->clock_monotonic_ns = mono_ns();
  h->clock_realtime_ns = clock_ns(CLOCK_REALTIME);
  h->created_monotonic_ns = h->clock_monotonic_ns;
  uint64_t boot_now = clock_ns(CLOCK_BOOTTIME);
  uint64_t started_boot = 0;
  if (start_boottime_ns(&started_boot) && started_boot <= boot_now) {
    h->start_realtime_ns = h->clock_realtime_ns - (boot_now - started_boot);
    h->features |= RDZV_FEAT_PROC_START;
  }

  char host[256];
  if (gethostname(host, sizeof host) != 0) host[0] = '\0';
  host[sizeof host - 1] = '\0';
  copy_cut(h->host, sizeof h->host, host);

  ssize_t n = readlink("/proc/self/exe", h->exe, sizeof h->exe - 1);
  h->exe[n > 0 ? n : 0] = '\0';

  char cmd[RDZV_CMDLINE_MAX + 1];
  long len = read_proc_file("/proc/self/cmdline", cmd, sizeof cmd);
  if (len > 0) {
    // argv is NUL-separated; a trailing NUL ends the last argument.
    if (cmd[len - 1] == '\0') --len;
    for (long i = 0; i < len; ++i)
      if (cmd[i] == '\0') cmd[i] = ' ';
    cmd[len] = '\0';
    h->cmdline_truncated = copy_cut(h->cmdline, sizeof h->cmdline, cmd) ||
                           static_cast<size_t>(len) + 1 >= sizeof cmd;
  }
}

}  // namespace rdzv
