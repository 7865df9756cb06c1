// store_unresponsive: the store host's process existed and stopped answering (issue 27). Every
// TCPStore request is one message and one reply, and the server answers a set, get or add
// within milliseconds; a client that sent one and waits for the reply (a recv or a wait on its
// store connection, in flight when it was ended) for seconds while the store's process shows
// nothing at all after the clients began to wait, and had not ended (no exit, no reap, no end
// of its connections read by a client), is waiting on a store that can no longer run: stopped
// (SIGSTOP, a debugger), frozen (a node swapping), or blocked. A dead store is another
// story (broken_pipe: its clients read the end of their connections); so is a rank that never
// came (straggler_timeout: some rank never reached the store, the others wait for its key).
#include <algorithm>

#include <fmt/format.h>

#include "rules.h"

namespace rdzvscope {

namespace {

// A reply the store owed for this long is not a slow store: TCPStore answers in milliseconds.
constexpr std::int64_t kSilentNs = 2'000'000'000;
// The store's process may still run for a moment after the clients' last requests went out (it
// was answering others, or its own client thread sent its request): a request that then waits
// for seconds was not answered. Seen much later than that, it ran and did not answer them:
// another story.
constexpr std::int64_t kReplyNs = 100'000'000;

struct SilentStore {
  const ProcessFacts* host = nullptr;
  std::vector<const ProcessFacts*> clients;  // waiting for a reply, by rank
  std::int64_t first_wait_ns = 0;            // the earliest of their waits began
  std::int64_t last_wait_ns = 0;             // the latest of their waits began
  std::int64_t host_last_seen_ns = 0;
  std::int64_t until_ns = 0;
  bool bound = false;
};

// The latest sign of life of a process: its last event's end, a call of its in flight
// beginning (each was written by the running process).
std::int64_t last_sign_of_life(const Process& p) {
  std::int64_t last = p.launched_ns;
  for (const Event& e : p.events) last = std::max(last, end_ns(e));
  for (const Event& e : p.inflight) last = std::max(last, e.wall_ns);
  return last;
}

// Every rank of the job other than the host is a client waiting for a reply from its store:
// none of them is the one the others wait for.
std::optional<SilentStore> find_silent_store(const Context& c) {
  for (const ProcessFacts* host : c.ranks()) {
    if (!host->listen_ns || !c.absent_ranks.empty()) continue;
    const Ending& end = c.ending(*host);
    if (end.how != Ending::How::Vanished || end.hangup_ns || end.over_ns || end.stopped()) continue;
    SilentStore s;
    s.host = host;
    bool all_wait = true;
    for (const ProcessFacts* f : c.ranks()) {
      if (f == host) continue;
      const Event* w = f->store_wait;
      const bool exited = c.ending(*f).how == Ending::How::Exited;  // a helper thread's wait left behind
      if (!w || f->first_error || exited || !host->listens_on(w->peer().port)) {
        all_wait = false;
        break;
      }
      s.clients.push_back(f);
      s.first_wait_ns = s.clients.size() == 1 ? w->wall_ns : std::min(s.first_wait_ns, w->wall_ns);
      s.last_wait_ns = std::max(s.last_wait_ns, w->wall_ns);
    }
    if (!all_wait || s.clients.empty()) continue;
    s.host_last_seen_ns = last_sign_of_life(*host->proc);
    if (s.host_last_seen_ns >= s.last_wait_ns + kReplyNs) continue;  // it ran long after they asked
    s.until_ns = c.waited_until(*s.clients.front(), &s.bound);
    for (const ProcessFacts* f : s.clients) s.until_ns = std::min(s.until_ns, c.waited_until(*f));
    // A wait known to have lasted less than a reply takes is no silence. One whose length is
    // not in the traces (nothing traced ran after it began: the whole job killed by an
    // untraced hand) is kept, said with low confidence.
    if (!s.bound && diff_ns(s.first_wait_ns, s.until_ns) < kSilentNs) continue;
    return s;
  }
  return std::nullopt;
}

}  // namespace

std::optional<Candidate> rule_store_unresponsive(const Context& c) {
  auto found = find_silent_store(c);
  if (!found) return std::nullopt;
  const SilentStore& s = *found;
  std::vector<int> clients;
  for (const ProcessFacts* f : s.clients) clients.push_back(f->proc->rank);
  const double silent = seconds(s.host_last_seen_ns, s.until_ns);
  const double waited = seconds(s.first_wait_ns, s.until_ns);
  const bool length_known = !(s.bound && diff_ns(s.first_wait_ns, s.until_ns) < kSilentNs);
  const std::string how_long =
      length_known ? fmt::format("waited {}{} for the store's reply", s.bound ? "at least " : "", fmt_seconds(waited))
                   : "were waiting for the store's reply when they were ended (for how long is not in the traces: "
                     "nothing traced ran after they began to wait)";

  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::StoreUnresponsive;
  v.initiating_rank = s.host->proc->rank >= 0 ? std::optional<int>(s.host->proc->rank) : std::nullopt;
  v.initiating_host = s.host->proc->host;
  // Every rank, the store host's own client included, waiting on keys no rank ever sets would
  // look alike from the clients' side: the host's silence is what tells them apart.
  v.confidence = length_known ? "medium" : "low";
  v.summary = fmt::format("the store host {} stopped answering: {} {} {}, while the store's process showed nothing "
                          "after {} and had not ended (no exit, no end of its connections): stopped (SIGSTOP, a "
                          "debugger), frozen (a node swapping) or blocked, not dead",
                          s.host->proc->label(), clients.size() == 1 ? "rank" : "ranks", rank_list(clients), how_long,
                          rel(c, s.host_last_seen_ns));
  v.next_step = "look at the store host while it hangs: `cat /proc/PID/status` (State: T is stopped, D is blocked on "
                "I/O), `py-spy dump --pid PID`, its node's memory and swap (`vmstat 1`, `journalctl -k`); rdzvscope "
                "watch shows who waits on whom";
  Finding fd;
  fd.cls = FailureClass::StoreUnresponsive;
  fd.evidence.push_back(s.host->proc->label() + " hosts the store; its last sign of life at " +
                        rel(c, s.host_last_seen_ns) +
                        (s.host_last_seen_ns < s.first_wait_ns ? ", before any of them began to wait"
                                                               : ", as they began to wait (from " + rel(c, s.first_wait_ns) + ")") +
                        (length_known ? ", then nothing for " + std::string(s.bound ? "at least " : "") + fmt_seconds(silent)
                                      : std::string()) +
                        "; it " + ending_words(c, *s.host));
  for (const ProcessFacts* f : s.clients)
    fd.evidence.push_back(f->proc->label() + " was waiting in " + waiting_words(c, *f));
  out.findings.push_back(fd);
  out.discriminators.set("waiting_ranks", RankSet{clients});
  out.discriminators.set("store_silent", Seconds{silent});
  return out;
}

}  // namespace rdzvscope
