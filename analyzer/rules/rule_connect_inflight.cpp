// A store connect that never completed, seen in flight (issue 27): the job was ended while a
// rank was still blocked in its connect to the store (a blocking connect, or a wait on a
// connect in progress), before the connect's own deadline: no ETIMEDOUT was ever returned, so
// the connect_timeout and store_unreachable rules have no failed connect to read. The
// mechanism is TCP's: a SYN nobody answers leaves connect() waiting for the kernel's retries
// (over two minutes by default) or the caller's deadline. When other ranks had reached the
// same store, the store was up and this rank's way to it was not: store_unreachable; when no
// rank had, the store's endpoint answered nobody: connect_timeout.
#include <algorithm>

#include <fmt/format.h>

#include "reader/names.h"
#include "rules.h"

namespace rdzvscope {

namespace {

struct BlockedConnects {
  std::vector<const ProcessFacts*> blocked;  // in a store connect when they ended, by rank
  std::vector<const ProcessFacts*> reached;  // connected to the same store port
  std::uint16_t port = 0;
};

std::optional<BlockedConnects> find_blocked_connects(const Context& c) {
  BlockedConnects b;
  for (const ProcessFacts* f : c.ranks())
    if (f->connect_wait && !f->connected_ns && !f->first_error && c.ending(*f).how != Ending::How::Exited) {
      b.blocked.push_back(f);
      if (!b.port) b.port = f->connect_wait->peer().port;
    }
  if (b.blocked.empty() || !b.port) return std::nullopt;
  for (const ProcessFacts* f : c.ranks())
    if (f->connected_ns && f->store_port == b.port) b.reached.push_back(f);
  return b;
}

std::string blocked_words(const Context& c, const ProcessFacts& f) {
  return f.proc->label() + " was blocked in " + waiting_words(c, f) + "; it " + ending_words(c, f);
}

Candidate blocked_candidate(const Context& c, const BlockedConnects& b, FailureClass cls) {
  std::vector<int> blocked;
  for (const ProcessFacts* f : b.blocked) blocked.push_back(f->proc->rank);
  const ProcessFacts& first = *b.blocked.front();
  const auto peer = format_sockaddr(first.connect_wait->peer());
  Candidate out;
  Verdict& v = out.verdict;
  v.cls = cls;
  v.confidence = "medium";
  v.initiating_rank = rank_of(first);
  v.initiating_host = first.proc->host;
  const std::string who = fmt::format("{} {}", blocked.size() == 1 ? "rank" : "ranks", rank_list(blocked));
  if (cls == FailureClass::StoreUnreachable) {
    v.cause = "unreachable";
    v.summary = who + " never completed " + (blocked.size() == 1 ? "its connect" : "their connects") + " to the store" +
                (peer ? " at " + *peer : std::string()) + " (no answer to the handshake, still waiting when the job was "
                "ended), while " + processes_words(b.reached) + " had reached it: the store was up, the way to it was not";
    v.next_step = "from " + first.proc->host + ", check what drops its packets to the store (`iptables -S`, `ip route get "
                  "<store address>`) against a node that gets through";
  } else {
    v.summary = who + " never completed " + (blocked.size() == 1 ? "its connect" : "their connects") + " to the store" +
                (peer ? " at " + *peer : std::string()) + " (no answer to the handshake, still waiting when the job was "
                "ended), and no rank ever reached it";
    v.next_step = "check that the store host is up and that nothing drops packets to its port (`nc -zv HOST PORT` from a "
                  "node, the firewall on the store host)";
  }
  Finding fd;
  fd.cls = cls;
  for (const ProcessFacts* f : b.blocked) fd.evidence.push_back(blocked_words(c, *f));
  out.findings.push_back(fd);
  out.discriminators.set("blocked_in_connect", RankSet{blocked});
  return out;
}

}  // namespace

std::optional<Candidate> store_unreachable_from_calls_in_flight(const Context& c) {
  auto b = find_blocked_connects(c);
  if (!b || b->reached.empty()) return std::nullopt;
  return blocked_candidate(c, *b, FailureClass::StoreUnreachable);
}

std::optional<Candidate> connect_timeout_from_calls_in_flight(const Context& c) {
  auto b = find_blocked_connects(c);
  if (!b || !b->reached.empty()) return std::nullopt;
  return blocked_candidate(c, *b, FailureClass::ConnectTimeout);
}

}  // namespace rdzvscope
