// Who has joined the rendezvous at a given moment, and what each rank that has not is doing:
// the model of the live view (`watch`) and of the metrics (`--prom`). It is found from the
// Context's facts, the same facts the rules read; nothing here reads raw records.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "context.h"
#include "wait_for.h"

namespace rdzvscope {

// One state per rank, in the order a rank goes through them.
enum class JoinState {
  NotStarted,     // expected (WORLD_SIZE) but no process of that rank is traced
  Starting,       // started, has not reached the store yet (no failed lookup or connect)
  LookupFailing,  // the rendezvous host's name does not resolve (yet)
  Refused,        // connects to the store refused: nothing listens there (yet)
  SynUnanswered,  // connects to the store that time out: SYNs go unanswered
  Waiting,        // connected to the store (or hosting it), waiting for the others
  Failed,         // a store error after connecting, or exited non-zero
  Exited,         // exited with status 0
};
inline constexpr int kJoinStates = 8;

// "not_started": JSON values and metric labels.
const char* state_id(JoinState s);
// "not started": for people.
const char* state_words(JoinState s);

struct RankJoin {
  int rank = -1;
  const ProcessFacts* facts = nullptr;  // null when the rank was not started
  JoinState state = JoinState::NotStarted;
  bool joined = false;                   // reached the store: connected to it, or hosts it
  std::optional<std::int64_t> since_ns;  // when the current state began
  int tries = 0;                         // failed lookups, refused or unanswered connects
  std::string reason;               // the state's cause in words: the EAI code, the first error
  // The call it is blocked in right now (ProcessFacts::waiting_in: a store wait, a store
  // connect, a lookup), from the calls in flight; null when it is in none or has ended.
  const Event* blocked_in = nullptr;
  const std::string& host() const;  // "" when not started
};

struct StoreStatus {
  std::string host;
  std::uint16_t port = 0;
  std::int64_t since_ns = 0;  // its first listen
  int accepted = 0;           // client connections it accepted
};

struct JoinStatus {
  std::int64_t now_ns = 0;
  std::optional<int> expected;  // the world size, when known
  int joined = 0;
  std::vector<RankJoin> ranks;  // by rank; the ranks not started included
  std::optional<StoreStatus> store;
  // The timeout the on-time ranks wait under, and when the first of them gives up.
  std::optional<std::int64_t> timeout_ms;
  std::optional<std::int64_t> deadline_ns;
  // The first launch and, once every expected rank joined, the last join.
  std::optional<std::int64_t> first_launch_ns, all_joined_ns;
  // Who the ranks blocked on the store wait for, measured until now (wait_for.h: the model the
  // hang rules read).
  std::optional<WaitFor> wait_for;

  int count(JoinState s) const;
  bool complete() const { return expected && joined >= *expected; }
  std::vector<const RankJoin*> missing() const;  // expected ranks that have not joined
};

// The state of every rank at `now_ns` (the wall clock: a live job's "now", or the end of a
// finished one).
JoinStatus join_status(const Context& c, std::int64_t now_ns);

// "k of N ranks joined; missing: 5, 17-19 (node7: lookup of "master" fails with EAI_NONAME
// since 12:03:04; no process started: 9)". Ranks missing for the same reason on the same host
// are folded into one group.
std::string join_headline(const JoinStatus& s);

// "store_reply", "store_connect", "lookup": the kind of a call a rank is blocked in, for JSON
// and metric labels.
const char* blocked_call_id(const Event& call);
// The call a rank is blocked in, with how long: "sent a request (22 bytes) to the store at
// 10.0.0.1:29500 35 s ago, no reply (waiting in poll, timeout 1800 s)"; "" when in none.
std::string blocked_words(const RankJoin& j, std::int64_t now_ns);
// The one they all wait on: "ranks 0-3 wait for rank 4 (started, not at the store yet) since
// 12:03:04 (35 s)", "ranks 1-3 wait for the store host, rank 0 (node0 pid 7): no reply for
// 35 s, its process shows nothing since 12:03:04"; "" when no rank waits on the store.
std::string wait_headline(const JoinStatus& s);

// "12:03:04": a wall-clock time of day, local time, for the live view.
std::string time_of_day(std::int64_t wall_ns);

}  // namespace rdzvscope
