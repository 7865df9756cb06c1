#include "preflight/preflight.h"

#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "preflight/addresses.h"
#include "preflight/bind_port.h"
#include "preflight/connect.h"
#include "preflight/hello.h"
#include "preflight/limits.h"
#include "preflight/meeting.h"
#include "preflight/resolve.h"

namespace rdzvscope::preflight {

std::string this_hostname() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

namespace {

bool same_name(const std::string& a, const std::string& b) {
  return strcasecmp(a.c_str(), b.c_str()) == 0;
}

std::string short_name(const std::string& h) { return h.substr(0, h.find('.')); }

Clock::time_point deadline_of(double timeout_s) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
}

// The distinct addresses of the answer (v4-mapped ones as IPv4), in their order.
std::vector<std::string> canonical(const Lookup& l) {
  std::vector<std::string> out;
  for (const SockAddr& a : l.addresses()) {
    const std::string c = canonical_address(a);
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

void add(Report& r, std::vector<Check> checks) {
  for (Check& c : checks) r.checks.push_back(std::move(c));
}

// The store host's part: its own name, the port, its limits, then the meeting.
void store_host_checks(const Options& opt, Report& r) {
  add(r, {own_name_check(opt.hostname, lookup_like_c10d(opt.hostname, opt.endpoint.port))});
  const BindResult bound = bind_like_c10d(opt.endpoint.port);
  r.checks.push_back(
      bind_check(opt.endpoint.port, bound,
                 bound.fd >= 0 ? std::vector<PortHolder>{} : port_holders(opt.endpoint.port)));
  if (const auto somaxconn = read_somaxconn())
    r.checks.push_back(somaxconn_check(*somaxconn, opt.ranks));
  r.checks.push_back(nofile_check(read_nofile(), opt.ranks));
  if (bound.fd < 0) return;
  if (opt.world_size > 1) {
    opt.progress(fmt::format("listening on {} for {} other node(s), up to {:.0f} s", bound.bound,
                             opt.world_size - 1, opt.timeout_s));
    const Meeting m = wait_for_peers(bound.fd, opt.world_size - 1, opt.hostname, opt.job,
                                     deadline_of(opt.timeout_s));
    add(r, meeting_checks(m, opt.world_size, opt.hostname, opt.node_names, opt.timeout_s, opt.job));
  }
  // The job's store needs the port: it is free again before this command returns.
  ::close(bound.fd);
}

// Any other node: reach the store, then, in a meeting, say hello and sample the clock.
void node_checks(const Options& opt, const Lookup& lookup, Report& r) {
  if (!lookup.resolved()) return;  // the resolve check said why; nothing to connect to
  const bool meeting = opt.world_size > 1;
  const auto deadline = deadline_of(opt.timeout_s);
  ConnectResult c = connect_like_c10d(lookup.addresses(), deadline, meeting);
  opt.progress(fmt::format("connect: {} attempt(s) in {:.1f} s", c.attempts.size(), c.ms / 1000));
  r.checks.push_back(connect_check(opt.endpoint.text(), c, meeting));
  if (c.fd < 0) return;
  if (!meeting) {
    r.checks.push_back(
        warn_check("listener",
                   fmt::format("something already listens on {} (connected to {})",
                               opt.endpoint.text(), c.connected_to),
                   "before the job starts nothing should: on the store host, find it with "
                   "rdzvscope preflight (it names the holder) or ss -ltnp"));
    ::close(c.fd);
    return;
  }
  Hello hello{opt.hostname, opt.world_size, 0, r.checks, opt.node_rank, opt.job};
  const Exchange e = exchange_hello(c.fd, hello, deadline);
  ::close(c.fd);
  r.checks.push_back(exchange_check(opt.endpoint.text(), e));
  if (e.ok) r.checks.push_back(clock_check(e.store_host, e.clock, false));
}

}  // namespace

Role role_of(const std::string& endpoint_host, const std::string& hostname,
             const std::vector<std::string>& resolved, const std::vector<std::string>& local,
             std::string& reason) {
  if (same_name(endpoint_host, "localhost") || same_name(endpoint_host, hostname) ||
      same_name(endpoint_host, short_name(hostname)) ||
      same_name(short_name(endpoint_host), hostname)) {
    reason = fmt::format("the endpoint names this node ({})", hostname);
    return Role::StoreHost;
  }
  for (const std::string& a : resolved) {
    if (std::find(local.begin(), local.end(), a) != local.end() || a.rfind("127.", 0) == 0 ||
        a == "::1") {
      reason = fmt::format("{} resolves to {}, an address of this node", endpoint_host, a);
      return Role::StoreHost;
    }
  }
  reason = resolved.empty() ? fmt::format("{} does not resolve here", endpoint_host)
                            : fmt::format("{} is not an address of this node ({})", endpoint_host,
                                          fmt::join(resolved, ", "));
  return Role::Node;
}

Report run_preflight(const Options& opt) {
  Report r;
  r.host = opt.hostname;
  r.node_rank = opt.node_rank;
  r.node_rank_source = opt.node_rank_source;
  r.job = opt.job;
  r.job_source = opt.job_source;
  r.endpoint = opt.endpoint;
  r.world_size = opt.world_size;
  r.ranks = opt.ranks;
  r.ranks_source = opt.ranks_source;
  r.timeout_s = opt.timeout_s;
  r.started_ns = wall_ns();
  const auto t0 = Clock::now();

  const Lookup lookup = lookup_like_c10d(opt.endpoint.host, opt.endpoint.port);
  opt.progress(fmt::format("resolved {} in {:.1f} ms", opt.endpoint.host, lookup.ms));
  add(r, resolve_checks(lookup, answer_source(opt.endpoint.host)));
  r.role = role_of(opt.endpoint.host, opt.hostname, canonical(lookup), local_addresses(),
                   r.role_reason);
  opt.progress(fmt::format("role: {} ({})", r.role == Role::StoreHost ? "store host" : "node",
                           r.role_reason));
  if (r.role == Role::StoreHost) {
    store_host_checks(opt, r);
  } else {
    node_checks(opt, lookup, r);
  }
  r.took_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

}  // namespace rdzvscope::preflight
