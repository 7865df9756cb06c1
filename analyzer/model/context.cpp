#include "context.h"

#include <algorithm>
#include <cstdio>

#include <sys/socket.h>

#include <fmt/format.h>

#include "launcher_options.h"

namespace rdzvscope {

std::vector<const ProcessFacts*> Context::ranks() const {
  std::vector<const ProcessFacts*> out;
  for (const auto& f : facts)
    if (f.proc->role != Role::Agent && f.proc->role != Role::Helper && f.proc->rank >= 0) out.push_back(&f);
  std::stable_sort(out.begin(), out.end(),
                   [](const ProcessFacts* a, const ProcessFacts* b) { return a->proc->rank < b->proc->rank; });
  return out;
}

std::optional<std::int64_t> Context::rendezvous_completed_ns() const {
  const auto rs = ranks();
  if (!expected_world_size || !absent_ranks.empty() || *expected_world_size < 2 ||
      rs.size() < static_cast<std::size_t>(*expected_world_size))
    return std::nullopt;
  std::int64_t last = 0;
  for (const ProcessFacts* f : rs) {
    if (!f->peer_connected_ns) return std::nullopt;
    last = std::max(last, *f->peer_connected_ns);
  }
  // A gloo group's init reads each rank's address key and connects to that rank in turn, so a
  // rank connects to its first peers before it has every key: one whose own log shows it timed
  // out waiting for a rank's address key ("keys: /.../N") never finished its part.
  for (const auto* lines : {&logs.events, &logs.other_errors})
    for (const LogEvent& e : *lines)
      if (e.awaited_rank && e.rank >= 0 && rank(e.rank)) return std::nullopt;
  return last;
}

bool Context::any_rank_failed() const {
  for (const ProcessFacts* f : ranks())
    if (f->failed()) return true;
  return false;
}

bool Context::parent_is_agent(const Process& p) const {
  return std::any_of(traces.processes.begin(), traces.processes.end(), [&](const Process& q) {
    return q.role == Role::Agent && q.pid_space == p.pid_space && q.pid == p.header.ppid;
  });
}

bool Context::died_on_its_own(const ProcessFacts& f) const {
  const Ending& e = ending(f);
  if (!e.failed() || e.stopped() || f.first_error) return false;
  if (f.proc->rank < 0) return true;
  if (failed_waiting_in_collective(f)) return false;
  // A rendezvous error, or an error of gloo's or NCCL's own connections, that its own log
  // lines show: it died of that, not on its own. Not c10d's warning that the client socket's
  // host name cannot be retrieved: socket.cpp prints it after a connect that succeeded (the
  // name is only for its log), on every rank of a network without reverse zones, and nothing
  // fails of it.
  for (const LogEvent& l : logs.events)
    if (l.rank == f.proc->rank && l.family != LogFamily::ReverseLookupFailed) return false;
  for (const LogEvent& l : logs.other_errors)
    if (l.rank == f.proc->rank && l.family != LogFamily::ErrorLine) return false;
  return true;
}

bool Context::failed_waiting_in_collective(const ProcessFacts& f) const {
  if (!collective || collective->not_entered.empty()) return false;
  const RankCollective* r = collective->of(f);
  return r && r->entered_ns && *r->entered_ns <= collective->first_failure_ns;
}

bool Context::crashed_on_its_own(const ProcessFacts& f) const {
  return died_on_its_own(f) && (crash_line(f) != nullptr || ending(f).how != Ending::How::Exited);
}

bool Context::left_early(const ProcessFacts& f) const {
  const Ending& e = ending(f);
  if (e.how != Ending::How::Exited || e.failed() || e.stopped() || f.first_error || !e.over_ns) return false;
  // It had its peers' addresses from the store and began connecting to them (gloo's full mesh,
  // inside init_process_group) before it exited: its part of the rendezvous was done, and the
  // others, who finished theirs, needed it. Its exit may come before the last of them made
  // its first pair (an accept of its own connection, say).
  const auto completed = rendezvous_completed_ns();
  const auto own = f.peer_connected_ns.value_or(completed.value_or(0));
  return completed && *e.over_ns > own;
}

std::optional<std::int64_t> Context::failure_time(const ProcessFacts& f) const {
  const Ending& e = ending(f);
  if (!e.failed()) return std::nullopt;
  if (f.first_error) return end_ns(*f.first_error);
  if (e.stopped()) return e.sent_ns;
  return e.over_ns.value_or(e.last_seen_ns);
}

std::optional<Context::Death> Context::first_death() const {
  constexpr std::int64_t kSlackNs = 50'000'000;  // a death's time is an upper bound
  const auto rs = ranks();
  std::optional<Death> best;
  for (const ProcessFacts* f : rs) {
    const Ending& e = ending(*f);
    const bool left = left_early(*f);
    if (!(left || died_on_its_own(*f)) || !e.over_ns || (f->proc->cut_short && e.how == Ending::How::Vanished)) continue;
    const std::int64_t by = *e.over_ns;
    if (best && by >= best->by_ns) continue;
    Death d{f, by, {}, left};
    bool first = true, seen_after = false;
    for (const ProcessFacts* g : rs) {
      if (g == f) continue;
      const auto t = failure_time(*g);
      if (!t) continue;
      // The earliest it may have failed: a rank with no exit record that no traced process
      // stopped and no rendezvous error may have died any time after it was last seen (its
      // parent's reap comes a poll later), unless the end of its connection, read when the
      // kernel closed its sockets, says when.
      const Ending& ge = ending(*g);
      std::int64_t earliest = *t;
      if (!g->first_error && !ge.stopped() && !g->proc->exit_ns)
        earliest = ge.hangup_ns ? std::min(*t, *ge.hangup_ns) : std::min(*t, ge.last_seen_ns);
      if (earliest < e.last_seen_ns || earliest < by - kSlackNs || (left && crashed_on_its_own(*g))) {
        first = false;
        break;
      }
      d.after.push_back(g);
      // Alive after it was over, and then failed: its record (an exit, an error) or its
      // launcher's signal came later, or its store connection stayed open more than the slack
      // longer (its end read then). Processes killed together leave no such sign.
      seen_after = seen_after || ge.last_seen_ns > by || (ge.stopped() && ge.sent_ns > by) ||
                   (ge.hangup_ns && *ge.hangup_ns > by + kSlackNs);
    }
    if (first && seen_after) best = std::move(d);
  }
  return best;
}

const LogEvent* Context::crash_line(const ProcessFacts& f) const {
  if (f.proc->rank < 0) return nullptr;
  const LogEvent* out = nullptr;
  for (const LogEvent& l : logs.other_errors)
    if (l.rank == f.proc->rank && l.family == LogFamily::ErrorLine &&
        l.text.find("Traceback (most recent call last)") == std::string::npos)
      out = &l;
  return out;
}

void Context::find_expected_ranks(std::optional<int> given) {
  const auto rs = ranks();
  if (rs.empty() && !given) return;
  for (const auto& f : facts)
    if (!given && f.proc->rank < 0 && f.proc->role != Role::Agent && f.first_store_attempt_ns) return;
  std::optional<int> ws = given;
  for (const ProcessFacts* f : rs) {
    if (given) break;
    const int w = f->proc->world_size;
    if (w <= 0) continue;
    if (ws && *ws != w) return;  // the traced ranks disagree: two jobs, or a damaged header
    ws = w;
  }
  if (!ws) {
    // No header has WORLD_SIZE: the store host's "k/N clients joined" (or the store barrier's
    // world_size=N), when every such line agrees. Headers win when present: a torchrun agent's
    // own store counts nodes, not ranks.
    for (const auto& e : logs.events)
      if ((e.has(LogFamily::ClientsJoinTimeout) || e.has(LogFamily::StoreBarrierTimeout)) && e.expected &&
          *e.expected > 0) {
        if (ws && *ws != *e.expected) return;
        ws = *e.expected;
      }
  }
  // A world size beyond any real job is a damaged value, not a job.
  constexpr int kMaxWorldSize = 1 << 20;
  if (!ws || *ws <= 0 || *ws > kMaxWorldSize) return;
  std::vector<bool> seen(static_cast<std::size_t>(*ws), false);
  for (const ProcessFacts* f : rs) {
    if (f->proc->rank >= *ws) return;  // not ranks 0..N-1 of one job
    seen[static_cast<std::size_t>(f->proc->rank)] = true;
  }
  expected_world_size = ws;
  for (int r = 0; r < *ws; ++r)
    if (!seen[static_cast<std::size_t>(r)]) absent_ranks.push_back(r);
}

namespace {

// The ranks per node of one launcher numbering, when every traced rank fits rank = node *
// per_node + local_rank with per_node = the highest LOCAL_RANK + 1; traced: node -> host.
std::optional<int> ranks_per_node(const std::vector<const ProcessFacts*>& rs, std::int32_t rdzv_identity::*node,
                                  int world_size, std::map<int, std::string>& traced) {
  // 64-bit: the header's numbers are whatever the environment said (or damage made of them).
  std::int64_t per_node = 0;
  for (const ProcessFacts* f : rs)
    per_node = std::max(per_node, static_cast<std::int64_t>(f->proc->header.ident.local_rank) + 1);
  if (per_node <= 0 || per_node > world_size || world_size % per_node != 0) return std::nullopt;
  for (const ProcessFacts* f : rs) {
    const rdzv_identity& id = f->proc->header.ident;
    if (id.*node < 0 || id.local_rank < 0 ||
        f->proc->rank != static_cast<std::int64_t>(id.*node) * per_node + id.local_rank)
      return std::nullopt;
    auto [it, fresh] = traced.emplace(id.*node, f->proc->host);
    if (!fresh && it->second != f->proc->host) return std::nullopt;  // one node number, two hosts
  }
  // One traced node cannot show how many ranks a node runs: its missing ranks could be its
  // own (LOCAL_RANK 2 and 3 of 4), not another node's.
  if (traced.size() < 2) return std::nullopt;
  return static_cast<int>(per_node);
}

}  // namespace

void Context::find_absent_nodes() {
  if (absent_ranks.empty()) return;
  const auto rs = ranks();
  static const std::pair<const char*, std::int32_t rdzv_identity::*> kNumberings[] = {
      {"GROUP_RANK", &rdzv_identity::group_rank}, {"SLURM_NODEID", &rdzv_identity::slurm_nodeid}};
  for (const auto& [var, member] : kNumberings) {
    std::map<int, std::string> traced;
    const auto per_node = ranks_per_node(rs, member, *expected_world_size, traced);
    if (!per_node) continue;
    for (int n = 0; n < *expected_world_size / *per_node; ++n) {
      if (traced.count(n)) continue;
      AbsentNode node{var, n, {}};
      for (int r = n * *per_node; r < (n + 1) * *per_node; ++r) node.ranks.push_back(r);
      absent_nodes.push_back(std::move(node));
    }
    traced_nodes = std::move(traced);
    return;
  }
}

bool Context::gave_up_its_rendezvous(const Process& p) const {
  if (p.role != Role::Agent || p.vanished()) return false;
  const bool spawned = std::any_of(p.events.begin(), p.events.end(), [](const Event& e) {
    return e.kind == RDZV_EV_SPAWN || e.kind == RDZV_EV_FORK;
  });
  const bool has_children = std::any_of(traces.processes.begin(), traces.processes.end(), [&](const Process& q) {
    return q.host == p.host && q.header.ppid == p.pid;
  });
  return !spawned && !has_children;
}

void Context::find_missing_agents() {
  if (!ranks().empty()) return;
  MissingAgents m;
  for (const auto& f : facts) {
    if (f.proc->role != Role::Agent) continue;
    const auto n = torchrun_min_nodes(torchrun_options(f.proc->header.cmdline));
    if (!n || (m.expected_nodes && *n != m.expected_nodes)) return;  // unknown, or two jobs
    m.expected_nodes = *n;
    m.agents.push_back(&f);
  }
  if (m.agents.empty() || static_cast<int>(m.agents.size()) >= m.expected_nodes) return;
  missing_agents = std::move(m);
}

const ProcessFacts* Context::rank(int r) const {
  for (const auto& f : facts)
    if (f.proc->rank == r && f.proc->role != Role::Agent && f.proc->role != Role::Helper) return &f;
  return nullptr;
}

const ProcessFacts* Context::store_server(std::uint16_t port) const {
  const ProcessFacts* best = nullptr;
  for (const auto& f : facts)
    if (f.listen_ns && (port == 0 || f.listens_on(port)) && (!best || *f.listen_ns < *best->listen_ns))
      best = &f;
  return best;
}

const ProcessFacts* Context::store_reached(const ProcessFacts& client, const Event& connect) const {
  const rdzv_sockaddr& dest = connect.peer();
  if (!is_loopback(dest)) return store_server(dest.port);
  const std::string scope = loopback_scope(*client.proc);
  const ProcessFacts* best = nullptr;
  for (const auto& f : facts)
    if (f.listen_ns && f.listens_on(dest.port) && loopback_scope(*f.proc) == scope &&
        (!best || *f.listen_ns < *best->listen_ns))
      best = &f;
  return best;
}

std::vector<Context::FarBehind> Context::ranks_far_behind() const {
  std::vector<std::pair<std::int64_t, const ProcessFacts*>> arrivals;
  for (const ProcessFacts* f : ranks())
    if (f->arrival_ns()) arrivals.emplace_back(*f->arrival_ns(), f);
  std::vector<FarBehind> out;
  if (arrivals.size() < 2) return out;
  std::sort(arrivals.begin(), arrivals.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  const std::int64_t usual = arrivals[(arrivals.size() - 1) / 2].first;
  const std::int64_t spread = diff_ns(arrivals.front().first, usual);
  constexpr std::int64_t kFloorNs = 1'000'000'000;
  const std::int64_t far = std::max(kFloorNs, 2 * spread);
  for (auto it = arrivals.rbegin(); it != arrivals.rend(); ++it) {
    const std::int64_t late = diff_ns(usual, it->first);
    if (late < far) break;
    out.push_back({it->second, late});
  }
  return out;
}

const Misdirected* Context::misdirected_of(const ProcessFacts& f) const {
  auto it = misdirected_index.find(&f);
  return it == misdirected_index.end() ? nullptr : &misdirected[it->second];
}

std::string loopback_scope(const Process& p) {
  if (!p.header.origin || !p.header.origin->netns_inode) return "host " + p.host;
  const rdzv_origin& o = *p.header.origin;
  std::string boot;
  for (std::uint8_t b : o.boot_id) boot += fmt::format("{:02x}", b);
  return "netns " + std::to_string(o.netns_inode) + " of boot " + boot;
}

void Context::find_time_span() {
  auto later = [&](std::int64_t t) {
    if (!last_known_ || t > *last_known_) last_known_ = t;
  };
  for (const ProcessFacts& f : facts) {
    const Process& p = *f.proc;
    if (!t0_ || p.launched_ns < *t0_) t0_ = p.launched_ns;
    later(p.launched_ns);
    for (const Event& e : p.events) later(end_ns(e));
    for (const Event& e : p.inflight) later(e.wall_ns);
    if (p.exit_ns) later(*p.exit_ns);
    if (p.last_store_recv_ns) later(*p.last_store_recv_ns);
  }
}

std::optional<std::int64_t> Context::t0() const { return t0_; }

std::optional<std::int64_t> Context::timeout_ms() const {
  for (const auto& f : facts)
    if (f.timeout_ms) return f.timeout_ms;
  for (const auto& e : logs.events)
    if (e.timeout_ms && plausible_timeout_ms(*e.timeout_ms) && (e.family == LogFamily::SocketTimeout || e.family == LogFamily::WaitTimeout ||
                         e.family == LogFamily::WaitForInputTimeout ||
                         e.family == LogFamily::ClientConnectTimeout ||
                         e.family == LogFamily::ConnectValidate ||
                         e.family == LogFamily::ClientsJoinTimeout ||
                         e.family == LogFamily::StoreBarrierTimeout))
      return e.timeout_ms;
  // The timeout set on the process group's pairs (gloo's: init_process_group's timeout).
  if (collective && collective->timeout_ms) return collective->timeout_ms;
  return std::nullopt;
}

std::optional<std::int64_t> Context::last_known_ns() const { return last_known_; }

std::int64_t Context::waited_until(const ProcessFacts& f, bool* bound) const {
  const Ending& e = ending(f);
  if (bound) *bound = false;
  if (e.stopped()) return e.sent_ns;
  if (e.over_ns) return *e.over_ns;
  if (bound) *bound = true;
  return last_known_ns().value_or(f.proc->last_event_ns());
}

std::string fmt_seconds(double s) { return fmt::format("{:.2f} s", s); }

std::string rel(const Context& c, std::int64_t wall_ns) {
  auto t0 = c.t0();
  if (!t0) return "?";
  return fmt::format("{:+.2f} s", seconds(*t0, wall_ns));
}

std::string processes_words(const std::vector<const ProcessFacts*>& ms) {
  std::vector<int> ranks;
  std::string others;
  for (const ProcessFacts* f : ms) {
    if (f->proc->rank >= 0 && f->proc->role != Role::Agent)
      ranks.push_back(f->proc->rank);
    else
      others += (others.empty() ? "" : ", ") + f->proc->label();
  }
  std::string out = ranks.empty() ? ""
                                  : (ranks.size() == 1 ? "rank " : "ranks ") + rank_list(ranks);
  if (!others.empty()) out += (out.empty() ? "" : ", ") + others;
  return out;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::vector<int> r = ranks;
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  std::string out;
  for (std::size_t i = 0; i < r.size();) {
    std::size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(r[i]);
    if (j > i) out += (j == i + 1 ? ", " : "-") + std::to_string(r[j]);
    i = j + 1;
  }
  return out;
}

std::optional<int> rank_of(const ProcessFacts& f) {
  return f.proc->rank >= 0 ? std::optional<int>(f.proc->rank) : std::nullopt;
}

std::optional<int> rank_of(const LogEvent& e) { return e.rank >= 0 ? std::optional<int>(e.rank) : std::nullopt; }

Finding log_finding(FailureClass cls, const LogEvent& e) {
  Finding out;
  out.cls = cls;
  out.rank = rank_of(e);
  out.evidence.push_back(e.file + ":" + std::to_string(e.line) + ": " + e.text);
  return out;
}

Finding finding_for(FailureClass cls, const ProcessFacts& f, std::optional<std::int64_t> t) {
  Finding out;
  out.cls = cls;
  out.rank = rank_of(f);
  out.host = f.proc->host;
  out.pid = f.proc->pid;
  out.time_ns = t;
  return out;
}

}  // namespace rdzvscope

#include <fmt/format.h>

#include "reader/names.h"

namespace rdzvscope {

namespace {

std::string sender_words(const Process& p) {
  return p.role == Role::Agent ? "its launcher agent (" + p.pid_words() + " on " + p.host + ")" : p.label();
}

}  // namespace

std::string log_line_words(const LogEvent& e) {
  return e.file + ":" + std::to_string(e.line) + ": " + e.text.substr(0, 200);
}

namespace {

// " for 8.50 s", " for at least 8.50 s"; when nothing traced ran after the call began (the
// lower bound is nothing), " (for how long is not in the traces)".
std::string waited_words(const Context& c, const ProcessFacts& f, const Event& call) {
  bool bound = false;
  const std::int64_t until = c.waited_until(f, &bound);
  const double s = seconds(call.wall_ns, until);
  if (bound && s < 0.5) return " (for how long is not in the traces: nothing traced ran after it began)";
  return " for " + std::string(bound ? "at least " : "") + fmt_seconds(s);
}

// " while waiting in recv on its store connection to ... for 8.50 s": a process that was
// ended while a call was in flight; "" when none was.
std::string while_waiting(const Context& c, const ProcessFacts& f) {
  const Event* call = f.waiting_in();
  if (!call) return "";
  return " while waiting in " + inflight_call_words(*call) + waited_words(c, f, *call);
}

}  // namespace

std::string inflight_call_words(const Event& call) {
  const auto peer = format_sockaddr(call.peer());
  const std::string to = peer ? " to " + *peer : std::string();
  switch (call.kind) {
    case RDZV_EV_RESOLVE: return "a lookup of \"" + call.resolve().host + "\" that had not answered";
    case RDZV_EV_CONNECT: return "a connect" + to + " that had not completed";
    case RDZV_EV_ACCEPT: return "accept on its store port";
    case RDZV_EV_POLL: {
      const std::int64_t t = call.socket().timeout_ms;
      const std::string timeout = t > 0 ? fmt::format(", timeout {:g} s", static_cast<double>(t) / 1000) : ", no timeout";
      if (call.has(RDZV_F_NONBLOCK)) return "a wait (" + op_name(call.op) + timeout + ") for its connect" + to;
      return "a wait (" + op_name(call.op) + timeout + ") on its store connection" + to;
    }
    case RDZV_EV_SEND: return op_name(call.op) + " on its store connection" + to;
    default: {
      const std::int64_t t = call.socket().timeout_ms;
      return op_name(call.op) + " on its store connection" + to +
             (t > 0 ? fmt::format(" (no reply; SO_RCVTIMEO {:g} s)", static_cast<double>(t) / 1000) : " (no reply)");
    }
  }
}

std::string waiting_words(const Context& c, const ProcessFacts& f) {
  const Event* call = f.waiting_in();
  if (!call) return "";
  return inflight_call_words(*call) + " since " + rel(c, call->wall_ns) + waited_words(c, f, *call);
}

std::string oom_kill_words(const OomKill& k) {
  return "the kernel's OOM killer (" +
         (k.memcg ? "its memory cgroup" + (k.cgroup.empty() ? std::string() : " " + k.cgroup) + " was at its limit"
                  : std::string("the machine was out of memory")) +
         "; the kernel's log names " + (k.comm.empty() ? std::string() : k.comm + " ") + "pid " + std::to_string(k.pid) +
         ")";
}

std::string oom_next_step(const Process& p, const OomKill& k) {
  return p.label() + " ran out of memory: lower what it holds at that point (a checkpoint or dataset loaded whole on "
         "every rank at once, the batch size, the data loader's workers) or raise " +
         (k.memcg ? "the job's memory limit (" + (k.cgroup.empty() ? std::string("its cgroup") : k.cgroup) + ")"
                  : std::string("the node's memory"));
}

std::string ending_words(const Context& c, const ProcessFacts& f) {
  const Ending& e = c.ending(f);
  if (e.oom_kill && !e.stopped()) {
    std::string s = "was killed by " + oom_kill_words(*e.oom_kill) + while_waiting(c, f);
    if (e.over_ns) s += ", over by " + rel(c, *e.over_ns);
    else s += "; last seen at " + rel(c, e.last_seen_ns);
    return s;
  }
  if (e.stopped()) {
    std::string s = "was stopped by " + sender_words(*e.signalled_by) + " with " + signal_name(e.sent_signal) + " at " +
                    rel(c, e.sent_ns) + while_waiting(c, f);
    if (e.how == Ending::How::Signaled && e.signal != e.sent_signal) s += " and ended by " + signal_name(e.signal);
    return s;
  }
  switch (e.how) {
    case Ending::How::Exited:
      return "exited with status " + (e.status ? std::to_string(*e.status) : std::string("?")) + " at " +
             rel(c, f.proc->exit_ns.value_or(e.reaped_ns.value_or(*e.over_ns)));
    case Ending::How::Signaled:
      return "was killed by " + signal_name(e.signal) + while_waiting(c, f) + " (its parent reaped it at " +
             rel(c, e.reaped_ns.value_or(*e.over_ns)) +
             (e.hangup_ns && e.hangup_seen_by && e.over_ns == e.hangup_ns
                  ? "; " + e.hangup_seen_by->label() + " read the end of its store connection at " + rel(c, *e.hangup_ns)
                  : std::string()) +
             ")";
    case Ending::How::Vanished: break;
  }
  if (e.killed_seen_ns)  // attach saw the kernel end it: no exit of its own, but no mystery either
    return "was killed by " + signal_name(e.killed_seen_signal) + " at " + rel(c, *e.killed_seen_ns) +
           " (attach saw the kernel end it" +
           (e.hangup_ns && e.hangup_seen_by
                ? "; " + e.hangup_seen_by->label() + " read the end of its store connection at " + rel(c, *e.hangup_ns)
                : std::string()) +
           ")";
  if (e.hangup_ns && e.hangup_seen_by)
    return "vanished without an exit record after " + rel(c, e.last_seen_ns) +
           " (killed by a signal: SIGKILL from the OOM killer or a scheduler, say); " + e.hangup_seen_by->label() +
           " read the end of its store connection at " + rel(c, *e.hangup_ns) +
           ", which it had not closed: it was dead by then";
  // Nothing says it ended: no exit record, no reap by a traced parent, no end of its
  // connection read by another process.
  std::string s = "has no end recorded (killed, or still running when the traces were read); last seen at " +
                  rel(c, e.last_seen_ns);
  if (f.waiting_in()) s += ", waiting in " + waiting_words(c, f);
  return s;
}

std::string crash_words(const Context& c, const ProcessFacts& f) {
  if (const LogEvent* l = c.crash_line(f)) return "its exception: " + log_line_words(*l);
  for (const auto& w : c.logs.worker_failures) {
    if (w.rank != f.proc->rank || f.proc->rank < 0) continue;
    if (w.exception_line)
      return "its exception: " + w.file + ":" + std::to_string(w.exception_line) + ": " + w.exception.substr(0, 200) +
             " (torchrun's summary at line " + std::to_string(w.line) + " names it the root cause)";
    if (w.exception.empty() && w.traceback.empty() && w.error_file.empty()) break;
    std::string s = "torchrun's summary (" + w.file + ":" + std::to_string(w.line) + "): exit code " +
                    (w.exitcode ? std::to_string(*w.exitcode) : std::string("?"));
    if (!w.error_file.empty()) s += ", error file " + w.error_file;
    if (!w.exception.empty()) s += ", exception: " + w.exception.substr(0, 200);
    else if (!w.traceback.empty()) s += ", traceback: " + w.traceback.substr(0, 200);
    return s;
  }
  return "";
}

std::string ending_short(const Context& c, const ProcessFacts& f) {
  const Ending& e = c.ending(f);
  if (e.stopped())
    return "stopped (" + signal_name(e.sent_signal) +
           (e.signalled_by->role == Role::Agent ? std::string(" from its agent") : " from " + e.signalled_by->label()) + ")";
  switch (e.how) {
    case Ending::How::Exited: return "exit " + (e.status ? std::to_string(*e.status) : std::string("?"));
    case Ending::How::Signaled: return "killed (" + signal_name(e.signal) + ")";
    case Ending::How::Vanished: break;
  }
  if (e.killed_seen_ns) return "killed (" + signal_name(e.killed_seen_signal) + ")";
  return "vanished";
}

std::string describe(const Event& e) {
  std::string what = kind_name(e.kind);
  if (e.kind == RDZV_EV_RESOLVE) {
    std::string s = "lookup of \"" + e.resolve().host + "\"";
    if (e.ret != 0) s += " failed: " + resolver_error_name(e.op, e.ret);
    return s;
  }
  if (e.kind == RDZV_EV_RECV && e.has(RDZV_F_ZERO_READ)) what = "recv of 0 bytes (peer closed)";
  if (e.kind == RDZV_EV_POLL) what = "wait of " + std::to_string(e.socket().timeout_ms) + " ms timed out";
  if (e.kind == RDZV_EV_CLOSE && e.has(RDZV_F_ABANDONED)) what = "connect given up (closed while SYN_SENT)";
  std::string s;
  if (e.err) s = errno_name(e.err) + (e.has(RDZV_F_TIMEOUT) ? " (timeout)" : "") + " on " + what;
  else s = what;
  auto peer = format_sockaddr(e.peer());
  auto local = format_sockaddr(e.local());
  if (e.kind == RDZV_EV_BIND || e.kind == RDZV_EV_LISTEN) {
    if (local) s += " " + *local;
  } else if (peer) {
    s += (e.kind == RDZV_EV_ACCEPT ? " from " : " to ") + *peer;
  }
  return s;
}

std::string activity(const ProcessFacts& f) {
  if (!f.arrival_snapshot) return "";
  const rdzv_ev_snapshot& s = f.arrival_snapshot->snapshot();
  const double age = s.since_start_ns / 1e9;
  const double cpu = (s.utime_us + s.stime_us) / 1e6;
  const double read_mb = static_cast<double>(std::max(s.read_bytes, s.rchar)) / 1e6;
  const char* kind = "idle/waiting";
  if (age > 0 && cpu > 0.5 * age) kind = "CPU-bound";
  else if (read_mb > 256) kind = "I/O-bound";
  return fmt::format("{} ({:.1f} s CPU in {:.1f} s since launch, read {:.0f} MB, {} voluntary context switches)",
                     kind, cpu, age, read_mb, s.vol_ctxsw);
}

}  // namespace rdzvscope
