// config_mismatch and store_unreachable (issue 17, items 4 and 5) from synthetic traces, with
// their look-alikes (store_not_ready, connect_timeout, straggler_timeout, name_resolution),
// and benign refused retries that are no rank's first error (item 3).
#include <catch2/catch.hpp>

#include "report/report.h"
#include "job_builder.h"

using namespace rdzvscope;
using namespace rdzvscope::test;

namespace {

constexpr std::uint16_t kOtherPort = 29501;

// A rank that connects to the store on kPort and waits past its timeout (3 s).
Proc& waiting_rank(Job& job, int rank, const std::string& host = "node0", double at = 1.0) {
  Proc& p = job.proc(rank, 1000 + rank, host);
  p.master("node0", kPort);
  if (rank == 0) p.bind(0.9, 0).listen(0.9);
  p.connect(at, 0, kPort, 0.001, static_cast<std::uint16_t>(40000 + rank))
      .rcvtimeo(at + 0.01, 3000);
  p.io(RDZV_EV_RECV, at + 0.02, -1, EAGAIN, RDZV_F_TIMEOUT,
       static_cast<std::uint16_t>(40000 + rank));
  return p;
}

// A rank whose connects to `port` are refused every second from `from` to `to`.
Proc& refused_rank(Job& job, int rank, std::uint16_t port, const std::string& host = "node0",
                   double from = 1.0, double to = 4.0, int err = ECONNREFUSED) {
  Proc& p = job.proc(rank, 1000 + rank, host);
  p.master("node0", port);
  for (double t = from; t <= to + 1e-9; t += 1.0) p.connect(t, err, port);
  return p;
}

}  // namespace

TEST_CASE(
    "config_mismatch: rank 1 alone has another MASTER_PORT, the store listens on the others'") {
  Job job;
  job.world_size(3);
  waiting_rank(job, 0).exit(7.0, 1);
  refused_rank(job, 1, kOtherPort).exit(4.1, 1);
  waiting_rank(job, 2).exit(4.1, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::ConfigMismatch);
  CHECK(d.verdict.initiating_rank == 1);
  CHECK(d.verdict.cause == "MASTER_PORT");
  CHECK(d.verdict.confidence == "high");
  CHECK(d.verdict.summary.find("rank 1 has MASTER_PORT=29501 where ranks 0, 2 have 29500") !=
        std::string::npos);
  CHECK(d.verdict.next_step.find("MASTER_PORT=29501") != std::string::npos);
  const auto s = discriminators_json(d.discriminators)["mismatched_settings"];
  REQUIRE(s.size() == 1);
  CHECK(s[0]["setting"] == "MASTER_PORT");
  CHECK(s[0]["expected"] == "29500");
  CHECK(s[0]["values"]["29501"] == nlohmann::ordered_json::array({"rank 1"}));
  CHECK(s[0]["values"]["29500"] == nlohmann::ordered_json::array({"rank 0", "rank 2"}));
  const auto* typed = d.discriminators.get<std::vector<MismatchedSetting>>("mismatched_settings");
  REQUIRE(typed);
  CHECK(typed->front().differing == std::vector<std::string>{"rank 1"});
  CHECK(d.discriminators.get<NameList>("differing_processes"));
  // The store_not_ready reading is still there, as a symptom.
  bool also = false;
  for (const auto& f : d.findings) also |= f.cls == FailureClass::StoreNotReady;
  CHECK(also);
  // The values side by side, in the evidence.
  std::string all;
  for (const auto& f : d.findings)
    for (const auto& e : f.evidence) all += e + "\n";
  CHECK(all.find("MASTER_PORT=29500 on ranks 0, 2 (the store of rank 0") != std::string::npos);
  CHECK(all.find("MASTER_PORT=29501 on rank 1 (no traced store listens there)  <- differs") !=
        std::string::npos);
}

TEST_CASE("ranks that reach the store through a relay on another port are no config_mismatch") {
  // A proxy, port forwarding or a Kubernetes Service between ranks and store: MASTER_PORT
  // differs from the port the store listens on, and every rank still got through. (The e2e
  // transient_recv scenario's relay made this a config_mismatch blaming the store host.)
  Job job;
  job.world_size(4);
  waiting_rank(job, 0).exit(7.0, 1);
  for (int r = 1; r < 4; ++r) {
    Proc& p = job.proc(r, 1000 + r);
    p.master("node0", kOtherPort);
    const auto local = static_cast<std::uint16_t>(40000 + r);
    p.connect(1.0, 0, kOtherPort, 0.001, local).rcvtimeo(1.01, 3000);
    p.io(RDZV_EV_RECV, 1.02, -1, EAGAIN, RDZV_F_TIMEOUT, local, kOtherPort).exit(4.1, 1);
  }
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls != FailureClass::ConfigMismatch);
}

TEST_CASE("config_mismatch on two ranks: the one pointing where no traced store listens") {
  Job job;
  job.world_size(2);
  waiting_rank(job, 0).exit(7.0, 1);
  refused_rank(job, 1, kOtherPort).exit(4.1, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::ConfigMismatch);
  CHECK(d.verdict.initiating_rank == 1);
}

TEST_CASE("config_mismatch: a WORLD_SIZE that differs on one rank") {
  Job job;
  for (int r = 0; r < 4; ++r) waiting_rank(job, r).exit(4.1, 1);
  Diagnosis d0 = job.diagnose_it();  // every header says 4: not a mismatch
  CHECK(d0.verdict.cls != FailureClass::ConfigMismatch);

  Job job2;
  for (int r = 0; r < 4; ++r) {
    Proc& p = waiting_rank(job2, r);
    if (r == 3) p.header().ident.world_size = 5;
    p.exit(4.1, 1);
  }
  Diagnosis d = job2.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::ConfigMismatch);
  CHECK(d.verdict.cause == "WORLD_SIZE");
  CHECK(d.verdict.initiating_rank == 3);
}

TEST_CASE(
    "config_mismatch: the same settings spelled differently on a job that succeeded is no "
    "verdict") {
  Job job;
  for (int r = 0; r < 3; ++r) {
    Proc& p = job.proc(r, 1000 + r);
    p.master(r == 2 ? "node0.cluster" : "node0", kPort);
    if (r == 0) p.bind(0.9, 0).listen(0.9);
    p.connect(1.0, 0, kPort, 0.001, static_cast<std::uint16_t>(40000 + r)).exit(3.0, 0);
  }
  job.world_size(3);
  CHECK(job.diagnose_it().verdict.cls == FailureClass::Healthy);

  // A failed job whose ranks all reached the store: another spelling of MASTER_ADDR did no harm.
  Job job2;
  job2.world_size(3);
  for (int r = 0; r < 3; ++r)
    waiting_rank(job2, r).master(r == 2 ? "10.0.0.1" : "node0", kPort).exit(4.1, 1);
  CHECK(job2.diagnose_it().verdict.cls != FailureClass::ConfigMismatch);
}

TEST_CASE(
    "config_mismatch yields to name_resolution when the differing MASTER_ADDR does not resolve") {
  Job job;
  for (int r = 0; r < 3; ++r) waiting_rank(job, r).exit(4.1, 1);
  Proc& p = job.proc(3, 1003);
  p.master("no-such-host.invalid", kPort);
  p.resolve(1.0, "no-such-host.invalid", EAI_NONAME)
      .resolve(2.0, "no-such-host.invalid", EAI_NONAME)
      .exit(4.1, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::NameResolution);
  CHECK(d.verdict.initiating_rank == 3);
  bool also = false;
  for (const auto& f : d.findings) also |= f.cls == FailureClass::ConfigMismatch;
  CHECK(also);
}

TEST_CASE("config_mismatch between torchrun agents: one node with another --rdzv-id") {
  Job job;
  job.proc(-1, 500, "node0")
      .cmdline(
          "/usr/bin/python3 /usr/local/bin/torchrun --nnodes 2 --rdzv-backend c10d --rdzv-endpoint "
          "node0:29400 --rdzv-id job7 train.py")
      .bind(0.5, 0, 29400)
      .listen(0.5, 29400)
      .connect(0.6, 0, 29400, 0.001, 41000)
      .exit(60.0, 1);
  job.proc(-1, 501, "node1")
      .cmdline(
          "/usr/bin/python3 /usr/local/bin/torchrun --nnodes=2 --rdzv_backend=c10d "
          "--rdzv_endpoint=node0:29400 --rdzv_id=job8 train.py")
      .connect(0.7, 0, 29400, 0.001, 41001)
      .exit(60.0, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::ConfigMismatch);
  CHECK(d.verdict.cause == "rdzv-id");
  CHECK_FALSE(d.verdict.initiating_rank);
  CHECK(d.verdict.initiating_host == "node1");  // the store host's agent holds the job's value
}

namespace {

// A c10d torchrun agent on host "vm" (all agents of one machine, as the e2e torchrun tests run
// them) with --rdzv-endpoint 127.0.0.1:PORT and --rdzv-id ID; it exits 1 at its join timeout.
Proc& c10d_agent(Job& job, int pid, std::uint16_t port, const char* id) {
  const std::string line = "/usr/bin/python3 /usr/local/bin/torchrun --nnodes 3 --nproc-per-node 1 "
                           "--rdzv-backend c10d --rdzv-endpoint 127.0.0.1:" + std::to_string(port) +
                           " --rdzv-id " + id + " train.py";
  Proc& p = job.proc(-1, pid, "vm");
  p.cmdline(line.c_str());
  return p;
}

}  // namespace

TEST_CASE("another --rdzv-id on one machine: the agent that joined the first one's store is no port_conflict") {
  // c10d: every agent of the endpoint's host tries to host the store; the ones that find the
  // port taken join it as clients. Before, the bind failure of the odd agent read as
  // port_conflict (it outranks config_mismatch).
  Job job;
  c10d_agent(job, 500, 29400, "job7").bind(0.5, 0, 29400).listen(0.5, 29400).connect(0.6, 0, 29400, 0.001, 41000).exit(7.0, 1);
  c10d_agent(job, 501, 29400, "job7").bind(0.6, EADDRINUSE, 29400).connect(0.7, 0, 29400, 0.001, 41001).exit(7.0, 1);
  c10d_agent(job, 502, 29400, "job8").bind(0.7, EADDRINUSE, 29400).connect(0.8, 0, 29400, 0.001, 41002).exit(7.0, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::ConfigMismatch);
  CHECK(d.verdict.cause == "rdzv-id");
  CHECK(d.verdict.summary.find("pid 502") != std::string::npos);
  for (const Finding& f : d.findings) CHECK(f.cls != FailureClass::PortConflict);
}

TEST_CASE("another --rdzv-endpoint that resolves: the odd agent hosts a store of its own, config_mismatch") {
  // Each agent reached a store, so the relay rule (every process reached the store) does not
  // excuse it: the odd one reached its own, the others another one.
  Job job;
  c10d_agent(job, 500, 29400, "job7").bind(0.5, 0, 29400).listen(0.5, 29400).connect(0.6, 0, 29400, 0.001, 41000).exit(7.0, 1);
  c10d_agent(job, 501, 29400, "job7").bind(0.6, EADDRINUSE, 29400).connect(0.7, 0, 29400, 0.001, 41001).exit(7.0, 1);
  c10d_agent(job, 502, 29411, "job7").bind(0.7, 0, 29411).listen(0.7, 29411).connect(0.8, 0, 29411, 0.001, 41002).exit(7.0, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::ConfigMismatch);
  CHECK(d.verdict.cause == "rdzv-endpoint");
  CHECK(d.verdict.summary.find("rdzv-endpoint=127.0.0.1:29411") != std::string::npos);
  REQUIRE(discriminators_json(d.discriminators)["differing_processes"].size() == 1);
  CHECK(discriminators_json(d.discriminators)["differing_processes"][0].get<std::string>().find("pid 502") != std::string::npos);
}

TEST_CASE(
    "store_not_ready still wins when every rank has the same settings and the store never "
    "listened") {
  Job job;
  for (int r = 1; r < 4; ++r) refused_rank(job, r, kPort).exit(4.5, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StoreNotReady);
  CHECK_FALSE(d.verdict.initiating_rank);
}

TEST_CASE("store_unreachable: node1's connects refused for the whole wait while node0 connected") {
  Job job;
  waiting_rank(job, 0, "node0").exit(9.0, 1);
  waiting_rank(job, 1, "node0").exit(4.1, 1);
  refused_rank(job, 2, kPort, "node1", 1.2).exit(5.0, 1);
  refused_rank(job, 3, kPort, "node1", 1.1).exit(5.0, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StoreUnreachable);
  CHECK(d.verdict.cause == "refused");
  CHECK(d.verdict.initiating_rank == 3);
  CHECK(d.verdict.initiating_host == "node1");
  CHECK(d.verdict.summary.find("from node1 (ranks 2, 3)") != std::string::npos);
  CHECK(d.verdict.summary.find("while node0 (ranks 0, 1) connected") != std::string::npos);
  CHECK(d.verdict.next_step.find("on node1") != std::string::npos);
  CHECK(d.verdict.next_step.find("getent hosts node0") != std::string::npos);
  CHECK(discriminators_json(d.discriminators)["hosts_refused"] == nlohmann::ordered_json::array({"node1"}));
  CHECK(discriminators_json(d.discriminators)["hosts_that_reached_the_store"] ==
        nlohmann::ordered_json::array({"node0"}));
  CHECK(discriminators_json(d.discriminators)["ranks_refused"] == nlohmann::ordered_json::array({2, 3}));
}

TEST_CASE("store_unreachable: EHOSTUNREACH from one rank on a single host is cause unreachable") {
  Job job;
  waiting_rank(job, 0).exit(9.0, 1);
  waiting_rank(job, 1).exit(4.1, 1);
  refused_rank(job, 2, kPort, "node0", 1.0, 4.0, EHOSTUNREACH).exit(5.0, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StoreUnreachable);
  CHECK(d.verdict.cause == "unreachable");
  CHECK(d.verdict.initiating_rank == 2);
}

TEST_CASE("store_unreachable look-alikes: refused before the store listened is store_not_ready") {
  Job job;
  Proc& s = job.proc(0, 1000);
  s.bind(3.0, 0).listen(3.0).connect(3.0, 0, kPort, 0.001, 40000).exit(6, 0);
  for (int r = 1; r < 4; ++r)
    job.proc(r, 1000 + r)
        .connect(1.0, ECONNREFUSED)
        .connect(2.0, ECONNREFUSED)
        .connect(3.1, 0, kPort, 0.001, 40000 + r)
        .exit(6, 0);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StoreNotReady);
  CHECK(d.verdict.initiating_rank == 0);
}

TEST_CASE("store_unreachable look-alikes: SYNs never answered from one host stay connect_timeout") {
  Job job;
  waiting_rank(job, 0, "node0").exit(9.0, 1);
  waiting_rank(job, 1, "node2").exit(9.0, 1);
  job.proc(2, 1002, "node1")
      .connect(1.2, ETIMEDOUT, kPort, 3.0)
      .connect(4.3, ETIMEDOUT, kPort, 3.0)
      .exit(7.5, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::ConnectTimeout);
  CHECK(d.verdict.initiating_rank == 2);
}

TEST_CASE(
    "store_unreachable look-alikes: a straggler refused after the store host gave up is "
    "straggler_timeout") {
  Job job;
  for (int r = 0; r < 4; ++r) {
    if (r == 2) {
      job.proc(2, 1002).connect(8.0, ECONNREFUSED).connect(9.0, ECONNREFUSED).exit(9.5, 1);
      continue;
    }
    waiting_rank(job, r).exit(4.1, 1);
  }
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  CHECK(d.verdict.initiating_rank == 2);
}

TEST_CASE("a refused connect retried and then connected is no rank's first error") {
  Job job;
  Proc& s = job.proc(0, 1000);
  s.bind(1.4, 0).listen(1.4).connect(1.4, 0, kPort, 0.001, 40000).rcvtimeo(1.41, 3000);
  s.io(RDZV_EV_RECV, 1.42, -1, EAGAIN, RDZV_F_TIMEOUT, 40000).exit(4.5, 1);
  Proc& p = job.proc(1, 1001);
  p.connect(1.0, ECONNREFUSED).connect(2.0, 0, kPort, 0.001, 40001).rcvtimeo(2.01, 3000);
  p.io(RDZV_EV_RECV, 2.02, -1, EAGAIN, RDZV_F_TIMEOUT, 40001).exit(5.1, 1);
  job.world_size(2);
  Diagnosis d = job.diagnose_it();
  REQUIRE(d.ranks.size() == 2);
  CHECK(d.ranks[1].first_error.find("ECONNREFUSED") == std::string::npos);
  CHECK(d.ranks[1].first_error.find("recv") != std::string::npos);
  // Launch (t=0) to the first failure that mattered: rank 0's wait timeout ending, not the refusal at 1.0 s.
  REQUIRE(d.evidence.seconds_to_first_failure);
  CHECK(*d.evidence.seconds_to_first_failure > 1.3);
}

TEST_CASE("two jobs on one endpoint are a collision, not ranks of one job that disagree") {
  Job job;
  job.proc(0, 1000, "node0", "jobA").bind(0.9, 0).listen(0.9).connect(1.0, 0).exit(5, 1);
  job.proc(1, 1001, "node0", "jobA").connect(1.0, 0).exit(5, 1);
  job.proc(0, 2000, "node0", "jobB").bind(1.5, EADDRINUSE).exit(1.6, 1);
  job.proc(1, 2001, "node0", "jobB").connect(1.6, 0).exit(5, 1);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::RdzvCollision);
  for (const auto& f : d.findings) CHECK(f.cls != FailureClass::ConfigMismatch);
}

// Lines of a real 2.13 job (tests/e2e config_mismatch, 2026-12-02; tests/corpus/logs/own/
// torch2.13-config_mismatch): rank 1 alone had MASTER_PORT 41673, the store listened on 38935.
constexpr const char* kRank1TriedOtherPort =
    "[E1202 00:43:08.857381741 socket.cpp:1028] [c10d] The client socket has timed out after 3000ms while "
    "trying to connect to (127.0.0.1, 41673).";
constexpr const char* kRank2WaitedOnStore =
    "[W1202 00:43:09.184146115 socket.cpp:469] [c10d] waitForInput: poll for socket SocketImpl(fd=4, "
    "addr=[::ffff:127.0.0.1]:54044, remote=[::ffff:127.0.0.1]:38935) returned 0, likely a timeout";
constexpr const char* kRank0CountedClients =
    "torch.distributed.DistStoreError: Timed out after 4 seconds waiting for clients. 2/3 clients joined.";

TEST_CASE("config_mismatch from logs alone: a rank tried another port than the one the others reached") {
  // Before, logs alone said straggler_timeout (rank 1 did not time out waiting, so "probably late").
  Job job;
  job.log_line(kRank0CountedClients, 0).log_line(kRank1TriedOtherPort, 1).log_line(kRank2WaitedOnStore, 2);
  Diagnosis d = diagnose(TraceInputs{}, job.logs());
  CHECK(d.verdict.cls == FailureClass::ConfigMismatch);
  CHECK(d.verdict.cause == "MASTER_PORT");
  CHECK(d.verdict.initiating_rank == 1);
  CHECK(d.verdict.confidence == "medium");
  CHECK(d.verdict.summary.find("rank 1 tried the store at 127.0.0.1:41673 and never reached it, where rank 2 used "
                               "127.0.0.1:38935") != std::string::npos);
  CHECK(discriminators_json(d.discriminators)["mismatched_settings"][0]["values"]["41673"] == nlohmann::ordered_json::array({"rank 1"}));
}

TEST_CASE("config_mismatch from logs alone: look-alikes") {
  {
    Job job;  // every rank's lines name one port: a straggler's connect timeout is no mismatch
    job.log_line(kRank2WaitedOnStore, 2)
        .log_line("[E1202 00:43:08.857381741 socket.cpp:1028] [c10d] The client socket has timed out after "
                  "3000ms while trying to connect to (127.0.0.1, 38935).",
                  1);
    CHECK(diagnose(TraceInputs{}, job.logs()).verdict.cls != FailureClass::ConfigMismatch);
  }
  {
    Job job;  // the odd rank reached a store on its port (a relay in front of the store): no mismatch
    job.log_line(kRank2WaitedOnStore, 2)
        .log_line("[W1202 00:43:09.184146115 socket.cpp:469] [c10d] waitForInput: poll for socket "
                  "SocketImpl(fd=4, addr=[::ffff:127.0.0.1]:54045, remote=[::ffff:127.0.0.1]:41673) returned 0, "
                  "likely a timeout",
                  1);
    CHECK(diagnose(TraceInputs{}, job.logs()).verdict.cls != FailureClass::ConfigMismatch);
  }
  {
    Job job;  // with traces, the headers decide: the log lines alone are not read for it
    waiting_rank(job, 0).exit(9.0, 1);
    job.log_line(kRank1TriedOtherPort, 1).log_line(kRank2WaitedOnStore, 2);
    CHECK(job.diagnose_it().verdict.cls != FailureClass::ConfigMismatch);
  }
}
