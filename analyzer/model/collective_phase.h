// The first collective after the rendezvous, per rank, from its peer sockets (RDZV_F_PEER:
// the process group's own connections, gloo's pairs, that the shim records once a process
// reached a store). Once init_process_group returns, a rank enters its first collective by
// sending on its pairs (gloo: a 48-byte message header, first of all the notice that its
// buffer is ready); a rank that never sends there never entered it, whatever its pairs
// received (gloo's I/O thread reads what the others send while the rank's own thread is
// busy elsewhere). The others wait for it under their timeout, then fail. Derived once,
// beside the other facts (Context::collective).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "diagnosis.h"
#include "rank_facts.h"

namespace rdzvscope {

struct Context;

// One rank's part in the first collective.
struct RankCollective {
  const ProcessFacts* f = nullptr;
  int pairs = 0;                              // peer connections it made or accepted
  std::optional<std::int64_t> pairs_done_ns;  // when the last of them was made
  // Its first collective message: a send on a pair past the pair's opening exchange (gloo
  // 2.x: the connecting side first writes the 8-byte number of the pair). nullopt: none
  // recorded, it never entered a collective while traced.
  std::optional<std::int64_t> entered_ns;
  std::optional<std::int64_t> last_sent_ns;   // its last send recorded on a pair
  // The first time one of its pairs read the end of the other side (0 bytes, a reset): a
  // peer had gone.
  std::optional<std::int64_t> peer_gone_ns;
};

struct CollectivePhase {
  std::vector<RankCollective> ranks;  // every traced rank that made pairs, by rank
  std::int64_t completed_ns = 0;      // the rendezvous completed (Context::rendezvous_completed_ns)
  // The timeout set on the pairs (SO_RCVTIMEO/SO_SNDTIMEO after the first pair: gloo's
  // timeout, init_process_group's), when recorded.
  std::optional<std::int64_t> timeout_ms;
  // The first rank to fail after the rendezvous completed, and when (Context::failure_time).
  const ProcessFacts* first_failed = nullptr;
  std::int64_t first_failure_ns = 0;
  // The ranks that had entered the first collective by the first failure, and those that had
  // not (never, or only after it).
  std::vector<const RankCollective*> entered, not_entered;
  // Every read of the end of a pair (0 bytes, a reset) by a rank, with the rank at the pair's
  // other end: the pair that rank made or accepted with the same two ends swapped (nullptr
  // when no traced rank's pair has them). By time.
  struct EndRead {
    const ProcessFacts* reader = nullptr;
    const ProcessFacts* other = nullptr;
    std::int64_t at_ns = 0;
  };
  std::vector<EndRead> ends_read;

  const RankCollective* of(const ProcessFacts& f) const;
  // The first read of the end of one of f's pairs by another rank; nullopt: none read.
  std::optional<std::int64_t> end_read_of(const ProcessFacts& f) const;
  // f's pairs were open at t: every end of a pair read before t is known to be another
  // rank's. gloo's I/O thread reads every pair all the time and the kernel closes a dead
  // process's sockets, so had f been gone before t its peers would have read its end.
  bool pairs_open_at(const ProcessFacts& f, std::int64_t t) const;
};

// nullopt when the rendezvous did not complete, no rank failed after it, or a rank's trace
// does not record its pairs' I/O (an older shim, attach): then who entered is not known.
std::optional<CollectivePhase> find_collective_phase(const Context& c);

// What the views draw of the phase (diagnosis.h), from Context::collective; nullopt when the
// phase was not found, or (collective_span) the rank made no pairs. `dead_ranks`: the ranks
// the verdict named dead (Evidence::dead_ranks): such a rank's span says so whatever it sent,
// and when the first failure was one of them, a rank that entered just after it was not late.
std::optional<CollectiveOutline> collective_outline(const Context& c);
std::optional<CollectiveSpan> collective_span(const Context& c, const ProcessFacts& f, const std::vector<int>& dead_ranks);

// A part as the JSON names it: "waited", "never_entered", "entered_late", "dead".
const char* part_name(CollectiveSpan::Part part);
// A part in words, as every view labels it: "waited in it", "never entered", "entered late",
// "dead".
const char* part_words(CollectiveSpan::Part part);

}  // namespace rdzvscope
