// The table of damage and loss counters (input_stats.h): one row per counter, and the reports
// list what the table says, in its order.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "report/report.h"
#include "job_builder.h"

using namespace rdzvscope;
using namespace rdzvscope::test;

TEST_CASE("the counter table has one row per counter, each named and explained once") {
  std::set<std::string> names;
  std::size_t i = 0;
  for (const StatRow& row : stat_table()) {
    INFO("row " << i);
    CHECK(static_cast<std::size_t>(row.stat) == i++);
    CHECK(names.insert(row.name).second);
    CHECK(std::string(row.label).size() > 0);
    CHECK(std::string(row.counted_in).size() > 0);
    CHECK(std::string(row.meaning).size() > 0);
    CHECK(&stat_row(row.stat) == &row);
  }
  CHECK(i == kStatCount);
  CHECK(stat_row(Stat::LostEvents).severity == StatSeverity::DataLoss);
  CHECK(stat_row(Stat::TraceFiles).severity == StatSeverity::Info);
}

TEST_CASE("counters add up, per counter") {
  Stats a, b;
  a.add(Stat::TornRecords, 2);
  b.add(Stat::TornRecords);
  b.add(Stat::LogFiles, 3);
  a += b;
  CHECK(a[Stat::TornRecords] == 3);
  CHECK(a[Stat::LogFiles] == 3);
  CHECK(a[Stat::Events] == 0);
}

TEST_CASE("the reports' inputs list the table's in_inputs rows in its order, the JSON keys unchanged") {
  InputStats in;
  in.counts.add(Stat::TraceFiles, 4);
  in.counts.add(Stat::LostEvents, 7);
  in.counts.add(Stat::TornRecords, 1);  // counted, not listed among the inputs
  const auto j = inputs_json(in);
  CHECK(j.dump() ==
        R"({"trace_files":4,"damaged_files":0,"events":0,"lost_events":7,"log_files":0,"log_lines_matched":0,"problems":[]})");
  CHECK(inputs_json(in, /*traces_only=*/true).dump() ==
        R"({"trace_files":4,"damaged_files":0,"events":0,"lost_events":7,"problems":[]})");
}

TEST_CASE("damage found while reading is counted by kind: impossible times, events, files") {
  Job job;
  Proc& p = job.proc(0, 1000);
  p.bind(0.9, 0).listen(0.9).connect(1.0, 0).connect(1e9, ETIMEDOUT).exit(3.0, 0);
  Diagnosis d = job.diagnose_it();
  CHECK(d.inputs[Stat::TraceFiles] == 1);
  CHECK(d.inputs[Stat::DamagedFiles] == 1);
  CHECK(d.inputs[Stat::ImplausibleRecords] == 1);
  CHECK(d.inputs[Stat::Events] > 0);
  CHECK(d.inputs[Stat::TornRecords] == 0);
}
