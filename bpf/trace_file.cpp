#include "trace_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "proc_info.h"

namespace rdzvscope::bpf {
namespace {

std::string sanitized_host() {
  char raw[256];
  if (gethostname(raw, sizeof raw) != 0) raw[0] = '\0';
  raw[sizeof raw - 1] = '\0';
  std::string host;
  for (const char* p = raw; *p && host.size() < 127; ++p) {
    const char c = *p;
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    host.push_back(ok ? c : '_');
  }
  return host.empty() ? "unknown-host" : host;
}

}  // namespace

TraceFile::~TraceFile() { close(); }

std::string TraceFile::create(const std::string& dir, int pid,
                              const std::vector<std::uint16_t>& store_ports, std::uint64_t max_bytes) {
  pid_ = pid;
  const std::string host = sanitized_host();
  int fd = -1;
  // A file of the same name (the shim's, or an earlier attach) is never overwritten.
  for (int n = 0; n < 1000 && fd < 0; ++n) {
    path_ = dir + "/" + host + "." + std::to_string(pid) + (n ? "." + std::to_string(n) : "") + RDZV_FILE_SUFFIX;
    fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) return path_ + ": " + std::strerror(errno);
  }
  if (fd < 0) return path_ + ": " + std::strerror(EEXIST);
  fchmod(fd, 0600);

  std::uint64_t capacity = (max_bytes - RDZV_HEADER_SIZE) / RDZV_RECORD_SIZE;
  const std::size_t len = RDZV_HEADER_SIZE + capacity * RDZV_RECORD_SIZE;
  if (ftruncate(fd, static_cast<off_t>(len)) != 0) {
    const int err = errno;
    ::close(fd);
    return path_ + ": " + std::strerror(err);
  }
  void* map = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  ::close(fd);
  if (map == MAP_FAILED) return path_ + ": " + std::strerror(err);

  auto* h = static_cast<rdzv_file_header*>(map);
  std::memset(h, 0, sizeof *h);
  fill_header_from_proc(pid, h);
  h->version = RDZV_FORMAT_VERSION;
  h->header_size = RDZV_HEADER_SIZE;
  h->record_size = RDZV_RECORD_SIZE;
  h->features |= RDZV_FEAT_LOST_COUNTER | RDZV_FEAT_STORE_IO | RDZV_FEAT_SNAPSHOTS;
  h->source = RDZV_SOURCE_BPF;
  h->capacity = static_cast<std::uint32_t>(capacity);
  for (std::size_t i = 0; i < store_ports.size() && i < RDZV_MAX_STORE_PORTS; ++i) h->store_ports[i] = store_ports[i];
  header_ = h;
  records_ = reinterpret_cast<rdzv_record*>(static_cast<char*>(map) + RDZV_HEADER_SIZE);
  capacity_ = capacity;
  map_len_ = len;
  std::uint64_t magic_word;
  std::memcpy(&magic_word, RDZV_MAGIC, sizeof magic_word);
  __atomic_store_n(reinterpret_cast<std::uint64_t*>(h->magic), magic_word, __ATOMIC_RELEASE);

  // As the shim: the first record, dated at the process start on the monotonic clock.
  rdzv_record start{};
  start.kind = RDZV_EV_PROC_START;
  start.op = RDZV_OP_INIT;
  start.tid = static_cast<std::uint32_t>(pid);
  const std::uint64_t age = (h->features & RDZV_FEAT_PROC_START) && h->clock_realtime_ns > h->start_realtime_ns
                                ? h->clock_realtime_ns - h->start_realtime_ns
                                : 0;
  start.ts_ns = h->clock_monotonic_ns > age ? h->clock_monotonic_ns - age : 0;
  start.fd = -1;
  start.u.proc.child_pid = -1;
  std::memcpy(start.u.proc.path, h->exe, sizeof start.u.proc.path - 1);
  append(start);
  events_ = 0;  // the summary counts what the probes saw
  return {};
}

void TraceFile::after_exec(const std::vector<std::uint16_t>& store_ports) {
  if (!header_) return;
  rdzv_file_header fresh{};
  if (!fill_header_from_proc(pid_, &fresh)) return;  // gone already: keep what we had
  header_->ident = fresh.ident;
  std::memcpy(header_->exe, fresh.exe, sizeof header_->exe);
  std::memcpy(header_->cmdline, fresh.cmdline, sizeof header_->cmdline);
  std::memset(header_->store_ports, 0, sizeof header_->store_ports);
  for (std::size_t i = 0; i < store_ports.size() && i < RDZV_MAX_STORE_PORTS; ++i) header_->store_ports[i] = store_ports[i];
}

void TraceFile::append(const rdzv_record& rec) {
  if (!header_) return;
  const std::uint64_t slot = header_->next_slot;
  __atomic_store_n(&header_->next_slot, slot + 1, __ATOMIC_RELEASE);
  ++events_;
  if (slot >= capacity_) {
    __atomic_fetch_add(&header_->dropped, 1, __ATOMIC_RELAXED);
    return;
  }
  rdzv_record* r = &records_[slot];
  std::memcpy(r, &rec, sizeof *r - sizeof r->seal);
  __atomic_store_n(&r->seal, rdzv_seal_for(slot), __ATOMIC_RELEASE);
}

void TraceFile::set_lost(std::uint64_t lost) {
  if (header_) __atomic_store_n(&header_->lost, lost, __ATOMIC_RELEASE);
}

void TraceFile::close() {
  if (!header_) return;
  msync(header_, map_len_, MS_ASYNC);
  munmap(header_, map_len_);
  header_ = nullptr;
  records_ = nullptr;
}

}  // namespace rdzvscope::bpf
