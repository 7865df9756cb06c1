#include "context.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

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
  return last;
}

bool Context::any_rank_failed() const {
  for (const ProcessFacts* f : ranks())
    if (f->failed()) return true;
  return false;
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

std::optional<std::int64_t> Context::t0() const {
  std::optional<std::int64_t> t;
  for (const auto& f : facts)
    if (!t || f.proc->launched_ns < *t) t = f.proc->launched_ns;
  return t;
}

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
  return std::nullopt;
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

std::string describe(const Event& e) {
  const rdzv_record& r = e.rec;
  std::string what = kind_name(r.kind);
  if (r.kind == RDZV_EV_RESOLVE) {
    std::string s = "lookup of \"" + bounded_string(r.u.resolve.host) + "\"";
    if (r.ret != 0) s += " failed: " + resolver_error_name(r.op, r.ret);
    return s;
  }
  if (r.kind == RDZV_EV_RECV && (r.flags & RDZV_F_ZERO_READ)) what = "recv of 0 bytes (peer closed)";
  if (r.kind == RDZV_EV_POLL) what = "wait of " + std::to_string(r.u.net.timeout_ms) + " ms timed out";
  if (r.kind == RDZV_EV_CLOSE && (r.flags & RDZV_F_ABANDONED)) what = "connect given up (closed while SYN_SENT)";
  std::string s;
  if (r.err) s = errno_name(r.err) + (r.flags & RDZV_F_TIMEOUT ? " (timeout)" : "") + " on " + what;
  else s = what;
  auto peer = format_sockaddr(r.u.net.peer);
  auto local = format_sockaddr(r.u.net.local);
  if (r.kind == RDZV_EV_BIND || r.kind == RDZV_EV_LISTEN) {
    if (local) s += " " + *local;
  } else if (peer) {
    s += (r.kind == RDZV_EV_ACCEPT ? " from " : " to ") + *peer;
  }
  return s;
}

std::string activity(const ProcessFacts& f) {
  if (!f.arrival_snapshot) return "";
  const rdzv_ev_snapshot& s = f.arrival_snapshot->rec.u.snap;
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
