// Issue 29: the log-only verdicts of the families of item 3, and the alternatives of item 2. The
// lines are those of the project's own runs (tests/corpus/logs/own, issue 29) and their variants.
#include <catch2/catch.hpp>

#include <algorithm>

#include "report/report.h"
#include "job_builder.h"

using namespace rdzvscope;
using namespace rdzvscope::test;

namespace {

bool has_alternative(const Diagnosis& d, FailureClass cls) {
  return std::any_of(d.alternatives.begin(), d.alternatives.end(), [&](const Alternative& a) { return a.cls == cls; });
}

const char* kTimedOut113 =
    "W20261203 06:02:04.954694 20360 socket.cpp:601] [c10d] The client socket has failed to connect to "
    "[storev6]:29400 (errno: 110 - Connection timed out).";
const char* kIpv4Gai113 =
    "W20261203 06:02:04.954842 20360 socket.cpp:601] [c10d] The IPv4 network addresses of (storev6, 29400) cannot "
    "be retrieved (gai error: -3 - Temporary failure in name resolution).";
const char* kClientTimeout113 =
    "E20261203 06:02:18.999035 20360 socket.cpp:860] [c10d] The client socket has timed out after 15s while trying "
    "to connect to (storev6, 29400).";
// The lookup warning that jobset#93's workers print while their peers' pods start.
const char* kIpv6Gai =
    "[W socket.cpp:558] [c10d] The IPv6 network addresses of (pytorch-workers-0-0.pytorch-workers, 3389) cannot be "
    "retrieved (gai error: -2 - Name or service not known).";

}  // namespace

TEST_CASE("logs: a lookup failure after the same process's timed-out connect follows it") {
  SECTION("1.13 asks for the IPv4 addresses after the IPv6 connect timed out: connect_timeout") {
    Job job;
    job.log_line(kTimedOut113);
    for (int i = 0; i < 3; ++i) job.log_line(kIpv4Gai113);
    job.log_line(kClientTimeout113);
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::ConnectTimeout);
    CHECK(d.verdict.summary.find("storev6:29400") != std::string::npos);
  }
  SECTION("the lookup failures alone are still a name that did not resolve") {
    Job job;
    for (int i = 0; i < 3; ++i) job.log_line(kIpv4Gai113);
    job.log_line(kClientTimeout113);
    CHECK(job.diagnose_it().verdict.cls == FailureClass::NameResolution);
  }
  SECTION("another process's connect does not make this one's lookup a follow-on") {
    Job job;
    job.log_line(kTimedOut113, 1, "rank1.log");
    job.log_line(kIpv4Gai113, 2, "rank2.log");
    CHECK(job.diagnose_it().verdict.cls == FailureClass::NameResolution);
  }
  SECTION("nor does a refused connect: c10d retries it from a new lookup, which may fail on its own") {
    Job job;
    job.log_line("[W socket.cpp:558] [c10d] The client socket has failed to connect to [storev6]:29400 (errno: 111 - "
                 "Connection refused).");
    job.log_line(kIpv4Gai113);
    CHECK(job.diagnose_it().verdict.cls == FailureClass::NameResolution);
  }
  SECTION("nor does a connect to another port") {
    Job job;
    job.log_line("[W socket.cpp:558] [c10d] The client socket has failed to connect to [node0]:29500 (errno: 110 - "
                 "Connection timed out).");
    job.log_line(kIpv4Gai113);
    CHECK(job.diagnose_it().verdict.cls == FailureClass::NameResolution);
  }
}

TEST_CASE("logs: No route to host is the connect_timeout / store_unreachable family, low") {
  SECTION("a bare RuntimeError") {
    Job job;
    job.log_line("Traceback (most recent call last):");
    job.log_line("RuntimeError: No route to host");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::ConnectTimeout);
    CHECK(d.verdict.cause == "host_unreachable");
    CHECK(d.verdict.confidence == "low");
    CHECK(has_alternative(d, FailureClass::StoreUnreachable));
  }
  SECTION("2.13: EHOSTUNREACH on every try, then the retries run out as 'timed out': the first error wins") {
    Job job;
    job.log_line("[W1203 06:03:05.380833517 socket.cpp:764] [c10d] The client socket has failed to connect to "
                 "[6ba6:0:1b3a:0:5633::]:6971 (errno: 113 - No route to host).");
    job.log_line("[E1203 06:03:05.380880387 socket.cpp:818] [c10d] The client socket has failed to connect to any "
                 "network address of (storev4, 29401).");
    job.log_line("[E1203 06:03:11.380202061 socket.cpp:1028] [c10d] The client socket has timed out after 6000ms "
                 "while trying to connect to (storev4, 29401).");
    job.log_line("[W1203 06:03:11.381201015 TCPStore.cpp:340] [c10d] TCP client failed to connect/validate to host "
                 "storev4:29401 - timed out (try=3, timeout=6000ms): The client socket has timed out after 6000ms "
                 "while trying to connect to (storev4, 29401).");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::ConnectTimeout);
    CHECK(d.verdict.cause == "host_unreachable");
    // the endpoint as the job named it, not 2.13's uninitialised per-address line
    CHECK(d.verdict.summary.find("storev4:29401") != std::string::npos);
    CHECK(d.verdict.summary.find("6ba6") == std::string::npos);
  }
  SECTION("an NCCL warning with it is NCCL's own connection to a peer's address, not the store (stop 38)") {
    Job job;
    job.log_line("node1:1234:1240 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<43521> "
                 "failed : No route to host");
    const Verdict v = job.diagnose_it().verdict;
    CHECK(v.cls == FailureClass::StoreUnreachable);
    CHECK(v.cause == "peer_address");
    CHECK(v.summary.find("NCCL") != std::string::npos);
  }
}

namespace {
const char* kBindFailed213 =
    "[I1203 06:05:57.068373051 TCPStoreLibUvBackend.cpp:1266] [c10d] Failed to bind to ipv6 address, trying ipv4. "
    "Error: The server socket has failed to listen on any local network address. port: 29557, useIpv6: true, "
    "code: -98, name: EADDRINUSE, message: address already in use";
const char* kClosed = "torch.distributed.elastic.rendezvous.api.RendezvousClosedError";
const char* kRunIdNone =
    "I1203 06:13:28.283000 32112 torch/distributed/launcher/api.py:254]   run_id                   : none";
}  // namespace

TEST_CASE("logs: an agent whose bind failed and which went on joined another job's store") {
  SECTION("then found the rendezvous closed: rdzv_collision, medium") {
    Job job;
    job.log_line("[W socket.cpp:401] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address "
                 "already in use).");
    job.log_line("[train] epoch 0 step 100 loss 2.31");
    job.log_line(kClosed);
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::RdzvCollision);
    CHECK(d.verdict.confidence == "medium");
  }
  SECTION("then lost the store (2.13, libuv): rdzv_collision, the job's own store host the alternative") {
    Job job;
    job.log_line(kBindFailed213);
    job.log_line("W1203 06:06:11.644000 24569 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1298] The "
                 "node 'localhost_24569_0' has failed to shutdown the rendezvous 'job7' due to an error of type "
                 "RendezvousConnectionError.");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::RdzvCollision);
    CHECK(d.verdict.confidence == "low");
    CHECK(has_alternative(d, FailureClass::BrokenPipe));
  }
  SECTION("a bind failure that ends the process is a port conflict") {
    Job job;
    job.log_line("[W socket.cpp:401] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address "
                 "already in use).");
    job.log_line("RuntimeError: Address already in use");
    CHECK(job.diagnose_it().verdict.cls == FailureClass::PortConflict);
  }
  SECTION("a rendezvous error in another file is not the same agent's") {
    Job job;
    job.log_line("[W socket.cpp:401] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address "
                 "already in use).", -1, "node0.log");
    job.log_line(kClosed, -1, "node1.log");
    CHECK(job.diagnose_it().verdict.cls == FailureClass::PortConflict);
  }
}

TEST_CASE("logs: a closed rendezvous under the shared default run id") {
  SECTION("run id none shown: rdzv_collision, low, the job's own agents the alternative") {
    Job job;
    job.log_line(kRunIdNone);
    job.log_line("Traceback (most recent call last):");
    job.log_line(kClosed);
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::RdzvCollision);
    CHECK(d.verdict.confidence == "low");
    CHECK(has_alternative(d, FailureClass::RankDied));
  }
  SECTION("run id none from torchelastic's log directory (1.x prints it by default)") {
    Job job;
    job.log_line("INFO:torch.distributed.elastic.agent.server.local_elastic_agent:log directory set to: "
                 "/tmp/torchelastic_7k2nfb3h/none_ukbz8b4e");
    job.log_line(kClosed);
    CHECK(job.diagnose_it().verdict.cls == FailureClass::RdzvCollision);
  }
  SECTION("a run id of the job's own: no collision to see") {
    Job job;
    job.log_line("I1203 06:13:28.283000 32112 torch/distributed/launcher/api.py:254]   run_id                   : 4711");
    job.log_line(kClosed);
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::Unknown);
    CHECK(d.verdict.summary.find("RendezvousClosedError") != std::string::npos);
  }
  SECTION("no run id shown: unknown, saying what would tell") {
    Job job;
    job.log_line(kClosed);
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::Unknown);
    CHECK(d.verdict.summary.find("run id") != std::string::npos);
  }
}

namespace {
const char* kReverse =
    "[W1203 06:22:44.648179634 socket.cpp:207] [c10d] The hostname of the client socket cannot be retrieved. err=-3";
}

TEST_CASE("logs: failed reverse lookups on every rank and nothing else: the resolver, a slow start-up") {
  SECTION("alone") {
    Job job;
    for (int r = 0; r < 4; ++r) job.log_line(kReverse, r, "rank" + std::to_string(r) + ".log");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::NameResolution);
    CHECK(d.verdict.cause == "reverse_lookup_failed");
    CHECK(d.verdict.confidence == "low");
    CHECK(d.verdict.summary.find("slow start-up") != std::string::npos);
    CHECK(has_alternative(d, FailureClass::StragglerTimeout));
  }
  SECTION("beside a store failure they are bystanders") {
    Job job;
    for (int r = 0; r < 4; ++r) job.log_line(kReverse, r, "rank" + std::to_string(r) + ".log");
    job.log_line("[E1201 10:37:40.865341725 socket.cpp:1028] [c10d] The client socket has timed out after 4000ms "
                 "while trying to connect to (127.0.0.1, 35711).", 1, "rank1.log");
    CHECK(job.diagnose_it().verdict.cls != FailureClass::NameResolution);
  }
}

TEST_CASE("logs: gloo refused at a loopback address a peer published (Debian's 127.0.1.1)") {
  SECTION("gloo of 1.0") {
    Job job;
    job.log_line("terminate called after throwing an instance of 'gloo::IoException'");
    job.log_line("  what():  [/opt/conda/conda-bld/pytorch_1544084119927/work/third_party/gloo/gloo/transport/tcp/"
                 "pair.cc:724] connect [127.0.1.1]:3210: Connection refused");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::StalePeerAddress);
    CHECK(d.verdict.cause == "loopback_peer_address");
    CHECK(d.verdict.summary.find("127.0.1.1:3210") != std::string::npos);
    CHECK(has_alternative(d, FailureClass::RankDied));
  }
  SECTION("gloo of 2.13, with a reverse-lookup warning from the other rank") {
    Job job;
    job.log_line("[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/debug_logger.cc:9] ERROR failed to "
                 "connect, willRetry=0, retry=4, retryLimit=3, rank=0, size=2, local=[127.0.0.1]:42143, "
                 "remote=[127.0.1.1]:9107$0, error=SO_ERROR: Connection refused, remote=[127.0.1.1]:9107$0",
                 0, "rank0.log");
    job.log_line(kReverse, 1, "rank1.log");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::StalePeerAddress);
    CHECK_FALSE(d.verdict.initiating_rank);
  }
  SECTION("refused at 127.0.0.1, localhost's own: a peer gone on one node (tests/golden restart_stale_keys)") {
    Job job;
    job.log_line("[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/debug_logger.cc:9] ERROR failed to "
                 "connect, willRetry=1, retry=1, retryLimit=3, rank=1, size=2, local=[127.0.0.1]:56537, "
                 "remote=[127.0.0.1]:9106$1, error=SO_ERROR: Connection refused, remote=[127.0.0.1]:9106$1");
    CHECK(job.diagnose_it().verdict.cls != FailureClass::StalePeerAddress);
  }
  SECTION("refused at a node's own address: gloo's transport, not this trap") {
    Job job;
    job.log_line("RuntimeError: [/opt/conda/conda-bld/pytorch_1682343967769/work/third_party/gloo/gloo/transport/tcp/"
                 "pair.cc:799] connect [172.31.71.170]:13195: Connection refused");
    CHECK(job.diagnose_it().verdict.cls == FailureClass::Unknown);
  }
}

TEST_CASE("alternatives: a bare client connect timeout keeps its leading class and names the runners-up") {
  Job job;
  job.log_line(kClientTimeout113);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StoreNotReady);
  REQUIRE(d.alternatives.size() == 2);
  CHECK(d.alternatives[0].cls == FailureClass::StragglerTimeout);
  CHECK(d.alternatives[1].cls == FailureClass::ConnectTimeout);
  for (const Alternative& a : d.alternatives) {
    CHECK_FALSE(a.why.empty());
    CHECK_FALSE(a.settle.empty());
  }
  CHECK(d.alternatives[0].settle.find("rank 0") != std::string::npos);
  CHECK(d.alternatives[1].settle.find("preflight") != std::string::npos);

  const auto j = diagnosis_json(d);
  REQUIRE(j.contains("alternatives"));
  CHECK(j["alternatives"][0]["class"] == "straggler_timeout");
  CHECK(j["alternatives"][0]["cause"].is_null());
  CHECK(j["alternatives"][1]["settle"].get<std::string>().find("preflight") != std::string::npos);
  const std::string text = diagnosis_text(d);
  CHECK(text.find("OR       straggler_timeout: ") != std::string::npos);
}

TEST_CASE("alternatives: none on a verdict the evidence decides, and no key in the JSON") {
  Job job;
  job.log_line("[W socket.cpp:401] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address "
               "already in use).");
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::PortConflict);
  CHECK(d.alternatives.empty());
  CHECK_FALSE(diagnosis_json(d).contains("alternatives"));
}

namespace {

// tests/corpus/logs/own/torch2.13-shell-killed.log (issue 29): rank 1 killed before init, bash's
// job report; rank 0, the store host, counted 2/3 clients; rank 2 waited for rank 0's key.
const char* kShellKilled =
    "./plain.sh: line 8: 11852 Killed                  RANK=1 python /src/rdzvscope/tests/e2e/rank.py";
const char* kClientsJoined213 =
    "torch.distributed.DistStoreError: Timed out after 6 seconds waiting for clients. 2/3 clients joined.";
const char* kWaitRank0Key213 = "torch.distributed.DistStoreError: wait timeout after 5000ms, keys: /default_pg/0//cpu//0/0";

}  // namespace

TEST_CASE("logs: a process reported dead is the initiating one; the others' waits are consequences") {
  SECTION("bash's Killed beside the others' store timeouts: rank_died (killed), not straggler_timeout") {
    Job job;
    job.log_line(kWaitRank0Key213);
    job.log_line(kClientsJoined213);
    job.log_line(kShellKilled);
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::RankDied);
    CHECK(d.verdict.cause == "killed");
    CHECK(d.verdict.summary.find("not late") != std::string::npos);
  }
  SECTION("the kernel's OOM killer says the same") {
    Job job;
    job.log_line("[rank0]: RuntimeError: Socket Timeout", 0);
    job.log_line("[Wed Dec  3 09:50:17 2026] Out of memory: Killed process 11852 (python) total-vm:9000000kB");
    CHECK(job.diagnose_it().verdict.cls == FailureClass::RankDied);
  }
  SECTION("torch.multiprocessing: a process killed by SIGKILL; its spawn index is named, not taken for a rank") {
    Job job;
    job.log_line("torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGKILL");
    Diagnosis d = job.diagnose_it();
    REQUIRE(d.verdict.cls == FailureClass::RankDied);
    CHECK(d.verdict.summary.find("process 1") != std::string::npos);
    CHECK_FALSE(d.verdict.initiating_rank.has_value());
  }
  SECTION("a process that the launcher stopped (SIGTERM) did not die on its own") {
    Job job;
    job.log_line("torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGTERM");
    CHECK(job.diagnose_it().verdict.cls != FailureClass::RankDied);
  }
  SECTION("a process that died of its own exception (the traceback spawn prints below the report)") {
    Job job;
    job.log_line("-- Process 2 terminated with the following error:");
    job.log_line("Traceback (most recent call last):");
    job.log_line("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::RankDied);
    CHECK(d.verdict.cause == "exited");
  }
  SECTION("one that died of a rendezvous error is no cause: the others' class stays") {
    Job job;
    job.log_line(kClientsJoined213);
    job.log_line("-- Process 2 terminated with the following error:");
    job.log_line("Traceback (most recent call last):");
    job.log_line(kWaitRank0Key213);
    CHECK(job.diagnose_it().verdict.cls == FailureClass::StragglerTimeout);
  }
  SECTION("a cause above the symptoms stays ahead of the death it caused (a taken port)") {
    Job job;
    job.log_line("[W socket.cpp:401] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address "
                 "already in use).");
    job.log_line("RuntimeError: Address already in use");
    job.log_line(kShellKilled);
    CHECK(job.diagnose_it().verdict.cls == FailureClass::PortConflict);
  }
  SECTION("torchrun's summary naming a worker killed by SIGKILL counts beside the others' store errors") {
    Job job;
    job.log_line(kWaitRank0Key213, -1, "agent.log");
    job.log_line("Root Cause (first observed failure):", -1, "agent.log");
    job.log_line("[0]:", -1, "agent.log");
    job.log_line("  time      : 2026-12-03_09:48:40", -1, "agent.log");
    job.log_line("  host      : localhost", -1, "agent.log");
    job.log_line("  rank      : 1 (local_rank: 1)", -1, "agent.log");
    job.log_line("  exitcode  : -9 (pid: 10986)  (SIGKILL)", -1, "agent.log");
    job.log_line("  error_file: <N/A>", -1, "agent.log");
    job.log_line("  traceback : Signal 9 (SIGKILL) received by PID 10986", -1, "agent.log");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::RankDied);
    CHECK(d.verdict.initiating_rank == 1);
  }
}

TEST_CASE("logs: the other reapers' reports of a death (issue 29)") {
  SECTION("torchrun's agent line alone, a worker ended by SIGKILL: rank_died (killed), its local rank named") {
    Job job;
    job.log_line("E1214 08:06:55.807000 100 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: "
                 "-9) local_rank: 0 (pid: 102) of binary: /usr/bin/python3");
    Diagnosis d = job.diagnose_it();
    REQUIRE(d.verdict.cls == FailureClass::RankDied);
    CHECK(d.verdict.cause == "killed");
    CHECK(d.verdict.summary.find("SIGKILL") != std::string::npos);
    CHECK(d.verdict.summary.find("local rank") != std::string::npos);
    CHECK_FALSE(d.verdict.initiating_rank.has_value());  // a local rank is no global rank
  }
  SECTION("the same line cut short after local_rank is still the agent's report") {
    Job job;
    job.log_line("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rankroot/anaconda3/"
                 "envs/x/bin/python");
    CHECK(job.diagnose_it().verdict.cls == FailureClass::RankDied);
  }
  SECTION("an exit status of 1 there only says the worker raised, not what: no death of its own") {
    Job job;
    job.log_line("E0213 12:07:20.086000 870572 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: "
                 "1) local_rank: 0 (pid: 876053) of binary: /usr/bin/python3");
    CHECK(job.diagnose_it().verdict.cls != FailureClass::RankDied);
  }
  SECTION("a worker the agent stopped (SIGTERM) did not die on its own") {
    Job job;
    job.log_line("E1214 08:06:55.807000 100 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: "
                 "-15) local_rank: 0 (pid: 102) of binary: /usr/bin/python3");
    CHECK(job.diagnose_it().verdict.cls != FailureClass::RankDied);
  }
  SECTION("DeepSpeed's launcher: a negative return code is the signal that ended the worker") {
    Job job;
    job.log_line("[2023-11-13 16:59:55,650] [ERROR] [launch.py:320:sigkill_handler] ['/opt/conda/bin/python', '-u', "
                 "'train.py', '--local_rank=1'] exits with return code = -9");
    Diagnosis d = job.diagnose_it();
    REQUIRE(d.verdict.cls == FailureClass::RankDied);
    CHECK(d.verdict.cause == "killed");
    CHECK(d.verdict.summary.find("SIGKILL") != std::string::npos);
    CHECK(d.verdict.summary.find("process 1") != std::string::npos);
  }
  SECTION("Ray's memory monitor killed the task's worker: rank_died (killed), the next step is memory") {
    Job job;
    job.log_line("ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.");
    Diagnosis d = job.diagnose_it();
    REQUIRE(d.verdict.cls == FailureClass::RankDied);
    CHECK(d.verdict.next_step.find("memory") != std::string::npos);
    CHECK(d.verdict.next_step.find("find what killed it") == std::string::npos);
  }
}

TEST_CASE("logs: a connect/validate try that ended in the lookup's own words is a lookup failure") {
  Job job;
  job.log_line("RendezvousConnectionError: TCP client failed to connect/validate to host slinky-0:29400 - Name or "
               "service not known");
  Diagnosis d = job.diagnose_it();
  REQUIRE(d.verdict.cls == FailureClass::NameResolution);
  CHECK(d.verdict.cause == "name_unknown");
  CHECK(d.verdict.summary.find("slinky-0") != std::string::npos);
  SECTION("a try that ended otherwise is no lookup failure") {
    Job other;
    other.log_line("[W1129 10:00:00.123456 123 TCPStore.cpp:347] [c10d] TCP client failed to connect/validate to host "
                   "node0:29500 - retrying (try=6, timeout=1800000ms, delay=5241ms): Connection reset by peer");
    CHECK(other.diagnose_it().verdict.cls != FailureClass::NameResolution);
  }
}

TEST_CASE("logs: c10d's lookup warnings alone, with no error that ended a wait, are a lookup that failed a while") {
  Job job;
  job.log_line(kIpv6Gai);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::NameResolution);
  CHECK(d.verdict.confidence == "low");
  CHECK(d.verdict.summary.find("hung retrying or went on") != std::string::npos);
  SECTION("with the timeout that ended the wait it is the failure (medium)") {
    Job ended;
    ended.log_line(kIpv6Gai);
    ended.log_line("[E socket.cpp:860] [c10d] The client socket has timed out after 30s while trying to connect to "
                   "(pytorch-workers-0-0.pytorch-workers, 3389).");
    Diagnosis e = ended.diagnose_it();
    CHECK(e.verdict.cls == FailureClass::NameResolution);
    CHECK(e.verdict.confidence == "medium");
  }
}

TEST_CASE("logs: the store's listen failed on every address with no errno shown: a taken port, low") {
  Job job;
  job.log_line("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
               "address.");
  Diagnosis d = job.diagnose_it();
  REQUIRE(d.verdict.cls == FailureClass::PortConflict);
  CHECK(d.verdict.confidence == "low");
  SECTION("with the bind warning's EADDRINUSE above it, the errno decides (medium)") {
    Job both;
    both.log_line("[W socket.cpp:401] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address "
                  "already in use).");
    both.log_line("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
                  "address.");
    CHECK(both.diagnose_it().verdict.confidence == "medium");
  }
}

TEST_CASE("logs: a peer connection closed from its other end with no timeout anywhere: the peer died") {
  const char* kGlooClosed = "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by "
                            "peer [18.25.6.30]:30872";
  SECTION("gloo's closed by peer alone: rank_died, low, no rank, a peer that timed out as the runner-up") {
    Job job;
    job.log_line(kGlooClosed);
    Diagnosis d = job.diagnose_it();
    REQUIRE(d.verdict.cls == FailureClass::RankDied);
    CHECK(d.verdict.confidence == "low");
    CHECK_FALSE(d.verdict.initiating_rank.has_value());
    CHECK(has_alternative(d, FailureClass::StragglerTimeout));
  }
  SECTION("NCCL's remote error says the same") {
    Job job;
    job.log_line("[rank1]:[E415 21:17:08.996319560 ProcessGroupNCCL.cpp:552] [Rank 1] Collective "
                 "WorkNCCL(SeqNum=335, OpType=ALLREDUCE, Timeout(ms)=600000) raised the following async exception: "
                 "NCCL error: remote process exited or there was a network error, NCCL version 2.21.5");
    job.log_line("ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
                 "prematurely.");
    CHECK(job.diagnose_it().verdict.cls == FailureClass::RankDied);
  }
  SECTION("beside a rank's own gloo timeout, the peer may have given up first: not this rule's") {
    Job job;
    job.log_line("RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting "
                 "4000ms for recv operation to complete", 2, "rank2.log");
    job.log_line(kGlooClosed, 1, "rank1.log");
    Diagnosis d = job.diagnose_it();
    CHECK_FALSE((d.verdict.cls == FailureClass::RankDied && d.verdict.cause == "peer_gone"));
  }
  SECTION("beside a store error it is not this rule's either") {
    Job job;
    job.log_line(kWaitRank0Key213, 1, "rank1.log");
    job.log_line(kGlooClosed, 2, "rank2.log");
    Diagnosis d = job.diagnose_it();
    CHECK_FALSE((d.verdict.cls == FailureClass::RankDied && d.verdict.cause == "peer_gone"));
  }
}

TEST_CASE("logs: the store host waited for clients, so rank 0's awaited key names no late rank") {
  Job job;
  job.log_line(kWaitRank0Key213);
  job.log_line(kClientsJoined213);
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  CHECK(d.verdict.initiating_rank != 0);
  SECTION("without the store host's line the awaited key still names its rank") {
    Job alone;
    alone.log_line("torch.distributed.DistStoreError: wait timeout after 5000ms, keys: /default_pg/0//cpu//0/2");
    CHECK(alone.diagnose_it().verdict.initiating_rank == 2);
  }
}

TEST_CASE("logs: TCPStore's check of the other end of a store connection") {
  SECTION("a ping answered in text: another program holds the port (port_conflict)") {
    Job job;
    job.log_line("[W1203 10:09:27.955431535 TCPStore.cpp:340] [c10d] TCP client failed to connect/validate to host "
                 "127.0.0.1:29661 - retrying (try=0, timeout=8000ms, delay=253ms): Ping failed, invalid value returned "
                 "from server. Expected: 1769, Got: 1347703880");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::PortConflict);
  }
  SECTION("a ping answered with no text: a store of another protocol, another job's (rdzv_collision)") {
    Job job;
    job.log_line("torch.distributed.DistNetworkError: Ping failed, invalid value returned from server. Expected: "
                 "1769, Got: 0");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::RdzvCollision);
    CHECK(has_alternative(d, FailureClass::PortConflict));
  }
  SECTION("the store host met a client without c10d's VALIDATE query") {
    Job job;
    job.log_line("[E TCPStoreBackend.cpp:120] Miscellaneous client without VALIDATE query is detected");
    CHECK(job.diagnose_it().verdict.cls == FailureClass::RdzvCollision);
  }
}

TEST_CASE("logs: the launcher's environment missing or out of range is config_mismatch") {
  SECTION("env:// rendezvous names the variable: high") {
    Job job;
    job.log_line("ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable "
                 "MASTER_ADDR expected, but not set");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::ConfigMismatch);
    CHECK(d.verdict.confidence == "high");
    CHECK(d.verdict.summary.find("MASTER_ADDR") != std::string::npos);
  }
  SECTION("a script's KeyError on a launcher variable") {
    Job job;
    job.log_line("KeyError: 'LOCAL_RANK'");
    CHECK(job.diagnose_it().verdict.cls == FailureClass::ConfigMismatch);
  }
  SECTION("a KeyError on any other name is not the launcher's") {
    Job job;
    job.log_line("KeyError: 'model.layers.0.weight'");
    CHECK(job.diagnose_it().verdict.cls != FailureClass::ConfigMismatch);
  }
  SECTION("gloo refuses a rank past the world beside the others' waits for it: medium, its rank") {
    Job job;
    job.log_line("torch.distributed.DistStoreError: wait timeout after 5000ms, keys: /default_pg/0//cpu//0/1", 0);
    job.log_line("RuntimeError: [enforce fail at /__w/pytorch/pytorch/third_party/gloo/gloo/context.cc:23] rank < "
                 "size. 2 vs 2", 2);
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::ConfigMismatch);
    CHECK(d.verdict.initiating_rank == 2);
  }
}

TEST_CASE("logs: torchrun's root cause that died of its own exception, beside the others' store errors") {
  auto summary = [](Job& job, const char* traceback) {
    job.log_line(kWaitRank0Key213, -1, "agent.log");
    job.log_line("Root Cause (first observed failure):", -1, "agent.log");
    job.log_line("[0]:", -1, "agent.log");
    job.log_line("  rank      : 2 (local_rank: 2)", -1, "agent.log");
    job.log_line("  exitcode  : 1 (pid: 23296)", -1, "agent.log");
    job.log_line("  error_file: /tmp/torchelastic_x/none_y/attempt_0/2/error.json", -1, "agent.log");
    job.log_line(std::string("  traceback : Traceback (most recent call last):"), -1, "agent.log");
    job.log_line(traceback, -1, "agent.log");
  };
  SECTION("a CUDA out-of-memory: rank_died, that rank") {
    Job job;
    summary(job, "  RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::RankDied);
    CHECK(d.verdict.initiating_rank == 2);
  }
  SECTION("a store timeout of its own: it died of the rendezvous, the others' class stays") {
    Job job;
    summary(job, "  torch.distributed.DistStoreError: wait timeout after 5000ms, keys: /default_pg/0//cpu//0/0");
    CHECK(job.diagnose_it().verdict.cls != FailureClass::RankDied);
  }
}

TEST_CASE("logs: a rank that raised its own exception while the others failed on the store (issue 29)") {
  SECTION("its exception and no rendezvous error of its own: rank_died, that rank, low") {
    Job job;
    job.log_line(kClientsJoined213, 0, "rank0.log");
    job.log_line("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB", 1, "rank1.log");
    job.log_line(kWaitRank0Key213, 2, "rank2.log");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::RankDied);
    CHECK(d.verdict.initiating_rank == 1);
    CHECK(d.verdict.confidence == "low");
  }
  SECTION("a rank whose exception came with a rendezvous error of its own died of the rendezvous") {
    Job job;
    job.log_line(kClientsJoined213, 0, "rank0.log");
    job.log_line("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB", 2, "rank2.log");
    job.log_line(kWaitRank0Key213, 2, "rank2.log");
    CHECK(job.diagnose_it().verdict.cls != FailureClass::RankDied);
  }
  SECTION("two ranks with exceptions of their own: the logs cannot order them") {
    Job job;
    job.log_line(kClientsJoined213, 0, "rank0.log");
    job.log_line("RuntimeError: CUDA out of memory.", 1, "rank1.log");
    job.log_line("ValueError: bad shard", 2, "rank2.log");
    CHECK(job.diagnose_it().verdict.cls != FailureClass::RankDied);
  }
}

TEST_CASE("logs: SIGABRT is NCCL's watchdog aborting a rank that waited, no death of its own (issue 29)") {
  Job job;
  job.log_line("[rank1]:[E ProcessGroupNCCL.cpp:567] [Rank 1] Watchdog caught collective operation timeout: "
               "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=60000) ran for 60007 milliseconds before timing out.", 1);
  job.log_line("torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGABRT");
  CHECK(job.diagnose_it().verdict.cls == FailureClass::StragglerTimeout);
}

// torchrun names as root cause the failure of the smallest time, in whole seconds (the error
// file's record, or the agent's poll that found the exit), and among equal times the lowest
// local rank: found with a worker that raised right after init_process_group while its peers
// failed on gloo's closed pairs in the same second (e2e torchrun_c10d.worker_raised_after_init).
TEST_CASE("logs: torchrun's root cause in a tie of one second says nothing of which worker went first") {
  auto failure = [](Job& job, int rank, const char* time, bool root) {
    if (root) job.log_line("Root Cause (first observed failure):", -1, "agent.log");
    job.log_line("[" + std::to_string(rank) + "]:", -1, "agent.log");
    job.log_line(std::string("  time      : ") + time, -1, "agent.log");
    job.log_line("  host      : node0", -1, "agent.log");
    job.log_line("  rank      : " + std::to_string(rank) + " (local_rank: " + std::to_string(rank) + ")", -1, "agent.log");
    job.log_line("  exitcode  : 1 (pid: " + std::to_string(100 + rank) + ")", -1, "agent.log");
    job.log_line("  error_file: <N/A>", -1, "agent.log");
    job.log_line("  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html", -1,
                 "agent.log");
  };
  const char* closed = "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by "
                       "peer [127.0.0.1]:18841";
  auto summary = [&](Job& job, const char* root_time) {
    for (int r = 1; r < 4; ++r) failure(job, r, "2026-12-06_21:55:28", false);
    failure(job, 0, root_time, true);
  };
  SECTION("no worker's line names its rank: no rank, low, the tie said") {
    Job job;
    job.log_line("RuntimeError: e2e fault: an exception at after_init", -1, "agent.log");
    job.log_line(closed, -1, "agent.log");
    summary(job, "2026-12-06_21:55:28");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::RankDied);
    CHECK_FALSE(d.verdict.initiating_rank.has_value());
    CHECK(d.verdict.confidence == "low");
    CHECK(d.verdict.summary.find("fail in the same second (2026-12-06_21:55:28)") != std::string::npos);
  }
  SECTION("rank prefixes: the one worker with an error of its own and no closed pair went first") {
    Job job;
    job.log_line("[rank1]:RuntimeError: e2e fault: an exception at after_init", -1, "agent.log");
    for (int r : {0, 2, 3}) job.log_line("[rank" + std::to_string(r) + "]:" + closed, -1, "agent.log");
    summary(job, "2026-12-06_21:55:28");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::RankDied);
    CHECK(d.verdict.initiating_rank == 1);
    CHECK(d.verdict.confidence == "medium");
    CHECK(d.verdict.summary.find("rank 1 went first") != std::string::npos);
  }
  SECTION("the one worker of the tie killed by a signal of its own went first") {
    Job job;
    job.log_line(closed, -1, "agent.log");
    failure(job, 0, "2026-12-06_22:07:41", false);
    failure(job, 2, "2026-12-06_22:07:41", false);
    job.log_line("Root Cause (first observed failure):", -1, "agent.log");
    job.log_line("[0]:", -1, "agent.log");
    job.log_line("  time      : 2026-12-06_22:07:41", -1, "agent.log");
    job.log_line("  rank      : 1 (local_rank: 1)", -1, "agent.log");
    job.log_line("  exitcode  : -9 (pid: 101)", -1, "agent.log");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::RankDied);
    CHECK(d.verdict.initiating_rank == 1);
    CHECK(d.verdict.cause == "killed");
    CHECK(d.verdict.summary.find("SIGKILL") != std::string::npos);
    CHECK(d.verdict.summary.find("rank 1 went first") != std::string::npos);
  }
  SECTION("a root cause a second before the others is torchrun's own order: that rank") {
    Job job;
    job.log_line(closed, -1, "agent.log");
    summary(job, "2026-12-06_21:55:27");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::RankDied);
    CHECK(d.verdict.initiating_rank == 0);
    CHECK(d.verdict.summary.find("same second") == std::string::npos);
  }
}

TEST_CASE("logs: UCX's crash handler's 'Caught signal N' is that process's death by the signal") {
  Job job;
  job.log_line("[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)");
  job.log_line("==== backtrace (tid:   3095) ====");
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::RankDied);
  CHECK(d.verdict.cause == "killed");
  CHECK(d.verdict.summary.find("killed by SIGBUS") != std::string::npos);
  CHECK(d.verdict.next_step.find("/dev/shm") != std::string::npos);
  SECTION("the words alone in a sentence are no report") {
    Job other;
    other.log_line("RuntimeError: Caught signal handler twice");
    CHECK(other.diagnose_it().verdict.cls != FailureClass::RankDied);
  }
}

TEST_CASE("logs: a process-local exception and nothing else failing: that process died of it, low") {
  SECTION("CUDA's invalid device ordinal: more workers than visible GPUs named in the next step") {
    Job job;
    job.log_line("RuntimeError: cuda runtime error (10) : invalid device ordinal at /pytorch/torch/csrc/cuda/Module.cpp:33");
    job.log_line("Traceback (most recent call last):");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::RankDied);
    CHECK(d.verdict.confidence == "low");
    CHECK_FALSE(d.verdict.initiating_rank.has_value());
    CHECK(d.verdict.next_step.find("--nproc-per-node") != std::string::npos);
  }
  SECTION("THC's failed CUDA check (PyTorch <= 1.10) is the exception its process raises next") {
    Job job;
    job.log_line("THCudaCheck FAIL file=/opt/conda/conda-bld/pytorch_1595629403081/work/torch/csrc/cuda/Module.cpp "
                 "line=59 error=101 : invalid device ordinal");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::RankDied);
    CHECK(d.verdict.confidence == "low");
    CHECK(d.verdict.next_step.find("--nproc-per-node") != std::string::npos);
  }
  SECTION("THC's check line and the RuntimeError it raised are one failure, the exception named") {
    Job job;
    job.log_line("RuntimeError: cuda runtime error (10) : invalid device ordinal at /pytorch/torch/csrc/cuda/Module.cpp:33");
    job.log_line("THCudaCheck FAIL file=/pytorch/torch/csrc/cuda/Module.cpp line=33 error=10 : invalid device ordinal");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::RankDied);
    CHECK(d.verdict.summary.find("cuda runtime error (10)") != std::string::npos);
  }
  SECTION("a THC check line beside a rendezvous error is not the job's only failure") {
    Job job;
    job.log_line("THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=47 error=100 : no CUDA-capable "
                 "device is detected");
    job.log_line("RuntimeError: Connection reset by peer");
    CHECK(job.diagnose_it().verdict.cls != FailureClass::RankDied);
  }
  SECTION("the same exception on two ranks: each raised it, the first is named") {
    Job job;
    job.log_line("[rank2]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB");
    job.log_line("[rank3]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::RankDied);
    CHECK(d.verdict.initiating_rank == 2);
  }
  SECTION("an exception that may be a distributed failure in other words is not one") {
    for (const char* line : {"RuntimeError: Unable to find address for: eth0",
                             "RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective",
                             "ValueError: TP rank 2 could finish the model loading, but there are other ranks that didn't",
                             "RuntimeError: Gloo connectFullMesh failed with ..."}) {
      Job job;
      job.log_line(line);
      INFO(line);
      CHECK(job.diagnose_it().verdict.cls != FailureClass::RankDied);
    }
  }
  SECTION("two different exceptions: two failures the logs cannot order") {
    Job job;
    job.log_line("RuntimeError: CUDA error: an illegal memory access was encountered");
    job.log_line("ModuleNotFoundError: No module named 'apex'");
    CHECK(job.diagnose_it().verdict.cls != FailureClass::RankDied);
  }
}

// Issue 29: the barriers and store waits that say who did not come, besides c10d's init barrier.
namespace {

// The verdict on a log of one line, which must be straggler_timeout.
Verdict straggler_verdict(const char* line) {
  Job job;
  job.log_line(line);
  Verdict v = job.diagnose_it().verdict;
  CHECK(v.cls == FailureClass::StragglerTimeout);
  return v;
}

}  // namespace

TEST_CASE("logs: monitored_barrier, gloo's store wait and the store host's wait for workers name a straggler") {
  SECTION("rank 0 of monitored_barrier names the rank that did not come") {
    Verdict v = straggler_verdict("RuntimeError: [Rank 0]: Rank 2 failed to pass monitoredBarrier in 2000 ms");
    CHECK(v.initiating_rank == 2);
    CHECK(v.summary.find("monitored_barrier") != std::string::npos);
  }
  SECTION("a rank that came and got no answer from rank 0 names rank 0, at low confidence") {
    Verdict v = straggler_verdict("[E ProcessGroupGloo.cpp:138] Rank 3 successfully reached monitoredBarrier, but "
                                  "received errors while waiting for send/recv from rank 0.");
    CHECK(v.initiating_rank == 0);
    CHECK(v.confidence == "low");
    CHECK(v.summary.find("rank(s) 3") != std::string::npos);
  }
  SECTION("sglang's check after loading the model is the same barrier's timeout") {
    CHECK(!straggler_verdict("ValueError: TP rank 2 could finish the model loading, but there are other ranks that "
                             "didn't finish loading. It is likely due to unexpected failures (e.g., OOM) or a slow "
                             "node.")
               .initiating_rank);
  }
  SECTION("gloo's own store gave up waiting for rank 0's key") {
    CHECK(straggler_verdict("  what():  [/tmp/horovod/common/gloo/http_store.cc:57] Wait timeout after 30 seconds for "
                            "key(s): 0. You may want to increase the timeout via HOROVOD_GLOO_TIMEOUT_SECONDS")
              .initiating_rank == 0);
  }
  SECTION("the store host's wait worded with workers") {
    straggler_verdict("torch.distributed.DistStoreError: Timed out after 6 seconds waiting for workers. 1/2 workers "
                      "joined.");
  }
}

TEST_CASE("logs: gloo's collective timeout gets its op from the rank's traceback through distributed_c10d.py") {
  Job job;
  job.log_line("Traceback (most recent call last):", 1, "rank1.log");
  job.log_line("  File \"/x/torch/distributed/c10d_logger.py\", line 81, in wrapper", 1, "rank1.log");
  job.log_line("  File \"/x/torch/distributed/distributed_c10d.py\", line 3252, in all_reduce", 1, "rank1.log");
  job.log_line("RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 2000ms "
               "for recv operation to complete",
               1, "rank1.log");
  job.log_line("RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 2000ms "
               "for recv operation to complete",
               2, "rank2.log");
  job.log_line("[W1201 10:37:57.584947027 ProcessGroupGloo.cpp:100] Warning: something else", 0, "rank0.log");
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  CHECK(d.verdict.summary.find("(all_reduce)") != std::string::npos);
  SECTION("NCCL's watchdog names its own op and sequence") {
    Job nccl;
    nccl.log_line("[E ProcessGroupNCCL.cpp:567] [Rank 1] Watchdog caught collective operation timeout: "
                  "WorkNCCL(SeqNum=12, OpType=ALLREDUCE, Timeout(ms)=60000) ran for 67438 milliseconds before timing out.");
    CHECK(nccl.diagnose_it().verdict.summary.find("(ALLREDUCE, SeqNum=12)") != std::string::npos);
  }
}

namespace {

// The verdict on a log of these lines, in order.
Verdict verdict_of(std::initializer_list<const char*> lines) {
  Job job;
  for (const char* l : lines) job.log_line(l);
  return job.diagnose_it().verdict;
}

}  // namespace

TEST_CASE("logs: where in the store's life a store connection broke (issue 29)") {
  SECTION("a 0-byte reply to a wait, after the constructor: the store host ended (broken_pipe)") {
    Verdict v = verdict_of({"[W514 18:33:36.536327028 TCPStore.cpp:138] [c10d] recvValueWithTimeout failed on "
                            "SocketImpl(fd=3, addr=[localhost]:34658, remote=[localhost]:1234): Failed to recv, got 0 "
                            "bytes. Connection was likely closed. Did the remote server shutdown or crash?"});
    CHECK(v.cls == FailureClass::BrokenPipe);
    CHECK(v.summary.find("exited or crashed") != std::string::npos);
  }
  SECTION("a 0-byte read whose backtrace is the constructor's ping stays transient_recv") {
    CHECK(verdict_of({"[W1201 10:37:57.584947027 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=3, "
                      "addr=[::ffff:127.0.0.1]:52454, remote=[::ffff:127.0.0.1]:57887): Failed to recv, got 0 bytes.",
                      "frame #4: c10d::TCPStore::ping() + 0xf9 (0x7fd510142bc9 in /x/libtorch_cpu.so)"})
              .cls == FailureClass::TransientRecv);
  }
  SECTION("a reset inside the constructor: a fresh connection dropped (transient_recv), not a broken pipe") {
    CHECK(verdict_of({"W0701 13:41:43.421574  4776 TCPStore.cpp:182] [c10d] recvValue failed on SocketImpl(fd=24, "
                      "...): Connection reset by peer",
                      "#10 c10d::TCPStore::waitForWorkers() from /x/libtorch_cpu.so:84812868",
                      "#11 c10d::TCPStore::TCPStore(std::string, c10d::TCPStoreOptions const&) from /x/libtorch_cpu.so"})
              .cls == FailureClass::TransientRecv);
  }
  SECTION("a reset that c10d's validation retried and met again stays a broken pipe") {
    CHECK(verdict_of({"[W426 16:56:01.831041000 TCPStore.cpp:347] [c10d] TCP client failed to connect/validate to "
                      "host 100.64.0.1:59782 - retrying (try=6, timeout=1800000ms, delay=5241ms): Connection reset by "
                      "peer",
                      "frame #3: c10d::TCPStore::ping() + 200 (0x11b4f5738 in libtorch_cpu.dylib)"})
              .cls == FailureClass::BrokenPipe);
  }
}

TEST_CASE("logs: a torchrun agent's failed keep-alive to the rendezvous store in mid-run is the store host gone") {
  const char* keep_alive =
      "WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node 'docker.b_3427_0' has failed to send a "
      "keep-alive heartbeat to the rendezvous 'test' due to an error of type RendezvousConnectionError.";
  Verdict v = verdict_of({keep_alive});
  CHECK(v.cls == FailureClass::BrokenPipe);
  CHECK(v.summary.find("keep-alive") != std::string::npos);
  SECTION("after the agent's workers finished it is the job's teardown") {
    CHECK(verdict_of({"INFO:torch.distributed.elastic.agent.server.api:[default] worker group successfully finished. "
                      "Waiting 300 seconds for other agents to finish.",
                      keep_alive})
              .cls != FailureClass::BrokenPipe);
  }
}

TEST_CASE("logs: DeepSpeed's launcher killing its workers says one ended non-zero (issue 29)") {
  const char* killing = "[2022-05-15 00:12:57,785] [INFO] [launch.py:178:sigkill_handler] Killing subprocess 97277";
  Verdict v = verdict_of({killing, "[2022-05-15 00:12:57,786] [INFO] [launch.py:178:sigkill_handler] Killing subprocess 97278"});
  CHECK(v.cls == FailureClass::RankDied);
  CHECK(v.confidence == "low");
  SECTION("the launcher's own status line, when there, is the one reported") {
    Verdict s = verdict_of({killing, "[2022-05-15 00:12:57,790] [ERROR] [launch.py:184:sigkill_handler] ['python', "
                                     "'train.py'] exits with return code = -9"});
    CHECK(s.cls == FailureClass::RankDied);
    CHECK(s.confidence == "medium");
  }
  SECTION("beside a rendezvous error the workers may have died of it") {
    CHECK(verdict_of({"[E socket.cpp:793] [c10d] The client socket has timed out after 1800s while trying to connect "
                      "to (127.0.0.1, 29500).",
                      killing})
              .cls != FailureClass::RankDied);
  }
}

// A launcher gives each process of a job a rank of its own: a rank announced twice is processes
// numbered alike. No more announcements than the world size: one job's nodes numbered alike
// (config_mismatch); more: more processes than one job has, two launches (rdzv_collision).
TEST_CASE("logs: the same global rank announced twice in one start-up: one job numbered alike, or two launches (issue 29)") {
  auto announce = [](Job& job, std::initializer_list<int> ranks, int copies) {
    for (int r : ranks)
      for (int copy = 0; copy < copies; ++copy)
        job.log_line("initializing ddp: GLOBAL_RANK: " + std::to_string(r) + ", MEMBER: " + std::to_string(r + 1) +
                     "/8");
  };
  SECTION("ranks 0-3 twice of a world of 8, 8 processes: one job whose nodes numbered alike, the others never came") {
    Job job;
    announce(job, {1, 2, 3, 0}, 2);
    job.log_line("Traceback (most recent call last):");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::ConfigMismatch);
    CHECK(d.verdict.confidence == "low");
    CHECK(d.verdict.cause == "node_rank");
    CHECK_FALSE(d.verdict.initiating_rank.has_value());
    CHECK(d.verdict.summary.find("0-3") != std::string::npos);
    CHECK(d.verdict.summary.find("4-7") != std::string::npos);
    CHECK(d.verdict.summary.find("by 8 processes") != std::string::npos);
    REQUIRE_FALSE(d.alternatives.empty());
    CHECK(d.alternatives.front().cls == FailureClass::RdzvCollision);
  }
  SECTION("ranks 0-5 twice of a world of 8, 12 processes: more than one job has, two launches") {
    Job job;
    announce(job, {0, 1, 2, 3, 4, 5}, 2);
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::RdzvCollision);
    CHECK(d.verdict.confidence == "low");
    CHECK(d.verdict.summary.find("12 processes entered init_process_group for a world of 8") != std::string::npos);
    CHECK(d.verdict.summary.find("6, 7") != std::string::npos);
    REQUIRE_FALSE(d.alternatives.empty());
    CHECK(d.alternatives.front().cls == FailureClass::ConfigMismatch);
  }
  SECTION("announced again after a failure: a restart, not two launches") {
    Job job;
    for (int r : {0, 1}) job.log_line("initializing ddp: GLOBAL_RANK: " + std::to_string(r) + ", MEMBER: " +
                                      std::to_string(r + 1) + "/2");
    job.log_line("RuntimeError: Connection reset by peer");
    for (int r : {0, 1}) job.log_line("initializing ddp: GLOBAL_RANK: " + std::to_string(r) + ", MEMBER: " +
                                      std::to_string(r + 1) + "/2");
    CHECK(job.diagnose_it().verdict.cls != FailureClass::RdzvCollision);
  }
  SECTION("each rank once: nothing to say") {
    Job job;
    for (int r : {0, 1}) job.log_line("initializing ddp: GLOBAL_RANK: " + std::to_string(r) + ", MEMBER: " +
                                      std::to_string(r + 1) + "/2");
    CHECK(job.diagnose_it().verdict.cls != FailureClass::RdzvCollision);
  }
}

TEST_CASE("logs: a store barrier that counted past the world size after torchelastic restarted the workers is no second launch") {
  constexpr const char* kBarrier =
      "RuntimeError: Timed out initializing process group in store based barrier on rank: 1, for key: "
      "store_based_barrier_key:1 (world_size=2, worker_count=4, timeout=0:30:00)";
  SECTION("no restart: two launches on one store") {
    Job job;
    job.log_line(kBarrier);
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::RdzvCollision);
    CHECK(d.verdict.confidence == "medium");
  }
  for (bool restart_first : {true, false}) {
    DYNAMIC_SECTION("the agent restarted its workers, " << (restart_first ? "before" : "after (an excerpt)")
                                                         << " the barrier line") {
      Job job;
      constexpr const char* kRestart =
          "INFO:torch.distributed.elastic.agent.server.api:[default] Worker group FAILED. 2/3 attempts left; will "
          "restart worker group";
      if (restart_first) job.log_line(kRestart);
      job.log_line(kBarrier);
      if (!restart_first) job.log_line(kRestart);
      const Verdict v = job.diagnose_it().verdict;
      CHECK(v.cls != FailureClass::RdzvCollision);
      CHECK(v.cls != FailureClass::StragglerTimeout);  // 4 of 2 came: nobody was late
    }
  }
}

// Issue 29: a job that went on past its c10d warnings (LogFacts::job_went_on) is healthy; the
// warnings were retries that succeeded. Never so with a fatal line anywhere.
namespace {
const char* kResetWarning =
    "[W506 00:43:56.240378877 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=3, addr=[node0]:47466, "
    "remote=[node0]:29500): Connection reset by peer";
const char* kRetrying =
    "[W506 00:43:56.241 TCPStore.cpp:340] [c10d] TCP client failed to connect/validate to host node0:29500 - "
    "retrying (try=0, timeout=300000ms, delay=659ms): Connection reset by peer";
const char* kWatchdog =
    "[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12, "
    "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.";
}  // namespace

TEST_CASE("logs: a job that went on past its c10d warnings is healthy") {
  SECTION("a lookup warning while the pods start, then training: healthy, the warning named as noise") {
    Job job;
    job.log_line(kIpv6Gai);
    job.log_line("Epoch 1/10 loss 2.31");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::Healthy);
    CHECK(d.verdict.confidence == "low");
    CHECK(d.verdict.summary.find("noise: a lookup that c10d retries") != std::string::npos);
  }
  SECTION("one store connect reset that TCPStore retried, then a collective completed") {
    Job job;
    job.log_line(kResetWarning);
    job.log_line(kRetrying);
    job.log_line("[rank3] e2e: all_reduce ok (10)");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::Healthy);
    CHECK(d.verdict.summary.find("its constructor retries") != std::string::npos);
  }
  SECTION("no c10d line at all: progress answers no warning, and a hang after it prints nothing") {
    Job job;
    job.log_line("[rank0] e2e: joined in 0.95s");
    job.log_line("[rank0] e2e: all_reduce ok (10)");
    CHECK(job.diagnose_it().verdict.cls == FailureClass::Unknown);
  }
  SECTION("NOT: a fatal error after the progress keeps its class") {
    Job without;
    without.log_line(kResetWarning);
    without.log_line(kWatchdog);
    Job with;
    with.log_line(kResetWarning);
    with.log_line("Epoch 1/10 loss 2.31");
    with.log_line(kWatchdog);
    const Diagnosis d = with.diagnose_it();
    CHECK(d.verdict.cls != FailureClass::Healthy);
    CHECK(d.verdict.cls == without.diagnose_it().verdict.cls);
  }
  SECTION("NOT: an exception line anywhere") {
    Job job;
    job.log_line(kIpv6Gai);
    job.log_line("Epoch 1/10 loss 2.31");
    job.log_line("RuntimeError: CUDA error: an illegal memory access was encountered");
    CHECK(job.diagnose_it().verdict.cls != FailureClass::Healthy);
  }
  SECTION("NOT: another rank's progress does not carry this rank past its warning") {
    Job job;
    job.log_line(kIpv6Gai, 1, "all.log");
    job.log_line("Epoch 1/10 loss 2.31", 0, "all.log");
    CHECK(job.diagnose_it().verdict.cls == FailureClass::NameResolution);
  }
  SECTION("NOT: an error-level c10d line, even with progress after it") {
    Job job;
    job.log_line("[E socket.cpp:860] [c10d] The client socket has timed out after 900s while trying to connect to "
                 "(node0, 29500).");
    job.log_line("Epoch 1/10 loss 2.31");
    CHECK(job.diagnose_it().verdict.cls != FailureClass::Healthy);
  }
  SECTION("NOT: a crash's C++ frames after the progress, in words no family reads") {
    Job job;
    job.log_line(kIpv6Gai);
    job.log_line("Epoch 1/10 loss 2.31");
    job.log_line("Exception raised from ncclCommWatchdog at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1521 "
                 "(most recent call first):");
    CHECK(job.diagnose_it().verdict.cls != FailureClass::Healthy);
  }
}

TEST_CASE("logs: a store bind that failed, and a process that went on: a shared store") {
  SECTION("1.x: both families' binds fail, listen fails, the job trains and later fails: rdzv_collision") {
    Job job;
    job.log_line("[W socket.cpp:426] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address "
                 "already in use).");
    job.log_line("[W socket.cpp:426] [c10d] The server socket has failed to bind to 0.0.0.0:29500 (errno: 98 - "
                 "Address already in use).");
    job.log_line("[E socket.cpp:462] [c10d] The server socket has failed to listen on any local network address.");
    job.log_line("For gpu:3. Running epoch: 2");
    job.log_line("Traceback (most recent call last):");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::RdzvCollision);
    CHECK(d.verdict.summary.find("went on (job.log:4") != std::string::npos);
    CHECK(d.verdict.summary.find("failed later (job.log:5") != std::string::npos);
  }
  SECTION("NOT: a bind failure after which the process dies is a port conflict") {
    Job job;
    job.log_line("[W socket.cpp:426] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address "
                 "already in use).");
    job.log_line("[E socket.cpp:462] [c10d] The server socket has failed to listen on any local network address.");
    job.log_line("RuntimeError: The server socket has failed to listen on any local network address.");
    CHECK(job.diagnose_it().verdict.cls == FailureClass::PortConflict);
  }
  SECTION("NOT: another node's training does not carry this node's agent past its bind failure") {
    Job job;
    job.log_line("[W socket.cpp:426] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address "
                 "already in use).", -1, "node0.log");
    job.log_line("Epoch 1/10 loss 2.31", -1, "node1.log");
    CHECK(job.diagnose_it().verdict.cls == FailureClass::PortConflict);
  }
  SECTION("NOT: a bind failure is never noise, even when the job went on and nothing failed") {
    Job job;
    job.log_line("[W socket.cpp:426] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address "
                 "already in use).");
    job.log_line("Epoch 1/10 loss 2.31");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::RdzvCollision);
    CHECK(d.verdict.confidence == "low");
    CHECK(has_alternative(d, FailureClass::Healthy));  // the store may be its own job's
  }
}

TEST_CASE("logs: a broken store connection on an old PyTorch never claims from the logs that the store stayed up") {
  Job job;
  job.log_line("PyTorch version: 2.1.0");
  job.log_line("[W socket.cpp:601] [c10d] sendBytes failed on SocketImpl(fd=83, addr=[node1]:38648, "
               "remote=[node0]:29500): Broken pipe",
               2);
  Diagnosis d = job.diagnose_it();
  REQUIRE(d.verdict.cls == FailureClass::BrokenPipe);
  CHECK(d.verdict.cause == "tcpstore_bug_suspected");
  CHECK(d.verdict.summary.find("stayed up") == std::string::npos);
  CHECK(d.verdict.summary.find("store host that ended") != std::string::npos);
}

// Issue 29 (dmlcloud#61): ProcessGroupNCCL's destructor warns when the group was never
// destroyed; it runs as the interpreter exits, so the rank ran to its end.
TEST_CASE("logs: ProcessGroupNCCL's warning at exit says the rank ran to its end") {
  const char* at_exit =
      "[rank0]:[W227 10:54:51.986111855 ProcessGroupNCCL.cpp:1374] Warning: WARNING: process group has NOT been "
      "destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should call "
      "destroy_process_group to ensure that any pending NCCL operations have finished in this process.";
  SECTION("alone: healthy, low, the line quoted as the end") {
    Verdict v = verdict_of({at_exit});
    CHECK(v.cls == FailureClass::Healthy);
    CHECK(v.confidence == "low");
    CHECK(v.summary.find("reached its exit") != std::string::npos);
    CHECK(v.summary.find("destroy_process_group()") != std::string::npos);
  }
  SECTION("NOT: after an error it is the exit of a failed rank") {
    CHECK(verdict_of({"[E socket.cpp:793] [c10d] The client socket has timed out after 1800s while trying to connect "
                      "to (127.0.0.1, 29500).",
                      at_exit})
              .cls != FailureClass::Healthy);
    CHECK(verdict_of({"Traceback (most recent call last):", "RuntimeError: CUDA error: an illegal memory access was "
                      "encountered", at_exit})
              .cls != FailureClass::Healthy);
  }
  SECTION("NOT: a quiet log without it is no finished job") {
    CHECK(verdict_of({"[rank0]: loading checkpoint shard 3/8"}).cls == FailureClass::Unknown);
  }
}

// Issue 29: gloo's full mesh could not reach the address a peer published through the store
// (own/torch2.13-gloo-peer-unreachable: two network namespaces, each host name on an address
// the other namespace's SYNs never reach).
TEST_CASE("logs: a peer's published gloo address that does not answer is store_unreachable, cause peer_address") {
  const char* active =
      "[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/debug_logger.cc:9] ERROR failed to connect, "
      "willRetry=0, retry=4, retryLimit=3, rank=1, size=2, local=[10.240.0.2]:4801, remote=[10.241.0.1]:21918$1, "
      "error=SO_ERROR: Connection timed out, remote=[10.241.0.1]:21918$1";
  const char* passive =
      "[E1207 23:12:23.840069266 ProcessGroupGloo.cpp:67] Gloo connectFullMesh failed with "
      "[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.h:311] Connect timeout [none]";
  const char* reverse = "[W1207 23:10:43.395746503 socket.cpp:207] [c10d] The hostname of the client socket cannot be "
                        "retrieved. err=-3";
  SECTION("the active side names the address: medium, beside a reverse lookup's warning") {
    Job job;
    job.log_line(reverse, 1, "rank1.log");
    job.log_line(active, 1, "rank1.log");
    job.log_line(passive, 0, "rank0.log");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::StoreUnreachable);
    CHECK(d.verdict.cause == "peer_address");
    CHECK(d.verdict.confidence == "medium");
    CHECK(d.verdict.summary.find("10.241.0.1:21918") != std::string::npos);
    CHECK(d.verdict.next_step.find("GLOO_SOCKET_IFNAME") != std::string::npos);
    CHECK(has_alternative(d, FailureClass::RankDied));
  }
  SECTION("only the passive side's timeout, and older gloo's \"no error\": low") {
    for (const char* line : {passive,
                             "RuntimeError: Gloo connectFullMesh failed with "
                             "[../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
                             "RuntimeError: Gloo connectFullMesh failed with [...] no error"}) {
      Job job;
      job.log_line(line);
      Diagnosis d = job.diagnose_it();
      CHECK(d.verdict.cls == FailureClass::StoreUnreachable);
      CHECK(d.verdict.confidence == "low");
    }
  }
  SECTION("NOT: a refused connect is a host that answered") {
    Job job;
    job.log_line("[E1207 23:08:57.443493812 ProcessGroupGloo.cpp:67] Gloo connectFullMesh failed with "
                 "[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:152] timed out connecting: "
                 "SO_ERROR: Connection refused, remote=[10.0.0.5]:12723$0");
    CHECK(job.diagnose_it().verdict.cls != FailureClass::StoreUnreachable);
  }
  SECTION("NOT: beside a store error the store was not reached") {
    Job job;
    job.log_line("[E1201 10:37:40.865341725 socket.cpp:1028] [c10d] The client socket has timed out after 4000ms "
                 "while trying to connect to (10.0.0.1, 29500).");
    job.log_line(active);
    const Diagnosis d = job.diagnose_it();
    CHECK_FALSE((d.verdict.cls == FailureClass::StoreUnreachable && d.verdict.cause == "peer_address"));
  }
}

// Issue 29 (own/torch2.13-gloo-loopback-fallback): gloo found no address for the host name,
// bound loopback and published 127.0.0.1; the peer on the other node was refused there.
TEST_CASE("logs: refused at 127.0.0.1 after gloo's loopback fallback is the loopback trap") {
  const char* fallback =
      "[W1207 23:08:57.442164623 ProcessGroupGloo.cpp:524] Warning: Unable to resolve hostname to a (local) address. "
      "Using the loopback address as fallback. Manually set the network interface to bind to with GLOO_SOCKET_IFNAME. "
      "(function operator())";
  const char* refused =
      "[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/debug_logger.cc:9] ERROR failed to connect, "
      "willRetry=0, retry=4, retryLimit=3, rank=0, size=2, local=[127.0.0.1]:33959, remote=[127.0.0.1]:12723$0, "
      "error=SO_ERROR: Connection refused, remote=[127.0.0.1]:12723$0";
  SECTION("with the fallback warning") {
    Job job;
    job.log_line(fallback, 0, "rank0.log");
    job.log_line(refused, 0, "rank0.log");
    Diagnosis d = job.diagnose_it();
    CHECK(d.verdict.cls == FailureClass::StalePeerAddress);
    CHECK(d.verdict.cause == "loopback_peer_address");
    CHECK(d.verdict.summary.find("resolves to no address") != std::string::npos);
    CHECK(has_alternative(d, FailureClass::RankDied));
  }
  SECTION("NOT without it: 127.0.0.1 is a job on one node, and a refusal there a peer gone") {
    Job job;
    job.log_line(refused, 0, "rank0.log");
    CHECK(job.diagnose_it().verdict.cls != FailureClass::StalePeerAddress);
  }
}

// A reverse lookup's warning beside a transport error: the unknown verdict still quotes the
// transport line (it did not, while any log event hid it).
TEST_CASE("logs: an unknown verdict quotes the transport error beside a reverse lookup's warning") {
  Job job;
  job.log_line("[W1207 23:10:43.395746503 socket.cpp:207] [c10d] The hostname of the client socket cannot be "
               "retrieved. err=-3");
  job.log_line("host-1:1234:5678 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.5<43210> "
               "failed : Software caused connection abort");
  const Verdict v = job.diagnose_it().verdict;
  CHECK(v.cls == FailureClass::Unknown);
  CHECK(v.summary.find("socketStartConnect") != std::string::npos);
}

// Issue 29 (heat#1003, pytorch#128998): c10d's warnings that an IPv6 socket could not be made on
// a host without IPv6 are printed by every job there; alone they are no failure.
TEST_CASE("logs: c10d's IPv6 address-family warnings alone are noise: healthy, low") {
  const char* server = "[W socket.cpp:401] [c10d] The server socket cannot be initialized on [::]:29500 (errno: 97 - "
                       "Address family not supported by protocol).";
  const char* client = "[W socket.cpp:558] [c10d] The client socket cannot be initialized to connect to "
                       "[localhost]:29500 (errno: 97 - Address family not supported by protocol).";
  SECTION("alone") {
    Verdict v = verdict_of({server, client, client});
    CHECK(v.cls == FailureClass::Healthy);
    CHECK(v.confidence == "low");
    CHECK(v.summary.find("3 warning(s)") != std::string::npos);
    CHECK(v.summary.find("no IPv6") != std::string::npos);
  }
  SECTION("NOT beside an error, a store failure or a death") {
    CHECK(verdict_of({server, "RuntimeError: CUDA out of memory."}).cls != FailureClass::Healthy);
    CHECK(verdict_of({server, "[E socket.cpp:793] [c10d] The client socket has timed out after 1800s while trying to "
                              "connect to (127.0.0.1, 29500)."})
              .cls != FailureClass::Healthy);
    CHECK(verdict_of({client, "Killed"}).cls != FailureClass::Healthy);
  }
  SECTION("NOT the same errno raised: that is an error") {
    CHECK(verdict_of({"RuntimeError: The server socket cannot be initialized on [::]:29500 (errno: 97 - Address "
                      "family not supported by protocol)."})
              .cls != FailureClass::Healthy);
  }
}

// A log of refused connects only ("is not yet listening ... will retry") says nothing timed out:
// the words say refused, and the alternatives are a late store host and a store elsewhere
// (pytorch#143858: a script's init_method port under torchrun), not a dropped SYN.
TEST_CASE("logs: refused store connects alone are worded as refused, not as a timeout") {
  Job job;
  job.log_line("[I1226 11:25:16.460453259 socket.cpp:919] [c10d - trace] The server socket on localhost:35980 is not "
               "yet listening (errno: 111 - Connection refused), will retry.");
  const Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StoreNotReady);
  CHECK(d.verdict.summary.find("refused") != std::string::npos);
  CHECK(d.verdict.summary.find("timed out") == std::string::npos);
  CHECK(d.verdict.summary.find("localhost:35980") != std::string::npos);
  CHECK(has_alternative(d, FailureClass::ConfigMismatch));
  CHECK_FALSE(has_alternative(d, FailureClass::ConnectTimeout));
}
