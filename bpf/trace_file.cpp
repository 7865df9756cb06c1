#include "trace_file.h"

#include <cstring>
#include <memory>

#include "proc_info.h"

namespace rdzvscope::bpf {
namespace {

void set_store_ports(rdzv_file_header* h, const std::vector<std::uint16_t>& store_ports) {
  std::memset(h->store_ports, 0, sizeof h->store_ports);
  for (std::size_t i = 0; i < store_ports.size() && i < RDZV_MAX_STORE_PORTS; ++i)
    h->store_ports[i] = store_ports[i];
}

}  // namespace

TraceFile::~TraceFile() { close(); }

std::string TraceFile::create(const std::string& dir, int pid,
                              const std::vector<std::uint16_t>& store_ports,
                              std::uint64_t max_bytes, bool group_read) {
  pid_ = pid;
  auto facts = std::make_unique<rdzv_file_header>();  // zeroed
  fill_header_from_proc(pid, facts.get());
  set_store_ports(facts.get(), store_ports);
  facts->features |= RDZV_FEAT_LOST_COUNTER | RDZV_FEAT_STORE_IO | RDZV_FEAT_SNAPSHOTS | RDZV_FEAT_INFLIGHT |
                    RDZV_FEAT_STORE_RECV;
  facts->source = RDZV_SOURCE_BPF;

  char host[128];
  rdzv_file_host(host, sizeof host);
  rdzv_trace_request req{};
  req.dir = dir.c_str();
  req.host = host;
  req.pid = pid;
  req.max_bytes = max_bytes;
  req.group_read = group_read;
  // One file per process, kept across its execs (after_exec): exec_generation stays 0. A file
  // of the same name (the shim's, or an earlier attach) is never overwritten.
  req.count_exec_generation = 0;
  std::string path(dir.size() + 256, '\0');
  rdzv_trace_step failed = RDZV_TRACE_OK;
  if (const int err = rdzv_trace_create(&req, facts.get(), &trace_, path.data(), path.size(),
                                        &failed)) {
    path.resize(std::strlen(path.c_str()));
    return path + ": " + rdzv_trace_step_text(failed) + ": " + std::strerror(err);
  }
  path.resize(std::strlen(path.c_str()));
  path_ = path;
  rdzv_trace_publish(&trace_);

  // As the shim: the first record, dated at the process start on the monotonic clock.
  rdzv_record start;
  rdzv_proc_start_record(&start, trace_.header, static_cast<std::uint32_t>(pid));
  append(start);
  events_ = 0;  // the summary counts what the probes saw
  return {};
}

void TraceFile::after_exec(const std::vector<std::uint16_t>& store_ports) {
  if (!trace_.header) return;
  auto fresh = std::make_unique<rdzv_file_header>();
  if (!fill_header_from_proc(pid_, fresh.get())) return;  // gone already: keep what we had
  rdzv_file_header* h = trace_.header;
  h->ident = fresh->ident;
  std::memcpy(h->exe, fresh->exe, sizeof h->exe);
  std::memcpy(h->cmdline, fresh->cmdline, sizeof h->cmdline);
  h->cmdline_truncated = fresh->cmdline_truncated;
  set_store_ports(h, store_ports);
}

void TraceFile::append(const rdzv_record& rec) {
  if (!trace_.header) return;
  ++events_;
  std::uint64_t slot;
  rdzv_record* r = rdzv_trace_reserve(&trace_, &slot);
  if (!r) return;  // full: counted in header.dropped
  std::memcpy(r, &rec, sizeof *r - sizeof r->seal);
  rdzv_trace_commit(r, slot);
}

void TraceFile::set_lost(std::uint64_t lost) {
  if (trace_.header) __atomic_store_n(&trace_.header->lost, lost, __ATOMIC_RELEASE);
}

void TraceFile::close() { rdzv_trace_close(&trace_); }

}  // namespace rdzvscope::bpf
