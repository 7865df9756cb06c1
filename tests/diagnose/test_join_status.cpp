// The live view's model (join_status.h) and its views: every rank's state in a job that is
// still hanging, the headline that names the missing ranks, the metrics.
#include <catch2/catch.hpp>

#include <cerrno>
#include <netdb.h>

#include "report/report.h"
#include "rules/rules.h"
#include "job_builder.h"

using namespace rdzvscope;
using namespace rdzvscope::test;

namespace {

// A job of 8 ranks seen 10 s after its start, still hanging: every state a rank can be in
// before it joins, and two ranks that never started.
struct HangingJob {
  Job job;
  HangingJob() {
    job.world_size(8);
    job.proc(0, 1000)
        .bind(0.9, 0)
        .listen(0.9)
        .connect(1.0, 0, kPort, 0.001, 40000)
        .rcvtimeo(1.0, 30000);
    job.proc(1, 1001).connect(1.2, 0, kPort, 0.001, 40001);
    job.proc(2, 1002, "node2")
        .resolve(1.0, "master", EAI_NONAME)
        .resolve(2.0, "master", EAI_NONAME)
        .resolve(3.0, "master", EAI_NONAME);
    job.proc(3, 1003, "node3").connect(1.0, ECONNREFUSED).connect(2.0, ECONNREFUSED);
    job.proc(4, 1004, "node4");
    job.proc(5, 1005, "node5").connect(1.0, ETIMEDOUT, kPort, 2.0);
  }
};

const RankJoin& rank_in(const JoinStatus& s, int r) {
  for (const RankJoin& j : s.ranks)
    if (j.rank == r) return j;
  FAIL("rank " << r << " missing from the join status");
  throw;
}

}  // namespace

TEST_CASE("join status of a hanging job: one state per rank, absent ranks included") {
  HangingJob h;
  const TraceInputs& traces = h.job.load_it();
  const Context c(traces, h.job.logs());
  const JoinStatus s = join_status(c, at(c, 10));

  REQUIRE(s.ranks.size() == 8);
  CHECK(s.expected == 8);
  CHECK(s.joined == 2);
  CHECK_FALSE(s.complete());
  CHECK(rank_in(s, 0).state == JoinState::Waiting);
  CHECK(rank_in(s, 1).state == JoinState::Waiting);
  const RankJoin& lookup = rank_in(s, 2);
  CHECK(lookup.state == JoinState::LookupFailing);
  CHECK(lookup.tries == 3);
  CHECK_THAT(lookup.reason, Catch::Contains("\"master\"") && Catch::Contains("EAI_NONAME"));
  const RankJoin& refused = rank_in(s, 3);
  CHECK(refused.state == JoinState::Refused);
  CHECK(refused.tries == 2);
  CHECK(refused.since_ns == at(c, 1.0));
  CHECK(rank_in(s, 4).state == JoinState::Starting);
  CHECK(rank_in(s, 5).state == JoinState::SynUnanswered);
  CHECK(rank_in(s, 6).state == JoinState::NotStarted);
  CHECK(rank_in(s, 7).state == JoinState::NotStarted);
  CHECK(s.count(JoinState::NotStarted) == 2);
  REQUIRE(s.store);
  CHECK(s.store->port == kPort);
  CHECK(s.store->host == "node0");
}

TEST_CASE("join headline: counts, then the missing ranks folded by host and reason") {
  HangingJob h;
  const Context c(h.job.load_it(), h.job.logs());
  const std::string line = join_headline(join_status(c, at(c, 10)));
  CHECK_THAT(line, Catch::StartsWith("2 of 8 ranks joined; missing: "));
  CHECK_THAT(line, Catch::Contains("2 (node2: lookup of \"master\" fails with EAI_NONAME since "));
  CHECK_THAT(line, Catch::Contains("3 (node3: connects to 10.0.0.1:29500 refused since "));
  CHECK_THAT(line, Catch::Contains("6, 7 (no process started)"));
}

TEST_CASE("join status: the deadline is the first joined rank's join plus its timeout") {
  HangingJob h;
  const Context c(h.job.load_it(), h.job.logs());
  const JoinStatus s = join_status(c, at(c, 10));
  REQUIRE(s.timeout_ms);
  CHECK(*s.timeout_ms == 30000);
  REQUIRE(s.deadline_ns);
  CHECK(*s.deadline_ns == at(c, 0.9) + 30'000'000'000LL);
}

TEST_CASE("join status: a finished healthy job is complete, every rank exited") {
  Job job;
  job.world_size(2);
  job.proc(0, 1000).bind(0.9, 0).listen(0.9).connect(1.0, 0, kPort, 0.001, 40000).exit(3.0, 0);
  job.proc(1, 1001).connect(1.5, 0, kPort, 0.001, 40001).exit(3.0, 0);
  const Context c(job.load_it(), job.logs());
  const JoinStatus s = join_status(c, at(c, 4));
  CHECK(s.complete());
  CHECK(s.count(JoinState::Exited) == 2);
  REQUIRE(s.all_joined_ns);
  CHECK(*s.all_joined_ns == at(c, 1.501));  // the connect (1 ms) completed
  CHECK_THAT(join_headline(s), Catch::StartsWith("all 2 ranks joined at "));
}

TEST_CASE("join status: a store error after joining, or a non-zero exit, is failed") {
  Job job;
  job.world_size(3);
  job.proc(0, 1000).bind(0.9, 0).listen(0.9).connect(1.0, 0, kPort, 0.001, 40000);
  job.proc(1, 1001).connect(1.0, 0, kPort, 0.001, 40001).io(RDZV_EV_RECV, 5.0, -1, EPIPE, 0, 40001);
  job.proc(2, 1002).connect(1.0, 0, kPort, 0.001, 40002).exit(6.0, 1);
  const Context c(job.load_it(), job.logs());
  const JoinStatus s = join_status(c, at(c, 7));
  CHECK(rank_in(s, 0).state == JoinState::Waiting);
  CHECK(rank_in(s, 1).state == JoinState::Failed);
  CHECK_THAT(rank_in(s, 1).reason, Catch::Contains("EPIPE"));
  CHECK(rank_in(s, 1).joined);
  CHECK(rank_in(s, 2).state == JoinState::Failed);
  CHECK(s.joined == 3);
}

TEST_CASE("join status: a world size the user gives wins, and holds with no traced rank") {
  Job job;
  job.world_size(-1);
  job.proc(0, 1000).connect(1.0, ECONNREFUSED);
  const Context c(job.load_it(), job.logs(), 3);
  const JoinStatus s = join_status(c, at(c, 2));
  CHECK(s.expected == 3);
  CHECK(s.count(JoinState::NotStarted) == 2);
  CHECK_THAT(join_headline(s), Catch::StartsWith("0 of 3 ranks joined"));
}

TEST_CASE("watch lines fold the ranks by state and host when they would not fit") {
  HangingJob h;
  const Context c(h.job.load_it(), h.job.logs());
  const JoinStatus s = join_status(c, at(c, 10));
  const Diagnosis d = diagnose(c);
  const auto full = join_status_lines(s, d, 1000);
  CHECK(full.size() == 6 + 1 + 8);  // 6 summary lines, the table's title, one line per rank
  const auto folded = join_status_lines(s, d, 10);
  CHECK(folded.size() < full.size());
  bool absent_folded = false;
  for (const auto& line : folded)
    absent_folded |= line.find("not started") == 0 && line.find("6, 7 (2)") != std::string::npos;
  CHECK(absent_folded);
}

TEST_CASE("metrics: Prometheus text with types, job labels escaped, one series per state") {
  Job job;
  job.world_size(2);
  job.proc(0, 1000, "node0", "run \"7\"\\x")
      .bind(0.9, 0)
      .listen(0.9)
      .connect(1.0, 0, kPort, 0.001, 40000);
  const Context c(job.load_it(), job.logs());
  const std::string text = prometheus_text(join_status(c, at(c, 3)), diagnose(c),
                                           1'800'000'000'000'000'000LL);
  CHECK_THAT(text, Catch::Contains("# TYPE rdzvscope_ranks_expected gauge\n"));
  CHECK_THAT(text, Catch::Contains("rdzvscope_ranks_expected{run_id=\"run \\\"7\\\"\\\\x\"} 2\n"));
  CHECK_THAT(text, Catch::Contains("rdzvscope_ranks_joined{run_id=\"run \\\"7\\\"\\\\x\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("state=\"not_started\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("# TYPE rdzvscope_init_failures_total counter\n"));
  CHECK_THAT(text,
             Catch::Contains("rdzvscope_rendezvous_complete{run_id=\"run \\\"7\\\"\\\\x\"} 0\n"));
  CHECK_THAT(
      text,
      Catch::Contains(
          "rdzvscope_last_update_timestamp_seconds{run_id=\"run \\\"7\\\"\\\\x\"} 1800000000\n"));
}

TEST_CASE("join status: the call a rank is in right now (calls in flight) is its reason") {
  Job job;
  auto& r0 = job.proc(0, 100);
  r0.bind(1.0, 0).listen(1.0).connect(1.1, 0).accept(1.1, 40001);
  job.proc(1, 101).connect(1.1, 0, kPort, 0.001, 40001).inflight(2.0);
  job.proc(2, 102).inflight(1.5, RDZV_EV_CONNECT, RDZV_OP_CONNECT, -1);
  job.proc(3, 103);
  const TraceInputs& traces = job.load_it();
  const Context c(traces, job.logs());
  const JoinStatus s = join_status(c, at(c, 30));
  const RankJoin& waiting = rank_in(s, 1);
  CHECK(waiting.state == JoinState::Waiting);
  CHECK_THAT(waiting.reason, Catch::Contains("in a wait (poll, timeout 1800 s) on its store connection to "
                                             "10.0.0.1:29500 since"));
  const RankJoin& connecting = rank_in(s, 2);
  CHECK(connecting.state == JoinState::Starting);
  CHECK(connecting.since_ns == at(c, 1.5));
  CHECK_THAT(connecting.reason, Catch::Contains("blocked in a connect to 10.0.0.1:29500 that had not completed"));
  CHECK(rank_in(s, 3).reason == "started, not at the store yet");
}
