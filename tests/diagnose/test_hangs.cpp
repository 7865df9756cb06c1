// Hangs ended with no error (issue 27): the calls in flight in the trace files say who waited
// on whom when the job was cancelled or killed.
#include <signal.h>

#include <cerrno>

#include "job_builder.h"
#include "report/report.h"

using namespace rdzvscope;
using namespace rdzvscope::test;

namespace {

// World size 4; rank 3 never reaches the store (stuck before init_process_group); ranks 0-2
// joined the store at 6.5 s and were still in a store wait when every rank was ended at ~15 s.
// with_slots false: the same job written by a recorder without in-flight slots.
void cancelled_while_waiting_for_rank_3(Job& job, bool with_slots = true) {
  auto& r0 = job.proc(0, 100);
  r0.bind(6.4, 0).listen(6.4).connect(6.5, 0).accept(6.5, 40000).accept(6.5, 40001).accept(6.5, 40002);
  if (with_slots) r0.inflight(15.0, RDZV_EV_SEND, RDZV_OP_SEND, -1);
  for (int r : {1, 2}) {
    auto& p = job.proc(r, 100 + r);
    p.connect(6.5, 0, kPort, 0.001, static_cast<std::uint16_t>(40000 + r)).io(RDZV_EV_SEND, 6.51, 22, 0);
    if (with_slots) p.inflight(6.52);
  }
  job.proc(3, 103);  // its PROC_START only
}

// Rank 0 on `host` hosts the store, ranks 1-3 joined it at 7.6 s; its last record at 7.7 s.
Proc& store_host_joined(Job& job, const std::string& host = "node0") {
  auto& r0 = job.proc(0, 100, host);
  r0.bind(7.5, 0).listen(7.5).connect(7.6, 0).accept(7.6, 40001).accept(7.6, 40002).accept(7.6, 40003);
  r0.serve(RDZV_EV_RECV, 7.7, 22, 40001);
  return r0;
}

// Rank r on `host`, connected to the store at 7.6 s, sent a request at 8.2 s.
Proc& client_that_asked(Job& job, int r, const std::string& host = "node0") {
  auto& p = job.proc(r, 100 + r, host);
  p.connect(7.6, 0, kPort, 0.001, static_cast<std::uint16_t>(40000 + r)).io(RDZV_EV_SEND, 8.2, 22, 0);
  return p;
}

// Every rank joined; rank 0, the store host, last did anything at 7.7 s; ranks 1-3 each sent
// a request and waited for its reply from 8.2 s on.
void store_host_stopped(Job& job) {
  store_host_joined(job);
  for (int r : {1, 2, 3})  // on the connection it sent on
    client_that_asked(job, r).inflight(8.2, RDZV_EV_POLL, RDZV_OP_POLL, 1800000, 0, kPort, /*fd=*/7);
}

// The store host's node cut off after every rank joined (e2e store_node_dropped): rank 0 on
// node0 hosts the store; ranks 1-3, on node1, each sent a request at 8.2 s and waited for its
// reply. Rank 0's own records stop at 7.7 s (each socket's first calls), but its store sockets
// kept receiving (its server reading its own client's requests, its client the replies) until
// served_s. clients_host: where ranks 1-3 run. paired: every rank made its gloo pairs at
// 7.65 s (the rendezvous completed, as in the real job).
void store_node_cut_off(Job& job, double served_s, const std::string& clients_host = "node1", bool paired = false) {
  auto& r0 = store_host_joined(job).store_recv_at(served_s);
  if (paired) r0.pair(7.65, 20, true);
  for (int r : {1, 2, 3}) {
    auto& p = client_that_asked(job, r, clients_host);
    if (paired) p.pair(7.65, 20, r % 2 == 0);
    p.inflight(8.2, RDZV_EV_POLL, RDZV_OP_POLL, 1800000, 0, kPort, /*fd=*/7);
    p.store_recv_at(8.1);  // their last reply, before the cut
  }
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// store_unresponsive, cause network, naming rank 0 on node0 (the cut-off jobs above and below).
void check_network_verdict(const Diagnosis& d, const std::string& confidence) {
  CHECK(d.verdict.cls == FailureClass::StoreUnresponsive);
  CHECK(d.verdict.cause == std::optional<std::string>("network"));
  CHECK(d.verdict.initiating_rank == 0);
  CHECK(d.verdict.initiating_host == "node0");
  CHECK(d.verdict.confidence == confidence);
}

const RankJoin& row_of(const JoinStatus& s, int rank) {
  for (const RankJoin& j : s.ranks)
    if (j.rank == rank) return j;
  FAIL("no row for rank " << rank);
  throw;
}

}  // namespace

TEST_CASE("cancelled while the others waited for a rank that never came: straggler_timeout with that rank, "
          "before any timeout fired",
          "[rules][hangs]") {
  Job job;
  cancelled_while_waiting_for_rank_3(job);
  const Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  CHECK(d.verdict.initiating_rank == 3);
  CHECK(d.verdict.summary.find("rank 3 never reached the store") != std::string::npos);
  CHECK(d.verdict.summary.find("cancelled before any timeout fired") != std::string::npos);
  // They waited from 6.5 s until at least 15 s (rank 0's last call began then): 8.5 s of 1800.
  CHECK(d.verdict.summary.find("at least 8.50 s of their 1800 s timeout") != std::string::npos);
  CHECK(d.evidence.late_ranks == std::vector<int>{3});
}

TEST_CASE("the same job without in-flight slots (an older recorder) names nobody", "[rules][hangs]") {
  Job job;
  cancelled_while_waiting_for_rank_3(job, false);
  const Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls != FailureClass::StragglerTimeout);
  CHECK_FALSE(d.verdict.initiating_rank.has_value());
}

TEST_CASE("a rank still in its store wait when another crashed is not called a straggler by the hang rule",
          "[rules][hangs]") {
  Job job;
  cancelled_while_waiting_for_rank_3(job);
  job.proc(4, 104).exit(3.0, 1);  // a fifth process with its own story: an error exit
  job.world_size(5);
  const Diagnosis d = job.diagnose_it();
  CHECK_FALSE((d.verdict.cls == FailureClass::StragglerTimeout && d.verdict.initiating_rank == 3 &&
               d.verdict.summary.find("cancelled before any timeout fired") != std::string::npos));
}

TEST_CASE("a store host that stopped answering: store_unresponsive with the store host, low confidence when "
          "how long they waited is not in the traces",
          "[rules][hangs]") {
  Job job;
  store_host_stopped(job);
  const Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StoreUnresponsive);
  CHECK(d.verdict.initiating_rank == 0);
  CHECK(d.verdict.confidence == "low");
  CHECK(d.verdict.summary.find("for how long is not in the traces") != std::string::npos);
}

TEST_CASE("a store host that stopped answering, the clients killed by a traced launcher 10 s later: medium "
          "confidence, with how long they waited",
          "[rules][hangs]") {
  Job job;
  store_host_stopped(job);
  auto& agent = job.proc(-1, 90).cmdline("/usr/bin/python3 /usr/bin/torchrun --nnodes 1 train.py");
  for (int r : {1, 2, 3}) agent.signal(18.2, 100 + r, SIGKILL, RDZV_OP_KILL);
  const Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StoreUnresponsive);
  CHECK(d.verdict.initiating_rank == 0);
  CHECK(d.verdict.confidence == "medium");
  CHECK(d.verdict.summary.find("waited 10.00 s for the store's reply") != std::string::npos);
}

TEST_CASE("a store host seen running after its clients began to wait is not unresponsive", "[rules][hangs]") {
  Job alive;
  auto& r0 = alive.proc(0, 100);
  r0.bind(7.5, 0).listen(7.5).connect(7.6, 0).accept(7.6, 40001).accept(7.6, 40002).accept(7.6, 40003);
  r0.inflight(12.0, RDZV_EV_SEND, RDZV_OP_SEND, -1);  // its own client thread, later
  for (int r : {1, 2, 3}) alive.proc(r, 100 + r).connect(7.6, 0).inflight(8.2);
  CHECK(alive.diagnose_it().verdict.cls != FailureClass::StoreUnresponsive);
}

TEST_CASE("a store host stopped while its clients' last requests went out, its own client thread asking too: "
          "store_unresponsive",
          "[rules][hangs]") {
  // e2e.torch2.13.store_unresponsive on a loaded machine (fresh-clone run at c795283): the
  // host's own client thread began its wait 0.09 ms after the first client's, and its server
  // answered a last request 20 ms after; then nothing, and every wait stayed in flight.
  Job job;
  auto& r0 = job.proc(0, 100);
  r0.bind(7.5, 0).listen(7.5).connect(7.6, 0).accept(7.6, 40001).accept(7.6, 40002).accept(7.6, 40003);
  r0.serve(RDZV_EV_RECV, 8.22, 22, 40002);
  r0.inflight(8.20009);
  for (int r : {1, 2, 3}) {
    auto& p = job.proc(r, 100 + r);
    p.connect(7.6, 0, kPort, 0.001, static_cast<std::uint16_t>(40000 + r)).io(RDZV_EV_SEND, 8.2, 22, 0);
    p.inflight(8.2 + 0.005 * (r - 1));
  }
  const Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StoreUnresponsive);
  CHECK(d.verdict.initiating_rank == 0);
  bool worded = false;
  for (const Finding& f : d.findings)
    for (const std::string& e : f.evidence) worded = worded || e.find("as they began to wait (from") != std::string::npos;
  CHECK(worded);
}

TEST_CASE("a store host that exited is not unresponsive", "[rules][hangs]") {
  Job dead;
  auto& r0 = dead.proc(0, 100);
  r0.bind(7.5, 0).listen(7.5).connect(7.6, 0).accept(7.6, 40001).exit(8.0, 1);
  for (int r : {1, 2, 3}) dead.proc(r, 100 + r).connect(7.6, 0).inflight(8.2);
  CHECK(dead.diagnose_it().verdict.cls != FailureClass::StoreUnresponsive);
}

TEST_CASE("how a process ended while it waited, in words", "[rules][hangs]") {
  Job job;
  store_host_stopped(job);
  auto& agent = job.proc(-1, 90).cmdline("/usr/bin/python3 /usr/bin/torchrun --nnodes 1 train.py");
  for (int r : {1, 2, 3}) agent.signal(18.2, 100 + r, SIGTERM, RDZV_OP_KILL);
  const TraceInputs& t = job.load_it();
  Context c(t, job.logs());
  const ProcessFacts* r1 = c.rank(1);
  REQUIRE(r1);
  REQUIRE(r1->store_wait);
  const std::string words = ending_words(c, *r1);
  CHECK(words.find("with SIGTERM at") != std::string::npos);
  CHECK(words.find("while waiting in a wait (poll, timeout 1800 s) on its store connection to 10.0.0.1:29500 "
                   "for 10.00 s") != std::string::npos);
  const ProcessFacts* r0 = c.rank(0);
  REQUIRE(r0);
  CHECK(ending_words(c, *r0).find("has no end recorded (killed, or still running when the traces were read)") !=
        std::string::npos);
}

TEST_CASE("a rank still blocked in its store connect when the job was ended, the others at the store: "
          "store_unreachable with that rank",
          "[rules][hangs]") {
  Job job;
  auto& r0 = job.proc(0, 100);
  r0.bind(1.0, 0).listen(1.0).connect(1.1, 0).accept(1.1, 40001).accept(1.1, 40002);
  r0.inflight(20.0, RDZV_EV_SEND, RDZV_OP_SEND, -1);
  for (int r : {1, 2}) job.proc(r, 100 + r).connect(1.1, 0, kPort, 0.001, static_cast<std::uint16_t>(40000 + r)).inflight(1.2);
  job.proc(3, 103).inflight(1.5, RDZV_EV_CONNECT, RDZV_OP_CONNECT, -1);
  const Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StoreUnreachable);
  CHECK(d.verdict.initiating_rank == 3);
  CHECK(d.verdict.summary.find("rank 3 never completed its connect to the store at 10.0.0.1:29500") !=
        std::string::npos);
}

TEST_CASE("every client still blocked in its store connect, none ever reached the store: connect_timeout",
          "[rules][hangs]") {
  Job job;
  job.proc(0, 100).bind(1.0, 0).listen(1.0);
  for (int r : {1, 2, 3}) job.proc(r, 100 + r).inflight(1.5, RDZV_EV_CONNECT, RDZV_OP_CONNECT, -1);
  const Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::ConnectTimeout);
  CHECK(d.verdict.initiating_rank == 1);
  CHECK(d.verdict.summary.find("no rank ever reached it") != std::string::npos);
}

// The live view of the same two hangs (watch): one model, wait_for.h, read by the rules above
// and by watch's headline and metrics.
TEST_CASE("watch while the others wait for a rank that never came: the headline and the metrics name it",
          "[rules][hangs][watch]") {
  Job job;
  cancelled_while_waiting_for_rank_3(job);
  const Context c(job.load_it(), job.logs());
  const JoinStatus s = join_status(c, at(c, 20.0));
  REQUIRE(s.wait_for);
  CHECK(s.wait_for->on == WaitFor::On::MissingRanks);
  CHECK(s.wait_for->awaited_ranks() == std::vector<int>{3});
  CHECK_THAT(wait_headline(s), Catch::StartsWith("ranks 0-2 wait for rank 3 (started, not at the store yet) since "));
  const RankJoin& r1 = row_of(s, 1);
  REQUIRE(r1.blocked_in);
  CHECK(std::string(blocked_call_id(*r1.blocked_in)) == "store_reply");
  // Its request went out on fd 7, its wait is on fd 9: not the reply to that request.
  CHECK(blocked_words(r1, at(c, 20.0)) == "no reply from the store at 10.0.0.1:29500 for 13 s (in poll, timeout 1800 s)");
  const std::string text = prometheus_text(s, diagnose(c), at(c, 20.0));
  CHECK_THAT(text, Catch::Contains("rdzvscope_awaited_rank_info{rank=\"3\",host=\"node0\",awaited_as=\"missing_rank\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("rdzvscope_rank_blocked_seconds{rank=\"1\",host=\"node0\",call=\"store_reply\"} 13."));
  CHECK_THAT(text, Catch::Contains("rdzvscope_waiting_ranks 3\n"));
  CHECK_THAT(text, Catch::Contains("# TYPE rdzvscope_waiting_seconds gauge\n"));
  const auto lines = join_status_lines(s, diagnose(c), 1000);
  CHECK(lines.front() == wait_headline(s));
}

TEST_CASE("watch while the store host does not answer: the headline names the store host once the silence is "
          "longer than a reply takes",
          "[rules][hangs][watch]") {
  Job job;
  store_host_stopped(job);
  const Context c(job.load_it(), job.logs());
  // 0.8 s after the requests: a store may still answer.
  CHECK_FALSE(join_status(c, at(c, 9.0)).wait_for);
  const JoinStatus s = join_status(c, at(c, 20.0));
  REQUIRE(s.wait_for);
  CHECK(s.wait_for->on == WaitFor::On::StoreHost);
  CHECK(s.wait_for->awaited_ranks() == std::vector<int>{0});
  CHECK_THAT(wait_headline(s), Catch::StartsWith("ranks 1-3 wait for the store host, rank 0 (node0 pid 100): no "
                                                 "reply for 12 s, and its process has shown nothing since "));
  const RankJoin& r2 = row_of(s, 2);
  CHECK(blocked_words(r2, at(c, 20.0)) ==
        "sent a request (22 bytes) to the store at 10.0.0.1:29500 12 s ago, no reply (in poll, timeout 1800 s)");
  const std::string text = prometheus_text(s, diagnose(c), at(c, 20.0));
  CHECK_THAT(text, Catch::Contains("rdzvscope_awaited_rank_info{rank=\"0\",host=\"node0\",awaited_as=\"store_host\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("rdzvscope_waiting_ranks 3\n"));
  // The rank table says it per rank.
  bool said = false;
  for (const auto& line : join_status_lines(s, diagnose(c), 1000))
    said = said || line.find("sent a request (22 bytes) to the store at 10.0.0.1:29500 12 s ago, no reply") != std::string::npos;
  CHECK(said);
}

TEST_CASE("the store host's node cut off while its process kept serving its own client: store_unresponsive, cause "
          "network, the network path as the next step, never a frozen process",
          "[rules][hangs]") {
  Job job;
  store_node_cut_off(job, 20.0);
  const Diagnosis d = job.diagnose_it();
  // How long they waited is known now: the host's store traffic ran until 20 s.
  check_network_verdict(d, "medium");
  const std::string& s = d.verdict.summary;
  CHECK(has(s, "the store host's node node0 was cut off from ranks 1-3"));
  CHECK(has(s, "the store's process there, rank 0 (node0 pid 100), kept running and serving its own node"));
  CHECK(has(s, "waited at least 11.80 s for the store's reply"));
  CHECK(has(s, "11.80 s after the last of them asked"));
  CHECK_FALSE(has(s, "stopped (SIGSTOP"));
  CHECK_FALSE(has(s, "showed nothing"));
  CHECK(has(d.verdict.next_step, "check the network path"));
  CHECK(has(d.verdict.next_step, "node0 (10.0.0.1)"));
  CHECK(has(d.verdict.next_step, "`ping 10.0.0.1`"));
  CHECK_FALSE(has(d.verdict.next_step, "/proc/PID/status"));
  bool host_line = false, client_line = false;
  for (const Finding& f : d.findings)
    for (const std::string& e : f.evidence) {
      host_line = host_line || has(e, "its process kept running: its store sockets received until");
      client_line = client_line || has(e, "rank 2 (node1 pid 102) was waiting in");
    }
  CHECK(host_line);
  CHECK(client_line);
}

TEST_CASE("a store host whose store served its own node only moments after the others asked is not called cut off",
          "[rules][hangs]") {
  // 1 s after the last request: a reply may have been under way; the host ran after they
  // asked, which no frozen store does either: no verdict.
  Job job;
  store_node_cut_off(job, 9.2);
  CHECK(job.diagnose_it().verdict.cls != FailureClass::StoreUnresponsive);
}

TEST_CASE("a store host serving its own client while clients on its own host got nothing is not a network cut",
          "[rules][hangs]") {
  // One host: nothing lies between them and the store but loopback.
  Job job;
  store_node_cut_off(job, 20.0, "node0");
  const Diagnosis d = job.diagnose_it();
  CHECK_FALSE((d.verdict.cls == FailureClass::StoreUnresponsive && d.verdict.cause == std::optional<std::string>("network")));
}

TEST_CASE("a silent store host with its clients on other nodes: stopped or frozen, or its node cut off, both said",
          "[rules][hangs]") {
  // The host's own store traffic ended before the others asked (store_recv_at 7.7): a frozen
  // process and a process that sent its store nothing while its node was cut off look alike.
  Job job;
  store_host_joined(job).store_recv_at(7.7);
  for (int r : {1, 2, 3})
    client_that_asked(job, r, "node1").inflight(8.2, RDZV_EV_POLL, RDZV_OP_POLL, 1800000, 0, kPort, /*fd=*/7);
  const Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StoreUnresponsive);
  CHECK_FALSE(d.verdict.cause);
  CHECK(has(d.verdict.summary, "stopped (SIGSTOP, a debugger), frozen (a node swapping) or blocked, not dead; or its "
                               "node cut off from theirs"));
  CHECK(has(d.verdict.next_step, "check the network path to its node (10.0.0.1)"));
}

TEST_CASE("a stopped store host with its clients on its own node: no network in the words", "[rules][hangs]") {
  Job job;
  store_host_stopped(job);
  const Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StoreUnresponsive);
  CHECK_FALSE(has(d.verdict.summary, "cut off"));
  CHECK_FALSE(has(d.verdict.next_step, "network"));
}

TEST_CASE("watch while the store host's node is cut off: the headline says its process runs and names the network",
          "[rules][hangs][watch]") {
  Job job;
  store_node_cut_off(job, 19.5);
  const Context c(job.load_it(), job.logs());
  const JoinStatus s = join_status(c, at(c, 20.0));
  REQUIRE(s.wait_for);
  CHECK(s.wait_for->on == WaitFor::On::StoreHost);
  CHECK(s.wait_for->network);
  CHECK(s.wait_for->awaited_ranks() == std::vector<int>{0});
  CHECK_THAT(wait_headline(s), Catch::StartsWith("ranks 1-3 wait for the store host, rank 0 (node0 pid 100): no "
                                                 "reply for 12 s, while its process runs and its store still served "
                                                 "its own node at "));
  CHECK_THAT(wait_headline(s), Catch::EndsWith(": the network between them and its node"));
}

TEST_CASE("a store host cut off after the rendezvous completed: the hang came after it, and no rank is said to have "
          "failed first",
          "[rules][hangs]") {
  // e2e.torch2.13.store_node_dropped: the summary named the last client to leave a record
  // ("first on rank 3 ..., last seen at") and the next step sent the reader to its log, when
  // every client was still waiting and the store host is the one the verdict names.
  Job job;
  store_node_cut_off(job, 20.0, "node1", /*paired=*/true);
  const Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls == FailureClass::StoreUnresponsive);
  CHECK(d.verdict.cause == std::optional<std::string>("network"));
  CHECK_THAT(d.verdict.summary, Catch::StartsWith("the rendezvous completed at +"));
  CHECK(has(d.verdict.summary, " s (every rank reached the store and its peers); after it: the store "
                               "host's node node0 was cut off"));
  CHECK_FALSE(has(d.verdict.summary, "first on rank"));
  CHECK_THAT(d.verdict.next_step, Catch::StartsWith("not a start-up failure: check the network path"));
  CHECK(d.evidence.rendezvous_completed_ns);
}

namespace {

// The cut-off left alone until the clients' kernels gave up (the 1.13 job of the notes with
// tcp_retries2=5): ranks 1-3 on node1 sent at 8.2 s, their store receive, begun at 8.21 s,
// failed with ETIMEDOUT at 20.6 s and they exited 1; rank 0's store kept receiving until
// served_s.
void store_node_cut_off_until_the_kernels_gave_up(Job& job, const std::string& clients_host = "node1",
                                                  double served_s = 30.0) {
  store_host_joined(job).store_recv_at(served_s);
  for (int r : {1, 2, 3}) {
    rdzv_record failed = make_record(RDZV_EV_RECV, RDZV_OP_RECV, 8.21);
    failed.flags = RDZV_F_STORE;
    failed.ret = -1;
    failed.err = ETIMEDOUT;
    failed.dur_ns = 12'390'000'000ull;
    failed.u.net.peer = ipv4(10, 0, 0, 1, kPort);
    failed.u.net.local = ipv4(10, 0, 0, 2, static_cast<std::uint16_t>(40000 + r));
    client_that_asked(job, r, clients_host).add(failed).exit(20.7, 1);
  }
}

}  // namespace

TEST_CASE("the store host's node cut off until the clients' kernels gave their connections up: store_unresponsive, "
          "cause network, high confidence",
          "[rules][hangs]") {
  // Before: connect_timeout from the logs, at a garbage address 2.13 printed, or unknown.
  Job job;
  store_node_cut_off_until_the_kernels_gave_up(job);
  const Diagnosis d = job.diagnose_it();
  check_network_verdict(d, "high");
  // When the receives failed, not when they began (1.13's blocks until the kernel gives up).
  bool when = false;
  for (const Finding& f : d.findings)
    for (const std::string& e : f.evidence) when = when || has(e, "timed out at +20.7");
  CHECK(when);
  CHECK(has(d.verdict.summary, "the store host's node node0 was cut off from ranks 1-3: their store connections to it "
                               "timed out (ETIMEDOUT from"));
  CHECK(has(d.verdict.summary, "the store's process there, rank 0 (node0 pid 100), kept running"));
  CHECK_FALSE(has(d.verdict.summary, "stopped (SIGSTOP"));
  CHECK(has(d.verdict.next_step, "`ping 10.0.0.1`"));
}

TEST_CASE("clients whose store connections timed out while the store host's store had stopped receiving before: "
          "no network verdict from that alone",
          "[rules][hangs]") {
  // 15 s: after their receives began, before they failed.
  Job job;
  store_node_cut_off_until_the_kernels_gave_up(job, "node1", 15.0);
  const Diagnosis d = job.diagnose_it();
  CHECK_FALSE((d.verdict.cls == FailureClass::StoreUnresponsive && d.verdict.cause == std::optional<std::string>("network")));
}

TEST_CASE("clients on the store host's own node whose connections timed out are not a network cut",
          "[rules][hangs]") {
  Job job;
  store_node_cut_off_until_the_kernels_gave_up(job, "node0");
  const Diagnosis d = job.diagnose_it();
  CHECK_FALSE((d.verdict.cls == FailureClass::StoreUnresponsive && d.verdict.cause == std::optional<std::string>("network")));
}

TEST_CASE("a store receive that timed out (the kernel gave the connection up) is no connect timeout in the logs",
          "[rules][hangs][logs]") {
  // The lines of e2e.torch2.13.store_node_dropped_timed_out's clients (2.13 printed garbage
  // for the addresses). Before: connect_timeout, "connects to fdff:...:38562 timed out".
  Job job;
  for (int r : {1, 2, 3}) {
    const std::string file = "rank" + std::to_string(r) + ".log";
    job.log_line("[rank" + std::to_string(r) + "]:[W1204 20:44:30.000158886 TCPStore.cpp:138] [c10d] "
                 "recvValueWithTimeout failed on SocketImpl(fd=4, addr=[180:adfb:ff7f:0:6707:e796:9c55:0]:36035, "
                 "remote=[fdff:ffff:9c55:0:f0bc:e696:9c55:0]:38562): Connection timed out", r, file);
    job.log_line("torch.distributed.DistNetworkError: Connection timed out", r, file);
  }
  CHECK(job.diagnose_it().verdict.cls != FailureClass::ConnectTimeout);
}
