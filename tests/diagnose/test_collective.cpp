// The first collective after the rendezvous (issue 28): the per-rank fact derived from the
// pairs' I/O (model/collective_phase.h) and straggler_timeout's verdict on it.
#include <algorithm>

#include <fmt/format.h>

#include "job_builder.h"
#include "model/context.h"
#include "reader/names.h"
#include "report/report.h"

using namespace rdzvscope;
using namespace rdzvscope::test;

namespace {

// Four ranks that all reach the store at +1.0 s and make three pairs each at +1.2 s (fds 20-22,
// the first connected here, the others accepted), gloo's 8-byte opening on the connected one,
// and the timeout gloo sets on every pair (2 s). Ranks in `entering` send their first
// collective messages at +1.3 s; the others receive theirs (gloo's I/O thread reads them).
// Rank r of a world of `world`, at the store by +1.0 s (rank 0 hosts it).
Proc& at_the_store(Job& job, int r, int world = 4) {
  Proc& p = job.proc(r, 1000 + r);
  if (r == 0) {
    p.bind(0.9, 0).listen(0.9);
    for (int c = 1; c < world; ++c) p.accept(1.0, static_cast<std::uint16_t>(40000 + c));
  }
  return p.connect(1.0, 0, kPort, 0.001, static_cast<std::uint16_t>(40000 + r));
}

void joined_with_pairs(Job& job, std::vector<Proc*>& ps, const std::vector<int>& entering, int world = 4) {
  if (world != 4) job.world_size(world);
  for (int r = 0; r < world; ++r) {
    Proc& p = at_the_store(job, r, world);
    p.pair(1.2, 20, true).pair_io(RDZV_EV_SEND, 1.2, 20, 8).pair(1.2, 21, false).pair(1.2, 22, false);
    for (int fd = 20; fd <= 22; ++fd) p.pair_timeout(1.2, fd, 2000);
    if (std::find(entering.begin(), entering.end(), r) != entering.end())
      p.pair_io(RDZV_EV_SEND, 1.3, 21, 48).pair_io(RDZV_EV_SEND, 1.3, 22, 48);
    p.pair_io(RDZV_EV_RECV, 1.31, 21, 48);
    ps.push_back(&p);
  }
}

// Rank 2 stays away from the first collective (a checkpoint load after init_process_group):
// the others give up 2 s after entering and exit 1; rank 2 reads its pairs' ends as they go,
// wakes at +5.3 s and fails on the closed pairs.
void rank2_stalls(Job& job) {
  std::vector<Proc*> ps;
  joined_with_pairs(job, ps, {0, 1, 3});
  for (int r : {0, 1, 3}) ps[static_cast<std::size_t>(r)]->exit(3.3 + 0.01 * r, 1);
  ps[2]->pair_io(RDZV_EV_RECV, 3.35, 21, 0, 0, RDZV_F_ZERO_READ).exit(5.3, 1);
}

// As rank2_stalls, in a world of `world` ranks, rank 5 the one that stays away.
void rank5_stalls_among(Job& job, int world) {
  std::vector<Proc*> ps;
  std::vector<int> entering;
  for (int r = 0; r < world; ++r)
    if (r != 5) entering.push_back(r);
  joined_with_pairs(job, ps, entering, world);
  for (int r : entering) ps[static_cast<std::size_t>(r)]->exit(3.3 + 0.01 * r, 1);
  ps[5]->pair_io(RDZV_EV_RECV, 3.35, 21, 0, 0, RDZV_F_ZERO_READ).exit(5.3, 1);
}

}  // namespace

TEST_CASE("collective phase: the opening 8 bytes of a connected pair are no entry; a 48-byte message is") {
  Job job;
  rank2_stalls(job);
  const TraceInputs& t = job.load_it();
  const Context c(t, job.logs());
  REQUIRE(c.collective);
  const CollectivePhase& ph = *c.collective;
  REQUIRE(ph.first_failed);
  CHECK(ph.first_failed->proc->rank == 0);
  CHECK(ph.timeout_ms == 2000);
  REQUIRE(ph.not_entered.size() == 1);
  CHECK(ph.not_entered.front()->f->proc->rank == 2);
  CHECK_FALSE(ph.not_entered.front()->entered_ns);
  CHECK(ph.not_entered.front()->pairs == 3);
  CHECK(ph.not_entered.front()->peer_gone_ns);
  CHECK(ph.entered.size() == 3);
  for (const RankCollective* r : ph.entered) CHECK(r->entered_ns);
  // The ranks that waited in it did not die on their own: they failed waiting for rank 2.
  CHECK_FALSE(c.first_death());
}

TEST_CASE("straggler_timeout at the first collective names the rank that never entered it, not the first to fail") {
  Job job;
  rank2_stalls(job);
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  CHECK(d.verdict.initiating_rank == 2);
  CHECK(d.verdict.summary.find("rank 2 (node0 pid 1002) never entered the first collective after the rendezvous") !=
        std::string::npos);
  CHECK(d.verdict.summary.find("rank(s) 0, 1, 3 entered it") != std::string::npos);
  CHECK(d.verdict.summary.find("their timeout: 2.00 s") != std::string::npos);
  CHECK(d.verdict.next_step.find("after init_process_group") != std::string::npos);
  CHECK(d.verdict.next_step.find("read rank 0") == std::string::npos);
  CHECK(d.evidence.phase);
  for (const RankRow& row : d.ranks) {
    CHECK_FALSE(row.late);
    CHECK(row.stalled == (row.rank == 2));
    CHECK_FALSE(row.dead);
  }
  // No runner-up calls a rank that waited dead.
  for (const Finding& f : d.findings) CHECK(f.cls != FailureClass::RankDied);
}

namespace {

// Rank 2 dies of an exception right after init_process_group; the others read the end of
// their pairs with it and fail.
void rank2_died_after_init(Job& job) {
  std::vector<Proc*> ps;
  joined_with_pairs(job, ps, {0, 1, 3});
  ps[2]->exit(1.25, 1);
  for (int r : {0, 1, 3})
    ps[static_cast<std::size_t>(r)]->pair_io(RDZV_EV_RECV, 1.32, 20, 0, 0, RDZV_F_ZERO_READ).exit(1.4 + 0.01 * r, 1);
}

}  // namespace

TEST_CASE("a rank that died after init_process_group, before the first collective, is dead, not a straggler") {
  Job job;
  rank2_died_after_init(job);
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  CHECK(d.verdict.cls != FailureClass::StragglerTimeout);
  CHECK(d.verdict.initiating_rank == 2);
}

TEST_CASE("c10d's warning that a client socket's host name cannot be retrieved is no error a rank died of "
          "(matrix crash.node: every rank of a network without reverse zones prints it at its connect)") {
  Job job;
  rank2_died_after_init(job);
  for (int r = 0; r < 4; ++r)
    job.log_line("[W1204 21:01:55.103071751 socket.cpp:207] [c10d] The hostname of the client socket cannot be "
                 "retrieved. err=-3",
                 r, "rank" + std::to_string(r) + ".log");
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  CHECK(d.verdict.cls != FailureClass::Unknown);
  CHECK(d.verdict.initiating_rank == 2);
  CHECK_THAT(d.verdict.summary, Catch::Contains("died"));
  for (const RankRow& r : d.ranks) CHECK(r.first_error.find("reverse_lookup") == std::string::npos);
}

TEST_CASE("traces without the pairs' I/O (an older shim): no collective fact, no straggler at the first collective, "
          "no collective span in the views") {
  Job job;
  for (int r = 0; r < 4; ++r) {
    Proc& p = job.proc(r, 1000 + r);
    if (r == 0) p.bind(0.9, 0).listen(0.9).accept(1.0, 40001).accept(1.0, 40002).accept(1.0, 40003);
    p.connect(1.0, 0, kPort, 0.001, static_cast<std::uint16_t>(40000 + r)).peer_connect(1.2);
    p.exit(r == 2 ? 5.3 : 3.3, 1);
  }
  const TraceInputs& t = job.load_it();
  const Context c(t, job.logs());
  CHECK_FALSE(c.collective);
  const Diagnosis d = job.diagnose_it();
  CHECK(d.verdict.cls != FailureClass::StragglerTimeout);
  CHECK_FALSE(d.collective);
  for (const RankRow& r : d.ranks) CHECK_FALSE(r.collective);
  CHECK(diagnosis_text(d).find("\nCOLLECTIVE ") == std::string::npos);
  CHECK(diagnosis_html(d).find("coll-legend") == std::string::npos);
}

TEST_CASE("logs only: gloo's collective timeouts name the rank that printed none") {
  Job job;
  job.log_line("RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting "
               "2000ms for recv operation to complete", 0, "rank0.log");
  job.log_line("RuntimeError: [./gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 2000ms for recv "
               "operation to complete", 1, "rank1.log");
  job.log_line("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer "
               "[127.0.0.1]:37601", 2, "rank2.log");
  job.log_line("RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:129] Timed out waiting "
               "2000ms for send operation to complete", 3, "rank3.log");
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  CHECK(d.verdict.initiating_rank == 2);
  CHECK(d.verdict.summary.find("rank(s) 0, 1, 3 timed out in a collective after the rendezvous after their 2.00 s") !=
        std::string::npos);
}

TEST_CASE("logs only: two ranks without a collective timeout are both named, neither is chosen") {
  // Rank 0 entered the all_reduce last and found its pair with rank 1 closed (rank 1 had timed
  // out and exited) before its own timer fired; rank 2 never entered. Both logs read alike.
  Job job;
  job.log_line("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer "
               "[127.0.0.1]:37601", 0, "rank0.log");
  job.log_line("RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting "
               "2000ms for recv operation to complete", 1, "rank1.log");
  job.log_line("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer "
               "[127.0.0.1]:37602", 2, "rank2.log");
  job.log_line("RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting "
               "2000ms for recv operation to complete", 3, "rank3.log");
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  CHECK_FALSE(d.verdict.initiating_rank);
  CHECK(d.verdict.confidence == "low");
  CHECK(d.verdict.summary.find("ranks 0, 2 logged no timeout: one of them never entered the collective") !=
        std::string::npos);
  CHECK(d.verdict.next_step.find("what ranks 0, 2 did after init_process_group") != std::string::npos);
}

TEST_CASE("a rank frozen after init_process_group (no record after its pairs) whose pairs stayed open is a straggler") {
  Job job;
  std::vector<Proc*> ps;
  joined_with_pairs(job, ps, {0, 1, 3});
  // Rank 2 is stopped (SIGSTOP) and killed much later: no record after +1.31 s, no exit. No
  // rank that waited read the end of a pair before the first failure: its sockets were open.
  for (int r : {0, 1, 3}) ps[static_cast<std::size_t>(r)]->exit(3.3 + 0.01 * r, 1);
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  CHECK(d.verdict.initiating_rank == 2);
}

namespace {

// gloo's full mesh with the two ends of every pair as the kernel gives them: rank r listens on
// 10.0.0.2:50000+r, and for ranks a < b, b connects to a from 10.0.0.2:42000+10b+a. Each rank's
// pair to rank q is on descriptor 20+q. Every rank reaches the store at +1.0 s and makes its
// pairs at +1.2 s (the connecting side writes gloo's 8-byte opening); the ranks in `entering`
// send their first collective messages on every pair at +1.3 s.
void joined_in_a_mesh(Job& job, std::vector<Proc*>& ps, const std::vector<int>& entering) {
  for (int r = 0; r < 4; ++r) {
    Proc& p = at_the_store(job, r);
    for (int q = 0; q < 4; ++q) {
      if (q == r) continue;
      const int lo = std::min(r, q), hi = std::max(r, q);
      const auto listener = ipv4(10, 0, 0, 2, static_cast<std::uint16_t>(50000 + lo));
      const auto connector = ipv4(10, 0, 0, 2, static_cast<std::uint16_t>(42000 + 10 * hi + lo));
      const bool connects = r == hi;
      p.pair_ends(20 + q, connects ? connector : listener, connects ? listener : connector);
      p.pair(1.2, 20 + q, connects).pair_timeout(1.2, 20 + q, 2000);
      if (connects) p.pair_io(RDZV_EV_SEND, 1.2, 20 + q, 8);
    }
    if (std::find(entering.begin(), entering.end(), r) != entering.end())
      for (int q = 0; q < 4; ++q)
        if (q != r) p.pair_io(RDZV_EV_SEND, 1.3, 20 + q, 48);
    ps.push_back(&p);
  }
}

}  // namespace

// The views' span of each rank (RankRow::collective), found once from the model.
namespace {

const RankRow& row_of_rank(const Diagnosis& d, int rank) {
  for (const RankRow& r : d.ranks)
    if (r.rank == rank) return r;
  FAIL("no row for rank " << rank);
  return d.ranks.front();
}

// The text report's COLLECTIVE section, up to the next blank line.
std::string collective_section(const std::string& text) {
  const auto at = text.find("\nCOLLECTIVE ");
  if (at == std::string::npos) return "";
  return text.substr(at + 1, text.find("\n\n", at + 1) - at - 1);
}

std::string line_of_rank(const std::string& section, int rank) {
  std::size_t pos = 0;
  while ((pos = section.find('\n', pos)) != std::string::npos) {
    const std::size_t end = section.find('\n', pos + 1);
    const std::string line = section.substr(pos + 1, end == std::string::npos ? std::string::npos : end - pos - 1);
    if (line.rfind(fmt::format(" {:>5}  ", rank), 0) == 0) return line;
    pos += 1;
  }
  return "";
}

}  // namespace

TEST_CASE("a frozen rank stays the straggler when a waiter's pairs end before its own exit record") {
  Job job;
  std::vector<Proc*> ps;
  joined_in_a_mesh(job, ps, {0, 2, 3});
  // Rank 1 is stopped right after init_process_group and killed long after (no record, no
  // exit). Rank 3 times out first and closes its pairs on the way out: ranks 0 and 2 read their
  // end at +3.30 s, before rank 3's exit record at +3.32 s; then they exit too. The ends they
  // read are rank 3's, not rank 1's: rank 1's pairs stayed open.
  ps[0]->pair_io(RDZV_EV_RECV, 3.30, 23, 0, 0, RDZV_F_ZERO_READ).exit(3.36, 1);
  ps[2]->pair_io(RDZV_EV_RECV, 3.30, 23, 0, 0, RDZV_F_ZERO_READ).exit(3.37, 1);
  ps[3]->exit(3.32, 1);
  const TraceInputs& t = job.load_it();
  const Context c(t, job.logs());
  REQUIRE(c.collective);
  CHECK(c.collective->end_read_of(*c.rank(3)) == c.collective->ends_read.front().at_ns);
  CHECK_FALSE(c.collective->end_read_of(*c.rank(1)));
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  // Before: unknown ("rank(s) 0-3 failed without a rendezvous error"): any pair's end read
  // before the first failure was taken for the frozen rank's.
  CHECK(d.verdict.cls == FailureClass::StragglerTimeout);
  CHECK(d.verdict.initiating_rank == 1);
  CHECK(d.verdict.summary.find("never entered the first collective") != std::string::npos);
  CHECK(d.verdict.summary.find("recorded nothing at all after") != std::string::npos);
  CHECK(d.verdict.summary.find("frozen") != std::string::npos);
  // The first to fail is rank 3, which waited, not the silent rank's last record.
  CHECK(d.verdict.summary.find("first on rank 3") != std::string::npos);
  CHECK(d.verdict.next_step.find("find what froze rank 1") != std::string::npos);
  CHECK(d.verdict.next_step.find("/proc/1001/status") != std::string::npos);
}

TEST_CASE("a rank whose pairs' end its peers read before they failed was gone, not frozen") {
  Job job;
  std::vector<Proc*> ps;
  joined_in_a_mesh(job, ps, {0, 2, 3});
  // Rank 1 is killed at +1.25 s (no record of it): the others read the end of their pairs to it
  // at once, and fail later.
  for (int r : {0, 2, 3})
    ps[static_cast<std::size_t>(r)]->pair_io(RDZV_EV_RECV, 1.32, 21, 0, 0, RDZV_F_ZERO_READ).exit(1.4 + 0.01 * r, 1);
  const TraceInputs& t = job.load_it();
  const Context c(t, job.logs());
  REQUIRE(c.collective);
  const auto gone = c.collective->end_read_of(*c.rank(1));
  REQUIRE(gone);
  CHECK_FALSE(c.collective->pairs_open_at(*c.rank(1), *gone + 1));
  CHECK(c.collective->pairs_open_at(*c.rank(1), *gone));
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  CHECK(d.verdict.cls != FailureClass::StragglerTimeout);
  CHECK(d.verdict.initiating_rank == 1);
  CHECK(d.verdict.summary.find("frozen") == std::string::npos);
}

namespace {

// Every header says WORLD_SIZE=4 (torchrun's); rank 1 made its pairs with ranks 0, 2, 3, then
// waited on the store for rank `awaited`'s address key until its timeout (its log line says
// which), and never entered the first collective; the others did and timed out in gloo.
Diagnosis rank1_waited_for_key_of(int awaited) {
  Job job;
  std::vector<Proc*> ps;
  joined_in_a_mesh(job, ps, {0, 2, 3});
  ps[1]->exit(3.3, 1);
  for (int r : {0, 2, 3}) ps[static_cast<std::size_t>(r)]->exit(3.32 + 0.01 * r, 1);
  job.log_line("torch.distributed.DistStoreError: wait timeout after 2000ms, keys: /default_pg/0//cpu//0/" +
                   std::to_string(awaited),
               1, "rank1.log");
  for (int r : {0, 2, 3})
    job.log_line("RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting "
                 "2000ms for recv operation to complete",
                 r, "rank" + std::to_string(r) + ".log");
  return job.diagnose_it();
}

}  // namespace

TEST_CASE("a rank that waited for the address key of a rank beyond its header's WORLD_SIZE was given another "
          "world_size: config_mismatch/WORLD_SIZE (matrix world_size under torchrun)") {
  // Its script passed world_size=5 to init_process_group: it waited for rank 4's key.
  const Diagnosis d = rank1_waited_for_key_of(4);
  INFO(d.verdict.summary);
  CHECK(d.verdict.cls == FailureClass::ConfigMismatch);
  CHECK(d.verdict.cause == "WORLD_SIZE");
  CHECK(d.verdict.initiating_rank == 1);
  CHECK(d.verdict.summary.find("WORLD_SIZE=5 or more") != std::string::npos);
  // A wait for a key inside the world says nothing of it: rank 3's key.
  CHECK(rank1_waited_for_key_of(3).verdict.cls != FailureClass::ConfigMismatch);
}

// As torchrun's merged output: one agent, its 4 workers, and no line carries a rank. Rank 1
// (its script passed world_size=5) waited on the store for rank `awaited`'s address key until
// its timeout; the others timed out in gloo at the same time; the agent failed after them.
Diagnosis unranked_wait_for_key_of(int awaited) {
  Job job;
  job.proc(-1, 999).cmdline("/usr/bin/python3 /usr/bin/torchrun --nproc-per-node 4 train.py").exit(3.6, 1);
  std::vector<Proc*> ps;
  joined_in_a_mesh(job, ps, {0, 2, 3});
  for (int r = 0; r < 4; ++r) ps[static_cast<std::size_t>(r)]->parent(999).exit(3.3, 1);
  job.log_line("torch.distributed.DistStoreError: wait timeout after 2000ms, keys: /default_pg/0//cpu//0/" +
               std::to_string(awaited));
  job.log_line("RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting "
               "2000ms for recv operation to complete");
  return job.diagnose_it();
}

TEST_CASE("a wait for a key beyond every rank's WORLD_SIZE on a line without a rank: the unknown says what would "
          "name the rank (matrix world_size under torchrun: the agent's merged log)") {
  const Diagnosis d = unranked_wait_for_key_of(4);
  INFO(d.verdict.summary);
  REQUIRE(d.verdict.cls == FailureClass::Unknown);
  CHECK_THAT(d.verdict.summary, Catch::Contains("waited for rank 4's address key (job.log:1), beyond the 4 ranks of "
                                                "WORLD_SIZE"));
  CHECK_THAT(d.verdict.summary, Catch::Contains("torchrun --log-dir"));
  // A key inside the world: nothing to say about it.
  CHECK_THAT(unranked_wait_for_key_of(3).verdict.summary, !Catch::Contains("address key"));
}

TEST_CASE("collective spans: the rank that never entered, and the ranks that waited with their own deadline") {
  Job job;
  rank2_stalls(job);
  const Diagnosis d = job.diagnose_it();
  REQUIRE(d.collective);
  CHECK(d.collective->timeout_ms == 2000);
  CHECK(d.collective->first_failed_rank == 0);
  const RankRow& stalled = row_of_rank(d, 2);
  REQUIRE(stalled.collective);
  CHECK(stalled.collective->part == CollectiveSpan::Part::NeverEntered);
  CHECK_FALSE(stalled.collective->entered_ns);
  CHECK_FALSE(stalled.collective->deadline_ns);
  CHECK(stalled.collective->end_ns == *stalled.exit_ns);  // it stayed away until it failed at +5.3 s
  for (int r : {0, 1, 3}) {
    const RankRow& w = row_of_rank(d, r);
    REQUIRE(w.collective);
    CHECK(w.collective->part == CollectiveSpan::Part::Waited);
    // Its first pair connect (+1.2 s) to its first collective message (+1.3 s), then its wait
    // until it failed; its own deadline is its entry plus the pairs' 2 s.
    CHECK(static_cast<double>(*w.collective->entered_ns - w.collective->begin_ns) == Approx(1e8).margin(1e4));
    CHECK(*w.collective->deadline_ns - *w.collective->entered_ns == 2'000'000'000);
    CHECK(w.collective->end_ns == *w.exit_ns);
  }
  const std::string section = collective_section(diagnosis_text(d));
  INFO(section);
  CHECK(section.find("timeout on the pairs 2.00 s") != std::string::npos);
  CHECK(line_of_rank(section, 2).find("NEVER ENTERED") != std::string::npos);
  for (int r : {0, 1, 3}) {
    CHECK(line_of_rank(section, r).find("waited in it") != std::string::npos);
    CHECK(line_of_rank(section, r).find("+1.42 s    +3.4") != std::string::npos);  // entered, then its end
  }
  const std::string page = diagnosis_html(d);
  CHECK(page.find("<g class=\"coll coll-never\"><title>rank 2 in the first collective") != std::string::npos);
  CHECK(page.find("<g class=\"coll coll-waited\"><title>rank 0 in the first collective") != std::string::npos);
  CHECK(page.find("collective timeout deadline") != std::string::npos);
  CHECK(page.find("id=\"rendezvous-completed\"") != std::string::npos);
}

TEST_CASE("collective spans: a rank that died after init_process_group is drawn dead, with how it ended, never as missing it") {
  Job job;
  std::vector<Proc*> ps;
  joined_with_pairs(job, ps, {0, 1});
  ps[2]->exit(1.25, 1);
  // Rank 3 enters just after rank 2's death, the first failure: not late, the dead rank kept
  // them all from the collective.
  ps[3]->pair_io(RDZV_EV_SEND, 1.27, 21, 48).pair_io(RDZV_EV_SEND, 1.27, 22, 48);
  for (int r : {0, 1, 3})
    ps[static_cast<std::size_t>(r)]->pair_io(RDZV_EV_RECV, 1.32, 20, 0, 0, RDZV_F_ZERO_READ).exit(1.4 + 0.01 * r, 1);
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  const RankRow& dead = row_of_rank(d, 2);
  REQUIRE(dead.dead);
  REQUIRE(dead.collective);
  CHECK(dead.collective->part == CollectiveSpan::Part::Dead);
  CHECK(dead.collective->ended == "exit 1");
  CHECK_FALSE(dead.collective->gone_ns);  // its exit record is its end
  for (int r : {0, 1, 3}) {
    REQUIRE(row_of_rank(d, r).collective);
    CHECK(row_of_rank(d, r).collective->part == CollectiveSpan::Part::Waited);
  }
  const std::string section = collective_section(diagnosis_text(d));
  INFO(section);
  const std::string line = line_of_rank(section, 2);
  CHECK(line.find("DEAD: exit 1 before entering") != std::string::npos);
  CHECK(line.find("NEVER") == std::string::npos);
  CHECK(line.find("LATE") == std::string::npos);
  const std::string page = diagnosis_html(d);
  CHECK(page.find("<g class=\"coll coll-dead\"><title>rank 2 in the first collective after the rendezvous: dead") !=
        std::string::npos);
  CHECK(page.find("class=\"coll coll-never\"") == std::string::npos);
}

TEST_CASE("collective spans: many ranks that waited fold into one line of the text report") {
  Job job;
  rank5_stalls_among(job, 12);
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  const std::string section = collective_section(diagnosis_text(d));
  INFO(section);
  CHECK(line_of_rank(section, 5).find("NEVER ENTERED") != std::string::npos);
  CHECK(line_of_rank(section, 0).empty());
  CHECK(section.find("rank(s) 0-4, 6-11 waited in it for the others: entered +1.42 s, ended +3.42") != std::string::npos);
  CHECK(section.find("deadline +3.42 s") != std::string::npos);
}

namespace {

const nlohmann::ordered_json& json_row_of_rank(const nlohmann::ordered_json& j, int rank) {
  for (const auto& row : j["ranks"])
    if (row["rank"] == rank) return row;
  FAIL("no JSON row of rank " << rank);
  return j;  // not reached
}

}  // namespace

TEST_CASE("collective spans in the JSON: each row carries its span, the top level the phase, as the other views draw them") {
  Job job;
  rank2_stalls(job);
  const Diagnosis d = job.diagnose_it();
  const auto j = diagnosis_json(d);
  INFO(j.dump(2));
  REQUIRE(j.contains("collective"));
  CHECK(j["collective"]["rendezvous_completed"] == iso8601_utc(d.collective->completed_ns));
  CHECK(j["collective"]["first_failure"] == iso8601_utc(d.collective->first_failure_ns));
  CHECK(j["collective"]["first_failed_rank"] == 0);
  CHECK(j["collective"]["timeout_ms"] == 2000);
  CHECK(j["collective"]["op"].is_null());  // gloo's messages name no op
  CHECK(j["collective"]["sequence"].is_null());
  const auto& stalled = json_row_of_rank(j, 2)["collective"];
  CHECK(stalled["part"] == "never_entered");
  CHECK(stalled["entered"].is_null());
  CHECK(stalled["deadline"].is_null());
  CHECK(stalled["how"].is_null());
  CHECK(stalled["ended"] == iso8601_utc(*row_of_rank(d, 2).exit_ns));
  CHECK(stalled["left_store"] == iso8601_utc(row_of_rank(d, 2).collective->begin_ns));
  for (int r : {0, 1, 3}) {
    const CollectiveSpan& span = *row_of_rank(d, r).collective;
    const auto& w = json_row_of_rank(j, r)["collective"];
    CHECK(w["part"] == "waited");
    CHECK(w["entered"] == iso8601_utc(*span.entered_ns));
    CHECK(w["deadline"] == iso8601_utc(*span.entered_ns + 2'000'000'000));
    CHECK(w["ended"] == iso8601_utc(*row_of_rank(d, r).exit_ns));
    CHECK(w["pairs_done"] == iso8601_utc(*span.pairs_done_ns));
    CHECK(w["gone"].is_null());
  }
}

TEST_CASE("collective spans in the JSON: a rank that died after init_process_group is dead, with how it ended") {
  Job job;
  std::vector<Proc*> ps;
  joined_with_pairs(job, ps, {0, 1, 3});
  ps[2]->exit(1.25, 1);
  for (int r : {0, 1, 3})
    ps[static_cast<std::size_t>(r)]->pair_io(RDZV_EV_RECV, 1.32, 20, 0, 0, RDZV_F_ZERO_READ).exit(1.4 + 0.01 * r, 1);
  const auto j = diagnosis_json(job.diagnose_it());
  INFO(j.dump(2));
  const auto& dead = json_row_of_rank(j, 2);
  CHECK(dead["dead"] == true);
  CHECK(dead["collective"]["part"] == "dead");
  CHECK(dead["collective"]["how"] == "exit 1");
  CHECK(dead["collective"]["entered"].is_null());
  for (int r : {0, 1, 3}) CHECK(json_row_of_rank(j, r)["collective"]["part"] == "waited");
}

TEST_CASE("collective spans: the work a rank's watchdog line names (op, sequence) is on its span and on the phase") {
  Job job;
  rank2_stalls(job);
  for (int r : {0, 3})
    job.log_line("[E ProcessGroupNCCL.cpp:567] [Rank " + std::to_string(r) +
                     "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" + std::to_string(r == 0 ? 1 : 2) +
                     ", OpType=ALLREDUCE, Timeout(ms)=2000) ran for 2010 milliseconds before timing out.",
                 r);
  const Diagnosis d = job.diagnose_it();
  REQUIRE(d.collective);
  CHECK(d.collective->op == "ALLREDUCE");
  CHECK(d.collective->sequence == 1);
  CHECK(row_of_rank(d, 0).collective->sequence == 1);
  CHECK(row_of_rank(d, 3).collective->sequence == 2);  // each rank's own line
  CHECK(row_of_rank(d, 2).collective->op.empty());     // it printed none
  CHECK_FALSE(row_of_rank(d, 2).collective->sequence);
  const auto j = diagnosis_json(d);
  CHECK(j["collective"]["op"] == "ALLREDUCE");
  CHECK(j["collective"]["sequence"] == 1);
  CHECK(json_row_of_rank(j, 3)["collective"]["op"] == "ALLREDUCE");
  CHECK(json_row_of_rank(j, 3)["collective"]["sequence"] == 2);
  CHECK(json_row_of_rank(j, 2)["collective"]["op"].is_null());
  CHECK(json_row_of_rank(j, 1)["collective"]["sequence"].is_null());
  CHECK(collective_section(diagnosis_text(d)).find("the first collective after the rendezvous (ALLREDUCE, sequence 1; "
                                                   "completed at") != std::string::npos);
}

TEST_CASE("collective spans: above 64 ranks the host rows draw the folded ranks' part in the first collective") {
  Job job;
  rank5_stalls_among(job, 72);
  const Diagnosis d = job.diagnose_it();
  INFO(d.verdict.summary);
  REQUIRE(d.verdict.initiating_rank == 5);
  const std::string page = diagnosis_html(d);
  // Rank 5, the verdict's, keeps its own row; the others fold into node0's row, which draws
  // their wait in the first collective with their deadline.
  CHECK(page.find("<g class=\"coll coll-never\"><title>rank 5 in the first collective") != std::string::npos);
  const std::size_t host = page.find("<g class=\"row host\"><title>host node0");
  REQUIRE(host != std::string::npos);
  const std::size_t end = page.find("<g class=\"row", host + 1);
  const std::string row = page.substr(host, end - host);
  INFO(row);
  CHECK(row.find("<g class=\"coll coll-waited\"><title>host node0, ranks ") != std::string::npos);
  CHECK(row.find("in the first collective after the rendezvous: waited in it (") != std::string::npos);
  CHECK(row.find("their own timeout deadlines +3.4") != std::string::npos);
  CHECK(row.find("mk-coll-deadline") != std::string::npos);
  CHECK(row.find("ph-coll-wait") != std::string::npos);
}
