// Each failure class from synthetic traces: the verdict class, the initiating rank, and that
// the nearby classes do not steal the verdict.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <csignal>

#include "rules/class_registry.h"
#include "report/report.h"
#include "job_builder.h"
#include "model/torch_version.h"

using namespace rdzvscope;
using namespace rdzvscope::test;

namespace {

// Rank 0 hosts the store on kPort; every rank connects; local ports 40000 + rank.
void healthy_rank(Job& job, int rank, double arrive = 1.0, double end = 3.0) {
  Proc& p = job.proc(rank, 1000 + rank);
  if (rank == 0) p.bind(0.9, 0).listen(0.9);
  p.resolve(arrive - 0.01, "node0", 0).connect(arrive, 0, kPort, 0.001, 40000 + rank);
  p.io(RDZV_EV_SEND, arrive + 0.01, 8, 0, 0, 40000 + rank).exit(end, 0);
}

}  // namespace

TEST_CASE("healthy job: all ranks connected and exited 0") {
  Job job;
  for (int r = 0; r < 4; ++r) healthy_rank(job, r);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::Healthy);
  CHECK_FALSE(d.verdict.initiating_rank);
  CHECK(d.ranks.size() == 4);
}

namespace {

// 6 ranks, timeout 10 s; rank `late` arrives `by` seconds after the others (who arrive within
// 0.3 s of each other), and the job still completes.
Diagnosis near_miss(int late, double by) {
  Job job;
  job.world_size(6);
  for (int r = 0; r < 6; ++r) {
    const double arrive = r == late ? 1.0 + by : 1.0 + 0.05 * r;
    Proc& p = job.proc(r, 1000 + r);
    if (r == 0) p.bind(0.9, 0).listen(0.9);
    p.rcvtimeo(arrive - 0.02, 10000).resolve(arrive - 0.01, "node0", 0);
    p.connect(arrive, 0, kPort, 0.001, static_cast<std::uint16_t>(40000 + r));
    p.io(RDZV_EV_SEND, arrive + 0.01, 8, 0, 0, static_cast<std::uint16_t>(40000 + r))
        .exit(1.0 + by + 1.0, 0);
  }
  return job.diagnose_it();
}

}  // namespace

// The job succeeded, but c10d made everyone wait for rank 4 for 7 of its 10 s: 3 s more and
// the others' waits time out (straggler_timeout). A healthy verdict says so, and the rank table
// keeps its row apart from the ranks that arrived together.
TEST_CASE(
    "healthy, with one rank far behind the others: named, with its lateness against the timeout "
    "(issue 32)") {
  Diagnosis d = near_miss(4, 7.0);
  CHECK(d.verdict.cls == FailureClass::Healthy);
  CHECK(d.verdict.summary.find("rank 4 arrived 6.90 s after the others") != std::string::npos);
  CHECK(d.verdict.summary.find("10.00 s timeout") != std::string::npos);
  const auto disc = discriminators_json(d.discriminators);
  CHECK(disc["late_ranks"] == nlohmann::ordered_json::array({4}));
  CHECK(disc["seconds_late"].get<double>() == Approx(7.0).margin(0.2));
  for (const RankRow& r : d.ranks) CHECK(r.late == (r.rank == 4));
  const std::string text = diagnosis_text(d);
  CAPTURE(text);
  CHECK(text.find("like rank") != std::string::npos);    // ranks that arrived together still fold
  CHECK(text.find("4 like rank") == std::string::npos);  // rank 4 does not
  CHECK(text.find("4, 5 like rank") == std::string::npos);
  CHECK(text.find("2-5 like rank") == std::string::npos);
}

TEST_CASE("healthy, ranks arriving together: no rank is named late, and the table folds them") {
  Diagnosis d = near_miss(4, 0.2);
  CHECK(d.verdict.cls == FailureClass::Healthy);
  CHECK(d.verdict.summary.find("arrived") == std::string::npos);
  CHECK_FALSE(discriminators_json(d.discriminators).contains("late_ranks"));
  for (const RankRow& r : d.ranks) CHECK_FALSE(r.late);
  CHECK(diagnosis_text(d).find("(ranks 2-5 like rank 1)") != std::string::npos);
}

// "Like" is the same role, outcome and times within a small part of the job: a rank that
// connected seconds after the others (a failed job's too) keeps its own row.
TEST_CASE("the rank table folds a row only into a row it is like: same story, times close") {
  Job job;
  for (int r = 0; r < 4; ++r) {
    const double arrive = r == 2 ? 6.0 : 1.0;
    Proc& p = job.proc(r, 1000 + r);
    if (r == 0) p.bind(0.9, 0).listen(0.9);
    p.connect(arrive, 0, kPort, 0.001, static_cast<std::uint16_t>(40000 + r))
        .io(RDZV_EV_RECV, 9.0, -1, EAGAIN, RDZV_F_TIMEOUT, static_cast<std::uint16_t>(40000 + r))
        .exit(9.5, 1);
  }
  const std::string text = diagnosis_text(job.diagnose_it());
  CAPTURE(text);
  CHECK(text.find("(ranks 2, 3 like rank 1)") == std::string::npos);
  CHECK(text.find("(rank 3 like rank 1)") != std::string::npos);
}

TEST_CASE("traces with no rank and no store port are no rendezvous: unknown, not healthy (issue 13 item 3)") {
  Job job;
  // `curl` under the shim: a lookup and a connect to port 443, no RANK.
  job.proc(-1, 2000).resolve(0.5, "example.com", 0, 443).exit(1.0, 0);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::Unknown);
  CHECK(d.verdict.summary.rfind("no rank found", 0) == 0);
  CHECK(d.verdict.confidence == "low");
}

TEST_CASE("a process without RANK that used the store is a rendezvous: not \"no rank found\"") {
  Job job;
  job.proc(-1, 2000).connect(1.0, 0).exit(2.0, 0);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.summary.rfind("no rank found", 0) != 0);
}

TEST_CASE("a refused first connect of the ordinary start-up race is still healthy") {
  Job job;
  healthy_rank(job, 0, 1.0);
  for (int r = 1; r < 4; ++r) {
    Proc& p = job.proc(r, 1000 + r);
    p.connect(0.5, ECONNREFUSED).connect(1.5, 0, kPort, 0.001, 40000 + r).exit(3.0, 0);
  }
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::Healthy);
}

TEST_CASE("straggler: the late rank is named, not the ranks that timed out") {
  Job job;
  for (int r = 0; r < 4; ++r) {
    Proc& p = job.proc(r, 1000 + r);
    if (r == 0) p.bind(0.9, 0).listen(0.9);
    if (r == 2) {  // slept 8 s before init; the store host had gone by then
      p.connect(8.0, ECONNREFUSED).snapshot(8.0, RDZV_SNAP_FAILURE, 0.2, 1000, 8.1).exit(9.0, 1);
      continue;
    }
    p.connect(1.0, 0, kPort, 0.001, 40000 + r).rcvtimeo(1.01, 3000);
    p.io(RDZV_EV_RECV, 1.02, -1, EAGAIN, RDZV_F_TIMEOUT, 40000 + r).exit(4.1, 1);
  }
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  REQUIRE(d.verdict.initiating_rank);
  CHECK(*d.verdict.initiating_rank == 2);
  REQUIRE(d.discriminators.get<TimeoutFact>("timeout"));
  CHECK(d.discriminators.get<TimeoutFact>("timeout")->ms == 3000);
  CHECK_FALSE(d.discriminators.get<TimeoutFact>("timeout")->internal_default);
  CHECK(discriminators_json(d.discriminators)["timeout"]["source"] == "configured");
  CHECK(d.verdict.next_step.find("idle/waiting") != std::string::npos);
}

TEST_CASE("straggler stopped by torchrun before its first socket call: named, lateness at least to the end") {
  // PyTorch 2.x under torchrun: the agent SIGTERMs every worker once one fails, so the late
  // rank (its file made at load) has no store connect and no exit record. Traced by a shim
  // older than the signal records: the agent's SIGTERM is not on record.
  Job job;
  job.proc(-1, 999).cmdline("/usr/bin/python3 /usr/bin/torchrun --nproc-per-node 4 train.py").exit(4.5, 1);
  for (int r = 0; r < 4; ++r) {
    Proc& p = job.proc(r, 1000 + r).parent(999);
    if (r == 2) continue;
    p.connect(1.0, 0, kPort, 0.001, 40000 + r).rcvtimeo(1.01, 3000);
    p.io(RDZV_EV_RECV, 1.02, -1, EAGAIN, RDZV_F_TIMEOUT, 40000 + r).exit(4.1, 1);
  }
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  REQUIRE(d.verdict.initiating_rank);
  CHECK(*d.verdict.initiating_rank == 2);
  CHECK(d.verdict.summary.find("never reached the store (still missing 3.") != std::string::npos);
  CHECK(discriminators_json(d.discriminators)["seconds_late"].get<double>() > 3.0);
  // The rule sets typed values: a duration in seconds, ranks as a rank set.
  REQUIRE(d.discriminators.get<Seconds>("seconds_late"));
  CHECK(d.discriminators.get<Seconds>("seconds_late")->s > 3.0);
  CHECK(d.discriminators.get<RankSet>("timed_out_ranks"));
}

namespace {

// Ranks 0-2 of a WORLD_SIZE=4 job (rank 0 hosts the store) connect and time out waiting at
// +4.1 s; rank 3 was never started, so nothing of it is traced. When the store host exits,
// rank 1's last read gets 0 bytes (what made the old verdict transient_recv).
void ranks_waiting_for_an_absent_rank(Job& job) {
  for (int r = 0; r < 3; ++r) {
    Proc& p = job.proc(r, 1000 + r);
    if (r == 0) p.bind(0.9, 0).listen(0.9);
    p.connect(1.0, 0, kPort, 0.001, static_cast<std::uint16_t>(40000 + r)).rcvtimeo(1.01, 3000);
    p.io(RDZV_EV_RECV, 1.02, -1, EAGAIN, RDZV_F_TIMEOUT, static_cast<std::uint16_t>(40000 + r));
    if (r == 1) p.io(RDZV_EV_RECV, 4.2, 0, 0, RDZV_F_ZERO_READ, 40001);
    p.exit(4.3, 1);
  }
}

}  // namespace

TEST_CASE("a rank never started has a track of its own in the timeline (issue 17 item 7)") {
  Job job;
  ranks_waiting_for_an_absent_rank(job);
  const Context c(job.load_it(), job.logs());
  const Diagnosis d = diagnose(c);
  const auto timeline = nlohmann::json::parse(timeline_json(d, c));
  std::optional<long> absent_pid;
  for (const auto& e : timeline["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "process_name" && e["args"]["name"] == "expected, never traced")
      absent_pid = e["pid"].get<long>();
  REQUIRE(absent_pid);
  bool named = false, spanned = false;
  for (const auto& e : timeline["traceEvents"]) {
    if (e["pid"] != *absent_pid || e["tid"] != 3) continue;
    named |= e["ph"] == "M" && e["name"] == "thread_name" && e["args"]["name"] == "rank 3 (absent) - initiating";
    spanned |= e["ph"] == "X" && e["cat"] == "absent" && e["ts"] == 0 && e["dur"].get<double>() > 4e6;
  }
  CHECK(named);
  CHECK(spanned);
}

TEST_CASE("a million ranks absent: the timeline shows 64 tracks and one for the rest (fuzz_analyzer's timeout)") {
  // WORLD_SIZE 1,048,576 and three ranks traced: a track per absent rank made the timeline
  // of a damaged header (or of a whole partition missing) millions of events long.
  Job job;
  job.world_size(1 << 20);
  ranks_waiting_for_an_absent_rank(job);
  const Context c(job.load_it(), job.logs());
  REQUIRE(c.absent_ranks.size() == (1u << 20) - 3);
  const Diagnosis d = diagnose(c);
  const auto timeline = nlohmann::json::parse(timeline_json(d, c));
  std::size_t absent_tracks = 0;
  std::string rest;
  for (const auto& e : timeline["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      const auto name = e["args"]["name"].get<std::string>();
      if (name.find("(absent)") != std::string::npos) ++absent_tracks;
      if (name.find("more ranks (absent)") != std::string::npos) rest = name;
    }
  CHECK(absent_tracks == 65);
  CHECK(rest == std::to_string((1u << 20) - 3 - 64) + " more ranks (absent)");
}

TEST_CASE("a rank never started: the others timed out waiting, the absent rank initiated it") {
  Job job;
  ranks_waiting_for_an_absent_rank(job);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  REQUIRE(d.verdict.initiating_rank);
  CHECK(*d.verdict.initiating_rank == 3);
  CHECK_FALSE(d.verdict.initiating_host);  // no trace, no host
  CHECK(d.verdict.summary.find("rank 3 never reached the store: no trace of it exists") != std::string::npos);
  CHECK(d.verdict.summary.find("rank(s) 0-2 gave up") != std::string::npos);
  CHECK(d.verdict.next_step.find("launcher's log") != std::string::npos);
  CHECK(d.evidence.absent_ranks == std::vector<int>{3});
  CHECK(d.evidence.expected_world_size == 4);
  CHECK(d.evidence.late_ranks == std::vector<int>{3});
  CHECK(discriminators_json(d.discriminators)["absent_ranks"] == nlohmann::ordered_json::array({3}));
  CHECK(discriminators_json(d.discriminators)["expected_world_size"] == 4);
  CHECK(discriminators_json(d.discriminators)["late_ranks"] == nlohmann::ordered_json::array({3}));
  // transient_recv (rank 1's 0-byte read) does not stand beside it.
  for (const Finding& f : d.findings) CHECK(f.cls == FailureClass::StragglerTimeout);
  // The rank table: a row of its own, flagged, in rank order.
  REQUIRE(d.ranks.size() == 4);
  CHECK(d.ranks[3].rank == 3);
  CHECK(d.ranks[3].absent);
  CHECK_FALSE(d.ranks[3].launched_ns);
  for (int r = 0; r < 3; ++r) CHECK_FALSE(d.ranks[r].absent);
  // Every view says so.
  const auto j = diagnosis_json(d);
  CHECK(j["ranks"][3]["absent"] == true);
  CHECK_FALSE(j["ranks"][0].contains("absent"));
  CHECK(diagnosis_text(d).find("no trace (expected by WORLD_SIZE)") != std::string::npos);
  const LogFacts no_logs;
  CHECK(diagnosis_markdown(d, Context(job.traces(), no_logs)).find("| Ranks absent | 3 of WORLD_SIZE=4") != std::string::npos);
  CHECK(diagnosis_html(d).find("absent: no trace of this rank") != std::string::npos);
}

TEST_CASE("a rank never started, and a traced one late too: the absent rank initiated it, both are late") {
  Job job;
  for (int r = 0; r < 3; ++r) {
    Proc& p = job.proc(r, 1000 + r);
    if (r == 0) p.bind(0.9, 0).listen(0.9);
    if (r == 2) {  // arrived after the others gave up
      p.connect(8.0, ECONNREFUSED).exit(9.0, 1);
      continue;
    }
    p.connect(1.0, 0, kPort, 0.001, static_cast<std::uint16_t>(40000 + r)).rcvtimeo(1.01, 3000);
    p.io(RDZV_EV_RECV, 1.02, -1, EAGAIN, RDZV_F_TIMEOUT, static_cast<std::uint16_t>(40000 + r)).exit(4.1, 1);
  }
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  CHECK(d.verdict.initiating_rank == 3);
  CHECK(d.evidence.late_ranks == std::vector<int>{2, 3});
  CHECK(d.verdict.summary.find("rank(s) 2 were late as well") != std::string::npos);
}

namespace {

// An 8-rank job, 2 ranks on each of node0-node3 (GROUP_RANK = rank / 2, LOCAL_RANK = rank % 2,
// as the test cluster and torchrun number them); only `traced` ranks ran. They connect to rank
// 0's store and time out waiting for the others.
void eight_ranks_on_four_nodes(Job& job, const std::vector<int>& traced) {
  job.world_size(8);
  for (int r : traced) {
    Proc& p = job.proc(r, 1000 + r, "node" + std::to_string(r / 2));
    p.header().ident.group_rank = r / 2;
    p.header().ident.local_rank = r % 2;
    if (r == 0) p.bind(0.9, 0).listen(0.9);
    p.connect(1.0, 0, kPort, 0.001, static_cast<std::uint16_t>(40000 + r)).rcvtimeo(1.01, 3000);
    p.io(RDZV_EV_RECV, 1.02, -1, EAGAIN, RDZV_F_TIMEOUT, static_cast<std::uint16_t>(40000 + r)).exit(4.3, 1);
  }
}

}  // namespace

TEST_CASE("a whole node never launched is named as a node, with the ranks it should have run") {
  Job job;
  eight_ranks_on_four_nodes(job, {0, 1, 2, 3, 4, 5});
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  CHECK(d.verdict.initiating_rank == 6);
  CHECK(d.evidence.absent_ranks == std::vector<int>{6, 7});
  REQUIRE(d.evidence.absent_nodes.size() == 1);
  CHECK(d.evidence.absent_nodes[0].index_var == "GROUP_RANK");
  CHECK(d.evidence.absent_nodes[0].index == 3);
  CHECK(d.evidence.absent_nodes[0].ranks == std::vector<int>{6, 7});
  CHECK(d.verdict.summary.find("a whole node is missing: the node with GROUP_RANK 3 (ranks 6, 7) has no traced "
                               "process, while node0 (GROUP_RANK 0), node1 (GROUP_RANK 1), node2 (GROUP_RANK 2) "
                               "did run") != std::string::npos);
  CHECK(d.verdict.next_step.find("number 3 (from 0) of the job's node list") != std::string::npos);
  CHECK(discriminators_json(d.discriminators)["absent_nodes"] ==
        nlohmann::ordered_json::parse(R"([{"numbered_by":"GROUP_RANK","node":3,"ranks":[6,7]}])"));
}

namespace {

// torchrun agents of a c10d rendezvous with --nnodes NNODES, one per host node0.., node0's
// hosting the rendezvous store on 29400; each gives up at its join timeout (exit 1 at 9 s)
// without starting a worker.
void agents_that_gave_up(Job& job, int agents, const char* nnodes) {
  const std::string line = std::string("/usr/bin/python3 /usr/local/bin/torchrun --nnodes ") + nnodes +
                           " --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint node0:29400 --rdzv-id j train.py";
  for (int n = 0; n < agents; ++n) {
    Proc& a = job.proc(-1, 600 + n, "node" + std::to_string(n));
    a.cmdline(line.c_str());
    if (n == 0) a.bind(0.5, 0, 29400).listen(0.5, 29400);
    a.connect(0.6 + 0.1 * n, 0, 29400, 0.001, static_cast<std::uint16_t>(41000 + n)).exit(9.0, 1);
  }
}

}  // namespace

TEST_CASE("a whole torchrun node never launched: agents only, the node missing from --nnodes is named (issue 17)") {
  // Before: unknown, "the launcher agent failed before any worker started".
  Job job;
  agents_that_gave_up(job, 3, "4");
  job.log_line("torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError");
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  CHECK(d.verdict.confidence == "high");
  CHECK_FALSE(d.verdict.initiating_rank);
  CHECK(d.verdict.summary.find("1 of 4 nodes never joined the rendezvous") != std::string::npos);
  CHECK(d.verdict.summary.find("3 are traced (on node0, node1, node2)") != std::string::npos);
  CHECK(d.verdict.summary.find("(RendezvousTimeoutError)") != std::string::npos);
  CHECK(d.verdict.next_step.find("SLURM_JOB_NODELIST") != std::string::npos);
  CHECK(discriminators_json(d.discriminators)["nodes_missing"] == 1);
  REQUIRE(d.discriminators.get<std::int64_t>("nodes_missing"));
  CHECK(*d.discriminators.get<std::int64_t>("nodes_missing") == 1);
}

TEST_CASE("torchrun agents only, none of which ever reached the rendezvous store: the missing node hosted it, store_not_ready") {
  // 2.13, torchrun store_never: node 1's agent alone, its connects to the endpoint refused
  // until its read_timeout. Before: straggler_timeout, "1 of 2 nodes never joined".
  Job job;
  Proc& a = job.proc(-1, 601, "node1");
  a.cmdline("/usr/bin/python3 /usr/local/bin/torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d "
            "--rdzv-endpoint node0:29400 --rdzv-id j --rdzv-conf is_host=0,read_timeout=3 train.py");
  for (int i = 0; i < 5; ++i) a.connect(1.0 + 0.6 * i, ECONNREFUSED, 29400);
  a.exit(4.5, 1);
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  CHECK(d.verdict.cls == FailureClass::StoreNotReady);
  CHECK(d.verdict.summary.find("never joined the rendezvous") == std::string::npos);
}

TEST_CASE("torchrun agents only, every node of --nnodes (or of its minimum) traced: no node is missing") {
  for (const char* nnodes : {"3", "2:4", "3:3"}) {
    Job job;
    agents_that_gave_up(job, 3, nnodes);
    const Diagnosis d = job.diagnose_it();
    INFO(nnodes << ": " << d.verdict.summary);
    CHECK(d.verdict.summary.find("never joined the rendezvous") == std::string::npos);
    CHECK_FALSE(d.discriminators.contains("nodes_missing"));
  }
  Job garbled;  // not a number: nothing is expected
  agents_that_gave_up(garbled, 2, "x:4");
  CHECK(garbled.diagnose_it().verdict.summary.find("never joined the rendezvous") == std::string::npos);
}

TEST_CASE("absent ranks that are not a whole node name no node") {
  {
    Job job;  // node3 ran rank 6: rank 7 alone is missing
    eight_ranks_on_four_nodes(job, {0, 1, 2, 3, 4, 5, 6});
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.initiating_rank == 7);
    CHECK(d.evidence.absent_nodes.empty());
    CHECK_FALSE(d.discriminators.contains("absent_nodes"));
    CHECK(d.verdict.summary.find("whole node") == std::string::npos);
  }
  {
    Job job;  // one node traced: how many ranks a node runs is not shown
    eight_ranks_on_four_nodes(job, {0, 1});
    Diagnosis d = job.diagnose_it();
    CHECK(d.evidence.absent_ranks == std::vector<int>{2, 3, 4, 5, 6, 7});
    CHECK(d.evidence.absent_nodes.empty());
  }
  // Rank 4's numbers do not fit: node 1, local rank 0 (GROUP_RANK and LOCAL_RANK do not give
  // the ranks); damaged ones, whose product overflowed an int (fuzz_analyzer).
  for (const auto& [group_rank, local_rank] : {std::pair{1, 0}, std::pair{1768173363, 1}}) {
    CAPTURE(group_rank, local_rank);
    Job job;
    eight_ranks_on_four_nodes(job, {0, 1, 2, 3, 5});
    Proc& p = job.proc(4, 1004, "node2");
    p.header().ident.group_rank = group_rank;
    p.header().ident.local_rank = local_rank;
    p.connect(1.0, 0, kPort, 0.001, 40004).exit(4.3, 1);
    Diagnosis d = job.diagnose_it();
    CHECK(d.evidence.absent_ranks == std::vector<int>{6, 7});
    CHECK(d.evidence.absent_nodes.empty());
  }
}

TEST_CASE("absent ranks but every traced rank exited 0: unknown, never healthy") {
  // The traced ranks completed their rendezvous, so the others probably ran where rdzvscope
  // did not look (another node's directory not given): their rendezvous is unknown.
  Job job;
  for (int r = 0; r < 4; ++r) healthy_rank(job, r);
  job.world_size(8);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::Unknown);
  CHECK_FALSE(d.verdict.initiating_rank);
  CHECK(d.verdict.summary.find("rank(s) 4-7 of WORLD_SIZE=8 have no trace") != std::string::npos);
  CHECK(d.evidence.absent_ranks == std::vector<int>{4, 5, 6, 7});
  CHECK(d.ranks.size() == 8);
}

TEST_CASE("no absent ranks: the keys are left out, and WORLD_SIZE unset or disagreeing expects nothing") {
  {
    Job job;
    for (int r = 0; r < 4; ++r) healthy_rank(job, r);
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::Healthy);
    CHECK(d.evidence.absent_ranks.empty());
    CHECK_FALSE(d.discriminators.contains("absent_ranks"));
    CHECK_FALSE(d.discriminators.contains("expected_world_size"));
  }
  {
    Job job;  // WORLD_SIZE not exported: the expected ranks are unknown
    ranks_waiting_for_an_absent_rank(job);
    job.world_size(-1);
    Diagnosis d = job.diagnose_it();
    CHECK(d.evidence.absent_ranks.empty());
    CHECK_FALSE(d.evidence.expected_world_size);
    CHECK(d.verdict.cls != FailureClass::StragglerTimeout);
  }
  {
    Job job;  // the traced ranks disagree on WORLD_SIZE
    ranks_waiting_for_an_absent_rank(job);
    job.proc(5, 1005).header().ident.world_size = 8;
    Diagnosis d = job.diagnose_it();
    CHECK(d.evidence.absent_ranks.empty());
  }
  {
    Job job;  // a process used the store without RANK (given on its command line): not knowable
    ranks_waiting_for_an_absent_rank(job);
    job.proc(-1, 1009).connect(1.0, 0, kPort, 0.001, 40009).exit(4.3, 1);
    Diagnosis d = job.diagnose_it();
    CHECK(d.evidence.absent_ranks.empty());
  }
}

TEST_CASE("absent ranks with WORLD_SIZE unset in the headers: the store host's 'k/N clients joined'") {
  Job job;
  ranks_waiting_for_an_absent_rank(job);
  job.world_size(-1);
  job.log_line("torch.distributed.DistStoreError: Timed out after 4 seconds waiting for clients. 3/4 clients joined.", 0);
  Diagnosis d = job.diagnose_it();
  CHECK(d.evidence.expected_world_size == 4);
  CHECK(d.evidence.absent_ranks == std::vector<int>{3});
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  CHECK(d.verdict.initiating_rank == 3);
}

TEST_CASE("a torchrun agent and a helper of a rank are no ranks: rank 3 is still absent") {
  Job job;
  ranks_waiting_for_an_absent_rank(job);
  Proc& agent = job.proc(-1, 900);  // hosts the workers' store, like torchrun's c10d agent
  std::strcpy(agent.header().cmdline, "/usr/bin/python3 /usr/local/bin/torchrun --nproc-per-node 4 x.py");
  agent.connect(0.5, 0, 29400, 0.001, 41000).exit(5.0, 1);
  Proc& tool = job.proc(1, 5001);  // inherited RANK=1
  tool.header().ppid = 1001;
  tool.exit(0.5, 0);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  CHECK(d.verdict.initiating_rank == 3);
  CHECK(d.evidence.absent_ranks == std::vector<int>{3});
}

TEST_CASE("a program a rank started inherits its RANK: a helper, not a second rank 1") {
  Job job;
  healthy_rank(job, 0, 1.0);
  healthy_rank(job, 2, 1.0);
  healthy_rank(job, 3, 1.0);
  healthy_rank(job, 1, 1.0);
  // rank 1 (pid 1001) ran a tool that inherited RANK=1 and failed; it never touched the store
  Proc& tool = job.proc(1, 5001);
  tool.header().ppid = 1001;
  tool.exit(1.5, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::Healthy);
  CHECK(d.ranks.size() == 4);
}

TEST_CASE("logs only, 2.13 with SYNs dropped: the store's address comes from a line that has it") {
  // 2.13 printed uninitialised memory as the address of its 'server socket ... will retry'.
  Job job;
  job.log_line("[W1201 10:06:23.948169601 socket.cpp:938] [c10d] The server socket on "
               "[c440:0:1193:0:5655::]:3175 has timed out, will retry.", 0);
  job.log_line("[E1201 10:06:24.880266656 socket.cpp:1028] [c10d] The client socket has timed out after "
               "4000ms while trying to connect to (127.0.0.1, 58135).", 0);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::ConnectTimeout);
  CHECK(d.verdict.summary.find("c440") == std::string::npos);
}

TEST_CASE("logs only, 2.x under torchrun: the key the others waited for names the late rank") {
  Job job;
  for (int r : {0, 1, 3})
    job.log_line("torch.distributed.DistStoreError: wait timeout after 3000ms, keys: /default_pg/0//cpu//0/2", r);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  REQUIRE(d.verdict.initiating_rank);
  CHECK(*d.verdict.initiating_rank == 2);
}

TEST_CASE("logs only, 2.x by hand: ranks waiting for the store host's key do not make it late") {
  // rank 0 hosts the store and waits for clients; 1 and 3 wait for rank 0's key; 2 is late
  Job job;
  job.log_line("torch.distributed.DistStoreError: Timed out after 4 seconds waiting for clients. 3/4 clients joined.", 0);
  for (int r : {1, 3})
    job.log_line("torch.distributed.DistStoreError: wait timeout after 3000ms, keys: /default_pg/0//cpu//0/0", r);
  job.log_line("[rank2] e2e: sleeping 9s before the rendezvous", 2);
  job.log_line("torch.distributed.DistNetworkError: The client socket has timed out after 3000ms while trying to connect to (127.0.0.1, 1).", 2);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  REQUIRE(d.verdict.initiating_rank);
  CHECK(*d.verdict.initiating_rank == 2);
}

namespace {

// 2.13, node 0's agent alone (node 1 never joined): it hosts the rendezvous store, its own
// client closes at the end (the store's end reads 0 bytes), and it exits 1.
void lone_agent(Job& job, const char* cmdline) {
  Proc& agent = job.proc(-1, 900);
  std::strcpy(agent.header().cmdline, cmdline);
  agent.bind(0.5, 0, 29400).listen(0.5, 29400).accept(0.6, 41000, 29400).connect(0.6, 0, 29400, 0.001, 41000);
  rdzv_record zero = make_record(RDZV_EV_RECV, RDZV_OP_READ, 7.3);
  zero.flags = RDZV_F_STORE | RDZV_F_ZERO_READ;
  zero.u.net.peer = ipv4(10, 0, 0, 2, 41000);
  zero.u.net.local = ipv4(10, 0, 0, 1, 29400);
  agent.add(zero).exit(7.6, 1);
  job.log_line("torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError");
}

}  // namespace

TEST_CASE("a torchrun agent whose rendezvous never completed: the node missing from --nnodes, not healthy, not "
          "transient_recv") {
  Job job;
  lone_agent(job, "/usr/bin/python3 /usr/local/bin/torchrun --nnodes 2 --rdzv-backend c10d x.py");
  Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  CHECK(d.verdict.summary.find("1 of 2 nodes never joined the rendezvous") != std::string::npos);
  CHECK(d.verdict.summary.find("RendezvousTimeoutError") != std::string::npos);
  // Without --nnodes nothing says how many nodes were expected: unknown, saying what is missing.
  Job bare;
  lone_agent(bare, "/usr/bin/python3 /usr/local/bin/torchrun --rdzv-backend c10d x.py");
  d = bare.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::Unknown);
  CHECK(d.verdict.summary.find("launcher agent pid 900") != std::string::npos);
  CHECK(d.verdict.summary.find("RendezvousTimeoutError") != std::string::npos);
}

TEST_CASE("torchrun nodes: one node's SYNs dropped, and the store host's agent giving up its rendezvous is no peer death") {
  // 2.13, --nnodes 3 (the cluster test has 4): node1 cannot reach node0's rendezvous store;
  // node0's agent times out waiting (RendezvousTimeoutError), exits 1 and closes the store
  // under node2's agent, which sees a reset. The cause is node1's path, not node0's exit.
  const char* cmd = "/usr/bin/python3 /usr/local/bin/torchrun --nnodes 3 --rdzv-backend c10d x.py";
  Job job;
  Proc& a0 = job.proc(-1, 900, "node0");
  std::strcpy(a0.header().cmdline, cmd);
  a0.bind(0.5, 0, 29400).listen(0.5, 29400).exit(10.0, 1);
  Proc& a1 = job.proc(-1, 901, "node1");
  std::strcpy(a1.header().cmdline, cmd);
  a1.connect(1.0, ETIMEDOUT, 29400, 3.0).connect(4.5, ETIMEDOUT, 29400, 3.0).exit(11.0, 1);
  Proc& a2 = job.proc(-1, 902, "node2");
  std::strcpy(a2.header().cmdline, cmd);
  a2.connect(1.0, 0, 29400, 0.001, 40002).io(RDZV_EV_RECV, 10.01, -1, ECONNRESET, 0, 40002, 29400).exit(10.2, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::ConnectTimeout);
  REQUIRE(d.verdict.initiating_host);
  CHECK(*d.verdict.initiating_host == "node1");
  CHECK(d.verdict.summary.find("pid 901 on node1") != std::string::npos);
}

TEST_CASE("torchrun --max-restarts: two attempts in one directory are not one rank twice, the last is diagnosed") {
  Job job;
  for (int attempt = 0; attempt < 2; ++attempt) {
    const double t0 = attempt * 20.0;
    for (int r = 0; r < 4; ++r) {
      Proc& p = job.proc(r, 1000 + 10 * attempt + r, "node0", "job-7");
      p.header().ident.restart_count = attempt;
      p.shift_clock(t0);
      if (r == 2) continue;  // the straggler, stopped by the agent before its first call
      p.connect(1.0, 0, kPort, 0.001, static_cast<std::uint16_t>(40000 + 10 * attempt + r)).rcvtimeo(1.01, 3000);
      p.io(RDZV_EV_RECV, 1.02, -1, EAGAIN, RDZV_F_TIMEOUT, static_cast<std::uint16_t>(40000 + 10 * attempt + r)).exit(4.1, 1);
    }
  }
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  REQUIRE(d.verdict.initiating_rank);
  CHECK(*d.verdict.initiating_rank == 2);
  REQUIRE(d.discriminators.get<std::int64_t>("attempts"));
  CHECK(*d.discriminators.get<std::int64_t>("attempts") == 2);
  CHECK(d.verdict.summary.find("(attempt 2 of 2)") != std::string::npos);
  CHECK(d.ranks.size() == 4);
}

namespace {

// Two attempts of a 2-worker torchrun job (--max-restarts 1). Attempt 1: worker 0 publishes its
// gloo address (listens on 37000) and times out waiting for worker 1, which is late and
// stopped. Attempt 2: worker 1 connects to `refused_port` and is refused; worker 0 is late.
// `earlier_ends`: when attempt 1's worker 0 is last seen (it exits then).
void restarted_job(Job& job, std::uint16_t refused_port, double earlier_ends = 4.1) {
  Proc& w0 = job.proc(0, 1000, "node0", "job-7");
  w0.header().ident.restart_count = 0;
  w0.header().ident.world_size = 2;
  w0.connect(1.0, 0, kPort, 0.001, 40000).rcvtimeo(1.01, 3000).peer_listen(1.02, 37000);
  w0.io(RDZV_EV_RECV, 1.03, -1, EAGAIN, RDZV_F_TIMEOUT, 40000).exit(earlier_ends, 1);
  Proc& w1 = job.proc(1, 1001, "node0", "job-7");
  w1.header().ident.restart_count = 0;
  w1.header().ident.world_size = 2;
  Proc& v0 = job.proc(0, 1010, "node0", "job-7");
  v0.header().ident.restart_count = 1;
  v0.header().ident.world_size = 2;
  Proc& v1 = job.proc(1, 1011, "node0", "job-7");
  v1.header().ident.restart_count = 1;
  v1.header().ident.world_size = 2;
  v1.connect(5.0, 0, kPort, 0.001, 40011).peer_listen(5.01, 37011).peer_refused(5.02, refused_port).exit(5.5, 1);
}

}  // namespace

TEST_CASE("torchrun --max-restarts: a worker of the new attempt refused at an address of the earlier attempt is stale_peer_address") {
  Job job;
  restarted_job(job, 37000);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StalePeerAddress);
  CHECK_FALSE(d.verdict.initiating_rank);
  CHECK(d.verdict.confidence == "high");
  CHECK(d.verdict.summary.find("rank 1 (node0 pid 1011) was refused at 10.0.0.2:37000") != std::string::npos);
  CHECK(d.verdict.summary.find("rank 0 (node0 pid 1000) of attempt 1") != std::string::npos);
  REQUIRE(d.discriminators.get<RankSet>("refused_ranks"));
  CHECK(d.discriminators.get<RankSet>("refused_ranks")->ranks == std::vector<int>{1});
  REQUIRE(d.discriminators.get<std::int64_t>("attempt"));
  CHECK(*d.discriminators.get<std::int64_t>("attempt") == 2);
}

TEST_CASE("a refused peer connect is not stale_peer_address when no earlier attempt listened there") {
  Job job;
  restarted_job(job, 37999);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls != FailureClass::StalePeerAddress);
}

TEST_CASE("a refused peer connect is not stale_peer_address while the earlier attempt's worker still ran") {
  // Attempt 1's worker 0 is seen until after the refusal: the address was not a dead one.
  Job job;
  restarted_job(job, 37000, 6.0);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls != FailureClass::StalePeerAddress);
}

TEST_CASE("torchrun --max-restarts: a job whose second attempt succeeded is healthy, and names the first attempt's failure") {
  Job job;
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (int r = 0; r < 4; ++r) {
      Proc& p = job.proc(r, 1000 + 10 * attempt + r, "node0", "job-7");
      p.header().ident.restart_count = attempt;
      p.shift_clock(attempt * 20.0);
      const auto port = static_cast<std::uint16_t>(40000 + 10 * attempt + r);
      if (attempt == 1) {  // everybody on time: the job started
        p.connect(1.0, 0, kPort, 0.001, port).exit(3.0, 0);
        continue;
      }
      if (r == 2) continue;  // the straggler, stopped by the agent before its first call
      p.connect(1.0, 0, kPort, 0.001, port).rcvtimeo(1.01, 3000);
      p.io(RDZV_EV_RECV, 1.02, -1, EAGAIN, RDZV_F_TIMEOUT, port).exit(4.1, 1);
    }
  }
  Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  CHECK(d.verdict.cls == FailureClass::Healthy);
  CHECK_FALSE(d.verdict.initiating_rank);
  CHECK(d.verdict.summary.find("in attempt 2 of 2") != std::string::npos);
  CHECK(d.verdict.summary.find("attempt 1 failed (straggler_timeout, initiating rank 2") != std::string::npos);
  REQUIRE(d.discriminators.get<std::string>("failed_attempt_class"));
  CHECK(*d.discriminators.get<std::string>("failed_attempt_class") == "straggler_timeout");
  REQUIRE(d.discriminators.get<std::int64_t>("failed_attempt_initiating_rank"));
  CHECK(*d.discriminators.get<std::int64_t>("failed_attempt_initiating_rank") == 2);
  CHECK(d.ranks.size() == 4);  // the rows are the last attempt's
}

TEST_CASE("attach on a running torchrun job: the agent killed under its workers is peer_died, though its trace has no spawn") {
  // attach started after the workers existed: the agent's trace has no spawn records, and the
  // kernel recorded its exit (status 9: killed). Its traced children are its workers.
  Job job;
  Proc& agent = job.proc(-1, 900);
  std::strcpy(agent.header().cmdline, "/usr/bin/python3 /usr/local/bin/torchrun --rdzv-backend c10d x.py");
  agent.listen(0.5, 41000).exit(3.0, 9);
  for (int r = 0; r < 4; ++r) {
    Proc& p = job.proc(r, 1000 + r);
    p.header().ppid = 900;
    p.header().store_ports[0] = 41000;
    p.connect(1.0, 0, 41000, 0.001, 40000 + r);
    p.io(RDZV_EV_RECV, 3.01, -1, ECONNRESET, 0, 40000 + r, 41000).exit(3.1, 1);
  }
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::BrokenPipe);
  CHECK(d.verdict.cause == "peer_died");
  CHECK(d.verdict.summary.find("pid 900") != std::string::npos);
}

TEST_CASE("torchrun c10d: an agent that could not bind the endpoint joined it as a client and ended cleanly: no port conflict") {
  // Two jobs on one endpoint under different --rdzv-ids both complete on 2.13.
  Job job;
  const char* cmd = "/usr/bin/python3 /usr/local/bin/torchrun --rdzv-backend c10d --rdzv-id job-b x.py";
  Proc& holder = job.proc(-1, 900);
  std::strcpy(holder.header().cmdline, cmd);
  holder.bind(0.5, 0).listen(0.5).exit(5.0, 0);
  Proc& second = job.proc(-1, 901);
  std::strcpy(second.header().cmdline, cmd);
  second.bind(0.6, EADDRINUSE).connect(0.7, 0, kPort, 0.001, 41000).exit(5.1, 0);
  for (int r = 0; r < 4; ++r) healthy_rank(job, r, 1.0);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::Healthy);
}

TEST_CASE("port conflict: the store host's EADDRINUSE outranks the clients' timeouts") {
  Job job;
  job.proc(0, 1000).bind(0.9, EADDRINUSE).exit(1.0, 1);
  for (int r = 1; r < 4; ++r) job.proc(r, 1000 + r).connect(1.0, 0).io(RDZV_EV_RECV, 1.1, -1, EAGAIN, RDZV_F_TIMEOUT).exit(5, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::PortConflict);
  CHECK(d.verdict.initiating_rank == 0);
}

TEST_CASE("name resolution on one rank: that rank, and the others resolved the name") {
  Job job;
  for (int r = 0; r < 4; ++r) {
    if (r == 3) {
      job.proc(3, 1003).resolve(1.0, "node0", EAI_NONAME).resolve(2.0, "node0", EAI_NONAME).exit(5, 1);
      continue;
    }
    healthy_rank(job, r, 1.0, 6.0);
  }
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::NameResolution);
  CHECK(d.verdict.initiating_rank == 3);
  CHECK(d.verdict.summary.find("resolved on") != std::string::npos);
  CHECK(d.verdict.next_step.find("getent hosts node0") != std::string::npos);
}

namespace {

// Ranks 0, 2, 3 resolve node0 and connect; rank 1's lookups of it fail with `err`, each taking
// `dur` seconds, one after the other from +1.0 s, `n` of them.
Diagnosis failing_lookups(int err, double dur, int n) {
  Job job;
  for (int r : {0, 2, 3}) healthy_rank(job, r, 1.0, 12.0);
  Proc& p = job.proc(1, 1001, "node1");
  double t = 1.0;
  for (int i = 0; i < n; ++i, t += dur + 0.1) p.resolve_to(t, "node0", {}, dur, err);
  p.exit(t + 0.1, 1);
  return job.diagnose_it();
}

}  // namespace

// glibc's resolver waits at least a second for a DNS server before it tries again or gives up
// with EAI_AGAIN: a lookup that failed with EAI_AGAIN after seconds is a server that did not
// answer; EAI_NONAME is an answer (the name does not exist), whatever it took. Two repairs.
TEST_CASE(
    "a resolver that never answers: EAI_AGAIN after the lookup's seconds, and where to look (issue "
    "32)") {
  Diagnosis d = failing_lookups(EAI_AGAIN, 4.0, 2);
  CHECK(d.verdict.cls == FailureClass::NameResolution);
  CHECK(d.verdict.initiating_rank == 1);
  CHECK(d.verdict.cause == "resolver_not_answering");
  CHECK(d.verdict.summary.find("EAI_AGAIN after 4.00 s") != std::string::npos);
  CHECK(d.verdict.summary.find("did not answer") != std::string::npos);
  CHECK(d.verdict.next_step.find("/etc/resolv.conf") != std::string::npos);
  bool timed = false;
  for (const Finding& f : d.findings)
    for (const std::string& e : f.evidence)
      timed |= e.find("EAI_AGAIN after 4.00 s") != std::string::npos;
  CHECK(timed);
  CHECK(discriminators_json(d.discriminators)["seconds_of_failed_lookup"] == 4.0);
}

TEST_CASE("a name that does not exist: EAI_NONAME at once, check the name and the hosts file") {
  Diagnosis d = failing_lookups(EAI_NONAME, 0.002, 3);
  CHECK(d.verdict.cls == FailureClass::NameResolution);
  CHECK(d.verdict.cause == "name_unknown");
  CHECK(d.verdict.summary.find("EAI_NONAME") != std::string::npos);
  CHECK(d.verdict.summary.find("does not exist") != std::string::npos);
  CHECK(d.verdict.summary.find("did not answer") == std::string::npos);
  CHECK(d.verdict.next_step.find("/etc/hosts") != std::string::npos);
}

TEST_CASE(
    "EAI_AGAIN at once: the resolver answered with a failure, it did not wait for a silent "
    "server") {
  Diagnosis d = failing_lookups(EAI_AGAIN, 0.003, 3);
  CHECK(d.verdict.cls == FailureClass::NameResolution);
  CHECK(d.verdict.cause == "resolver_failed");
  CHECK(d.verdict.summary.find("did not answer") == std::string::npos);
  CHECK(d.verdict.next_step.find("/etc/resolv.conf") != std::string::npos);
}

TEST_CASE("an IPv6 miss followed by an IPv4 hit is not a name-resolution failure") {
  Job job;
  for (int r = 0; r < 4; ++r) {
    Proc& p = job.proc(r, 1000 + r);
    if (r == 0) p.bind(0.9, 0).listen(0.9);
    p.resolve(0.95, "node0", EAI_NONAME).resolve(0.96, "node0", 0).connect(1.0, 0).exit(3, 0);
  }
  CHECK(job.diagnose_it().verdict.cls == FailureClass::Healthy);
}

TEST_CASE("broken pipe after the store host vanished: peer_died, initiated by the store host") {
  Job job;
  Proc& s = job.proc(0, 1000);
  s.bind(0.9, 0).listen(0.9).connect(1.0, 0, kPort, 0.001, 40000).accept(1.0, 40001).accept(1.0, 40002);
  // no exit record: SIGKILL
  s.io(RDZV_EV_SEND, 2.0, 8, 0, 0, 40000);
  for (int r = 1; r < 3; ++r)
    job.proc(r, 1000 + r).connect(1.0, 0, kPort, 0.001, 40000 + r).io(RDZV_EV_SEND, 2.5, -1, EPIPE, 0, 40000 + r).exit(2.6, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::BrokenPipe);
  CHECK(d.verdict.cause == "peer_died");
  CHECK(d.verdict.initiating_rank == 0);
}

TEST_CASE("a store host whose exit is recorded just after the first broken pipe: evidence in the times' order (issue 17 item 6)") {
  Job job;
  Proc& s = job.proc(0, 1000);
  s.bind(0.9, 0).listen(0.9).connect(1.0, 0, kPort, 0.001, 40000).accept(1.0, 40001).accept(1.0, 40002);
  s.io(RDZV_EV_SEND, 2.0, 8, 0, 0, 40000).exit(2.54, 1);  // died; its exit record came 40 ms late
  for (int r = 1; r < 3; ++r)
    job.proc(r, 1000 + r).connect(1.0, 0, kPort, 0.001, 40000 + r).io(RDZV_EV_SEND, 2.5, -1, EPIPE, 0, 40000 + r).exit(2.6, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::BrokenPipe);
  CHECK(d.verdict.cause == "peer_died");
  REQUIRE_FALSE(d.findings.empty());
  std::string evidence;
  for (const auto& line : d.findings.front().evidence) evidence += line + "\n";
  INFO(evidence);
  CHECK(evidence.find("before the first broken pipe") == std::string::npos);
  CHECK(evidence.find("40 ms after the first broken pipe at +") != std::string::npos);
}

TEST_CASE("a job that failed after its rendezvous completed says so, and names the rank that failed first (issue 17 item 6)") {
  Job job;
  for (int r = 0; r < 4; ++r) {
    Proc& p = job.proc(r, 1000 + r);
    if (r == 0) p.bind(0.9, 0).listen(0.9).accept(1.0, 40001).accept(1.0, 40002).accept(1.0, 40003);
    p.connect(1.0, 0, kPort, 0.001, static_cast<std::uint16_t>(40000 + r)).peer_connect(1.2 + 0.01 * r);
    if (r == 2) {
      p.exit(6.0, 1);  // a training error of its own, after the first collective
      continue;
    }
    p.io(RDZV_EV_RECV, 6.1, -1, ECONNRESET, 0, static_cast<std::uint16_t>(40000 + r)).exit(6.2, 1);
  }
  Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  CHECK(d.verdict.summary.rfind("the rendezvous completed at +", 0) == 0);
  CHECK(d.verdict.summary.find("first on rank 2") != std::string::npos);
  CHECK(d.verdict.next_step.rfind("not a start-up failure: read rank 2", 0) == 0);
  CHECK(d.evidence.first_failed_rank == 2);
  REQUIRE(d.evidence.rendezvous_completed_ns);
  REQUIRE(d.discriminators.get<AfterRendezvous>("rendezvous_completed"));
  CHECK(d.discriminators.get<AfterRendezvous>("rendezvous_completed")->first_failed_rank == 2);
}

TEST_CASE("a rank that never connected to its peers: no claim that the rendezvous completed") {
  Job job;
  for (int r = 0; r < 4; ++r) {
    Proc& p = job.proc(r, 1000 + r);
    if (r == 0) p.bind(0.9, 0).listen(0.9);
    p.connect(1.0, 0, kPort, 0.001, static_cast<std::uint16_t>(40000 + r));
    if (r != 3) p.peer_connect(1.2);  // rank 3 never got as far as its peers
    p.io(RDZV_EV_RECV, 6.1, -1, ECONNRESET, 0, static_cast<std::uint16_t>(40000 + r)).exit(6.2, 1);
  }
  Diagnosis d = job.diagnose_it();
  CHECK_FALSE(d.evidence.rendezvous_completed_ns);
  CHECK(d.verdict.summary.find("rendezvous completed") == std::string::npos);
  CHECK_FALSE(d.discriminators.contains("rendezvous_completed"));
}

// attach started at 5 s on an already running job: every store socket is a PREEXISTING record
// (connected by then, no attempt seen).
TEST_CASE("broken pipe on attach's traces of a running job: sockets found connected count as connected") {
  auto found = [](Proc& p, unsigned kind, std::uint16_t local_port, std::uint16_t peer_port) -> Proc& {
    const unsigned op = kind == RDZV_EV_LISTEN ? RDZV_OP_LISTEN : kind == RDZV_EV_ACCEPT ? RDZV_OP_ACCEPT : RDZV_OP_CONNECT;
    rdzv_record r = make_record(kind, op, 5.0);
    r.flags = RDZV_F_STORE | RDZV_F_PREEXISTING;
    r.u.net.local = ipv4(10, 0, 0, kind == RDZV_EV_CONNECT ? 2 : 1, local_port);
    if (kind != RDZV_EV_LISTEN) r.u.net.peer = ipv4(10, 0, 0, kind == RDZV_EV_CONNECT ? 1 : 2, peer_port);
    return p.add(r);
  };
  Job job;
  Proc& s = job.proc(0, 1000);  // killed: no exit record
  found(s, RDZV_EV_LISTEN, kPort, 0);
  found(s, RDZV_EV_ACCEPT, kPort, 40001);
  for (int r = 1; r < 3; ++r) {
    Proc& p = job.proc(r, 1000 + r);
    found(p, RDZV_EV_CONNECT, static_cast<std::uint16_t>(40000 + r), kPort);
    p.io(RDZV_EV_SEND, 6.0, -1, EPIPE, 0, static_cast<std::uint16_t>(40000 + r)).exit(6.1, 1);
  }
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::BrokenPipe);
  CHECK(d.verdict.cause == "peer_died");
  CHECK(d.verdict.initiating_rank == 0);
  for (const auto& row : d.ranks) {
    if (row.rank == 0 || row.absent) continue;  // WORLD_SIZE=4, rank 3 untraced: a row of its own
    INFO("rank " << *row.rank);
    CHECK(row.connected_ns);
    CHECK_FALSE(row.first_store_connect_ns);  // attach's start is no connect attempt
    CHECK_FALSE(row.late);
  }
}

TEST_CASE("torchrun c10d: the agent hosts the workers' store on a port only the workers were told; killed, it is peer_died") {
  // PyTorch 2.x: the agent listens on the rendezvous endpoint (29400) and on a port it picks
  // at run time (41000) for the workers' store; only the workers' headers name 41000 (their
  // MASTER_PORT), so the agent's recorder did not flag that listen as a store listen.
  constexpr std::uint16_t kWorkers = 41000;
  Job job;
  Proc& agent = job.proc(-1, 900);
  std::strcpy(agent.header().cmdline, "/usr/bin/python3 /usr/local/bin/torchrun --rdzv-backend c10d train.py");
  agent.bind(0.5, 0, 29400).listen(0.5, 29400);
  rdzv_record l = make_record(RDZV_EV_LISTEN, RDZV_OP_LISTEN, 0.6);
  l.u.net.local = ipv4(0, 0, 0, 0, kWorkers);  // no store flag
  agent.add(l);
  for (int r = 0; r < 4; ++r) {
    Proc& p = job.proc(r, 1000 + r);
    p.header().store_ports[0] = kWorkers;
    p.connect(1.0, 0, kWorkers, 0.001, 40000 + r);
    p.io(RDZV_EV_RECV, 3.0, -1, ECONNRESET, 0, 40000 + r, kWorkers).exit(3.1, 1);
  }
  Diagnosis d = job.diagnose_it();  // the agent vanished (SIGKILL): no exit record
  CHECK(d.verdict.cls == FailureClass::BrokenPipe);
  CHECK(d.verdict.cause == "peer_died");
  CHECK_FALSE(d.verdict.initiating_rank);
  CHECK(d.verdict.summary.find("pid 900") != std::string::npos);
}

TEST_CASE("broken pipe with the store still up: the TCPStore bug, initiated by the failing rank") {
  Job job;
  Proc& s = job.proc(0, 1000);
  s.bind(0.9, 0).listen(0.9).connect(1.0, 0, kPort, 0.001, 40000).exit(10.0, 0);
  job.proc(1, 1001).connect(1.0, 0, kPort, 0.001, 40001).exit(10.0, 0);
  job.proc(2, 1002).connect(1.0, 0, kPort, 0.001, 40002).io(RDZV_EV_SEND, 3.0, -1, EPIPE, 0, 40002).exit(3.1, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::BrokenPipe);
  CHECK(d.verdict.cause == "tcpstore_bug_suspected");
  CHECK(d.verdict.initiating_rank == 2);
}

TEST_CASE("connect timeout: the owner of the unreachable endpoint is the initiating rank") {
  Job job;
  job.proc(0, 1000).bind(0.9, 0).listen(0.9).connect(1.0, ETIMEDOUT, kPort, 3.0).exit(7, 1);
  for (int r = 1; r < 4; ++r) job.proc(r, 1000 + r).connect(1.0, ETIMEDOUT, kPort, 3.0).exit(7, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::ConnectTimeout);
  CHECK(d.verdict.initiating_rank == 0);
}

// The cluster test's dropped-packet host: node1 cannot reach a store that node2 reaches. The
// verdict used to name the store host, which every other node reached fine.
TEST_CASE("connect timeout from one host while others reach the store: that host initiated it") {
  Job job;
  job.proc(0, 1000, "node0").bind(0.9, 0).listen(0.9).connect(1.0, 0, kPort, 0.001, 40000).exit(9, 1);
  job.proc(1, 1001, "node0").connect(1.0, 0, kPort, 0.001, 40001).exit(9, 1);
  job.proc(2, 1002, "node1").connect(1.2, ETIMEDOUT, kPort, 3.0).exit(7, 1);
  job.proc(3, 1003, "node1").connect(1.1, ETIMEDOUT, kPort, 3.0).exit(7, 1);
  job.proc(4, 1004, "node2").connect(1.0, 0, kPort, 0.001, 40004).exit(9, 1);
  job.proc(5, 1005, "node2").connect(1.0, 0, kPort, 0.001, 40005).exit(9, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::ConnectTimeout);
  CHECK(d.verdict.initiating_rank == 3);
  CHECK(d.verdict.initiating_host == "node1");
  CHECK(d.verdict.summary.find("from node1 only") != std::string::npos);
  CHECK(d.verdict.next_step.find("on node1") != std::string::npos);
  CHECK(discriminators_json(d.discriminators)["hosts_that_reached_the_store"] == nlohmann::ordered_json::array({"node2"}));
}

TEST_CASE("connect timeout where only the store host's own loopback got through: the store host") {
  Job job;
  job.proc(0, 1000, "node0").bind(0.9, 0).listen(0.9).connect(1.0, 0, kPort, 0.001, 40000).exit(9, 1);
  job.proc(1, 1001, "node1").connect(1.0, ETIMEDOUT, kPort, 3.0).exit(7, 1);
  job.proc(2, 1002, "node2").connect(1.0, ETIMEDOUT, kPort, 3.0).exit(7, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::ConnectTimeout);
  CHECK(d.verdict.initiating_rank == 0);
  CHECK(d.verdict.initiating_host == "node0");
}

namespace {

// Issue 32: MASTER_ADDR=rdzv-master everywhere. Ranks 0-2 on node0 resolve it to the store,
// 10.0.0.1, and connect; rank 3 on node1 resolves it to `stale` and its store connects go
// there and fail with `err` (a time-out: nothing answered its SYNs; a refusal: nothing listens).
Job& one_name_two_answers(Job& job, const rdzv_sockaddr& stale, int err) {
  for (int r = 0; r < 3; ++r) {
    Proc& p = job.proc(r, 1000 + r, "node0");
    p.master("rdzv-master", kPort);
    if (r == 0) p.bind(0.9, 0).listen(0.9);
    p.resolve_to(0.95, "rdzv-master", ipv4(10, 0, 0, 1, 0))
        .connect_to(1.0, 0, ipv4(10, 0, 0, 1, kPort), 0.001, static_cast<std::uint16_t>(40000 + r))
        .io(RDZV_EV_RECV, 4.0, -1, EAGAIN, RDZV_F_TIMEOUT, static_cast<std::uint16_t>(40000 + r))
        .exit(5.0, 1);
  }
  rdzv_sockaddr dest = stale;
  dest.port = kPort;
  Proc& odd = job.proc(3, 1003, "node1");
  odd.master("rdzv-master", kPort).resolve_to(0.95, "rdzv-master", stale);
  const double dur = err == ETIMEDOUT ? 1.5 : 0.001;
  odd.connect_to(1.0, err, dest, dur).connect_to(2.6, err, dest, dur).exit(4.2, 1);
  return job;
}

// Every line of the verdict and its findings (the "also consistent with" ones too).
std::vector<std::string> all_words(const Diagnosis& d) {
  std::vector<std::string> out{d.verdict.summary, d.verdict.next_step};
  for (const Finding& f : d.findings) out.insert(out.end(), f.evidence.begin(), f.evidence.end());
  return out;
}

bool says(const Diagnosis& d, const std::string& text) {
  for (const std::string& line : all_words(d))
    if (line.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

// The store was never at rank 3's address: no firewall, no store host to blame, and the rank
// whose lookup differs initiated it, with both answers in the words.
TEST_CASE(
    "one name, two answers: the rank whose lookup sent it where no host answers initiated it "
    "(issue 32)") {
  Job job;
  Diagnosis d = one_name_two_answers(job, ipv4(10, 255, 255, 7, 0), ETIMEDOUT).diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StoreUnreachable);
  CHECK(d.verdict.cause == "resolved_elsewhere");
  CHECK(d.verdict.initiating_rank == 3);
  CHECK(d.verdict.initiating_host == "node1");
  CHECK(d.verdict.summary.find("rank 3 resolved rdzv-master to 10.255.255.7") != std::string::npos);
  CHECK(d.verdict.summary.find("ranks 0-2 to 10.0.0.1") != std::string::npos);
  CHECK(d.verdict.summary.find("timed out") != std::string::npos);
  CHECK(d.verdict.next_step.find("getent hosts rdzv-master") != std::string::npos);
  CHECK_FALSE(says(d, "firewall"));
  CHECK_FALSE(says(d, "SYNs went unanswered while the store was listening"));
  const auto disc = discriminators_json(d.discriminators);
  CHECK(disc["destination"] == "10.255.255.7:29500");
  CHECK(disc["ranks_resolved_elsewhere"] == nlohmann::ordered_json::array({3}));
}

TEST_CASE(
    "one name, two answers, the other address refusing: the same mechanism, not a firewall "
    "REJECT") {
  for (const rdzv_sockaddr& stale : {ipv4(10, 0, 0, 9, 0), ipv4(127, 0, 1, 1, 0)}) {
    Job job;
    Diagnosis d = one_name_two_answers(job, stale, ECONNREFUSED).diagnose_it();
    CAPTURE(d.verdict.summary);
    CHECK(d.verdict.cls == FailureClass::StoreUnreachable);
    CHECK(d.verdict.cause == "resolved_elsewhere");
    CHECK(d.verdict.initiating_rank == 3);
    CHECK(d.verdict.summary.find("ranks 0-2 to 10.0.0.1") != std::string::npos);
    CHECK(d.verdict.summary.find("refused") != std::string::npos);
    CHECK_FALSE(says(d, "firewall"));
    CHECK_FALSE(says(d, "never listened"));
    CHECK_FALSE(says(d, "listened 0"));
  }
}

// The mechanism's limits: where the odd rank's answer is the address at which the others
// reached the store, the name is not to blame (the path from it is), and where nobody reached
// the store at an address that rank could compare (the store host's own loopback), nothing
// says where the store was.
TEST_CASE(
    "one name, one answer: a rank timing out at the store's own address is no name resolving "
    "elsewhere") {
  Job job;
  Diagnosis d = one_name_two_answers(job, ipv4(10, 0, 0, 1, 0), ETIMEDOUT).diagnose_it();
  CHECK(d.verdict.cls == FailureClass::ConnectTimeout);
  CHECK(d.verdict.cause != "resolved_elsewhere");

  Job alone;
  Proc& s = alone.proc(0, 1000, "node0");
  s.master("rdzv-master", kPort).bind(0.9, 0).listen(0.9);
  s.resolve_to(0.95, "rdzv-master", ipv4(127, 0, 1, 1, 0))
      .connect_to(1.0, 0, ipv4(127, 0, 1, 1, kPort))
      .exit(5, 1);
  Proc& o = alone.proc(1, 1001, "node1");
  o.master("rdzv-master", kPort).resolve_to(0.95, "rdzv-master", ipv4(10, 0, 0, 5, 0));
  o.connect_to(1.0, ETIMEDOUT, ipv4(10, 0, 0, 5, kPort), 1.5).exit(4, 1);
  alone.world_size(2);
  Diagnosis d2 = alone.diagnose_it();
  CHECK(d2.verdict.cls == FailureClass::ConnectTimeout);
  CHECK(d2.verdict.cause != "resolved_elsewhere");
}

TEST_CASE("store not ready: clients refused for seconds before the store host listened") {
  Job job;
  Proc& s = job.proc(0, 1000);
  s.bind(3.0, 0).listen(3.0).connect(3.0, 0, kPort, 0.001, 40000).exit(6, 0);
  for (int r = 1; r < 4; ++r)
    job.proc(r, 1000 + r).connect(1.0, ECONNREFUSED).connect(2.0, ECONNREFUSED).connect(3.1, 0, kPort, 0.001, 40000 + r).exit(6, 0);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StoreNotReady);
  CHECK(d.verdict.initiating_rank == 0);
}

TEST_CASE("store never listened: store_not_ready without an initiating rank") {
  Job job;
  for (int r = 1; r < 4; ++r)
    job.proc(r, 1000 + r).connect(1.0, ECONNREFUSED).connect(2.0, ECONNREFUSED).connect(3.0, ECONNREFUSED).exit(4, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StoreNotReady);
  CHECK_FALSE(d.verdict.initiating_rank);
}

TEST_CASE("two jobs on one endpoint: rdzv_collision, no initiating rank") {
  Job job;
  job.proc(0, 1000, "node0", "jobA").bind(0.9, 0).listen(0.9).connect(1.0, 0).exit(5, 1);
  job.proc(1, 1001, "node0", "jobA").connect(1.0, 0).exit(5, 1);
  job.proc(0, 2000, "node0", "jobB").bind(1.5, EADDRINUSE).exit(1.6, 1);
  job.proc(1, 2001, "node0", "jobB").connect(1.6, 0).exit(5, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::RdzvCollision);
  CHECK_FALSE(d.verdict.initiating_rank);
}

TEST_CASE("a 0-byte read with the store alive and nothing else: transient_recv") {
  Job job;
  job.proc(0, 1000).bind(0.9, 0).listen(0.9).connect(1.0, 0, kPort, 0.001, 40000).exit(9, 0);
  job.proc(1, 1001).connect(1.0, 0, kPort, 0.001, 40001).io(RDZV_EV_RECV, 1.5, 0, 0, RDZV_F_ZERO_READ, 40001).exit(1.6, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::TransientRecv);
  CHECK(d.verdict.initiating_rank == 1);
}

// torchrun's agents close the rendezvous through the store at the end of every run; an agent
// whose store host exited first fails to, and logs the failed store call around its warning
// (PyTorch 2.13, seen in the store_late scenario): the end of a run, not a transient close.
TEST_CASE("logs: an agent's failed rendezvous shutdown is not a transient_recv or a broken pipe") {
  auto agent_shutdown = [](Job& job, int gap) {
    job.log_line("[W1202 08:24:59.147822021 TCPStore.cpp:106] [c10d] sendBytes failed on SocketImpl(fd=3, "
                 "addr=[::ffff:127.0.0.1]:58062, remote=[::ffff:127.0.0.1]:56845): Broken pipe");
    for (int i = 0; i < gap; ++i) job.log_line("frame #" + std::to_string(i) + ": <unknown function> + 0x6747a52");
    job.log_line("W1202 08:24:59.873000 19941 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1298] The "
                 "node 'localhost_19941_0' has failed to shutdown the rendezvous 'e2e-store_late' due to an error "
                 "of type RendezvousConnectionError.");
    job.log_line("Traceback (most recent call last):");
    job.log_line("torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was likely closed. "
                 "Did the remote server shutdown or crash?");
  };
  SECTION("the whole report is set aside") {
    Job job;
    agent_shutdown(job, 32);
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls != FailureClass::TransientRecv);
    CHECK(d.verdict.cls != FailureClass::BrokenPipe);
    CHECK(job.logs().events.size() == 1);  // the shutdown warning itself stays
  }
  SECTION("a store error far above the warning is not part of it") {
    Job job;
    agent_shutdown(job, 80);
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::BrokenPipe);
    // What stays keeps its text (a kept line was once moved onto itself, which emptied it).
    REQUIRE(job.logs().events.size() == 2);
    CHECK(job.logs().events[0].text.find("Broken pipe") != std::string::npos);
    CHECK(job.logs().events[1].text.find("failed to shutdown the rendezvous") != std::string::npos);
  }
  SECTION("a worker's broken pipe just before its agent's failed shutdown stays") {
    Job job;
    job.log_line("[W1202 08:24:58.101000000 TCPStore.cpp:106] [c10d] sendBytes failed on SocketImpl(fd=5, "
                 "addr=[::ffff:127.0.0.1]:58070, remote=[::ffff:127.0.0.1]:56845): Broken pipe", 1);
    job.log_line("Traceback (most recent call last):");
    job.log_line("torch.distributed.DistNetworkError: Broken pipe", 1);
    job.log_line("E1202 08:24:58.500000 19941 torch/distributed/elastic/multiprocessing/api.py:1002] failed "
                 "(exitcode: 1) local_rank: 1 (pid: 19950) of binary: /usr/bin/python3");
    agent_shutdown(job, 32);
    CHECK(job.diagnose_it().verdict.cls == FailureClass::BrokenPipe);
    CHECK(job.logs().events.size() == 3);  // the worker's warning and exception, the shutdown line
  }
  SECTION("the same 0-byte read without the shutdown warning is still a transient close") {
    Job job;
    job.log_line("torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was likely closed. "
                 "Did the remote server shutdown or crash?");
    CHECK(job.diagnose_it().verdict.cls == FailureClass::TransientRecv);
  }
}

// Issue 31: once every worker of a node exited 0, its agent's exit barrier, keep-alive
// heartbeats and rendezvous shutdown all go through the store; when the store host's agent
// exits first, each fails, in whatever order they run. Lines as PyTorch 2.13 printed them.
namespace teardown {
const char* kSucceeded = "I1202 08:24:58.900000 19941 torch/distributed/elastic/agent/server/api.py:932] [default] "
                         "worker group successfully finished. Waiting 300 seconds for other agents to finish.";
const char* kExitBarrierFinished = "I1202 08:24:58.901000 19941 torch/distributed/elastic/agent/server/api.py:986] "
                                   "Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other "
                                   "agents to finish";
const char* kRecvZeroWarning = "[W1202 08:24:59.010000000 TCPStore.cpp:138] [c10d] recvValueWithTimeout failed on "
                               "SocketImpl(fd=3, addr=[::ffff:127.0.0.1]:58062, remote=[::ffff:127.0.0.1]:56845): "
                               "failed to recv, got 0 bytes";
const char* kExitBarrierError = "torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was likely "
                                "closed. Did the remote server shutdown or crash?";
const char* kHeartbeat = "W1202 08:24:59.300000 19941 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1140] "
                         "The node 'localhost_19941_0' has failed to send a keep-alive heartbeat to the rendezvous "
                         "'e2e-store_late' due to an error of type RendezvousConnectionError.";
const char* kBrokenPipeWarning = "[W1202 08:24:59.147822021 TCPStore.cpp:106] [c10d] sendBytes failed on SocketImpl("
                                 "fd=3, addr=[::ffff:127.0.0.1]:58062, remote=[::ffff:127.0.0.1]:56845): Broken pipe";
const char* kShutdown = "W1202 08:24:59.873000 19941 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1298] "
                        "The node 'localhost_19941_0' has failed to shutdown the rendezvous 'e2e-store_late' due to an "
                        "error of type RendezvousConnectionError.";
}  // namespace teardown

TEST_CASE("logs only, with no error: unknown unless a line says the workers finished (a hang prints nothing)") {
  SECTION("ranks that printed their progress and then nothing: not healthy") {
    Job job;
    job.log_line("[rank0] loading shards 0-127");
    job.log_line("[rank1] loading shards 128-255");
    job.log_line("[rank1] epoch 0 step 0");
    const Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::Unknown);
    CHECK(d.verdict.summary.find("none says the job finished") != std::string::npos);
    CHECK(d.verdict.next_step.find("py-spy dump") != std::string::npos);
  }
  SECTION("a torchrun agent's worker group finished: healthy, at low confidence") {
    Job job;
    job.log_line("[rank0] epoch 0 step 0");
    job.log_line("I1203 02:46:20.701000 10114 torch/distributed/elastic/agent/server/api.py:879] [default] worker "
                 "group successfully finished. Waiting 300 seconds for other agents to finish.");
    const Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::Healthy);
    CHECK(d.verdict.confidence == "low");
  }
}

TEST_CASE("logs: the teardown of a node whose workers all exited 0 is not a failure, in any order") {
  using namespace teardown;
  const std::vector<std::vector<const char*>> orders = {
      // CI at 643c23e: the 0-byte read of the exit barrier first, the shutdown last
      {kRecvZeroWarning, "Error waiting on exit barrier. Elapsed: 0.11 seconds", kExitBarrierError, kHeartbeat,
       kBrokenPipeWarning, kShutdown},
      // the order the failed-shutdown rule was written for: warning, shutdown, traceback
      {kBrokenPipeWarning, kShutdown, "Traceback (most recent call last):", kExitBarrierError},
      // a heartbeat before the exit barrier's read
      {kHeartbeat, kBrokenPipeWarning, kRecvZeroWarning, kExitBarrierError, kShutdown},
  };
  SECTION("without the INFO lines: the exit barrier's error marks it, with the warning above it") {
    // PyTorch 2.13's agent at its default log level (ctest at 0ab3764, -j4): the C++ warning of
    // the barrier's failed read, its backtrace, then the barrier's error and traceback, a broken
    // pipe of the heartbeat, the shutdown.
    Job job;
    job.log_line("[rank0] e2e: done");
    job.log_line("[W1203 02:46:20.701869659 TCPStore.cpp:138] [c10d] recvValueWithTimeout failed on SocketImpl("
                 "fd=4, addr=[::ffff:127.0.0.1]:54182, remote=[::ffff:127.0.0.1]:45479): Failed to recv, got 0 "
                 "bytes. Connection was likely closed. Did the remote server shutdown or crash?");
    for (int i = 0; i < 17; ++i) job.log_line("frame #" + std::to_string(i) + ": <unknown function> + 0x674888d");
    job.log_line("E1203 02:46:20.982000 10114 torch/distributed/elastic/agent/server/api.py:1008] Error waiting on "
                 "exit barrier. Elapsed: 0.028573036193847656 seconds");
    job.log_line("E1203 02:46:20.982000 10114 torch/distributed/elastic/agent/server/api.py:1008] Traceback (most "
                 "recent call last):");
    job.log_line("E1203 02:46:20.982000 10114 torch/distributed/elastic/agent/server/api.py:1008] "
                 "torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was likely closed. "
                 "Did the remote server shutdown or crash?");
    job.log_line(kBrokenPipeWarning);
    job.log_line(kShutdown);
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls != FailureClass::BrokenPipe);
    CHECK(d.verdict.cls != FailureClass::TransientRecv);
    CHECK(job.logs().events.empty());
    CHECK(job.logs().other_errors.empty());
    REQUIRE(job.logs().teardown_marks.size() == 1);
  }
  SECTION("a store error of the agent well above its exit barrier is not the barrier's") {
    Job job;
    job.log_line(kBrokenPipeWarning).log_line("torch.distributed.DistNetworkError: Broken pipe");
    job.log_line("E1203 02:46:20.982000 10114 torch/distributed/elastic/agent/server/api.py:1008] Error waiting on "
                 "exit barrier. Elapsed: 0.02 seconds");
    CHECK(job.diagnose_it().verdict.cls == FailureClass::BrokenPipe);
    CHECK(job.logs().events.size() == 2);
  }
  for (std::size_t i = 0; i < orders.size(); ++i) {
    DYNAMIC_SECTION("order " << i) {
      Job job;
      job.log_line(kSucceeded).log_line(kExitBarrierFinished);
      for (const char* line : orders[i]) job.log_line(line);
      Diagnosis d = job.diagnose_it();
      CHECK(d.verdict.cls != FailureClass::BrokenPipe);
      CHECK(d.verdict.cls != FailureClass::TransientRecv);
      CHECK(job.logs().events.empty());
      CHECK(job.logs().other_errors.empty());
    }
  }
  SECTION("a worker of another node broken after this node's workers finished stays a failure") {
    Job job;
    job.log_line(kSucceeded, -1, "node0.log");
    for (const char* line : orders[0]) job.log_line(line, -1, "node0.log");
    job.log_line(kBrokenPipeWarning, 1, "node1.log");
    job.log_line("torch.distributed.DistNetworkError: Broken pipe", 1, "node1.log");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::BrokenPipe);
    REQUIRE(job.logs().events.size() == 2);
    CHECK(job.logs().events[0].file == "node1.log");
  }
  SECTION("store errors before the workers finished are not the teardown") {
    Job job;
    job.log_line(kBrokenPipeWarning, 1).log_line("torch.distributed.DistNetworkError: Broken pipe", 1);
    job.log_line(kSucceeded);
    CHECK(job.diagnose_it().verdict.cls == FailureClass::BrokenPipe);
  }
  SECTION("a group that finished FAILED is no success") {
    Job job;
    job.log_line("INFO:torch.distributed.elastic.agent.server.api:Local worker group finished (FAILED). Waiting "
                 "300 seconds for other agents to finish");
    job.log_line(kBrokenPipeWarning).log_line("torch.distributed.DistNetworkError: Broken pipe");
    CHECK(job.diagnose_it().verdict.cls == FailureClass::BrokenPipe);
    CHECK(job.logs().teardown_marks.empty());
  }
}

// Issue 28: the NCCL watchdog of every rank that waited in a collective reports it; the rank
// that never entered the collective reports nothing. Line as ProcessGroupNCCL prints it (2.x).
namespace collective {
std::string watchdog(int rank, int seq = 1) {
  return "[rank" + std::to_string(rank) + "]:[E1203 03:20:00.000000000 ProcessGroupNCCL.cpp:632] [Rank " +
         std::to_string(rank) + "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" +
         std::to_string(seq) + ", OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600027 "
         "milliseconds before timing out.";
}
}  // namespace collective

TEST_CASE("logs: the rank that logged no collective timeout is the one the others waited for") {
  using collective::watchdog;
  SECTION("ranks 1-3 time out, rank 0 shows no line at all: rank 0, low") {
    Job job;
    for (int r = 1; r < 4; ++r) job.log_line(watchdog(r), r);
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
    REQUIRE(d.verdict.initiating_rank);
    CHECK(*d.verdict.initiating_rank == 0);
    CHECK(d.verdict.confidence == "low");
    CHECK(d.verdict.summary.find("after the rendezvous (ALLREDUCE, SeqNum=1)") != std::string::npos);
    CHECK(d.verdict.summary.find("init barrier") == std::string::npos);
  }
  SECTION("ranks 0, 1, 3 time out, rank 2 raised an error of its own: rank 2 died (issue 29), straggler beside") {
    // Before issue 29: straggler_timeout, rank 2 medium. An uncaught CUDA error ends rank 2's
    // process: it is dead, not late; the straggler reading stays as a finding.
    Job job;
    for (int r : {0, 1, 3}) job.log_line(watchdog(r), r);
    job.log_line("[rank2]:RuntimeError: CUDA error: an illegal memory access was encountered", 2);
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::RankDied);
    REQUIRE(d.verdict.initiating_rank);
    CHECK(*d.verdict.initiating_rank == 2);
    CHECK(d.verdict.confidence == "low");
    CHECK(std::any_of(d.findings.begin(), d.findings.end(),
                      [](const Finding& f) { return f.cls == FailureClass::StragglerTimeout; }));
  }
  SECTION("ranks 0, 1, 3 time out, rank 2 logged a line that is no exception: rank 2, medium") {
    Job job;
    for (int r : {0, 1, 3}) job.log_line(watchdog(r), r);
    job.log_line("[rank2]:[W1203 10:00:00.123456 123 socket.cpp:207] [c10d] The hostname of the client socket cannot "
                 "be retrieved. err=-3", 2);
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
    REQUIRE(d.verdict.initiating_rank);
    CHECK(*d.verdict.initiating_rank == 2);
    CHECK(d.verdict.confidence == "medium");
  }
  SECTION("one rank's log alone names nobody") {
    Job job;
    job.log_line(watchdog(3), 3);
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
    CHECK_FALSE(d.verdict.initiating_rank);
  }
}

TEST_CASE("a failed rank without any rendezvous evidence: unknown, saying what is missing") {
  Job job;
  healthy_rank(job, 0);
  job.proc(1, 1001).exit(2.0, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::Unknown);
  CHECK(d.verdict.summary.find("rank(s) 1 failed") != std::string::npos);
}

TEST_CASE("records with impossible times are left out and counted, the verdict stands") {
  Job job;
  for (int r = 0; r < 4; ++r) healthy_rank(job, r);
  // A garbage record (a damaged file): 10^9 seconds after the clock point, and one lasting 300 years.
  job.proc(7, 1007).connect(1.0, ECONNREFUSED).connect(1e9, ETIMEDOUT).connect(2.0, ETIMEDOUT, kPort, 1e10).exit(3.0, 0);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::Healthy);
  CHECK(d.inputs[Stat::DamagedFiles] == 1);
  REQUIRE(d.inputs.problems.size() == 1);
  CHECK(d.inputs.problems[0].find("2 record(s) with impossible times") != std::string::npos);
}

TEST_CASE("every failure class has one name that reads back, and every class but healthy/unknown one registry row") {
  for (int i = 0; i <= static_cast<int>(FailureClass::RankDied); ++i) {  // the last enumerator
    const auto cls = static_cast<FailureClass>(i);
    INFO("enumerator " << i);
    REQUIRE(class_named(name_of(cls)) == cls);
    const bool proposed_by_a_rule = cls != FailureClass::Healthy && cls != FailureClass::Unknown;
    CHECK((row_of(cls) != nullptr) == proposed_by_a_rule);
  }
  CHECK_FALSE(class_named("no_such_class"));
  // Strongest first, and a candidate whose cause is not shown never outranks a shown one.
  int last = 1000;
  for (const ClassRow& r : class_registry()) {
    CHECK(r.precedence < last);
    CHECK(r.precedence_unshown <= r.precedence);
    last = r.precedence;
  }
}

// Issue 32: a dead rank is dead, not late; its peers' errors are its consequences.
namespace {

const RankRow* row_of_rank(const Diagnosis& d, int rank) {
  for (const RankRow& r : d.ranks)
    if (r.rank == rank) return &r;
  return nullptr;
}

bool has_finding_of(const Diagnosis& d, FailureClass cls, const std::string& words) {
  for (const Finding& f : d.findings)
    for (const std::string& e : f.evidence)
      if (e.find(words) != std::string::npos && (f.cls == cls || e.find(std::string(name_of(cls))) != std::string::npos))
        return true;
  return false;
}

// 4 ranks; rank 0's store listens at +3.0 s, 2.5 s after ranks 1-3 were first refused (c10d
// retries silently); every rank then connects to the store and to its peers (gloo's pairs, at
// +3.5 s): the rendezvous completed. Rank 1 is SIGKILLed at about +4.0 s (no exit record); the
// kernel closes its sockets, the store host reads 0 bytes on its store connection at +4.02 s,
// and ranks 0, 2 and 3 fail at +4.04-4.05 s, their gloo connections reset or closed.
void rank_killed_after_the_rendezvous(Job& job) {
  for (int r = 0; r < 4; ++r) {
    Proc& p = job.proc(r, 1000 + r);
    const auto port = static_cast<std::uint16_t>(40000 + r);
    if (r == 0) {
      p.bind(3.0, 0).listen(3.0).connect(3.05, 0, kPort, 0.001, port);
      for (int c = 1; c < 4; ++c) p.accept(3.1, static_cast<std::uint16_t>(40000 + c));
    } else {
      p.connect(0.5, ECONNREFUSED).connect(1.5, ECONNREFUSED).connect(2.5, ECONNREFUSED);
      p.connect(3.1, 0, kPort, 0.001, port);
    }
    p.io(RDZV_EV_SEND, 3.2, 8, 0, 0, port).peer_connect(3.5, static_cast<std::uint16_t>(50000 + r));
    if (r == 1) {
      p.io(RDZV_EV_SEND, 4.0, 8, 0, 0, port);  // its last record: killed right after
      continue;
    }
    if (r == 0) p.serve(RDZV_EV_RECV, 4.02, 0, 40001, kPort, RDZV_F_ZERO_READ);
    p.exit(r == 0 ? 4.05 : 4.04, 1);
  }
}

}  // namespace

TEST_CASE("a rank killed after the rendezvous completed is named dead, its peers' errors consequences; the "
          "start-up race it survived is no verdict (issue 32 item 1)") {
  Job job;
  rank_killed_after_the_rendezvous(job);
  job.log_line("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error [127.0.0.1]:6530: "
               "Connection reset by peer.", 0, "rank0.log");
  job.log_line("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer "
               "[127.0.0.1]:57256.", 3, "rank3.log");
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  // Before: store_not_ready, rank 0, "the store host rank 0 listened 2.50 s after the first
  // client tried", after "the rendezvous completed".
  CHECK(d.verdict.cls == FailureClass::BrokenPipe);
  CHECK(d.verdict.cause == "peer_died");
  CHECK(d.verdict.initiating_rank == 1);
  CHECK(d.verdict.confidence == "high");
  CHECK(d.verdict.summary.find("the rendezvous completed") != std::string::npos);
  CHECK(d.verdict.summary.find("vanished without an exit record") != std::string::npos);
  CHECK(d.verdict.summary.find("killed by a signal") != std::string::npos);
  CHECK(d.verdict.summary.find("rank 0 (node0 pid 1000) read the end of its store connection") != std::string::npos);
  CHECK(d.verdict.summary.find("rank(s) 0, 2, 3 failed after it") != std::string::npos);
  CHECK(d.verdict.summary.find("consequences") != std::string::npos);
  CHECK(d.verdict.summary.find("listened") == std::string::npos);
  CHECK_FALSE(has_finding_of(d, FailureClass::StoreNotReady, "store_not_ready"));
  const RankRow* dead = row_of_rank(d, 1);
  REQUIRE(dead);
  CHECK(dead->dead);
  CHECK(dead->ended == "vanished");
  CHECK(d.evidence.dead_ranks == std::vector<int>{1});
}

namespace {

// /dev/kmsg records as the kernel wrote them when a memory cgroup's limit made it kill
// python3 (captured on the test VM, pid and times changed).
KernelLog oom_of(std::int32_t pid, double boot_s, bool same_boot = true) {
  KernelLog k;
  for (int i = 0; i < 16; ++i) k.boot_id[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>((same_boot ? 0xb0 : 0xc0) + i);
  const auto usec = static_cast<long long>(boot_s * 1e6);
  const std::string records =
      "4,6480," + std::to_string(usec) + ",-;python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0\n" +
      "6,6520," + std::to_string(usec) +
      ",-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/job7,task_memcg=/job7,"
      "task=python3,pid=" + std::to_string(pid) + ",uid=0\n" +
      "3,6521," + std::to_string(usec) + ",-;Memory cgroup out of memory: Killed process " + std::to_string(pid) +
      " (python3) total-vm:426180kB, anon-rss:102016kB, file-rss:6656kB, shmem-rss:0kB, UID:0 pgtables:264kB "
      "oom_score_adj:0\n";
  k.kills = oom_kills_in_kmsg(records);
  return k;
}

// Every rank of rank_killed_after_the_rendezvous started at boot tick 1000 (10.00 s after boot
// at 100 ticks a second); its records at +t are then t + 0.123 s later (the builder's header
// reads its clocks 0.123 s after the start).
void place_on_one_boot(Job& job, int ranks) {
  for (int r = 0; r < ranks; ++r) job.proc_at(static_cast<std::size_t>(r)).origin(RDZV_PIDNS_INIT_INODE, 1000 + r, 1000);
}

double boot_s_at(double t) { return 1000.0 / static_cast<double>(::sysconf(_SC_CLK_TCK)) + 0.123 + t; }

}  // namespace

TEST_CASE("kmsg: the OOM killer's records give the pid, the task, the time and the memory cgroup") {
  const KernelLog k = oom_of(5436, 29872.609358);
  REQUIRE(k.kills.size() == 1);
  CHECK(k.kills[0].pid == 5436);
  CHECK(k.kills[0].comm == "python3");
  CHECK(k.kills[0].boot_ns == 29872609358000);
  CHECK(k.kills[0].memcg);
  CHECK(k.kills[0].cgroup == "/job7");
  const auto machine = oom_kills_in_kmsg(
      "3,7,123456,-;Out of memory: Killed process 812 (python) total-vm:1kB, anon-rss:1kB\n"
      "6,8,123457,-;oom_reaper: reaped process 812 (python), now anon-rss:0kB\n"
      "6,9,123458,-;Killed process 99 (sleep) for no reason the OOM killer gave\n"
      "garbage without a prefix\n6,10,x,-;Out of memory: Killed process 5 (a)\n");
  REQUIRE(machine.size() == 1);
  CHECK(machine[0].pid == 812);
  CHECK_FALSE(machine[0].memcg);
}

TEST_CASE("a rank the kernel's OOM killer chose is named so, on the boot and in the window of its end only") {
  SECTION("this boot, its pid, between its last record and its end: the OOM killer") {
    Job job;
    rank_killed_after_the_rendezvous(job);
    place_on_one_boot(job, 4);
    job.kernel(oom_of(1001, boot_s_at(4.01)));
    const Diagnosis d = job.diagnose_it();
    INFO(d.verdict.summary);
    CHECK(d.verdict.initiating_rank == 1);
    CHECK(d.verdict.summary.find("was killed by the kernel's OOM killer (its memory cgroup /job7 was at its limit") !=
          std::string::npos);
    CHECK(d.verdict.summary.find("vanished without an exit record") == std::string::npos);
  }
  const auto no_oom_words = [](Job& job) {
    const Diagnosis d = job.diagnose_it();
    INFO(d.verdict.summary);
    CHECK(d.verdict.initiating_rank == 1);
    CHECK(d.verdict.summary.find("OOM killer (") == std::string::npos);
    CHECK(d.verdict.summary.find("vanished without an exit record") != std::string::npos);
  };
  Job job;
  rank_killed_after_the_rendezvous(job);
  place_on_one_boot(job, 4);
  SECTION("the kernel's log of another boot") { job.kernel(oom_of(1001, boot_s_at(4.01), false)); }
  SECTION("the pid, killed a minute after the rank was over: a later process with its pid") {
    job.kernel(oom_of(1001, boot_s_at(60.0)));
  }
  SECTION("the pid, killed before the rank's last record: not the rank") { job.kernel(oom_of(1001, boot_s_at(1.0))); }
  SECTION("a rank in a PID namespace of its own, its host pid unknown") {
    job.proc_at(1).origin(4026532301ull, 1001, 1000);
    job.kernel(oom_of(1001, boot_s_at(4.01)));
  }
  no_oom_words(job);
}


TEST_CASE("refused connects that c10d's retry absorbed do not explain a failure that came after them "
          "(issue 32 item 1)") {
  // The same late store, every client connected, then the store host alone exits 1 with no
  // error of its own and nothing else is known: not store_not_ready (the race was survived).
  Job job;
  for (int r = 0; r < 4; ++r) {
    Proc& p = job.proc(r, 1000 + r);
    if (r == 0) p.bind(3.0, 0).listen(3.0);
    else p.connect(0.5, ECONNREFUSED).connect(1.5, ECONNREFUSED).connect(2.5, ECONNREFUSED);
    p.connect(3.1, 0, kPort, 0.001, static_cast<std::uint16_t>(40000 + r));
    p.exit(5.0, r == 0 ? 1 : 0);
  }
  const Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls != FailureClass::StoreNotReady);
  // The same job succeeding is still told of its near miss.
  Job ok;
  for (int r = 0; r < 4; ++r) {
    Proc& p = ok.proc(r, 1000 + r);
    if (r == 0) p.bind(3.0, 0).listen(3.0);
    else p.connect(0.5, ECONNREFUSED).connect(1.5, ECONNREFUSED).connect(2.5, ECONNREFUSED);
    p.connect(3.1, 0, kPort, 0.001, static_cast<std::uint16_t>(40000 + r)).exit(5.0, 0);
  }
  CHECK(ok.diagnose_it().verdict.cls == FailureClass::StoreNotReady);
}

TEST_CASE("a whole job killed at once names no rank dead first") {
  // scancel: every rank vanishes together; the store host read the end of one connection just
  // before it went too. Nothing shows who went first.
  Job job;
  for (int r = 0; r < 4; ++r) {
    Proc& p = job.proc(r, 1000 + r);
    const auto port = static_cast<std::uint16_t>(40000 + r);
    if (r == 0) p.bind(0.9, 0).listen(0.9);
    p.connect(1.0, 0, kPort, 0.001, port).peer_connect(1.5, static_cast<std::uint16_t>(50000 + r));
    p.io(RDZV_EV_SEND, 9.0, 8, 0, 0, port);
    if (r == 0) p.serve(RDZV_EV_RECV, 9.01, 0, 40002, kPort, RDZV_F_ZERO_READ);
  }
  const Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls != FailureClass::RankDied);
  CHECK(d.verdict.cls != FailureClass::BrokenPipe);
  CHECK(d.evidence.dead_ranks.empty());
}

namespace {

// Rank 1 raises before init_process_group (an exit record, status 1, no socket call) at
// +0.8 s; ranks 0, 2 and 3 time out at the store waiting for it and exit 1 at +4.1 s.
void rank_1_dies_before_the_store(Job& job) {
  for (int r = 0; r < 4; ++r) {
    Proc& p = job.proc(r, 1000 + r);
    if (r == 1) {  // raised before init_process_group: exit record, status 1, no socket call
      p.exit(0.8, 1);
      continue;
    }
    if (r == 0) p.bind(0.9, 0).listen(0.9);
    p.connect(1.0, 0, kPort, 0.001, static_cast<std::uint16_t>(40000 + r)).rcvtimeo(1.01, 3000);
    p.io(RDZV_EV_RECV, 1.02, -1, EAGAIN, RDZV_F_TIMEOUT, static_cast<std::uint16_t>(40000 + r), kPort)
        .exit(4.1, 1);
  }
}

}  // namespace

TEST_CASE("a rank that exits before it reaches the store is dead, not late: its exit, its exception, its crash "
          "to read; its row is not LATE (issue 32 item 2)") {
  Job job;
  rank_1_dies_before_the_store(job);
  job.log_line("Traceback (most recent call last):", 1, "rank1.log");
  job.log_line("FileNotFoundError: [Errno 2] No such file or directory: '/data/shard-1.bin'", 1, "rank1.log");
  job.log_line("torch.distributed.DistStoreError: wait timeout after 3000ms, keys: /default_pg/0//cpu//0/1", 2,
               "rank2.log");
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  CHECK(d.verdict.initiating_rank == 1);
  // Before: "rank 1 (...) never reached the store (still missing 3.08 s after the others
  // arrived)", next step "... checkpoint or data loading ...".
  CHECK(d.verdict.summary.find("rank 1 (node0 pid 1001) exited with status 1 at +0.") != std::string::npos);
  CHECK(d.verdict.summary.find("before it reached the store") != std::string::npos);
  CHECK(d.verdict.summary.find("rank1.log:2: FileNotFoundError: [Errno 2]") != std::string::npos);
  CHECK(d.verdict.summary.find("it died before it could join") != std::string::npos);
  CHECK(d.verdict.summary.find("late") == std::string::npos);
  CHECK(d.verdict.summary.find("never reached") == std::string::npos);
  CHECK(d.verdict.next_step.find("read rank 1") != std::string::npos);
  CHECK(d.verdict.next_step.find("crash") != std::string::npos);
  CHECK(d.verdict.next_step.find("data loading") == std::string::npos);
  for (const Finding& f : d.findings)
    for (const std::string& e : f.evidence) CHECK(e.find("still missing") == std::string::npos);
  const RankRow* dead = row_of_rank(d, 1);
  REQUIRE(dead);
  CHECK_FALSE(dead->late);
  CHECK(dead->dead);
  CHECK(dead->ended == "exit 1");
  CHECK(d.evidence.late_ranks == std::vector<int>{1});  // the others waited for it all the same
  // The HTML draws it DEAD, with how it ended; never LATE.
  const std::string html = diagnosis_html(d);
  CHECK(html.find(">DEAD<") != std::string::npos);
  CHECK(html.find(">LATE<") == std::string::npos);
  CHECK(html.find("died: exit 1") != std::string::npos);
}

TEST_CASE("a program a rank ran through an untraced shell is its helper: its exit status is not the rank's death") {
  // Found with `rdzvscope run -- python3 ...` where python3 is pyenv's shim: bash runs
  // `$(readlink ...)` in subshells that fork without using the network (no file of their
  // own), so the programs they start name a ppid no trace has, and one of them exits 1.
  Job job;
  rank_1_dies_before_the_store(job);
  job.proc(1, 5001).parent(4999).exit(0.2, 1);    // rank 1's wrapper's `readlink`
  job.proc(2, 5002).parent(4998).exit(0.3, 128);  // rank 2's `git rev-parse HEAD`, not a repository
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  CHECK(d.verdict.initiating_rank == 1);
  CHECK(d.verdict.summary.find("rank 1 (node0 pid 1001) exited with status 1") != std::string::npos);
  CHECK(d.verdict.summary.find("pid 5001") == std::string::npos);
  CHECK(d.verdict.summary.find("pid 5002") == std::string::npos);
  CHECK(d.ranks.size() == 4);
}

namespace {

// torchrun (one agent, 4 workers, pids 2000-2003, the agent's store on port 29600): worker 2
// raises before init_process_group and exits 1 at +3.0 s; workers 0, 1 and 3 wait at the
// agent's store until the agent, which reaped worker 2, stops them with SIGTERM (killpg) at
// +3.1 s. They leave no exit record.
constexpr std::uint16_t kWorkerStore = 29600;

Proc& torchrun_agent(Job& job, int pid = 1900) {
  Proc& agent = job.proc(-1, pid);
  agent.cmdline("/usr/bin/python3 /usr/bin/torchrun --nnodes 1 --nproc-per-node 4 --rdzv-backend c10d "
                "--rdzv-endpoint node0:29400 train.py");
  agent.header().store_ports[0] = kWorkerStore;
  agent.bind(0.5, 0, kWorkerStore).listen(0.5, kWorkerStore);
  return agent;
}

void worker_died_under_torchrun(Job& job, bool signals_traced) {
  Proc& agent = torchrun_agent(job);
  for (int r = 0; r < 4; ++r) {
    Proc& w = job.proc(r, 2000 + r).parent(1900);
    w.header().store_ports[0] = kWorkerStore;
    if (r == 2) {
      w.exit(3.0, 1);
      continue;
    }
    w.connect(1.0, 0, kWorkerStore, 0.001, static_cast<std::uint16_t>(40000 + r));
    w.io(RDZV_EV_SEND, 1.01, 8, 0, 0, static_cast<std::uint16_t>(40000 + r), kWorkerStore);
    agent.accept(1.0, static_cast<std::uint16_t>(40000 + r), kWorkerStore);
  }
  agent.reap(3.05, 2002, 1 << 8);
  if (signals_traced)
    for (int r : {0, 1, 3}) agent.signal(3.1, 2000 + r, SIGTERM);
  for (int r : {0, 1, 3})
    agent.serve(RDZV_EV_RECV, 3.12, 0, static_cast<std::uint16_t>(40000 + r), kWorkerStore, RDZV_F_ZERO_READ);
  if (signals_traced)
    for (int r : {0, 1, 3}) agent.reap(3.2, 2000 + r, SIGTERM);
  agent.exit(3.5, 1);
}

}  // namespace

TEST_CASE("under torchrun the worker that died first initiates; the agent's SIGTERM to the others is named "
          "(issue 32 item 3)") {
  Job job;
  worker_died_under_torchrun(job, true);
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  // Before: unknown, "rank(s) 0-3 failed without a rendezvous error in their traces".
  CHECK(d.verdict.cls == FailureClass::RankDied);
  CHECK(d.verdict.cause == "exited");
  CHECK(d.verdict.initiating_rank == 2);
  CHECK(d.verdict.confidence == "high");
  CHECK(d.verdict.summary.find("rank 2 (node0 pid 2002) died first: it exited with status 1 at +3.") !=
        std::string::npos);
  CHECK(d.verdict.summary.find("before it reached the store") != std::string::npos);
  CHECK(d.verdict.summary.find("rank(s) 0, 1, 3 were stopped by their launcher agent (pid 1900 on node0) with "
                               "SIGTERM from +3.") != std::string::npos);
  CHECK(d.verdict.next_step.find("crash") != std::string::npos);
  const RankRow* stopped = row_of_rank(d, 0);
  REQUIRE(stopped);
  CHECK(stopped->ended == "stopped (SIGTERM from its agent)");
  CHECK_FALSE(stopped->dead);
  CHECK(row_of_rank(d, 2)->dead);
}

TEST_CASE("a worker killed by a signal is named so from its parent's reap record") {
  Job job;
  worker_died_under_torchrun(job, true);
  const TraceInputs& t = job.load_it();
  const Context c(t, job.logs());
  for (const ProcessFacts& f : c.facts) {
    if (f.proc->rank == 0) {
      CHECK(c.ending(f).how == Ending::How::Signaled);
      CHECK(c.ending(f).signal == SIGTERM);
      CHECK(c.ending(f).stopped());
    }
    if (f.proc->rank == 2) {
      CHECK(c.ending(f).how == Ending::How::Exited);
      CHECK(c.ending(f).status == 1);
      CHECK_FALSE(c.ending(f).stopped());
    }
  }
}

TEST_CASE("traces without signal records: the others vanished after the dead worker, their connections' end "
          "seen by the agent's store") {
  // A shim older than the signal records, and an agent that hosts the workers' store on a port
  // its trace knows (torchrun's static backend: --master-port).
  Job job;
  worker_died_under_torchrun(job, false);
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  CHECK(d.verdict.cls == FailureClass::RankDied);
  CHECK(d.verdict.initiating_rank == 2);
  CHECK(d.verdict.summary.find("rank(s) 0, 1, 3 vanished after it") != std::string::npos);
}

namespace {

// torchrun 2.13's end of a job whose worker 2 raised: the worker's own traceback (no rank
// prefix: torchrun's default), the agent's SIGTERMs and error line, then the ChildFailedError
// summary (as printed in a real run, tests/e2e torchrun worker_crashed).
void torchrun_summary_lines(Job& job) {
  for (const char* line : {
           "[rank2] e2e: crashing before init_process_group",
           "Traceback (most recent call last):",
           "  File \"/work/tests/e2e/rank.py\", line 99, in main",
           "RuntimeError: e2e: rank 2 crashed before init_process_group",
           "W1203 02:59:03.938000 23271 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process "
           "23294 closing signal SIGTERM",
           "E1203 02:59:03.985000 23271 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) "
           "local_rank: 2 (pid: 23296) of binary: /usr/bin/python3",
           "Traceback (most recent call last):",
           "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
           "============================================================",
           "Failures:",
           "[1]:",
           "  time      : 2026-12-03_02:59:03",
           "  host      : localhost",
           "  rank      : 0 (local_rank: 0)",
           "  exitcode  : -15 (pid: 23294)  (SIGTERM)",
           "  error_file: <N/A>",
           "  traceback : Signal 15 (SIGTERM) received by PID 23294",
           "[2]:",
           "  time      : 2026-12-03_02:59:03",
           "  host      : localhost",
           "  rank      : 1 (local_rank: 1)",
           "  exitcode  : -15 (pid: 23295)  (SIGTERM)",
           "  error_file: <N/A>",
           "  traceback : Signal 15 (SIGTERM) received by PID 23295",
           "[3]:",
           "  time      : 2026-12-03_02:59:03",
           "  host      : localhost",
           "  rank      : 3 (local_rank: 3)",
           "  exitcode  : -15 (pid: 23297)  (SIGTERM)",
           "  error_file: <N/A>",
           "  traceback : Signal 15 (SIGTERM) received by PID 23297",
           "------------------------------------------------------------",
           "Root Cause (first observed failure):",
           "[0]:",
           "  time      : 2026-12-03_02:59:03",
           "  host      : localhost",
           "  rank      : 2 (local_rank: 2)",
           "  exitcode  : 1 (pid: 23296) ",
           "  error_file: <N/A>",
           "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
           "============================================================"})
    job.log_line(line, -1, "agent.log");
}

}  // namespace

TEST_CASE("from torchrun's failure summary alone: the root cause is the dead rank, with its exit code and "
          "exception; the others' SIGTERM is the agent stopping them (issue 32 item 3)") {
  Job job;
  torchrun_summary_lines(job);
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  REQUIRE(job.logs().worker_failures.size() == 4);
  const auto* root = job.logs().root_cause();
  REQUIRE(root);
  CHECK(root->rank == 2);
  CHECK(root->local_rank == 2);
  CHECK(root->exitcode == 1);
  CHECK(root->pid == 23296);
  CHECK(root->exception == "RuntimeError: e2e: rank 2 crashed before init_process_group");
  CHECK(root->exception_line == 4);
  CHECK(job.logs().worker_failures[0].exitcode == -15);
  // Before: unknown, "the logs hold an error that is no rendezvous failure rdzvscope knows".
  CHECK(d.verdict.cls == FailureClass::RankDied);
  CHECK(d.verdict.initiating_rank == 2);
  CHECK(d.verdict.confidence == "medium");
  CHECK(d.verdict.summary.find("names rank 2 as the first observed failure: exit code 1, exception (line 4): "
                               "RuntimeError: e2e: rank 2 crashed before init_process_group") != std::string::npos);
  CHECK(d.verdict.summary.find("rank(s) 0, 1, 3 exit code -15 (SIGTERM): the agent stopped them") != std::string::npos);
}

TEST_CASE("torchrun's root cause that crashed of its own error outranks the others' wait for it (issue 29)") {
  // Rank 2 crashed before init_process_group (its exception is its own, no rendezvous error);
  // another rank then timed out waiting for rank 2's key. Before issue 29 the verdict was
  // straggler_timeout, "rank 2 ... probably the late one": a dead rank called late. A root
  // cause that died of a store timeout still yields (test_log_rules.cpp).
  Job job;
  job.log_line("torch.distributed.DistStoreError: wait timeout after 3000ms, keys: /default_pg/0//cpu//0/2", -1,
               "agent.log");
  torchrun_summary_lines(job);
  const Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::RankDied);
  CHECK(d.verdict.initiating_rank == 2);
  CHECK(d.verdict.summary.find("its own error is no rendezvous error") != std::string::npos);
}

TEST_CASE("a rank that exits 0 before it reaches the store left early: not late either") {
  Job job;
  for (int r = 0; r < 4; ++r) {
    Proc& p = job.proc(r, 1000 + r);
    if (r == 3) {
      p.exit(0.7, 0);
      continue;
    }
    if (r == 0) p.bind(0.9, 0).listen(0.9);
    p.connect(1.0, 0, kPort, 0.001, static_cast<std::uint16_t>(40000 + r)).rcvtimeo(1.01, 3000);
    p.io(RDZV_EV_RECV, 1.02, -1, EAGAIN, RDZV_F_TIMEOUT, static_cast<std::uint16_t>(40000 + r), kPort)
        .exit(4.1, 1);
  }
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  CHECK(d.verdict.initiating_rank == 3);
  CHECK(d.verdict.summary.find("exited with status 0") != std::string::npos);
  CHECK(d.verdict.summary.find("it ended without joining") != std::string::npos);
  CHECK(d.verdict.next_step.find("ended with status 0 before init_process_group") != std::string::npos);
  CHECK_FALSE(row_of_rank(d, 3)->late);
  CHECK(row_of_rank(d, 3)->ended == "exit 0");
}

TEST_CASE("a rank started by hand that never reached the store and left no exit record: killed, or still on "
          "its way; the words say both") {
  Job job;
  for (int r = 0; r < 4; ++r) {
    Proc& p = job.proc(r, 1000 + r);
    if (r == 1) {  // SIGKILLed before its first socket call (its file made at load)
      p.snapshot(0.4, RDZV_SNAP_FAILURE, 0.2, 1000, 0.4);
      continue;
    }
    if (r == 0) p.bind(0.9, 0).listen(0.9);
    p.connect(1.0, 0, kPort, 0.001, static_cast<std::uint16_t>(40000 + r)).rcvtimeo(1.01, 3000);
    p.io(RDZV_EV_RECV, 1.02, -1, EAGAIN, RDZV_F_TIMEOUT, static_cast<std::uint16_t>(40000 + r), kPort)
        .exit(4.1, 1);
  }
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  CHECK(d.verdict.initiating_rank == 1);
  CHECK(d.verdict.summary.find("never reached the store: its trace ends at +") != std::string::npos);
  CHECK(d.verdict.summary.find("with no exit record, so it was killed by a signal") != std::string::npos);
  CHECK(d.verdict.summary.find("still missing") == std::string::npos);
  CHECK(d.verdict.next_step.find("journalctl") != std::string::npos);
}

TEST_CASE("a straggler its torchrun agent stopped on its way is late, and the words say the agent stopped it") {
  Job job;
  Proc& agent = torchrun_agent(job);
  for (int r = 0; r < 4; ++r) {
    Proc& w = job.proc(r, 2000 + r).parent(1900);
    w.header().store_ports[0] = kWorkerStore;
    if (r == 2) continue;  // asleep before init_process_group
    w.connect(1.0, 0, kWorkerStore, 0.001, static_cast<std::uint16_t>(40000 + r)).rcvtimeo(1.01, 3000);
    w.io(RDZV_EV_RECV, 1.02, -1, EAGAIN, RDZV_F_TIMEOUT, static_cast<std::uint16_t>(40000 + r), kWorkerStore)
        .exit(4.1, 1);
  }
  agent.reap(4.15, 2000, 1 << 8).signal(4.2, 2002, SIGTERM).reap(4.3, 2002, SIGTERM).exit(4.5, 1);
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  CHECK(d.verdict.initiating_rank == 2);
  CHECK(d.verdict.summary.find("never reached the store") != std::string::npos);
  CHECK(d.verdict.summary.find("was stopped by its launcher agent (pid 1900 on node0) with SIGTERM") !=
        std::string::npos);
  CHECK(row_of_rank(d, 2)->late);
  CHECK(row_of_rank(d, 2)->ended == "stopped (SIGTERM from its agent)");
}

TEST_CASE("torchrun's summary with a worker killed by a signal its agent does not send: that worker, not the "
          "root cause torchrun saw in the same poll (low)") {
  // 2.13, a worker SIGKILLed after init_process_group: the agent caught every end in one poll
  // and named rank 0 (exit 1, gloo's reset) the root cause.
  Job job;
  for (const char* line : {
           "Failures:", "[1]:", "  rank      : 1 (local_rank: 1)", "  exitcode  : -9 (pid: 12850)  (SIGKILL)",
           "  error_file: <N/A>", "  traceback : Signal 9 (SIGKILL) received by PID 12850", "[2]:",
           "  rank      : 2 (local_rank: 2)", "  exitcode  : 1 (pid: 12851) ", "  error_file: <N/A>",
           "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
           "Root Cause (first observed failure):", "[0]:", "  rank      : 0 (local_rank: 0)",
           "  exitcode  : 1 (pid: 12849) ", "  error_file: <N/A>",
           "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"})
    job.log_line(line, -1, "agent.log");
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  CHECK(d.verdict.cls == FailureClass::RankDied);
  CHECK(d.verdict.initiating_rank == 1);
  CHECK(d.verdict.confidence == "low");
  CHECK(d.verdict.summary.find("exit code -9 (SIGKILL), a signal its agent does not send first") != std::string::npos);
}

namespace {

// Rank 0 raises after import torch, before init_process_group, and exits 1 at `exit_s`; ranks
// 1-3 are refused at +1, +2, +3 and +4 s and exit 1 at +5 s.
void store_host_raises_before_listening(Job& job, double exit_s) {
  job.proc(0, 1000).exit(exit_s, 1);
  job.log_line("ValueError: bad config key 'lr_sched'", 0, "rank0.log");
  for (int r = 1; r < 4; ++r) {
    Proc& p = job.proc(r, 1000 + r);
    for (int i = 0; i < 4; ++i) p.connect(1.0 + i, ECONNREFUSED);
    p.exit(5.0, 1);
  }
}

}  // namespace

TEST_CASE("rank 0, which hosts the store, raising before it listened is named dead, not 'never started'") {
  Job job;
  store_host_raises_before_listening(job, 0.8);
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  // Before: store_not_ready with no rank, "the store host never started (or was not traced)".
  // Its exit came before the others' first refused connect: proven first, rank_died.
  CHECK(d.verdict.cls == FailureClass::RankDied);
  CHECK(d.verdict.initiating_rank == 0);
  CHECK(d.verdict.summary.find("exited with status 1 at +0.") != std::string::npos);
  CHECK(d.verdict.summary.find("before it listened: it hosts the store") != std::string::npos);
  CHECK(d.verdict.summary.find("ValueError: bad config key") != std::string::npos);
  CHECK(d.verdict.summary.find("never started") == std::string::npos);
  // The others refused while it was still importing, before it raised: not proven first, and
  // store_not_ready names it, dead.
  Job race;
  store_host_raises_before_listening(race, 2.5);
  const Diagnosis e = race.diagnose_it();
  INFO(e.verdict.summary);
  CHECK(e.verdict.cls == FailureClass::StoreNotReady);
  CHECK(e.verdict.initiating_rank == 0);
  CHECK(e.verdict.summary.find("which hosts the store, exited with status 1 at +2.") != std::string::npos);
  CHECK(e.verdict.summary.find("ValueError: bad config key") != std::string::npos);
  CHECK(e.verdict.summary.find("never started") == std::string::npos);
}

namespace {

// Four ranks joined and connected to their peers; rank 3 returns with status 0 at +4.0 s, its
// work not done. The store host reads the end of rank 3's store connection (or, as in the
// matrix's real 1.13 job, nothing of it is recorded: its exit came with os._exit); the other
// three fail in their next all_reduce (gloo: "Connection closed by peer") and exit 1.
// With merged_log, the survivors' gloo lines are in one launcher's output with no rank on them
// (torchrun's agent log, the matrix's exit0 cells under torchrun).
// With store_host_pairs_late, rank 0 makes its first pair only after rank 3's exit (it accepts
// rank 3's connection from its backlog after rank 3 had connected all its pairs and gone).
// With client_reads_store_end, rank 1 reads the end of its store connection as the store host
// exits of its own reset (torch 1.13, by timing).
void rank_left_after_the_rendezvous(Job& job, bool store_reads_its_end, bool merged_log = false,
                                    bool store_host_pairs_late = false, bool client_reads_store_end = false) {
  for (int r = 0; r < 4; ++r) {
    Proc& p = job.proc(r, 1000 + r);
    const auto port = static_cast<std::uint16_t>(40000 + r);
    if (r == 0) {
      p.bind(1.0, 0).listen(1.0).connect(1.05, 0, kPort, 0.001, port);
      for (int c = 1; c < 4; ++c) p.accept(1.1, static_cast<std::uint16_t>(40000 + c));
    } else {
      p.connect(1.1, 0, kPort, 0.001, port);
    }
    p.io(RDZV_EV_SEND, 1.2, 8, 0, 0, port)
        .peer_connect(r == 0 && store_host_pairs_late ? 4.005 : 1.5, static_cast<std::uint16_t>(50000 + r));
    if (r == 3) {
      p.exit(4.0, 0);
      continue;
    }
    if (r == 0 && store_reads_its_end) p.serve(RDZV_EV_RECV, 4.01, 0, 40003, kPort, RDZV_F_ZERO_READ);
    if (r == 1 && client_reads_store_end) p.io(RDZV_EV_RECV, 4.1, 0, 0, RDZV_F_ZERO_READ, port);
    p.exit(4.1, 1);
  }
  for (int r = 0; r < 3; ++r)
    job.log_line("RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:64401",
                 merged_log ? -1 : r, merged_log ? "agent.log" : "rank" + std::to_string(r) + ".log");
}

}  // namespace

TEST_CASE("a rank that exits 0 after the rendezvous while its peers still need it left early: its peers' "
          "broken connections are its consequences (issue 32, matrix exit0 after init)") {
  const bool store_reads_its_end = GENERATE(true, false);
  const bool merged_log = GENERATE(false, true);
  Job job;
  rank_left_after_the_rendezvous(job, store_reads_its_end, merged_log);
  const Diagnosis d = job.diagnose_it();
  INFO("the store host read the end of its connection: " << store_reads_its_end << "; one merged log: " << merged_log);
  INFO(d.verdict.summary);
  // Before: unknown, "rank(s) 0-2 failed without a rendezvous error in their traces".
  CHECK(d.verdict.cls == FailureClass::BrokenPipe);
  CHECK(d.verdict.cause == "peer_died");
  CHECK(d.verdict.initiating_rank == 3);
  CHECK(d.verdict.confidence == "high");
  CHECK(d.verdict.summary.find("left the job early") != std::string::npos);
  CHECK(d.verdict.summary.find("the failure came after it, first on rank 3") != std::string::npos);
  CHECK(d.verdict.summary.find("exited with status 0") != std::string::npos);
  CHECK(d.verdict.summary.find("rank(s) 0-2 failed after it") != std::string::npos);
  CHECK(d.verdict.summary.find("died") == std::string::npos);  // it did not die
  CHECK(d.evidence.dead_ranks == std::vector<int>{3});
  CHECK(d.verdict.next_step.find("returned before the others") != std::string::npos);
}

TEST_CASE("a rank that exits 0 once it connected to its peers left early, even before the last rank's first pair "
          "(matrix exit0 at the first collective), and when a client then reads the end of the store host's "
          "connection") {
  const bool client_reads_store_end = GENERATE(false, true);
  Job job;
  rank_left_after_the_rendezvous(job, false, false, true, client_reads_store_end);
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  // Before: unknown, its exit (+4.0 s) came before the rendezvous completed (+4.005 s); with
  // the client's read, transient_recv for rank 1 (matrix seed 42456, exit0.highest, 1.13).
  CHECK(d.verdict.cls == FailureClass::BrokenPipe);
  CHECK(d.verdict.cause == "peer_died");
  CHECK(d.verdict.initiating_rank == 3);
  CHECK(d.verdict.summary.find("left the job early") != std::string::npos);
  CHECK(d.verdict.summary.find("exited with status 0") != std::string::npos);
  CHECK(d.verdict.summary.find("died") == std::string::npos);
}

TEST_CASE("a rank that exits 0 first is no cause: of a healthy job, nor of a rank that then died on its own") {
  // The same job where the others finish too: healthy.
  Job ok;
  for (int r = 0; r < 4; ++r) {
    Proc& p = ok.proc(r, 1000 + r);
    const auto port = static_cast<std::uint16_t>(40000 + r);
    if (r == 0) p.bind(1.0, 0).listen(1.0);
    p.connect(1.1, 0, kPort, 0.001, port).peer_connect(1.5, static_cast<std::uint16_t>(50000 + r));
    p.exit(r == 3 ? 4.0 : 4.1, 0);
  }
  CHECK(ok.diagnose_it().verdict.cls == FailureClass::Healthy);
  // Rank 3 leaves, then rank 1 dies on its own (exit 1, no error of any connection, nothing in
  // its log): rank 1's death is its own, rank 3 is not named for it.
  Job job;
  for (int r = 0; r < 4; ++r) {
    Proc& p = job.proc(r, 1000 + r);
    const auto port = static_cast<std::uint16_t>(40000 + r);
    if (r == 0) p.bind(1.0, 0).listen(1.0);
    p.connect(1.1, 0, kPort, 0.001, port).peer_connect(1.5, static_cast<std::uint16_t>(50000 + r));
    p.exit(r == 3 ? 4.0 : (r == 1 ? 6.0 : 9.0), r == 1 ? 1 : 0);
  }
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  CHECK(d.verdict.initiating_rank != 3);
}

TEST_CASE("the PyTorch version the traces recorded is the job's, before the logs' message style (issue 32 item 2)") {
  Job job;
  Proc& s = job.proc(0, 1000).torch("2.13.0+cpu");
  s.bind(0.9, 0).listen(0.9).connect(1.0, 0, kPort, 0.001, 40000).exit(10.0, 0);
  job.proc(1, 1001).torch("2.13.0+cpu").connect(1.0, 0, kPort, 0.001, 40001).exit(10.0, 0);
  job.proc(2, 1002)
      .torch("2.13.0+cpu")
      .connect(1.0, 0, kPort, 0.001, 40002)
      .io(RDZV_EV_SEND, 3.0, -1, ECONNRESET, 0, 40002)
      .exit(3.1, 1);
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  CHECK(d.verdict.cls == FailureClass::BrokenPipe);
  CHECK(d.verdict.initiating_rank == 2);
  REQUIRE(d.evidence.torch_version);
  CHECK(d.evidence.torch_version->version == "2.13.0+cpu");
  CHECK(d.evidence.torch_version->source == TorchVersion::Source::Traces);
  const auto* pytorch = d.discriminators.get<std::string>("pytorch");
  REQUIRE(pytorch);
  CHECK(*pytorch == "2.13.0+cpu");
  // Before: "the c10d TCPStore bug of PyTorch 2.7 and older matches this" on a 2.13 job.
  CHECK(d.verdict.summary.find("2.7 and older") == std::string::npos);
  CHECK(d.verdict.summary.find("PyTorch 2.13.0+cpu") != std::string::npos);
  CHECK(d.verdict.next_step.find("upgrade") == std::string::npos);
}

TEST_CASE("a traced version: the most common one, the others named with their ranks; a log's guess only without it") {
  std::vector<Process> procs(3);
  for (int i = 0; i < 3; ++i) {
    procs[static_cast<std::size_t>(i)].rank = i;
    procs[static_cast<std::size_t>(i)].header.features = RDZV_FEAT_TORCH_VERSION;
    procs[static_cast<std::size_t>(i)].header.torch_version = i == 2 ? "1.13.0a0" : "2.13.0+cpu";
  }
  LogFacts logs;
  logs.version_hint = ">=2.5";
  const auto v = find_torch_version(procs, logs);
  REQUIRE(v);
  CHECK(v->version == "2.13.0+cpu");
  CHECK(v->words() == "2.13.0+cpu (also 1.13.0a0 (rank 2))");
  CHECK(v->known_newer_than(2, 7));
  CHECK_FALSE(v->known_at_most(2, 7));
  const auto guess = find_torch_version({}, logs);
  REQUIRE(guess);
  CHECK(guess->words() == ">=2.5 (guessed from message style)");
  CHECK_FALSE(guess->known_newer_than(2, 7));  // a range is no release
  CHECK_FALSE(guess->known_at_most(2, 7));
  CHECK(TorchVersion{"1.13.0a0", TorchVersion::Source::Traces, {}}.known_at_most(2, 7));
}

TEST_CASE("a rank that set its own MASTER_PORT after it started (the header has the launcher's) is named by the "
          "port its store connects went to (matrix: master_port under torchrun)") {
  // Every header says MASTER_PORT=29500 (torchrun's); rank 1's script set 29600 before
  // init_process_group, and its connects there are refused while the others wait at 29500.
  Job job;
  job.proc(0, 1000).master("node0", kPort).bind(1.0, 0).listen(1.0).connect(1.05, 0, kPort, 0.001, 40000).exit(7.0, 1);
  Proc& odd = job.proc(1, 1001).master("node0", kPort);
  for (int i = 0; i < 5; ++i) odd.connect(1.1 + i, ECONNREFUSED, 29600);
  odd.exit(7.0, 1);
  job.proc(2, 1002).master("node0", kPort).connect(1.1, 0, kPort, 0.001, 40002).exit(7.0, 1);
  job.proc(3, 1003).master("node0", kPort).connect(1.1, 0, kPort, 0.001, 40003).exit(7.0, 1);
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  // Before: store_not_ready, no rank, "the store host never started".
  CHECK(d.verdict.cls == FailureClass::ConfigMismatch);
  CHECK(d.verdict.cause == "MASTER_PORT");
  CHECK(d.verdict.initiating_rank == 1);
  CHECK(d.verdict.summary.find("MASTER_PORT=29600") != std::string::npos);
}
