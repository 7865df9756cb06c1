#include "trace_builder.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <cstring>
#include <fstream>
#include <stdexcept>

namespace rdzvscope::test {

TraceBuilder::TraceBuilder(std::uint32_t capacity) {
  auto& h = header_;
  std::memcpy(h.magic, RDZV_MAGIC, RDZV_MAGIC_LEN);
  h.version = RDZV_FORMAT_VERSION;
  h.header_size = RDZV_HEADER_SIZE;
  h.record_size = RDZV_RECORD_SIZE;
  h.features = RDZV_FEAT_PROC_START | RDZV_FEAT_SNAPSHOTS;
  h.source = RDZV_SOURCE_SHIM;
  h.pid = 4242;
  h.ppid = 4241;
  h.capacity = capacity;
  h.start_realtime_ns = kStartRealtimeNs;
  h.clock_realtime_ns = kClockRealtimeNs;
  h.clock_monotonic_ns = kClockMonotonicNs;
  h.created_monotonic_ns = kClockMonotonicNs;
  h.store_ports[0] = 29500;
  h.store_ports[3] = 29400;  // a gap: the dump lists the non-zero ones only
  h.ident = rdzv_identity{1, 1, 4, 0, 29500, -1, -1, -1, {}, {}, {}};
  std::strcpy(h.ident.master_addr, "node0");
  std::strcpy(h.host, "node1");
  std::strcpy(h.exe, "/usr/bin/python3.11");
  std::strcpy(h.cmdline, "python3 train.py --epochs 1");
}

std::uint64_t TraceBuilder::add(const rdzv_record& r) {
  records_.push_back(r);
  torn_.push_back(false);
  return records_.size() - 1;
}

std::uint64_t TraceBuilder::add_torn(const rdzv_record& r) {
  records_.push_back(r);
  torn_.push_back(true);
  return records_.size() - 1;
}

std::string TraceBuilder::bytes() const {
  const std::size_t slots = std::max<std::size_t>(header_.capacity, records_.size());
  std::string out(RDZV_HEADER_SIZE + slots * RDZV_RECORD_SIZE, '\0');
  rdzv_file_header h = header_;
  h.next_slot = has_override_ ? next_slot_override_ : records_.size();
  std::memcpy(out.data(), &h, sizeof h);
  for (std::size_t slot = 0; slot < records_.size(); ++slot) {
    rdzv_record r = records_[slot];
    // Like a writer killed before its last store: the seal of a torn record is 0.
    r.seal = torn_[slot] ? 0u : rdzv_seal_for(slot);
    std::memcpy(out.data() + rdzv_record_offset(slot), &r, sizeof r);
  }
  return out;
}

void TraceBuilder::write(const std::string& path) const { write_file(path, bytes()); }

void TraceBuilder::write_truncated(const std::string& path, std::uint64_t size) const {
  std::string b = bytes();
  if (size > b.size()) throw std::logic_error("write_truncated: size beyond the file");
  b.resize(size);
  write_file(path, b);
}

rdzv_inflight& TraceBuilder::add_inflight(std::size_t index, unsigned kind, unsigned op, int fd,
                                          double start_after_clock_s) {
  header_.features |= RDZV_FEAT_INFLIGHT;
  rdzv_inflight& s = header_.inflight[index];
  s = rdzv_inflight{};
  s.owner = 4243;
  s.kind = static_cast<rdzv_u8>(kind);
  s.op = static_cast<rdzv_u8>(op);
  s.fd = fd;
  s.start_ns = kClockMonotonicNs + static_cast<std::uint64_t>(start_after_clock_s * 1e9);
  s.seal = rdzv_inflight_seal(s.start_ns);
  return s;
}

rdzv_record make_record(unsigned kind, unsigned op, double ts_after_clock_s) {
  rdzv_record r{};
  r.kind = static_cast<rdzv_u8>(kind);
  r.op = static_cast<rdzv_u8>(op);
  r.tid = 4243;
  r.ts_ns = kClockMonotonicNs + static_cast<std::uint64_t>(ts_after_clock_s * 1e9);
  r.dur_ns = 1500;
  r.fd = 7;
  return r;
}

rdzv_sockaddr ipv4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d,
                   std::uint16_t port) {
  rdzv_sockaddr s{};
  s.family = AF_INET;
  s.port = port;
  s.addr[0] = a;
  s.addr[1] = b;
  s.addr[2] = c;
  s.addr[3] = d;
  return s;
}

rdzv_sockaddr ipv6(const std::string& text, std::uint16_t port, std::uint32_t scope_id) {
  rdzv_sockaddr s{};
  s.family = AF_INET6;
  s.port = port;
  s.scope_id = scope_id;
  if (inet_pton(AF_INET6, text.c_str(), s.addr) != 1) throw std::logic_error("bad ipv6 " + text);
  return s;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

}  // namespace rdzvscope::test
