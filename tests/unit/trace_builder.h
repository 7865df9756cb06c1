// Test-only trace writer: builds a file in the format of include/rdzvscope/trace_format.h
// (header, sealed records) and lets a test damage it on purpose (torn records, bad magic,
// truncation). Deliberately independent of the reader, so the two check each other.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <rdzvscope/trace_format.h>

namespace rdzvscope::test {

// Fixed values the builder's header uses, for tests that check them in the output.
inline constexpr std::uint64_t kStartRealtimeNs = 1796080758000000000ull;   // 2026-11-30T23:19:18.000Z
inline constexpr std::uint64_t kClockRealtimeNs = 1796080758123000000ull;
inline constexpr std::uint64_t kClockMonotonicNs = 5000000000ull;

class TraceBuilder {
 public:
  explicit TraceBuilder(std::uint32_t capacity = 16);

  rdzv_file_header& header() { return header_; }

  // Appends a record in the next slot, sealed as the writer seals it; returns the slot.
  std::uint64_t add(const rdzv_record& r);
  // Appends a record the writer never finished: its seal is missing.
  std::uint64_t add_torn(const rdzv_record& r);
  rdzv_record& record(std::uint64_t slot) { return records_.at(slot); }

  // A call in flight (trace_format.h: struct rdzv_inflight) in slot `index` of the header,
  // sealed as the writer seals it (and the INFLIGHT feature set); start at `start_after_clock_s`.
  rdzv_inflight& add_inflight(std::size_t index, unsigned kind, unsigned op, int fd,
                              double start_after_clock_s);

  // header.next_slot is the number of records added, unless set here (e.g. past capacity).
  void set_next_slot(std::uint64_t n) { next_slot_override_ = n; has_override_ = true; }

  // The whole file: header + capacity slots (unused slots zero), as the writer sizes it.
  std::string bytes() const;
  // Writes bytes() to path, cut to `size` bytes when given.
  void write(const std::string& path) const;
  void write_truncated(const std::string& path, std::uint64_t size) const;

 private:
  rdzv_file_header header_{};
  std::vector<rdzv_record> records_;
  std::vector<bool> torn_;
  std::uint64_t next_slot_override_ = 0;
  bool has_override_ = false;
};

// A record of `kind` made by `op`, at ts seconds after the header's monotonic clock point.
rdzv_record make_record(unsigned kind, unsigned op, double ts_after_clock_s = 1.0);

rdzv_sockaddr ipv4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d,
                   std::uint16_t port);
rdzv_sockaddr ipv6(const std::string& text, std::uint16_t port, std::uint32_t scope_id = 0);

// Writes raw bytes to a file (for files that are not traces at all).
void write_file(const std::string& path, const std::string& bytes);

}  // namespace rdzvscope::test
