// The counters of what the analysis read, and of what it could not read or had to leave out,
// declared once as one table, as Perfetto's trace_processor declares its stats: each counter
// has its name (the key the JSON reports give it), whether a non-zero value means data was
// lost, where it is counted, and what it means. The places that count increment a Stats
// (Stats::add); every report reads the values, and the labels it shows, through this table.
// A new counter is one row here, and the reports that list counters show it where its row
// says so.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace rdzvscope {

// Rows of stat_table(), in its order.
enum class Stat : std::size_t {
  TraceFiles,
  DamagedFiles,
  Events,
  LostEvents,
  LogFiles,
  LogLinesMatched,
  TornRecords,
  InvalidRecords,
  ImplausibleRecords,
  DroppedEvents,
  RingBufferLost,
  PartialLogFiles,
  LogLines,
  InjectedEvents,
  kCount
};
inline constexpr std::size_t kStatCount = static_cast<std::size_t>(Stat::kCount);

// Info: how much was read. DataLoss: a non-zero value means something the job did is not in
// the analysis (the reports mark it).
enum class StatSeverity { Info, DataLoss };
// Which inputs a counter is about: the watch view lists the trace counters only.
enum class StatSource { Traces, Logs, Analysis };

struct StatRow {
  Stat stat;
  const char* name;         // the JSON key ("inputs" of rdzvscope.diagnosis/1, watch/1)
  const char* label;        // for people: "damaged files"
  StatSeverity severity;
  StatSource source;
  bool in_inputs;           // listed in the reports' inputs (JSON "inputs", the HTML tiles)
  const char* counted_in;   // the function that counts it
  const char* meaning;
};

std::span<const StatRow> stat_table();
const StatRow& stat_row(Stat s);

// One value per row of the table. Summed over files and inputs: merging two inputs adds them.
class Stats {
 public:
  std::uint64_t operator[](Stat s) const { return values_[index(s)]; }
  void add(Stat s, std::uint64_t n = 1) { values_[index(s)] += n; }
  Stats& operator+=(const Stats& o) {
    for (std::size_t i = 0; i < kStatCount; ++i) values_[i] += o.values_[i];
    return *this;
  }
  bool operator==(const Stats&) const = default;

 private:
  static constexpr std::size_t index(Stat s) { return static_cast<std::size_t>(s); }
  std::array<std::uint64_t, kStatCount> values_{};
};

}  // namespace rdzvscope
