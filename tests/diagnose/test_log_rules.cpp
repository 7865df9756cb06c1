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
  SECTION("an NCCL warning with it is NCCL's own connection, not the store") {
    Job job;
    job.log_line("node1:1234:1240 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<43521> "
                 "failed : No route to host");
    CHECK(job.diagnose_it().verdict.cls == FailureClass::Unknown);
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
