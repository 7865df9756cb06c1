#include "input_stats.h"

namespace rdzvscope {

namespace {

using enum StatSeverity;
using enum StatSource;

// The rows listed in the reports' inputs come first, in the order the JSON has always given
// them (rdzvscope.diagnosis/1 "inputs": keys are added to, never reordered).
constexpr StatRow kTable[] = {
    {Stat::TraceFiles, "trace_files", "trace files", Info, Traces, true,
     "assemble_traces (process_model.cpp)",
     "trace files given, or listed in the directories given (*.rzt), usable or not"},
    {Stat::DamagedFiles, "damaged_files", "damaged files", DataLoss, Traces, true,
     "assemble_traces (process_model.cpp)",
     "trace files unusable (a header that cannot be trusted) or read with damage: cut short, "
     "or holding torn, invalid or implausible records"},
    {Stat::Events, "events", "events", Info, Traces, true, "assemble_traces (process_model.cpp)",
     "records read and kept: sealed, of a known kind and op, with a plausible time"},
    {Stat::LostEvents, "lost_events", "events lost", DataLoss, Traces, true,
     "assemble_traces (process_model.cpp)",
     "events the recorders could not store: dropped_events plus ring_buffer_lost"},
    {Stat::LogFiles, "log_files", "log files", Info, Logs, true, "load_logs (log_facts.cpp)",
     "logs given (--log, or found beside the traces), readable or not"},
    {Stat::LogLinesMatched, "log_lines_matched", "log lines matched", Info, Logs, true,
     "load_logs (log_facts.cpp), from scan_log",
     "log lines that the prefilter passed and a c10d message family matched"},
    {Stat::TornRecords, "torn_records", "torn records", DataLoss, Traces, false,
     "read_trace (reader/trace_reader.cpp)",
     "reserved slots whose record was never sealed: the writer died while filling it"},
    {Stat::InvalidRecords, "invalid_records", "invalid records", DataLoss, Traces, false,
     "read_trace (reader/trace_reader.cpp)", "sealed records with an impossible kind or op, left out"},
    {Stat::ImplausibleRecords, "implausible_records", "records with impossible times", DataLoss, Traces,
     false, "read_trace_file (process_model.cpp)",
     "records more than 30 days from their file's clock, or lasting longer than that, left out"},
    {Stat::DroppedEvents, "dropped_events", "events dropped by a full file", DataLoss, Traces, false,
     "Trace::dropped (reader/trace_reader.cpp)",
     "events a recorder could not store because the trace file was full (header dropped)"},
    {Stat::RingBufferLost, "ring_buffer_lost", "events lost by attach", DataLoss, Traces, false,
     "read_trace_file (process_model.cpp), from the header",
     "events attach's ring buffer had no room for (header lost, written by the loader)"},
    {Stat::PartialLogFiles, "partial_log_files", "logs read up to damage", DataLoss, Logs, false,
     "load_logs (log_facts.cpp)", "logs cut short (a truncated .gz): what came before the cut is used"},
    {Stat::LogLines, "log_lines", "log lines", Info, Logs, false, "load_logs (log_facts.cpp), from scan_log",
     "lines read in the logs"},
    {Stat::InjectedEvents, "injected_events", "injected events", Info, Analysis, false,
     "input_stats (diagnose.cpp)",
     "records the shim made up on purpose (rdzvscope run --inject, flag RDZV_F_INJECTED)"},
};
static_assert(std::size(kTable) == kStatCount, "one row per Stat");

constexpr bool rows_in_enum_order() {
  for (std::size_t i = 0; i < kStatCount; ++i)
    if (static_cast<std::size_t>(kTable[i].stat) != i) return false;
  return true;
}
static_assert(rows_in_enum_order(), "stat_row indexes the table by its enum");

}  // namespace

std::span<const StatRow> stat_table() { return kTable; }

const StatRow& stat_row(Stat s) { return kTable[static_cast<std::size_t>(s)]; }

}  // namespace rdzvscope
