// Which files are one process: with an origin in the header (boot, PID namespace, the pid the
// process saw, its start), never host name and pid alone. Containers on one host with the
// host's network and name each have a pid 1; the shim's and attach's files of one process
// (one with the pid the process saw, one with the host's) are one process.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "report/report.h"
#include "job_builder.h"

using namespace rdzvscope;
using namespace rdzvscope::test;

namespace {

constexpr std::uint64_t kFirstPidns = 4026532301ull;
const std::string kContainer2 = std::string(8, 'c') + std::string(56, '2');

// The straggler job of test_rules.cpp, every rank pid 1 on host "vm" in a PID namespace of
// its own (rank 2's in a container with an id).
void straggler_in_pid_namespaces(Job& job) {
  for (int r = 0; r < 4; ++r) {
    Proc& p = job.proc(r, 1, "vm");
    p.origin(kFirstPidns + r, 1, 5000 + r, r == 2 ? kContainer2.c_str() : "");
    if (r == 0) p.bind(0.9, 0).listen(0.9);
    if (r == 2) {
      p.connect(8.0, ECONNREFUSED).snapshot(8.0, RDZV_SNAP_FAILURE, 0.2, 1000, 8.1).exit(9.0, 1);
      continue;
    }
    p.connect(1.0, 0, kPort, 0.001, 40000 + r).rcvtimeo(1.01, 3000);
    p.io(RDZV_EV_RECV, 1.02, -1, EAGAIN, RDZV_F_TIMEOUT, 40000 + r).exit(4.1, 1);
  }
}

}  // namespace

TEST_CASE("ranks each pid 1 in a PID namespace of its own on one host are four processes",
          "[identity]") {
  Job job;
  straggler_in_pid_namespaces(job);
  Diagnosis d = job.diagnose_it();
  CHECK(job.traces().processes.size() == 4);
  CHECK(d.ranks.size() == 4);
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  REQUIRE(d.verdict.initiating_rank);
  CHECK(*d.verdict.initiating_rank == 2);
}

TEST_CASE("a process in a container is labelled with the container, else with its PID namespace",
          "[identity]") {
  Job job;
  straggler_in_pid_namespaces(job);
  job.load_it();
  std::vector<std::string> labels;
  for (const Process& p : job.traces().processes) labels.push_back(p.label());
  CHECK_THAT(labels, Catch::Matchers::VectorContains(std::string("rank 2 (vm pid 1, container cccccccc2222)")));
  CHECK_THAT(labels, Catch::Matchers::VectorContains(
                         std::string("rank 0 (vm pid 1 in PID namespace ") + std::to_string(kFirstPidns) + ")"));
}

TEST_CASE("a process in the host's PID namespace is labelled as before", "[identity]") {
  Job job;
  job.proc(0, 1234, "node0").origin(RDZV_PIDNS_INIT_INODE, 1234, 777).exit(1.0, 0);
  job.load_it();
  REQUIRE(job.traces().processes.size() == 1);
  CHECK(job.traces().processes[0].label() == "rank 0 (node0 pid 1234)");
}

TEST_CASE("the shim's file and attach's file of one process are one process", "[identity]") {
  Job job;
  // The shim inside the container saw pid 1; attach on the host saw pid 4242.
  job.proc(0, 1, "vm").origin(kFirstPidns, 1, 9000).bind(0.9, 0).listen(0.9);
  job.proc(0, 4242, "vm").origin(kFirstPidns, 1, 9000).exit(2.0, 0);
  job.load_it();
  REQUIRE(job.traces().processes.size() == 1);
  CHECK(job.traces().processes[0].files.size() == 2);
}

TEST_CASE("one pid in one PID namespace, started at another tick, is another process",
          "[identity]") {
  Job job;
  job.proc(0, 1, "vm").origin(kFirstPidns, 1, 9000).exit(1.0, 0);
  job.proc(0, 1, "vm").origin(kFirstPidns, 1, 9100).exit(2.0, 0);
  job.load_it();
  CHECK(job.traces().processes.size() == 2);
}

TEST_CASE("a helper in a container is found by its parent in the same PID namespace",
          "[identity]") {
  Job job;
  job.proc(0, 1, "vm").origin(kFirstPidns, 1, 9000).bind(0.9, 0).listen(0.9).exit(3.0, 0);
  Proc& helper = job.proc(0, 7, "vm").origin(kFirstPidns, 7, 9050);
  helper.header().ppid = 1;
  helper.exit(2.0, 0);
  // pid 7 of another namespace, whose pid 1 is not a traced process: not a helper of rank 0.
  Proc& stranger = job.proc(0, 7, "vm").origin(kFirstPidns + 1, 7, 9060);
  stranger.header().ppid = 1;
  stranger.exit(2.0, 0);
  job.load_it();
  int helpers = 0;
  for (const Process& p : job.traces().processes) helpers += p.role == Role::Helper;
  CHECK(helpers == 1);
}

TEST_CASE("the timeline gives processes with one pid on one host a track each", "[identity]") {
  Job job;
  straggler_in_pid_namespaces(job);
  // Two processes without a rank (tools started in their own containers), pid 1 too.
  job.proc(-1, 1, "vm").origin(kFirstPidns + 9, 1, 6000).exit(2.0, 0);
  job.proc(-1, 1, "vm").origin(kFirstPidns + 10, 1, 6001).exit(2.0, 0);
  const Context c(job.load_it(), job.logs());
  const Diagnosis d = diagnose(c);
  REQUIRE(d.verdict.initiating_rank == 2);
  const auto timeline = nlohmann::json::parse(timeline_json(d, c));
  std::set<std::pair<long, long>> tracks;
  std::vector<std::string> names;
  for (const auto& e : timeline["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["args"]["name"] != "verdict") {
      tracks.insert({e["pid"].get<long>(), e["tid"].get<long>()});
      names.push_back(e["args"]["name"].get<std::string>());
    }
  std::string all;
  for (const auto& n : names) all += n + "; ";
  INFO(all);
  CHECK(tracks.size() == 6);
  CHECK(std::set<std::string>(names.begin(), names.end()).size() == 6);
  // Only the late rank's track says so, although every rank is pid 1 on vm.
  CHECK(std::count_if(names.begin(), names.end(), [](const std::string& n) {
          return n.find("late") != std::string::npos;
        }) == 1);
}

namespace {

constexpr std::uint64_t kNetnsA = 4026532500ull, kNetnsB = 4026532600ull;

// Processes of one host "vm" in network namespaces of their own (pods without hostNetwork,
// `docker run` without --net=host): each namespace has its own 127.0.0.1.
Proc& in_netns(Job& job, int rank, int pid, std::uint64_t netns, const char* run_id) {
  Proc& p = job.proc(rank, pid, "vm", run_id);
  p.origin(kFirstPidns + static_cast<std::uint64_t>(pid), 1, 7000 + static_cast<std::uint64_t>(pid));
  p.header().origin.netns_inode = netns;
  p.master("127.0.0.1", kPort);
  p.header().ident.world_size = 2;
  return p;
}

// A store connect to 127.0.0.1:kPort, made or failed with err.
rdzv_record loopback_connect(double t, int err, std::uint16_t local_port) {
  rdzv_record r = make_record(RDZV_EV_CONNECT, RDZV_OP_CONNECT, t);
  r.flags = RDZV_F_STORE;
  r.ret = err ? -1 : 0;
  r.err = err;
  r.dur_ns = 1'000'000;
  r.u.net.peer = ipv4(127, 0, 0, 1, kPort);
  if (!err) r.u.net.local = ipv4(127, 0, 0, 1, local_port);
  return r;
}

}  // namespace

TEST_CASE("two jobs each on 127.0.0.1:29500 of their own network namespace are no collision",
          "[identity][netns]") {
  // Before loopback endpoints were told apart by namespace: rdzv_collision, "jobs a, b joined
  // the same rendezvous endpoint 127.0.0.1:29500".
  Job job;
  int pid = 100;
  for (auto [netns, run_id] : {std::pair{kNetnsA, "job-a"}, std::pair{kNetnsB, "job-b"}}) {
    in_netns(job, 0, ++pid, netns, run_id).bind(0.9, 0).listen(0.9).add(loopback_connect(1.0, 0, 40000)).exit(3.0, 0);
    in_netns(job, 1, ++pid, netns, run_id).add(loopback_connect(1.0, 0, 40001)).exit(3.0, 0);
  }
  Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::Healthy);
  for (const Finding& f : d.findings) CHECK(f.cls != FailureClass::RdzvCollision);
}

TEST_CASE("two jobs on 127.0.0.1:29500 of one network namespace are still a collision", "[identity][netns]") {
  Job job;
  int pid = 100;
  for (const char* run_id : {"job-a", "job-b"}) {
    in_netns(job, 0, ++pid, kNetnsA, run_id).add(loopback_connect(1.0, 0, 40000)).exit(3.0, 0);
    in_netns(job, 1, ++pid, kNetnsA, run_id).add(loopback_connect(1.0, 0, 40001)).exit(3.0, 1);
  }
  CHECK(job.diagnose_it().verdict.cls == FailureClass::RdzvCollision);
}

TEST_CASE("refused on 127.0.0.1 in one network namespace is not refused by the store of another",
          "[identity][netns]") {
  // Namespace A: rank 0's store and rank 1 connected to it. Namespace B: rank 1 of the other
  // job, refused on its own 127.0.0.1:29500 where nothing listens. The store of A was never
  // reachable from B: no store_unreachable (it was, before stores were matched by namespace).
  Job job;
  in_netns(job, 0, 101, kNetnsA, "job-a").bind(0.9, 0).listen(0.9).add(loopback_connect(1.0, 0, 40000)).exit(6.0, 1);
  in_netns(job, 1, 102, kNetnsA, "job-a").add(loopback_connect(1.0, 0, 40001)).exit(6.0, 1);
  Proc& lost = in_netns(job, 1, 103, kNetnsB, "job-b");
  for (int i = 0; i < 4; ++i) lost.add(loopback_connect(1.0 + i, ECONNREFUSED, 0));
  lost.exit(5.5, 1);
  const Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls != FailureClass::StoreUnreachable);
  for (const Finding& f : d.findings) CHECK(f.cls != FailureClass::StoreUnreachable);
  // The same refusals inside namespace A, where the store listened: store_unreachable.
  Job same;
  in_netns(same, 0, 101, kNetnsA, "").bind(0.9, 0).listen(0.9).add(loopback_connect(1.0, 0, 40000)).exit(6.0, 1);
  Proc& refused = in_netns(same, 1, 103, kNetnsA, "");
  for (int i = 0; i < 4; ++i) refused.add(loopback_connect(1.0 + i, ECONNREFUSED, 0));
  refused.exit(5.5, 1);
  CHECK(same.diagnose_it().verdict.cls == FailureClass::StoreUnreachable);
}

namespace {

// A send on a store socket to 127.0.0.1:kPort from local_port, done or failed with err.
rdzv_record loopback_send(double t, int err, std::uint16_t local_port) {
  rdzv_record r = make_record(RDZV_EV_SEND, RDZV_OP_SEND, t);
  r.flags = RDZV_F_STORE;
  r.ret = err ? -1 : 8;
  r.err = err;
  r.u.net.peer = ipv4(127, 0, 0, 1, kPort);
  r.u.net.local = ipv4(127, 0, 0, 1, local_port);
  return r;
}

std::string all_evidence(const Diagnosis& d) {
  std::string out = d.verdict.summary + "\n";
  for (const Finding& f : d.findings)
    for (const std::string& line : f.evidence) out += line + "\n";
  return out;
}

}  // namespace

TEST_CASE("a late store in one network namespace is not hidden by an early store on the same loopback port "
          "of another", "[identity][netns]") {
  // Before store_not_ready matched stores by namespace, job-b's store (listening at 0.5) made
  // every refusal of job-a look like one after its store was up: no store_not_ready at all.
  // job-a's client gives up (its connect timeout) before its store listens: a client that
  // connected once the store was up would have survived the late start (issue 32).
  Job job;
  in_netns(job, 0, 201, kNetnsB, "job-b").bind(0.5, 0).listen(0.5).add(loopback_connect(0.6, 0, 40100)).exit(9.0, 0);
  in_netns(job, 1, 202, kNetnsB, "job-b").add(loopback_connect(0.6, 0, 40101)).exit(9.0, 0);
  Proc& client = in_netns(job, 1, 102, kNetnsA, "job-a");
  for (int i = 0; i < 4; ++i) client.add(loopback_connect(1.0 + i, ECONNREFUSED, 0));
  client.exit(4.5, 1);
  in_netns(job, 0, 101, kNetnsA, "job-a").bind(4.9, 0).listen(4.9).add(loopback_connect(5.0, 0, 40000)).exit(7.0, 1);
  const Diagnosis d = job.diagnose_it();
  INFO(all_evidence(d));
  CHECK(d.verdict.cls == FailureClass::StoreNotReady);
  CHECK(d.verdict.initiating_rank == 0);
  CHECK(d.verdict.summary.find("pid 101") != std::string::npos);
}

TEST_CASE("ranks refused on a loopback MASTER_ADDR while the store listens on another namespace's loopback: "
          "store_not_ready, saying why", "[identity][netns]") {
  // One job across two containers with their own network, MASTER_ADDR=127.0.0.1: rank 0's
  // store listens on its own loopback, rank 1 is refused on its own.
  Job job;
  in_netns(job, 0, 101, kNetnsA, "job").bind(0.9, 0).listen(0.9).add(loopback_connect(1.0, 0, 40000)).exit(6.0, 1);
  Proc& lost = in_netns(job, 1, 102, kNetnsB, "job");
  for (int i = 0; i < 4; ++i) lost.add(loopback_connect(1.0 + i, ECONNREFUSED, 0));
  lost.exit(5.5, 1);
  const Diagnosis d = job.diagnose_it();
  const std::string words = all_evidence(d);
  INFO(words);
  CHECK(d.verdict.cls == FailureClass::StoreNotReady);
  CHECK(words.find("loopback of another network namespace") != std::string::npos);
  CHECK(d.verdict.next_step.find("not 127.0.0.1") != std::string::npos);
}

TEST_CASE("a broken pipe on loopback is blamed on the store of its own network namespace", "[identity][netns]") {
  // Namespace B's store and client stay up; namespace A's store is killed and A's client then
  // gets EPIPE. Before peers were matched by namespace, B's store (listed first) was taken for
  // A's peer: alive, so the cause read as the TCPStore bug instead of peer_died.
  Job job;
  in_netns(job, 0, 51, kNetnsB, "job-b").bind(0.9, 0).listen(0.9).add(loopback_connect(1.0, 0, 40100)).exit(9.0, 0);
  in_netns(job, 1, 52, kNetnsB, "job-b").add(loopback_connect(1.0, 0, 40101)).exit(9.0, 0);
  Proc& store = in_netns(job, 0, 101, kNetnsA, "job-a");
  store.bind(0.9, 0).listen(0.9).add(loopback_connect(1.0, 0, 40000)).add(loopback_send(2.0, 0, 40000));
  // no exit record: SIGKILL
  in_netns(job, 1, 102, kNetnsA, "job-a").add(loopback_connect(1.0, 0, 40001)).add(loopback_send(2.5, EPIPE, 40001)).exit(2.6, 1);
  const Diagnosis d = job.diagnose_it();
  INFO(all_evidence(d));
  CHECK(d.verdict.cls == FailureClass::BrokenPipe);
  CHECK(d.verdict.cause == "peer_died");
  CHECK(d.verdict.summary.find("pid 101") != std::string::npos);
}
