// analyze --runs: the comparison of runs (runs/run_comparison.h), one test per pattern,
// on diagnoses built by hand; and the detection of sequential runs in one directory.
#include <catch2/catch.hpp>

#include "runs/run_comparison.h"
#include "runs/sequential_runs.h"
#include "job_builder.h"

using namespace rdzvscope;
using namespace rdzvscope::test;

namespace {

// A run of 4 ranks, two per host (node0: ranks 0-1, node1: ranks 2-3, unless one_host).
RunResult run(const std::string& id, const std::string& cls, std::optional<int> rank, bool one_host = false,
              std::optional<std::string> cause = std::nullopt) {
  RunResult r;
  r.id = id;
  r.path = "/runs/" + id;
  Verdict& v = r.diagnosis.verdict;
  v.cls = class_named(cls).value();
  v.cause = cause;
  v.initiating_rank = rank;
  v.next_step = "the run's own next step";
  for (int k = 0; k < 4; ++k) {
    RankRow row;
    row.rank = k;
    row.host = one_host ? "vm" : "node" + std::to_string(k / 2);
    r.diagnosis.ranks.push_back(row);
  }
  if (rank) v.initiating_host = r.diagnosis.ranks[*rank].host;
  Evidence& ev = r.diagnosis.evidence;
  if (v.cls != FailureClass::Healthy) {
    ev.failed_ranks = {0, 1, 2, 3};
    ev.seconds_to_first_failure = 60.5;
  }
  ev.unresolved_name = "master.cluster";
  return r;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("runs: a name that fails on the same node every run is same_host, with getent there") {
  const RunComparison c = compare_runs({run("a", "name_resolution", 2), run("b", "name_resolution", 3),
                                        run("c", "name_resolution", 2)});
  CHECK(c.pattern == "same_host");
  CHECK(c.cls == FailureClass::NameResolution);
  CHECK(has(c.summary, "a, b, c"));
  CHECK(has(c.summary, "node1"));
  CHECK(has(c.next_step, "getent hosts master.cluster"));
  CHECK(has(c.next_step, "on node1"));
  REQUIRE(c.outcomes.size() == 3);
  CHECK(c.outcomes[0].failed_hosts == std::vector<std::string>{"node0", "node1"});
  CHECK(c.outcomes[0].seconds_to_failure == Approx(60.5));
}

TEST_CASE("runs: a broken pipe on a different rank and host each run is moving: upgrade PyTorch") {
  const RunComparison c = compare_runs({run("a", "broken_pipe", 0, false, "tcpstore_bug_suspected"),
                                        run("b", "broken_pipe", 3, false, "tcpstore_bug_suspected")});
  CHECK(c.pattern == "moving");
  CHECK(c.cls == FailureClass::BrokenPipe);
  CHECK(has(c.summary, "a: rank 0 on node0"));
  CHECK(has(c.summary, "b: rank 3 on node1"));
  CHECK(has(c.next_step, "past 2.8"));
}

TEST_CASE("runs: the same rank on different hosts is same_rank") {
  RunResult a = run("a", "straggler_timeout", 2), b = run("b", "straggler_timeout", 2);
  // In run b, the ranks were placed the other way round: rank 2 ran on node0.
  for (RankRow& row : b.diagnosis.ranks) row.host = row.rank < 2 ? "node1" : "node0";
  b.diagnosis.verdict.initiating_host = "node0";
  const RunComparison c = compare_runs({a, b});
  CHECK(c.pattern == "same_rank");
  CHECK(has(c.summary, "rank 2"));
}

TEST_CASE("runs: on one host, 'the same host' says nothing: ranks decide") {
  CHECK(compare_runs({run("a", "straggler_timeout", 2, true), run("b", "straggler_timeout", 1, true)}).pattern ==
        "moving");
  CHECK(compare_runs({run("a", "straggler_timeout", 2, true), run("b", "straggler_timeout", 2, true)}).pattern ==
        "same_rank");
}

// A rank with no trace has no host: on a job of several hosts, the comparison must not say
// that the job ran on one host (it did, before the fix).
TEST_CASE("runs: an absent rank on a job of several hosts is same_rank, with no host and no 'one host'") {
  RunResult a = run("a", "straggler_timeout", 3), b = run("b", "straggler_timeout", 3);
  for (RunResult* r : {&a, &b}) {
    r->diagnosis.ranks[3].absent = true;
    r->diagnosis.ranks[3].host.clear();
    r->diagnosis.verdict.initiating_host.reset();
  }
  const RunComparison c = compare_runs({a, b});
  CHECK(c.pattern == "same_rank");
  CHECK(has(c.summary, "always started by rank 3 (no run names its host)"));
  CHECK_FALSE(has(c.summary, "one host"));
  CHECK(c.next_step == "the run's own next step");  // nothing of what rank 3 "does" is known
}

TEST_CASE("runs: different classes are mixed_classes, with no common class") {
  const RunComparison c = compare_runs({run("a", "broken_pipe", 1), run("b", "healthy", std::nullopt)});
  CHECK(c.pattern == "mixed_classes");
  CHECK_FALSE(c.cls);
  CHECK(has(c.summary, "a: broken_pipe"));
  CHECK(has(c.summary, "did not reproduce in b"));
  CHECK(has(c.next_step, "past 2.8"));
}

// A pipe broken because its peer died is explained: it must not be sold as the TCPStore bug
// just because another run was healthy (it was, before the fix).
TEST_CASE("runs: a broken pipe explained by a dead peer is not called the TCPStore bug") {
  const RunComparison c =
      compare_runs({run("a", "broken_pipe", 0, false, "peer_died"), run("b", "healthy", std::nullopt)});
  CHECK(c.pattern == "mixed_classes");
  CHECK_FALSE(has(c.next_step, "TCPStore bug"));
  CHECK(has(c.next_step, "the run's own next step"));
}

TEST_CASE("runs: all healthy, single run, and a class without an initiating rank") {
  const RunComparison h = compare_runs({run("a", "healthy", std::nullopt), run("b", "healthy", std::nullopt)});
  CHECK(h.pattern == "all_healthy");
  CHECK(h.cls == FailureClass::Healthy);
  const RunComparison one = compare_runs({run("a", "connect_timeout", 0)});
  CHECK(one.pattern == "single_run");
  CHECK(one.cls == FailureClass::ConnectTimeout);
  CHECK(one.next_step == "the run's own next step");
  const RunComparison col = compare_runs({run("a", "rdzv_collision", std::nullopt), run("b", "rdzv_collision", std::nullopt)});
  CHECK(col.pattern == "same_class");
  CHECK(col.cls == FailureClass::RdzvCollision);
  CHECK(compare_runs({}).pattern == "single_run");
}

TEST_CASE("runs: a run that names no rank does not make the others look moving") {
  const RunComparison c = compare_runs({run("a", "name_resolution", 3), run("b", "name_resolution", std::nullopt),
                                        run("c", "name_resolution", 3)});
  CHECK(c.pattern == "same_host");
  CHECK(has(c.summary, "1 run(s) name no rank"));
}

namespace {

// Two ranks of run `id`, everything shifted by `at` seconds on the wall clock.
void two_ranks(Job& job, const std::string& id, double at, int pid) {
  for (int r = 0; r < 2; ++r) {
    Proc& p = job.proc(r, pid + r, "node0", id);
    p.shift_clock(at);
    if (r == 0) p.bind(0.9, 0).listen(0.9);
    p.connect(1.0, 0, kPort, 0.001, static_cast<std::uint16_t>(40000 + r)).exit(3.0, 0);
  }
}

}  // namespace

TEST_CASE("sequential runs in one directory are found, runs at the same time are not") {
  Job seq;
  two_ranks(seq, "run-1", 0, 1000);
  two_ranks(seq, "run-2", 60, 2000);
  seq.diagnose_it();
  const auto runs = sequential_runs(seq.traces());
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].id == "run-1");
  CHECK(runs[1].id == "run-2");
  CHECK(runs[0].processes == 2);

  Job together;
  two_ranks(together, "run-1", 0, 1000);
  two_ranks(together, "run-2", 0.5, 2000);
  together.diagnose_it();
  CHECK(sequential_runs(together.traces()).empty());

  Job one;
  two_ranks(one, "run-1", 0, 1000);
  one.diagnose_it();
  CHECK(sequential_runs(one.traces()).empty());
}

TEST_CASE("runs: torchrun agents only (the rendezvous never completed), the same node each time: same_host") {
  // No worker started anywhere: no rank rows; the agents' hosts are the job's hosts.
  auto agents_only = [](const std::string& id) {
    RunResult r;
    r.id = id;
    r.path = "/runs/" + id;
    r.diagnosis.verdict.cls = FailureClass::ConnectTimeout;
    r.diagnosis.verdict.initiating_host = "node1";
    r.diagnosis.verdict.next_step = "the run's own next step";
    r.diagnosis.hosts = {"node0", "node1", "node2", "node3"};
    return r;
  };
  const RunComparison c = compare_runs({agents_only("a"), agents_only("b"), agents_only("c")});
  CHECK(c.pattern == "same_host");
  CHECK(has(c.summary, "host node1"));
}
