// The self-consistency check every verdict of the suite goes through (rules/consistency.h):
// it finds each contradiction it knows, and says nothing of a verdict that agrees with itself.
#include <catch2/catch.hpp>

#include "rules/consistency.h"

using namespace rdzvscope;

namespace {

RankRow row(int rank, std::optional<std::int64_t> first_error_ns) {
  RankRow r;
  r.rank = rank;
  r.first_error_ns = first_error_ns;
  return r;
}

}  // namespace

TEST_CASE("consistency: a start-up class on a job whose rendezvous completed") {
  Diagnosis d;
  d.verdict.cls = FailureClass::StoreNotReady;
  CHECK(contradictions(d).empty());
  d.evidence.rendezvous_completed_ns = 16'290'000'000;
  REQUIRE(contradictions(d).size() == 1);
  CHECK(contradictions(d)[0].find("store_not_ready") != std::string::npos);
  d.verdict.cls = FailureClass::BrokenPipe;  // a peer that died after it: no contradiction
  CHECK(contradictions(d).empty());
}

TEST_CASE("consistency: a rank that died before trying the store, called late") {
  Diagnosis d;
  d.verdict.cls = FailureClass::StragglerTimeout;
  RankRow dead = row(1, std::nullopt);
  dead.late = true;
  dead.exit_status = 1;
  dead.exit_ns = 4'800'000'000;
  d.ranks = {row(0, 10'000'000'000), dead, row(2, 10'020'000'000)};
  CHECK(contradictions(d).size() == 1);
  SECTION("exit status 0 before the others failed: it left early, not late") {
    d.ranks[1].exit_status = 0;
    CHECK(contradictions(d).size() == 1);
  }
  SECTION("it ended after the others failed: late (it tried after they gave up, or was stopped)") {
    d.ranks[1].exit_ns = 12'000'000'000;
    CHECK(contradictions(d).empty());
  }
  SECTION("killed, last seen before the others failed: not judged (alive until killed, maybe)") {
    d.ranks[1].exit_status.reset();
    d.ranks[1].exit_ns.reset();
    d.ranks[1].vanished = true;
    d.ranks[1].last_seen_ns = 4'800'000'000;
    CHECK(contradictions(d).empty());
  }
  SECTION("it tried the store: its lateness, whatever ended it") {
    d.ranks[1].first_store_connect_ns = 4'000'000'000;
    CHECK(contradictions(d).empty());
  }
}

TEST_CASE("consistency: healthy with failed ranks") {
  Diagnosis d;
  d.verdict.cls = FailureClass::Healthy;
  CHECK(contradictions(d).empty());
  d.evidence.failed_ranks = {2};
  CHECK(contradictions(d).size() == 1);
}

TEST_CASE("consistency: an alternative that is the verdict's own class") {
  Diagnosis d;
  d.verdict.cls = FailureClass::StoreNotReady;
  d.alternatives.push_back({FailureClass::StragglerTimeout, std::nullopt, "why", "settle"});
  CHECK(contradictions(d).empty());
  d.alternatives.push_back({FailureClass::StoreNotReady, std::nullopt, "why", "settle"});
  CHECK(contradictions(d).size() == 1);
}
