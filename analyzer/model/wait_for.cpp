#include "wait_for.h"

#include <algorithm>

#include "context.h"

namespace rdzvscope {

namespace {

// The store's process may still run for a moment after the clients' last requests went out (it
// was answering others, or its own client thread sent its request): a request that then waits
// was not answered. Seen much later than that, it ran and did not answer them: another story.
constexpr std::int64_t kReplyNs = 100'000'000;

// A rank that reached the store and is (or was, when it ended) waiting on it, with no error of
// its own and no timeout of its wait seen.
bool waits_without_error(const ProcessFacts& f) {
  return f.store_wait && f.at_store_ns() && !f.first_error && f.wait_timeouts.empty();
}

// It exited, or a signal nobody traced sent ended it, as its parent saw: it did not wait to be
// cancelled. A live process has no end at all.
bool ended_on_its_own(const Context& c, const ProcessFacts& f) {
  const Ending& e = c.ending(f);
  return !e.stopped() && e.how != Ending::How::Vanished;
}

bool reached_store(const ProcessFacts& f) { return f.at_store_ns() || f.listen_ns; }

std::optional<WaitFor> find_missing_ranks(const Context& c, std::optional<std::int64_t> now_ns) {
  WaitFor w;
  w.on = WaitFor::On::MissingRanks;
  for (const ProcessFacts* f : c.ranks()) {
    const bool ended = ended_on_its_own(c, *f);
    if (waits_without_error(*f) && !ended) w.waiting.push_back(f);
    else if (!reached_store(*f)) w.missing.push_back(f);
    // Reached the store, no error, in no wait of its own: the store host serving, a rank
    // between two of its checks. Neither waiting nor waited for.
    else if (f->at_store_ns() && !f->first_error && !ended) continue;
    else w.own_story.push_back(f);
  }
  w.absent = c.absent_ranks;
  if (w.waiting.empty() || (w.missing.empty() && w.absent.empty())) return std::nullopt;
  w.first_arrival_ns = *w.waiting.front()->at_store_ns();
  w.first_wait_ns = w.last_wait_ns = w.waiting.front()->store_wait->wall_ns;
  for (const ProcessFacts* f : w.waiting) {
    w.first_arrival_ns = std::min(w.first_arrival_ns, *f->at_store_ns());
    w.first_wait_ns = std::min(w.first_wait_ns, f->store_wait->wall_ns);
    w.last_wait_ns = std::max(w.last_wait_ns, f->store_wait->wall_ns);
  }
  if (now_ns) {
    w.until_ns = *now_ns;
    return w;
  }
  w.until_ns = c.waited_until(*w.waiting.front(), &w.bound);
  for (const ProcessFacts* f : w.waiting) {
    bool bound = false;
    const std::int64_t until = c.waited_until(*f, &bound);
    if (until > w.until_ns) w.until_ns = until, w.bound = bound;
  }
  return w;
}

// Records attach's kernel side writes for a process that need not run for them: its sockets'
// TCP states, errors and resets (the peers' FINs reach a stopped store host's sockets), and its
// death by a signal. No sign that it ran.
bool written_without_it(const Event& e) {
  return e.kind == RDZV_EV_TCP_STATE || (e.kind == RDZV_EV_PROC_EXIT && e.has(RDZV_F_SIGNALED));
}

// The latest sign of life of a process: its last event's end, a call of its in flight
// beginning, its latest receive on a store socket that returned bytes (each was written by
// the running process, or by attach for a call it made).
std::int64_t last_sign_of_life(const Process& p) {
  std::int64_t last = p.launched_ns;
  for (const Event& e : p.events)
    if (!written_without_it(e)) last = std::max(last, end_ns(e));
  for (const Event& e : p.inflight) last = std::max(last, e.wall_ns);
  if (p.last_store_recv_ns) last = std::max(last, *p.last_store_recv_ns);
  return last;
}


// Every rank other than `host` waits for a reply on its connection to host's store.
bool all_others_wait_on(const Context& c, const ProcessFacts& host, WaitFor& s) {
  for (const ProcessFacts* f : c.ranks()) {
    if (f == &host) continue;
    const Event* w = f->store_wait;
    const bool exited = c.ending(*f).how == Ending::How::Exited;  // a helper thread's wait left behind
    if (!w || f->first_error || exited || !host.listens_on(w->peer().port)) return false;
    s.waiting.push_back(f);
    s.first_wait_ns = s.waiting.size() == 1 ? w->wall_ns : std::min(s.first_wait_ns, w->wall_ns);
    s.last_wait_ns = std::max(s.last_wait_ns, w->wall_ns);
  }
  return !s.waiting.empty();
}

std::optional<WaitFor> find_store_host(const Context& c, std::optional<std::int64_t> now_ns) {
  if (!c.absent_ranks.empty()) return std::nullopt;
  for (const ProcessFacts* host : c.ranks()) {
    if (!host->listen_ns) continue;
    const Ending& end = c.ending(*host);
    if (end.how != Ending::How::Vanished || end.hangup_ns || end.over_ns || end.stopped()) continue;
    WaitFor s;
    s.on = WaitFor::On::StoreHost;
    s.host = host;
    if (!all_others_wait_on(c, *host, s)) continue;
    s.host_last_seen_ns = last_sign_of_life(*host->proc);
    const std::optional<std::int64_t> served = host->proc->last_store_recv_ns;
    if (served && *served >= s.last_wait_ns + kStoreSilentNs && s.waiting_on_other_hosts()) {
      // Its store still served (its own client, on its node) long after every other rank
      // had asked and got nothing: the store ran; their requests or its replies were lost.
      s.network = true;
      s.host_served_ns = *served;
    } else if (s.host_last_seen_ns >= s.last_wait_ns + kReplyNs) {
      continue;  // it ran long after they asked: another story
    }
    if (now_ns) {
      s.until_ns = *now_ns;
    } else {
      s.until_ns = c.waited_until(*s.waiting.front(), &s.bound);
      for (const ProcessFacts* f : s.waiting) s.until_ns = std::min(s.until_ns, c.waited_until(*f));
    }
    // A wait known to have lasted less than a reply takes is no silence. One whose length is
    // not in the traces (nothing traced ran after it began: the whole job killed by an
    // untraced hand) is kept: the rule says so, with low confidence.
    if (!s.bound && diff_ns(s.first_wait_ns, s.until_ns) < kStoreSilentNs) continue;
    return s;
  }
  return std::nullopt;
}

}  // namespace

bool WaitFor::waiting_on_other_hosts() const {
  if (!host) return false;
  for (const ProcessFacts* f : waiting)
    if (f->proc->host == host->proc->host) return false;
  return true;
}

std::vector<int> WaitFor::awaited_ranks() const {
  std::vector<int> out;
  if (on == On::StoreHost) {
    if (host && host->proc->rank >= 0) out.push_back(host->proc->rank);
    return out;
  }
  for (const ProcessFacts* f : missing) out.push_back(f->proc->rank);
  out.insert(out.end(), absent.begin(), absent.end());
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<WaitFor> find_wait_for(const Context& c, std::optional<std::int64_t> now_ns) {
  if (auto w = find_missing_ranks(c, now_ns)) return w;
  return find_store_host(c, now_ns);
}

}  // namespace rdzvscope
