// Clock alignment across hosts (model/clock_alignment.h): a host whose CLOCK_REALTIME is
// off by seconds is placed back on the store host's clock from matched connect/accept pairs
// and the first reply on each, and the verdict is the one of the same job with clocks in step.
#include <catch2/catch.hpp>

#include "report/report.h"
#include "job_builder.h"

using namespace rdzvscope;
using namespace rdzvscope::test;

namespace {

// 4 ranks: node0 runs rank 0 (the store host) and rank 1, node1 ranks 2 and 3, its clock
// `skew` seconds off node0's. Every rank but `late` connects at about 1 s and times out at
// 4 s (3 s timeout); `late` comes at 8 s and finds the store gone. Each connection of a node1
// rank carries the store's handshake and first exchange: connect, accept 0.1 ms later, the
// client's request, the server's reply.
Diagnosis skewed_straggler(Job& job, double skew, int late) {
  Proc& server = job.proc(0, 1000, "node0");
  server.bind(0.9, 0).listen(0.9);
  for (int r = 0; r < 4; ++r) {
    Proc& p = r == 0 ? server : job.proc(r, 1000 + r, r < 2 ? "node0" : "node1");
    if (r >= 2) p.shift_clock(skew);
    if (r == late) {
      p.connect(8.0, ECONNREFUSED).snapshot(8.0, RDZV_SNAP_FAILURE, 0.2, 1000, 8.1).exit(9.0, 1);
      continue;
    }
    const double t = 1.0 + 0.01 * r;
    const auto lp = static_cast<std::uint16_t>(40000 + r);
    p.connect(t, 0, kPort, 0.0002, lp).rcvtimeo(t + 0.0001, 3000);
    p.io(RDZV_EV_SEND, t + 0.0003, 8, 0, 0, lp).io(RDZV_EV_RECV, t + 0.0006, 8, 0, 0, lp);
    server.accept(t + 0.0001, lp).serve(RDZV_EV_RECV, t + 0.0004, 8, lp).serve(RDZV_EV_SEND, t + 0.0005, 8, lp);
    if (r != 0) p.io(RDZV_EV_RECV, t + 3.0, -1, EAGAIN, RDZV_F_TIMEOUT, lp).exit(t + 3.1, 1);
  }
  server.io(RDZV_EV_RECV, 4.0, -1, EAGAIN, RDZV_F_TIMEOUT, 40000).exit(4.2, 1);
  return job.diagnose_it();
}

const RankRow& row(const Diagnosis& d, int rank) {
  for (const RankRow& r : d.ranks)
    if (r.rank == rank) return r;
  FAIL("no row for rank " << rank);
  return d.ranks.front();
}

}  // namespace

TEST_CASE("clocks: a host 5 s ahead is placed back; verdict, initiating rank and time line as in step") {
  for (int late : {1, 3}) {  // the straggler on the reference host, then on the skewed one
    CAPTURE(late);
    Job in_step, ahead;
    const Diagnosis want = skewed_straggler(in_step, 0, late);
    const Diagnosis got = skewed_straggler(ahead, 5.0, late);
    REQUIRE(want.verdict.cls == FailureClass::StragglerTimeout);
    CHECK(got.verdict.cls == want.verdict.cls);
    CHECK(got.verdict.initiating_rank == late);
    CHECK(discriminators_json(got.discriminators)["seconds_late"] == discriminators_json(want.discriminators)["seconds_late"]);

    REQUIRE(got.clocks.size() == 2);
    CHECK(got.clocks[0].host == "node0");
    CHECK(got.clocks[0].reference);
    const ClockEstimate& c = got.clocks[1];
    CHECK(c.host == "node1");
    CHECK_FALSE(c.reference);
    CHECK(c.pairs == (late == 3 ? 1u : 2u));
    CHECK(c.applied);
    CHECK(c.uncertainty_ns <= 200'000);  // the 0.2 ms round trip of the first exchange
    CHECK(std::abs(c.offset_ns - 5'000'000'000LL) <= c.uncertainty_ns);
    // The time line: node1's ranks reached the store with the others, at 1 s, not at 6 s.
    for (int r : {0, 1, 2, 3}) {
      if (r == late) continue;
      REQUIRE(row(got, r).first_store_connect_ns);
      CHECK(std::llabs(*row(got, r).first_store_connect_ns - *row(want, r).first_store_connect_ns) <= c.uncertainty_ns);
      CHECK(*row(got, r).first_store_connect_ns < *row(got, late).first_store_connect_ns);
    }
  }
}

TEST_CASE("clocks: a host 5 s behind, and clocks in step (estimated, left as they are)") {
  Job behind, in_step;
  const Diagnosis d = skewed_straggler(behind, -5.0, 3);
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  CHECK(d.verdict.initiating_rank == 3);
  REQUIRE(d.clocks.size() == 2);
  CHECK(std::abs(d.clocks[1].offset_ns + 5'000'000'000LL) <= d.clocks[1].uncertainty_ns);

  const Diagnosis same = skewed_straggler(in_step, 0, 1);
  REQUIRE(same.clocks.size() == 2);
  CHECK(std::abs(same.clocks[1].offset_ns) <= same.clocks[1].uncertainty_ns);
  CHECK_FALSE(same.clocks[1].applied);
  CHECK(diagnosis_json(same).contains("clocks"));
}

TEST_CASE("clocks: one host has nothing to align, and a connection without a reply places nothing") {
  Job one;
  Proc& s = one.proc(0, 1000, "node0");
  s.bind(0.9, 0).listen(0.9).accept(1.0001, 40001).serve(RDZV_EV_SEND, 1.0005, 8, 40001).exit(3, 0);
  one.proc(1, 1001, "node0").connect(1.0, 0, kPort, 0.0002, 40001).io(RDZV_EV_RECV, 1.0006, 8, 0, 0, 40001).exit(3, 0);
  const Diagnosis d1 = one.diagnose_it();
  CHECK(d1.clocks.empty());
  CHECK_FALSE(diagnosis_json(d1).contains("clocks"));

  // On two hosts, the accept alone bounds one side only: no estimate, nothing moved.
  Job no_reply;
  Proc& s2 = no_reply.proc(0, 1000, "node0");
  s2.bind(0.9, 0).listen(0.9).accept(1.0001, 40001).exit(3, 0);
  no_reply.proc(1, 1001, "node1").shift_clock(5).connect(1.0, 0, kPort, 0.0002, 40001).exit(3, 0);
  const Diagnosis d2 = no_reply.diagnose_it();
  CHECK(d2.clocks.empty());
}

TEST_CASE("clocks: a loopback or reused 4-tuple is not matched across hosts") {
  Job job;
  Proc& s = job.proc(0, 1000, "node0");
  s.bind(0.9, 0).listen(0.9);
  // Two clients on node1 with the same local port (a tuple seen twice): ambiguous.
  for (int r = 1; r <= 2; ++r) {
    Proc& p = job.proc(r, 1000 + r, "node1");
    p.shift_clock(5).connect(1.0, 0, kPort, 0.0002, 40001).io(RDZV_EV_RECV, 1.0006, 8, 0, 0, 40001).exit(3, 0);
  }
  s.accept(1.0001, 40001).serve(RDZV_EV_SEND, 1.0005, 8, 40001).exit(3, 0);
  CHECK(job.diagnose_it().clocks.empty());
}

TEST_CASE("clocks: a store hosted by the torchrun agent is the reference too") {
  Job job;
  Proc& agent = job.proc(-1, 900, "node0");
  std::strcpy(agent.header().cmdline, "/usr/bin/python3 -m torch.distributed.run --nnodes 2 train.py");
  agent.bind(0.9, 0).listen(0.9);
  for (int r = 0; r < 4; ++r) {
    Proc& p = job.proc(r, 1000 + r, r < 2 ? "node0" : "node1");
    if (r >= 2) p.shift_clock(5);
    const auto lp = static_cast<std::uint16_t>(40000 + r);
    p.connect(1.0, 0, kPort, 0.0002, lp).io(RDZV_EV_RECV, 1.0006, 8, 0, 0, lp).exit(3, 0);
    agent.accept(1.0001, lp).serve(RDZV_EV_SEND, 1.0005, 8, lp);
  }
  agent.exit(3.5, 0);
  const Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::Healthy);
  REQUIRE(d.clocks.size() == 2);
  CHECK(d.clocks[0].host == "node0");
  CHECK(std::abs(d.clocks[1].offset_ns - 5'000'000'000LL) <= d.clocks[1].uncertainty_ns);
}

TEST_CASE("clocks: a node whose clock was never set (years behind) is placed back as well") {
  Job job;
  const double years = -20.0 * 365 * 86400;
  const Diagnosis want_job = [] {
    Job in_step;
    return skewed_straggler(in_step, 0, 3);
  }();
  const Diagnosis d = skewed_straggler(job, years, 3);
  REQUIRE(d.clocks.size() == 2);
  CHECK(d.clocks[1].applied);
  CHECK(std::abs(d.clocks[1].offset_ns - static_cast<std::int64_t>(years * 1e9)) <= d.clocks[1].uncertainty_ns + 1000);
  CHECK(d.verdict.initiating_rank == 3);
  CHECK(discriminators_json(d.discriminators)["seconds_late"] == discriminators_json(want_job.discriminators)["seconds_late"]);
}

TEST_CASE("clocks: connections attach found already open bound nothing (dated by attach, not by their setup)") {
  // attach started at 10 s on node0 and at 10 s of node1's clock, 5 s ahead: the found records
  // of one connection (PREEXISTING) would otherwise read as a connect/accept pair.
  auto found = [](unsigned kind, bool server) {
    const unsigned op = kind == RDZV_EV_ACCEPT ? RDZV_OP_ACCEPT : kind == RDZV_EV_LISTEN ? RDZV_OP_LISTEN : RDZV_OP_CONNECT;
    rdzv_record r = make_record(kind, op, 10.0);
    r.flags = RDZV_F_STORE | RDZV_F_PREEXISTING;
    r.ret = kind == RDZV_EV_ACCEPT ? 9 : 0;
    r.u.net.local = server ? ipv4(10, 0, 0, 1, kPort) : ipv4(10, 0, 0, 2, 40001);
    if (kind != RDZV_EV_LISTEN) r.u.net.peer = server ? ipv4(10, 0, 0, 2, 40001) : ipv4(10, 0, 0, 1, kPort);
    return r;
  };
  Job job;
  Proc& s = job.proc(0, 1000, "node0");  // the store host: its listener found too
  s.add(found(RDZV_EV_LISTEN, true)).add(found(RDZV_EV_ACCEPT, true)).serve(RDZV_EV_SEND, 10.5, 8, 40001).exit(12, 0);
  job.proc(1, 1001, "node1").shift_clock(5).add(found(RDZV_EV_CONNECT, false))
      .io(RDZV_EV_RECV, 10.6, 8, 0, 0, 40001).exit(12, 0);
  CHECK(job.diagnose_it().clocks.empty());
}
