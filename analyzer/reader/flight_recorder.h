// PyTorch's Flight Recorder dumps, read into typed entries. With TORCH_FR_BUFFER_SIZE (older:
// TORCH_NCCL_TRACE_BUFFER_SIZE) above 0 a process group records every collective and p2p op it
// is asked for in a ring buffer; ProcessGroupNCCL's watchdog writes that buffer, pickled, to
// <prefix><global rank> when a collective times out (prefix: TORCH_FR_DUMP_TEMP_FILE, older
// TORCH_NCCL_DEBUG_INFO_TEMP_FILE, default /tmp/nccl_trace_rank_). The same bytes come from
// torch._C._distributed_c10d._dump_fr_trace(). The layout (docs/c10d-notes.md): a dict with
// "version", "pg_config" (per process group: its ranks), "pg_status" and "entries", one dict
// per op with its process group, collective_seq_id, profiling_name ("nccl:all_reduce"),
// state, time_created_ns and timeout_ms. Keys are looked up by name; a key a version lacks is
// left unset, so any version reads as far as it says.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "error.h"

namespace rdzvscope {

struct FrEntry {
  std::string pg_name;  // process_group[0]: the group's name, the same on every rank ("0": WORLD)
  std::string pg_desc;  // process_group[1]: "default_pg", or what new_group(group_desc=) said
  std::int64_t collective_seq_id = 0;  // counts the group's collectives, from 1 (0: a p2p op)
  std::int64_t p2p_seq_id = 0;
  std::int64_t op_id = 0;
  bool is_p2p = false;
  std::string op;     // profiling_name without its backend: "all_reduce", "send 0->1"
  std::string backend;  // "nccl", "gloo"
  std::string state;  // "scheduled", "started", "completed" (gloo on 2.13: always "scheduled")
  std::optional<std::int64_t> time_created_ns;  // the host's clock (CLOCK_REALTIME) when enqueued
  std::optional<std::int64_t> timeout_ms;
  bool retired = false;  // NCCL: no longer watched; retired but not completed: it timed out
};

struct FrDump {
  std::string path;
  int rank = -1;         // the global rank, from the file name's digits (<prefix><rank>)
  std::string version;   // "2.10" on 2.13
  std::map<std::string, std::vector<int>> pg_ranks;  // pg_config: each group's global ranks
  // pg_status: the last collective each group enqueued (by pg_id as text), when dumped.
  std::map<std::string, std::int64_t> last_enqueued;
  std::vector<FrEntry> entries;  // oldest first (the ring buffer keeps the latest N)
};

// The file at `path`, decoded; the error names the file. `rank`: when the name does not end in
// the rank's digits, the caller's (nullopt: then it is an error).
Result<FrDump> read_flight_recorder_dump(const std::string& path, std::optional<int> rank = std::nullopt);
// The same, from the bytes of one dump.
Result<FrDump> decode_flight_recorder_dump(std::string_view bytes, const std::string& path, int rank);

// The rank a dump's file name gives: its trailing decimal digits (DebugInfoWriter appends
// the global rank to the prefix). nullopt: no digits at the end.
std::optional<int> rank_of_dump_name(const std::string& file_name);
// The default dump name: nccl_trace_rank_<N>, the default prefix's base name.
bool is_default_dump_name(const std::string& file_name);

struct FrInputs {
  std::vector<FrDump> dumps;  // by rank
  std::vector<Error> errors;  // files that could not be read, each named
  bool empty() const { return dumps.empty(); }
};

// --flight-recorder PATH...: a file is a dump whatever its name (its rank from its name's
// digits); a directory gives the files below it whose names end in digits and whose first
// byte opens a pickle. `trace_dirs`: the directories given to analyze, where only files named
// as by default (nccl_trace_rank_<N>) are taken. A rank dumped twice keeps its first file and
// the second is an error.
FrInputs load_flight_recorder(const std::vector<std::string>& paths, const std::vector<std::string>& trace_dirs);

}  // namespace rdzvscope
