// Reads one trace file (include/rdzvscope/trace_format.h) into memory and validates it.
//
// Damage is expected: the writer may have been SIGKILLed at any instruction, the file may
// have been copied while written, or cut by a full disk. So:
//   - a header that cannot be trusted is an Error (the file is unusable);
//   - a torn record (seal missing: the writer died while filling it) is counted and skipped;
//   - a sealed record with an impossible kind/op is counted as invalid and skipped;
//   - a file that ends inside the record area keeps every complete record before the cut,
//     and reports the cut in Trace::damage.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <rdzvscope/trace_format.h>

#include "error.h"
#include "ids.h"

namespace rdzvscope {

// A record together with the slot it was found in (the slot orders events of one process).
struct Record {
  SlotIndex slot;
  rdzv_record raw;
};

struct Trace {
  std::string path;
  std::uint64_t file_size = 0;
  rdzv_file_header header{};   // as read; the live counters are a snapshot
  std::vector<Record> records; // sealed and valid, in slot order
  std::uint64_t torn = 0;      // reserved slots whose record was never finished
  std::uint64_t invalid = 0;   // sealed records with an impossible kind or op
  std::optional<Error> damage; // set when the file ends inside the record area
  // Calls in flight when the file was read (RDZV_FEAT_INFLIGHT): sealed slots, in slot order.
  // After the process ended (killed while it waited), the calls it never returned from.
  std::vector<rdzv_inflight> inflight;

  // Events the writer could not store. header.dropped is incremented after next_slot, so a
  // writer killed in between leaves next_slot > capacity + dropped: take the larger.
  std::uint64_t dropped() const;
};

// Larger than any file a writer makes (RDZVSCOPE_MAX_MB is a few MiB): a capacity above this
// is garbage in the header, not a big trace.
inline constexpr std::uint64_t kMaxPlausibleCapacity = std::uint64_t{1} << 24;

Result<Trace> read_trace(const std::string& path);

// How far a file that is still being written has got, from its size and its header's
// counters, without its records: equal progress means nothing new to read (`watch` reads a
// file again only when its progress changed, or when it held unfinished records).
struct TraceProgress {
  std::uint64_t size = 0;
  std::uint64_t next_slot = 0, dropped = 0, lost = 0;
  std::uint32_t exec_generation = 0;
  std::uint64_t inflight_seals = 0;  // the in-flight slots' seals, folded: a call began or ended
  bool header_complete = false;  // the magic is stored last: false while the file is created
  bool operator==(const TraceProgress&) const = default;
};
// The sealed in-flight slots of a header (none unless RDZV_FEAT_INFLIGHT); `again` is the same
// area read a second time: a slot whose seal changed in between was being written, and is
// left out.
std::vector<rdzv_inflight> sealed_inflight(const rdzv_file_header& h,
                                           const rdzv_inflight (&again)[RDZV_INFLIGHT_SLOTS]);

// nullopt when the file cannot be opened or read (gone, no permission).
std::optional<TraceProgress> read_progress(const std::string& path);

}  // namespace rdzvscope
