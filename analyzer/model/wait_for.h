// Who the ranks blocked on the store are waiting for (issue 27), from the calls in flight. One
// model, read by the hang rules (straggler_timeout ended before its timeout, store_unresponsive)
// for a job that is over, and by the live view (watch's headline and metrics) for one that
// still hangs.
//
// The mechanisms are c10d's. Every rank that reached the store waits on it until every rank
// has come (a client for the others' keys, the store host's own client for WORLD_SIZE
// arrivals): while some ranks are in such a wait and others never reached the store, the
// waiting ranks wait for those (WaitFor::On::MissingRanks). Every TCPStore request is one
// message and one reply, answered within milliseconds: when every rank but the store host waits
// for a reply on its connection to that host, and the host's process shows nothing since they
// asked and has not ended, they wait for the store host (WaitFor::On::StoreHost). When the
// host's process instead kept receiving on its store sockets (its server reading its own
// client's requests, its client reading the replies) seconds after the others asked, and the
// others are on other hosts, the store ran and served its own node while no request of
// theirs was answered: what stands between them and it is the network (`network`).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "rank_facts.h"

namespace rdzvscope {

struct Context;

struct WaitFor {
  enum class On { MissingRanks, StoreHost };
  On on = On::MissingRanks;
  // In a store wait with no error of their own, not ended on their own; by rank.
  std::vector<const ProcessFacts*> waiting;

  // MissingRanks: the traced ranks that have not reached the store (neither a store connect
  // nor a listen), whatever they are doing (still starting, blocked, failing, dead); the
  // expected ranks with no trace at all; and the traced ranks with a story of their own (a
  // store error, an exit) that neither wait nor are waited for (the rules' business).
  std::vector<const ProcessFacts*> missing;
  std::vector<int> absent;
  std::vector<const ProcessFacts*> own_story;
  std::int64_t first_arrival_ns = 0;  // the earliest arrival at the store among the waiting

  // StoreHost: the host, and its last sign of life (an event's end, a call of its beginning,
  // a receive on its store sockets that returned bytes).
  const ProcessFacts* host = nullptr;
  std::int64_t host_last_seen_ns = 0;
  // StoreHost, `network`: the host's process kept receiving on its store sockets until
  // host_served_ns, kStoreSilentNs or more after the last of the others asked, and every one
  // of them is on another host: the store served its own node, the others got nothing.
  bool network = false;
  std::int64_t host_served_ns = 0;

  std::int64_t first_wait_ns = 0;  // the earliest of the waiting ranks' waits began
  std::int64_t last_wait_ns = 0;   // the latest of them began
  // Until when they are known to have waited: `now` for a live job; else, for a job that is
  // over, Context::waited_until (MissingRanks: the longest of theirs, StoreHost: the shortest),
  // `bound` when that is a lower bound.
  std::int64_t until_ns = 0;
  bool bound = false;

  // The ranks waited for, by rank: the missing and absent ones, or the store host's.
  std::vector<int> awaited_ranks() const;
  // StoreHost: every waiting rank runs on another host than the store host (by host name).
  bool waiting_on_other_hosts() const;
};

// A reply the store owed for this long is not a slow store: TCPStore answers in milliseconds.
inline constexpr std::int64_t kStoreSilentNs = 2'000'000'000;

// nullopt when no rank waits on the store, or what they wait for is not one of the two above.
// now_ns: the wall clock of a live job (watch); nullopt for a job that is over (analyze).
std::optional<WaitFor> find_wait_for(const Context& c, std::optional<std::int64_t> now_ns = std::nullopt);

}  // namespace rdzvscope
