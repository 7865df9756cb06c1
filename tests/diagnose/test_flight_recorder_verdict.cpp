// straggler_timeout from PyTorch's Flight Recorder dumps alone (model/fr_parting.h), on the
// real dumps of a 4-rank 2.13 gloo job with rank 2 asleep after init_process_group
// (tests/unit/fixtures/flight_recorder/stall_rank2), and on one dump left out.
#include <catch2/catch.hpp>

#include <filesystem>

#include "model/context.h"
#include "model/fr_parting.h"
#include "report/report.h"
#include "rules/rules.h"

using namespace rdzvscope;

namespace {

const std::string kStall =
    std::string(RDZVSCOPE_SOURCE_DIR) + "/tests/unit/fixtures/flight_recorder/stall_rank2/";

Diagnosis diagnose_dumps(const FrInputs& fr) {
  static const TraceInputs no_traces;
  static const LogFacts no_logs;
  const Context c(no_traces, no_logs, std::nullopt, &fr);
  return diagnose(c);
}

}  // namespace

TEST_CASE("dumps alone: the rank with no entry of collective 1 is the straggler", "[flight_recorder]") {
  const FrInputs fr = load_flight_recorder({kStall}, {});
  REQUIRE(fr.dumps.size() == 4);
  const auto p = find_fr_parting(fr);
  REQUIRE(p);
  CHECK(p->kind == FlightRecorderParting::Kind::NeverEntered);
  CHECK(p->sequence == 1);
  CHECK(p->op == "all_reduce");
  CHECK(p->behind == std::vector<int>{2});
  CHECK(p->waited == std::vector<int>{0, 1, 3});
  CHECK(p->no_dump.empty());
  CHECK(p->timeout_ms == 2000);

  const Diagnosis d = diagnose_dumps(fr);
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  CHECK(d.verdict.initiating_rank == 2);
  CHECK(d.verdict.confidence == "high");
  CHECK_THAT(d.verdict.summary, Catch::Contains("rank 2 never entered collective 1 (all_reduce) of process group 0 (default_pg), the first collective after the rendezvous; ranks 0, 1, 3 waited in it"));
  CHECK_THAT(d.verdict.summary, Catch::Contains("waited in it"));
  CHECK(d.evidence.late_ranks == std::vector<int>{2});
  REQUIRE(d.flight_recorder);
  const std::string text = diagnosis_text(d);
  CHECK_THAT(text, Catch::Contains("FLIGHT RECORDER (4 dump(s), format 2.10)"));
  const auto j = diagnosis_json(d);
  CHECK(j["flight_recorder"]["kind"] == "never_entered");
  CHECK(j["flight_recorder"]["behind_ranks"].dump() == "[2]");
}

TEST_CASE("a rank without a dump is said to have none, not assumed late", "[flight_recorder]") {
  FrInputs fr = load_flight_recorder({kStall}, {});
  // Rank 3 left no dump: rank 2 is still behind the others, and rank 3 is named as unknown.
  fr.dumps.erase(fr.dumps.begin() + 3);
  auto p = find_fr_parting(fr);
  REQUIRE(p);
  CHECK(p->behind == std::vector<int>{2});
  CHECK(p->no_dump == std::vector<int>{3});
  const Diagnosis d = diagnose_dumps(fr);
  CHECK(d.verdict.initiating_rank == 2);
  CHECK(d.verdict.confidence == "medium");
  CHECK_THAT(d.verdict.summary, Catch::Contains("rank 3 left no dump (dead, or never dumped)"));

  // Only the ranks that waited dumped: nothing says who the straggler was.
  fr = load_flight_recorder({kStall}, {});
  fr.dumps.erase(fr.dumps.begin() + 2);
  p = find_fr_parting(fr);
  REQUIRE(p);
  CHECK(p->kind == FlightRecorderParting::Kind::Undecided);
  CHECK(p->no_dump == std::vector<int>{2});
  const Diagnosis u = diagnose_dumps(fr);
  CHECK(u.verdict.cls == FailureClass::Unknown);
  CHECK_FALSE(u.verdict.initiating_rank);
  CHECK_THAT(u.verdict.summary, Catch::Contains("rank 2 left no dump (dead, or never dumped)"));
  CHECK_THAT(u.verdict.next_step, Catch::Contains("find the dump of rank(s) 2"));
}

TEST_CASE("each rank's part in the views: behind, waited, without a dump", "[flight_recorder]") {
  FrInputs fr = load_flight_recorder({kStall}, {});
  // Rank 3 left no dump: rank 2 is behind, ranks 0 and 1 waited, rank 3 is not known.
  fr.dumps.erase(fr.dumps.begin() + 3);
  const Diagnosis d = diagnose_dumps(fr);
  REQUIRE(d.flight_recorder);
  const FlightRecorderParting& p = *d.flight_recorder;
  CHECK(fr_ranks(p) == std::vector<int>{0, 1, 2, 3});
  CHECK(fr_rank_part_words(p, 2) == "never entered it");
  CHECK_THAT(fr_rank_part_words(p, 0), Catch::StartsWith("waited in it (its entry: "));
  CHECK(fr_rank_part_words(p, 3) == "left no dump (dead, or never dumped)");
  CHECK(fr_last_sequence_words(p) == "last collective of process group 0 by rank: 0: 1, 1: 1, 2: 0");
  CHECK(fr_collective_words(p) == "collective 1 (all_reduce) of process group 0 (default_pg)");

  const TraceInputs no_traces;
  const LogFacts no_logs;
  const std::string md = diagnosis_markdown(d, Context(no_traces, no_logs, std::nullopt, &fr));
  CHECK_THAT(md, Catch::Contains("### Flight Recorder\n\nFrom PyTorch's Flight Recorder (3 dump(s), format 2.10): " +
                                 fr_parting_words(p) + "."));
  CHECK_THAT(md, Catch::Contains("| 2 | 0 | **never entered it** |"));
  CHECK_THAT(md, Catch::Contains("| 3 | no dump | left no dump (dead, or never dumped) |"));
  const std::string page = diagnosis_html(d);
  CHECK_THAT(page, Catch::Contains("<p class=\"summary\" id=\"fr-parting\">" + fr_parting_words(p) + "</p>"));
  CHECK_THAT(page, Catch::Contains("<tr class=\"late behind\"><td>2</td><td>0</td><td>never entered it</td></tr>"));
  CHECK_THAT(page, Catch::Contains("<tr class=\"no-dump\"><td>3</td><td>no dump</td>"));

  // The undecided parting: the ranks that dumped entered it; none is said to have waited.
  fr = load_flight_recorder({kStall}, {});
  fr.dumps.erase(fr.dumps.begin() + 2);
  const auto u = find_fr_parting(fr);
  REQUIRE(u);
  CHECK_THAT(fr_rank_part_words(*u, 0), Catch::StartsWith("entered it, its last in its dump"));
  CHECK(fr_rank_part_words(*u, 2) == "left no dump (dead, or never dumped)");
}

TEST_CASE("a dump of a job that did not part says so", "[flight_recorder]") {
  const FrInputs fr =
      load_flight_recorder({std::string(RDZVSCOPE_SOURCE_DIR) + "/tests/unit/fixtures/flight_recorder/three_ops_rank_0"}, {});
  REQUIRE(fr.dumps.size() == 1);
  CHECK_FALSE(find_fr_parting(fr));
  const Diagnosis d = diagnose_dumps(fr);
  CHECK(d.verdict.cls == FailureClass::Unknown);
  CHECK_THAT(d.verdict.summary, Catch::Contains("Flight Recorder dumps show no rank behind the others"));
}

TEST_CASE("a directory of dumps given as a trace directory is no damaged input", "[flight_recorder]") {
  // Its dumps are read under their default names (load_flight_recorder's trace_dirs); the trace
  // listing must not call it a directory without traces.
  const TraceInputs t = load_traces({kStall});
  CHECK(t.errors.empty());
  CHECK(t.processes.empty());
}
