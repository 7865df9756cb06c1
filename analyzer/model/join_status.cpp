#include "join_status.h"

#include <time.h>

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "reader/names.h"

namespace rdzvscope {

namespace {

struct StateText {
  const char* id;
  const char* words;
};

constexpr StateText kStateText[kJoinStates] = {
    {"not_started", "not started"},
    {"starting", "started, not at the store yet"},
    {"lookup_failing", "name lookup failing"},
    {"refused", "connect refused"},
    {"syn_unanswered", "connect unanswered"},
    {"waiting", "joined, waiting"},
    {"failed", "failed"},
    {"exited", "exited"},
};

const std::string kNoHost;

std::optional<std::int64_t> joined_at(const ProcessFacts& f) {
  if (f.connected_ns && f.listen_ns) return std::min(*f.connected_ns, *f.listen_ns);
  return f.connected_ns ? f.connected_ns : f.listen_ns;
}

std::string peer_of(const Event& e) {
  return format_sockaddr(e.peer()).value_or("the store");
}

bool last_lookup_failed(const ProcessFacts& f) {
  return !f.failed_resolves.empty() && !f.resolves.empty() &&
         f.resolves.back() == f.failed_resolves.back();
}

std::string lookup_failure(const Event& e) {
  return fmt::format("lookup of \"{}\" fails with {}", e.resolve().host,
                     resolver_error_name(e.op, e.ret));
}

// A state that began with the first of `events`, which were `tries` attempts.
void set_from(RankJoin& j, JoinState s, const std::vector<const Event*>& events,
              std::string reason) {
  j.state = s;
  j.since_ns = events.front()->wall_ns;
  j.tries = static_cast<int>(events.size());
  j.reason = std::move(reason);
}

// The first store error after connecting that ends a rank's wait: a broken connection or a
// timed-out wait.
const Event* first_store_error(const ProcessFacts& f) {
  const Event* e = nullptr;
  for (const auto* list : {&f.io_failures, &f.wait_timeouts})
    if (!list->empty() && (!e || list->front()->wall_ns < e->wall_ns)) e = list->front();
  return e;
}

void set_ended(RankJoin& j, const ProcessFacts& f) {
  const Process& p = *f.proc;
  j.since_ns = p.exit_ns;
  if (!f.failed()) {
    j.state = JoinState::Exited;
    j.reason = p.exit_status ? "exited with status 0" : "exited";
    return;
  }
  j.state = JoinState::Failed;
  const Event* e = first_store_error(f) ? first_store_error(f) : f.first_error;
  j.reason = e ? describe(*e) : fmt::format("exited with status {}", p.exit_status.value_or(-1));
}

RankJoin state_of(const ProcessFacts& f) {
  RankJoin j;
  j.rank = f.proc->rank;
  j.facts = &f;
  j.joined = joined_at(f).has_value();
  if (!f.proc->exit_ns) j.blocked_in = f.waiting_in();
  if (f.proc->exit_ns) {
    set_ended(j, f);
  } else if (const Event* e = first_store_error(f)) {
    j.state = JoinState::Failed;
    j.since_ns = e->wall_ns;
    j.reason = describe(*e);
  } else if (j.joined) {
    j.state = JoinState::Waiting;
    j.since_ns = joined_at(f);
    j.reason = "waiting for the others";
    // The call it is in right now, when its trace shows one (calls in flight): what it waits
    // on, since when.
    if (const Event* w = f.store_wait)
      j.reason = "in " + inflight_call_words(*w) + " since " + time_of_day(w->wall_ns);
  } else if (!f.connect_timeouts.empty()) {
    set_from(j, JoinState::SynUnanswered, f.connect_timeouts,
             fmt::format("connects to {} time out (SYNs unanswered)",
                         peer_of(*f.connect_timeouts.front())));
  } else if (!f.refused.empty()) {
    set_from(j, JoinState::Refused, f.refused,
             fmt::format("connects to {} refused", peer_of(*f.refused.front())));
  } else if (last_lookup_failed(f)) {
    set_from(j, JoinState::LookupFailing, f.failed_resolves,
             lookup_failure(*f.failed_resolves.back()));
  } else if (const Event* w = f.connect_wait ? f.connect_wait : f.lookup_wait) {
    j.state = JoinState::Starting;
    j.since_ns = w->wall_ns;
    j.reason = "blocked in " + inflight_call_words(*w);
  } else {
    j.state = JoinState::Starting;
    j.since_ns = f.proc->launched_ns;
    j.reason = "started, not at the store yet";
  }
  return j;
}

// The store the ranks use: the port most of them connected to, and who listens on it.
std::optional<StoreStatus> store_of(const Context& c,
                                    const std::vector<const ProcessFacts*>& ranks) {
  std::map<std::uint16_t, int> votes;
  for (const ProcessFacts* f : ranks)
    if (f->store_port) ++votes[f->store_port];
  std::uint16_t port = 0;
  int best = 0;
  for (const auto& [p, n] : votes)
    if (n > best) std::tie(port, best) = std::tie(p, n);
  const ProcessFacts* server = c.store_server(port);
  if (!server || !server->listen_ns) return std::nullopt;
  return StoreStatus{server->proc->host, port ? port : server->listen_port, *server->listen_ns,
                     server->accepts};
}

// When the first on-time rank gives up: its join plus the timeout it waits under.
void find_deadline(JoinStatus& s, const Context& c) {
  s.timeout_ms = c.timeout_ms();
  for (const RankJoin& j : s.ranks) {
    if (j.state != JoinState::Waiting || !j.since_ns) continue;
    const auto ms = j.facts->timeout_ms ? j.facts->timeout_ms : s.timeout_ms;
    if (!ms || !plausible_timeout_ms(*ms)) continue;
    const std::int64_t at = *j.since_ns + *ms * 1'000'000;
    if (!s.deadline_ns || at < *s.deadline_ns) s.deadline_ns = at;
  }
}

void find_all_joined(JoinStatus& s) {
  if (!s.complete()) return;
  for (const RankJoin& j : s.ranks)
    if (j.facts)
      if (auto t = joined_at(*j.facts); t && (!s.all_joined_ns || *t > *s.all_joined_ns))
        s.all_joined_ns = t;
}

}  // namespace

const char* state_id(JoinState s) { return kStateText[static_cast<int>(s)].id; }
const char* state_words(JoinState s) { return kStateText[static_cast<int>(s)].words; }

const std::string& RankJoin::host() const { return facts ? facts->proc->host : kNoHost; }

int JoinStatus::count(JoinState st) const {
  return static_cast<int>(
      std::count_if(ranks.begin(), ranks.end(), [st](const RankJoin& j) { return j.state == st; }));
}

std::vector<const RankJoin*> JoinStatus::missing() const {
  std::vector<const RankJoin*> out;
  for (const RankJoin& j : ranks)
    if (!j.joined) out.push_back(&j);
  return out;
}

JoinStatus join_status(const Context& c, std::int64_t now_ns) {
  JoinStatus s;
  s.now_ns = now_ns;
  s.expected = c.expected_world_size;
  s.first_launch_ns = c.t0();
  const auto ranks = c.ranks();
  s.ranks.reserve(ranks.size() + c.absent_ranks.size());
  for (const ProcessFacts* f : ranks) {
    // Two processes with one rank (a restart, two jobs): the first traced one stands for it.
    if (!s.ranks.empty() && s.ranks.back().rank == f->proc->rank) continue;
    s.ranks.push_back(state_of(*f));
  }
  for (int r : c.absent_ranks) {
    RankJoin j;
    j.rank = r;
    j.reason = "no process started";
    s.ranks.push_back(j);
  }
  std::sort(s.ranks.begin(), s.ranks.end(),
            [](const RankJoin& a, const RankJoin& b) { return a.rank < b.rank; });
  s.joined = static_cast<int>(
      std::count_if(s.ranks.begin(), s.ranks.end(), [](const RankJoin& j) { return j.joined; }));
  s.store = store_of(c, ranks);
  find_deadline(s, c);
  find_all_joined(s);
  s.wait_for = find_wait_for(c, now_ns);
  return s;
}

std::string time_of_day(std::int64_t wall_ns) {
  const time_t secs = static_cast<time_t>(wall_ns / 1'000'000'000);
  struct tm tm {};
  if (!localtime_r(&secs, &tm)) return "?";
  return fmt::format("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

const char* blocked_call_id(const Event& call) {
  if (call.kind == RDZV_EV_RESOLVE) return "lookup";
  if (call.kind == RDZV_EV_CONNECT || (call.kind == RDZV_EV_POLL && call.has(RDZV_F_NONBLOCK)))
    return "store_connect";
  return "store_reply";
}

namespace {

// "poll, timeout 1800 s", "recv": the call and the timeout it waits under, when known.
std::string call_and_timeout(const Event& call) {
  const std::int64_t t = call.socket().timeout_ms;
  return op_name(call.op) + (t > 0 ? fmt::format(", timeout {:g} s", static_cast<double>(t) / 1000) : "");
}

std::string ago(std::int64_t from_ns, std::int64_t now_ns) {
  return fmt::format("{:.0f} s ago", std::max(0.0, seconds(from_ns, now_ns)));
}

std::string ranks_words(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + rank_list(ranks);
}

}  // namespace

std::string blocked_words(const RankJoin& j, std::int64_t now_ns) {
  const Event* call = j.blocked_in;
  if (!call) return "";
  const std::string id = blocked_call_id(*call);
  if (id == "lookup")
    return fmt::format("looked up \"{}\" {}, no answer yet", call->resolve().host, ago(call->wall_ns, now_ns));
  const auto peer = format_sockaddr(call->peer());
  const std::string at = peer ? " at " + *peer : std::string();
  if (id == "store_connect")
    return fmt::format("began its connect to the store{} {}, not completed ({})", at, ago(call->wall_ns, now_ns),
                       op_name(call->op));
  if (const Event* req = j.facts->store_request)
    return fmt::format("sent a request ({} bytes) to the store{} {}, no reply (in {})", req->ret, at,
                       ago(req->wall_ns, now_ns), call_and_timeout(*call));
  return fmt::format("no reply from the store{} for {:.0f} s (in {})", at,
                     std::max(0.0, seconds(call->wall_ns, now_ns)), call_and_timeout(*call));
}

std::string wait_headline(const JoinStatus& s) {
  if (!s.wait_for) return "";
  const WaitFor& w = *s.wait_for;
  std::vector<int> waiting;
  for (const ProcessFacts* f : w.waiting) waiting.push_back(f->proc->rank);
  const double waited = std::max(0.0, seconds(w.first_wait_ns, w.until_ns));
  if (w.on == WaitFor::On::StoreHost && w.network)
    return fmt::format("{} wait for the store host, {}: no reply for {:.0f} s, while its process runs and its store "
                       "still served its own node at {}: the network between them and its node",
                       ranks_words(waiting), w.host->proc->label(), waited, time_of_day(w.host_served_ns));
  if (w.on == WaitFor::On::StoreHost)
    return fmt::format("{} wait for the store host, {}: no reply for {:.0f} s, and its process has shown nothing "
                       "since {}",
                       ranks_words(waiting), w.host->proc->label(), waited, time_of_day(w.host_last_seen_ns));
  // The ranks waited for, folded by what each is doing now.
  const std::vector<int> awaited = w.awaited_ranks();
  std::map<int, std::vector<int>> by_state;
  for (const RankJoin& j : s.ranks)
    if (std::binary_search(awaited.begin(), awaited.end(), j.rank))
      by_state[static_cast<int>(j.state)].push_back(j.rank);
  std::vector<std::string> parts;
  for (const auto& [state, ranks] : by_state)
    parts.push_back(fmt::format("{} ({})", ranks_words(ranks), state_words(static_cast<JoinState>(state))));
  return fmt::format("{} wait for {} since {} ({:.0f} s)", ranks_words(waiting), fmt::join(parts, ", "),
                     time_of_day(w.first_wait_ns), waited);
}

std::string join_headline(const JoinStatus& s) {
  const std::string total = s.expected ? fmt::format("{} of {}", s.joined, *s.expected)
                                       : fmt::format("{}", s.joined);
  if (s.expected && s.complete())
    return fmt::format("all {} ranks joined{}", *s.expected,
                       s.all_joined_ns ? " at " + time_of_day(*s.all_joined_ns) : "");
  const auto missing = s.missing();
  std::string out = fmt::format("{} ranks joined", total);
  if (!s.expected) out += " (the world size is not known: give --world-size)";
  if (missing.empty()) return out;
  // Folded by host and reason, in the order of their lowest rank; a group's "since" is its
  // earliest.
  struct Group {
    std::string why;
    std::vector<int> ranks;
    std::optional<std::int64_t> since_ns;
  };
  std::vector<Group> groups;
  std::map<std::string, std::size_t> index;
  for (const RankJoin* j : missing) {
    std::string why = j->host().empty() ? j->reason : j->host() + ": " + j->reason;
    auto [it, fresh] = index.try_emplace(why, groups.size());
    if (fresh) groups.push_back(Group{why, {}, std::nullopt});
    Group& g = groups[it->second];
    g.ranks.push_back(j->rank);
    if (j->since_ns && j->state != JoinState::Starting &&
        (!g.since_ns || *j->since_ns < *g.since_ns))
      g.since_ns = j->since_ns;
  }
  std::vector<std::string> parts;
  for (const Group& g : groups)
    parts.push_back(fmt::format("{} ({}{})", rank_list(g.ranks), g.why,
                                g.since_ns ? " since " + time_of_day(*g.since_ns) : ""));
  return fmt::format("{}; missing: {}", out, fmt::join(parts, "; "));
}

}  // namespace rdzvscope
