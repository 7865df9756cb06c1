#include "clock_alignment.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sys/socket.h>

#include <fmt/format.h>

#include "address.h"

namespace rdzvscope {

namespace {

// An address and port as a comparable key; nullopt for none, unspecified or loopback
// addresses. IPv4-mapped IPv6 addresses count as their IPv4 address (a dual-stack server
// sees [::ffff:10.0.0.2] where an IPv4 client saw 10.0.0.2).
std::optional<std::string> endpoint(const rdzv_sockaddr& a) {
  if (a.port == 0 || (a.family != AF_INET && a.family != AF_INET6) || is_unspecified(a) || is_loopback(a))
    return std::nullopt;
  const auto v6 = ipv6_form(a);
  std::string key(v6.begin(), v6.end());
  return key + static_cast<char>(a.port >> 8) + static_cast<char>(a.port & 0xff);
}

// "client endpoint | server endpoint": one TCP connection seen from either side.
std::optional<std::string> conn_key(const rdzv_sockaddr& client, const rdzv_sockaddr& server) {
  auto c = endpoint(client), s = endpoint(server);
  if (!c || !s) return std::nullopt;
  return *c + "|" + *s;
}

// One side of a connection: who, when it was set up, and its first data each way.
struct Side {
  std::size_t proc = 0;
  std::int64_t start_ns = 0;  // client: connect began; server: accept began
  std::int64_t setup_end_ns = 0;  // server: accept returned
  std::optional<std::int64_t> first_send_start, first_data_recv_end;
  int seen = 0;  // more than one: the tuple was reused, the connection is ambiguous
};

std::int64_t ends(const Event& e) { return e.wall_ns + static_cast<std::int64_t>(e.dur_ns); }

// Bounds on theta (the server host's clock minus the client host's) from all pairs of one
// host pair; a window without both ends places nothing.
struct Window {
  std::optional<std::int64_t> lo, hi;
  std::optional<std::pair<std::int64_t, std::int64_t>> tightest;  // the narrowest one-pair window
  std::size_t pairs = 0;
  void add(std::optional<std::int64_t> l, std::optional<std::int64_t> h) {
    ++pairs;
    if (l) lo = lo ? std::max(*lo, *l) : *l;
    if (h) hi = hi ? std::min(*hi, *h) : *h;
    if (l && h && *l <= *h && (!tightest || *h - *l < tightest->second - tightest->first)) tightest = {{*l, *h}};
  }
  // The window to use: the intersection, else (clocks drifted, or a bad match) the tightest pair.
  std::optional<std::pair<std::int64_t, std::int64_t>> result() const {
    if (lo && hi && *lo <= *hi) return std::pair{*lo, *hi};
    return tightest;
  }
};

void collect_sides(const std::vector<Process>& ps, std::map<std::string, Side>& clients,
                   std::map<std::string, Side>& servers) {
  for (std::size_t i = 0; i < ps.size(); ++i) {
    std::set<std::pair<std::string, std::int64_t>> seen_here;  // a connect recorded twice
    for (const Event& e : ps[i].events) {
      // A connection attach found already open is dated by attach, not by its setup: no bound.
      if (e.has(RDZV_F_PREEXISTING)) continue;
      const bool connected = e.is_connect() && e.succeeded();
      if (connected) {
        auto key = conn_key(e.local(), e.peer());
        if (!key || !seen_here.insert({*key, e.wall_ns}).second) continue;
        Side& s = clients[*key];
        if (s.seen++ == 0) s.proc = i, s.start_ns = e.wall_ns;
      } else if (e.kind == RDZV_EV_ACCEPT && e.ret >= 0) {
        auto key = conn_key(e.peer(), e.local());
        if (!key) continue;
        Side& s = servers[*key];
        if (s.seen++ == 0) s.proc = i, s.start_ns = e.wall_ns, s.setup_end_ns = ends(e);
      }
    }
  }
  // The first data each way, on each side's own process, after the connection was made.
  for (std::size_t i = 0; i < ps.size(); ++i)
    for (const Event& e : ps[i].events) {
      if ((e.kind != RDZV_EV_SEND && e.kind != RDZV_EV_RECV) || e.ret <= 0) continue;
      for (int as_client = 0; as_client < 2; ++as_client) {
        auto key = as_client ? conn_key(e.local(), e.peer()) : conn_key(e.peer(), e.local());
        if (!key) break;
        auto& side_map = as_client ? clients : servers;
        auto it = side_map.find(*key);
        if (it == side_map.end() || it->second.proc != i || e.wall_ns < it->second.start_ns) continue;
        Side& s = it->second;
        if (e.kind == RDZV_EV_SEND && !s.first_send_start) s.first_send_start = e.wall_ns;
        if (e.kind == RDZV_EV_RECV && !s.first_data_recv_end) s.first_data_recv_end = ends(e);
      }
    }
}

// The host every other is placed against: the store host's, i.e. of the process that listened
// on a store port first (a worker, or the torchrun agent that hosts the c10d store).
std::optional<std::string> reference_host(const std::vector<Process>& ps) {
  std::optional<std::pair<std::int64_t, std::string>> best;
  for (const Process& p : ps)
    for (const Event& e : p.events)
      if (e.kind == RDZV_EV_LISTEN && e.ret == 0 && e.on_store_socket()) {
        if (!best || e.wall_ns < best->first) best = {e.wall_ns, p.host};
        break;
      }
  if (best) return best->second;
  return std::nullopt;
}

// Every header's clock is within 2000-2100 (process_model.cpp), so a real offset is under a
// century even for a node whose clock was never set; a larger one (saturated arithmetic on
// damaged times) is reported, never applied.
constexpr std::int64_t kPlausibleSkewNs = 100LL * 366 * 86400 * 1'000'000'000;

std::int64_t sat_sub(std::int64_t a, std::int64_t b) {
  std::int64_t out;
  if (__builtin_sub_overflow(a, b, &out)) return b < 0 ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
  return out;
}

std::int64_t sat_add(std::int64_t a, std::int64_t b) {
  std::int64_t out;
  if (__builtin_add_overflow(a, b, &out)) return b > 0 ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
  return out;
}

using HostPair = std::pair<std::string, std::string>;

// Windows per host pair from the connections seen at both ends, theta = clock(second) -
// clock(first), first < second.
std::map<HostPair, Window> pair_windows(const std::vector<Process>& ps, const std::map<std::string, Side>& clients,
                                        const std::map<std::string, Side>& servers) {
  std::map<HostPair, Window> windows;
  for (const auto& [key, c] : clients) {
    auto it = servers.find(key);
    if (it == servers.end() || c.seen != 1 || it->second.seen != 1) continue;
    const Side& s = it->second;
    const std::string& x = ps[c.proc].host;
    const std::string& y = ps[s.proc].host;
    if (x == y) continue;
    // theta = clock_y - clock_x:  lo from the server's reply, hi from the client's opening.
    std::optional<std::int64_t> lo, hi = sat_sub(s.setup_end_ns, c.start_ns);
    if (s.first_send_start && c.first_data_recv_end) lo = sat_sub(*s.first_send_start, *c.first_data_recv_end);
    if (s.first_data_recv_end && c.first_send_start) hi = std::min(*hi, sat_sub(*s.first_data_recv_end, *c.first_send_start));
    if (x < y) {
      windows[{x, y}].add(lo, hi);
    } else {
      std::optional<std::int64_t> nlo, nhi;
      if (hi) nlo = sat_sub(0, *hi);
      if (lo) nhi = sat_sub(0, *lo);
      windows[{y, x}].add(nlo, nhi);
    }
  }
  return windows;
}

// The hosts placed outwards from the reference, along the pairs' windows.
std::map<std::string, ClockEstimate> place_hosts(const std::map<HostPair, Window>& windows, const std::string& ref) {
  std::map<std::string, ClockEstimate> placed;
  placed[ref] = ClockEstimate{ref, 0, 0, 0, true, false};
  std::deque<std::string> todo{ref};
  while (!todo.empty()) {
    const std::string h = todo.front();
    todo.pop_front();
    for (const auto& [pair, w] : windows) {
      const bool first = pair.first == h;
      if (!first && pair.second != h) continue;
      const std::string& other = first ? pair.second : pair.first;
      auto win = w.result();
      if (h == ref) placed[ref].pairs += w.pairs;
      if (!win || placed.count(other)) continue;
      const std::int64_t half = sat_sub(win->second, win->first) / 2;
      const std::int64_t mid = sat_add(win->first, half);
      const ClockEstimate& base = placed[h];
      // theta = clock(second) - clock(first); offsets are clock(host) - clock(reference).
      ClockEstimate e{other, first ? sat_add(base.offset_ns, mid) : sat_sub(base.offset_ns, mid),
                      sat_add(base.uncertainty_ns, half), w.pairs, false, false};
      placed[other] = e;
      todo.push_back(other);
    }
  }
  return placed;
}

// Moves the processes of `e.host` onto the reference clock when the offset is known to be
// real (larger than its uncertainty) and plausible.
void apply_offset(std::vector<Process>& ps, ClockEstimate& e) {
  // uncertainty_ns >= 0 always, so negating it cannot overflow (negating the offset could).
  e.applied = (e.offset_ns > e.uncertainty_ns || e.offset_ns < -e.uncertainty_ns) &&
              e.offset_ns < kPlausibleSkewNs && e.offset_ns > -kPlausibleSkewNs;
  if (!e.applied) return;
  for (Process& p : ps) {
    if (p.host != e.host) continue;
    for (Event& ev : p.events) ev.wall_ns = sat_sub(ev.wall_ns, e.offset_ns);
    for (Event& ev : p.inflight) ev.wall_ns = sat_sub(ev.wall_ns, e.offset_ns);
    p.launched_ns = sat_sub(p.launched_ns, e.offset_ns);
    if (p.exit_ns) p.exit_ns = sat_sub(*p.exit_ns, e.offset_ns);
    if (p.last_store_recv_ns) p.last_store_recv_ns = sat_sub(*p.last_store_recv_ns, e.offset_ns);
  }
}

}  // namespace

std::vector<ClockEstimate> align_clocks(std::vector<Process>& ps) {
  std::set<std::string> hosts;
  for (const Process& p : ps) hosts.insert(p.host);
  if (hosts.size() < 2) return {};
  auto ref = reference_host(ps);
  if (!ref) return {};

  std::map<std::string, Side> clients, servers;
  collect_sides(ps, clients, servers);
  std::map<std::string, ClockEstimate> placed = place_hosts(pair_windows(ps, clients, servers), *ref);
  if (placed.size() < 2) return {};

  std::vector<ClockEstimate> out{placed[*ref]};
  for (auto& [host, e] : placed) {
    if (host == *ref) continue;
    apply_offset(ps, e);
    out.push_back(e);
  }
  return out;
}

}  // namespace rdzvscope

namespace rdzvscope {

std::string describe_clock(const ClockEstimate& e, const std::string& reference_host) {
  if (e.reference) return e.host + " (the store host) is the reference clock";
  const std::string buf = fmt::format("{:+.2f} ms (+- {:.2f} ms)", e.offset_ns / 1e6, e.uncertainty_ns / 1e6);
  return e.host + "'s clock is " + buf + " off " + reference_host + "'s (" + std::to_string(e.pairs) +
         " connection(s)); " +
         (e.applied ? "its times were moved onto " + reference_host + "'s clock"
                    : "no more than the uncertainty, so its times were left as they are");
}

}  // namespace rdzvscope
