// store_unresponsive: the store host's process existed and stopped answering (issue 27). Every
// TCPStore request is one message and one reply, and the server answers a set, get or add
// within milliseconds; a client that sent one and waits for the reply (a recv or a wait on its
// store connection, in flight when it was ended) for seconds while the store's process shows
// nothing at all after the clients began to wait, and had not ended (no exit, no reap, no end
// of its connections read by a client), is waiting on a store that can no longer run: stopped
// (SIGSTOP, a debugger), frozen (a node swapping), or blocked. A dead store is another
// story (broken_pipe: its clients read the end of their connections); so is a rank that never
// came (straggler_timeout: some rank never reached the store, the others wait for its key).
//
// Cause `network`: the store host's process kept receiving on its store sockets (its server
// reading its own client's requests, its client the replies) seconds after every other rank
// had asked, and those ranks run on other hosts: the store ran and served its own node, and
// no request from theirs was answered. Their requests or its replies were lost between the
// nodes (a node cut off, a firewall that drops, a link down): the process was not frozen.
// The same cut-off left alone long enough ends differently: the clients' kernels give their
// unacknowledged connections up (tcp_retries2, about 15 minutes by default, before the
// store's 30-minute timeout) and their store receives fail with ETIMEDOUT, while the store's
// process still serves its own node. A stopped store's kernel acknowledges its clients'
// requests: no ETIMEDOUT. Also cause `network`.
#include <cerrno>

#include <fmt/format.h>

#include "model/wait_for.h"
#include "reader/names.h"
#include "rules.h"

namespace rdzvscope {

namespace {

// The store's address as the waiting client's connection has it ("10.231.0.1"), "" if unknown.
std::string address_of(const Event& wait) {
  const auto peer = format_sockaddr(wait.peer());
  if (!peer) return "";
  std::string a = peer->substr(0, peer->rfind(':'));
  if (a.size() > 2 && a.front() == '[' && a.back() == ']') a = a.substr(1, a.size() - 2);
  if (a.rfind("::ffff:", 0) == 0 && a.find('.') != std::string::npos) a = a.substr(7);
  return a;
}

// The next step of a store host's node cut off: the path, not the process.
std::string network_next_step(const std::string& host, const std::string& addr) {
  const std::string a = addr.empty() ? "<store host>" : addr;
  return fmt::format("check the network path from the other ranks' nodes to the store host's node {}{}, not its "
                     "process: `ping {}`, the firewall on both ends (`iptables -S`, `nft list ruleset`), the link "
                     "(`ip -s link`); while it hangs, `ss -tni dst {}` on a waiting node shows the store requests "
                     "unacknowledged and retransmitted",
                     host, addr.empty() ? "" : " (" + addr + ")", a, a);
}

// A store connection to the host that the kernel gave up (ETIMEDOUT on an established
// connection's send or receive: its data unacknowledged for tcp_retries2 retransmissions).
const Event* gave_up_on(const ProcessFacts& f, const ProcessFacts& host) {
  for (const Event* e : f.io_failures)
    if (e->err == ETIMEDOUT && host.listens_on(e->peer().port)) return e;
  return nullptr;
}

// Every rank but the store host lost its store connection to ETIMEDOUT, while the host, on
// another node, had not ended and its store still received after the first of them did.
std::optional<Candidate> store_connections_timed_out(const Context& c) {
  if (!c.absent_ranks.empty()) return std::nullopt;
  for (const ProcessFacts* host : c.ranks()) {
    if (!host->listen_ns) continue;
    const Ending& end = c.ending(*host);
    if (end.how != Ending::How::Vanished || end.hangup_ns || end.over_ns || end.stopped()) continue;
    const std::optional<std::int64_t> served = host->proc->last_store_recv_ns;
    if (!served) continue;
    std::vector<int> clients;
    std::vector<std::string> lines;
    const Event* first = nullptr;
    bool all = true;
    for (const ProcessFacts* f : c.ranks()) {
      if (f == host) continue;
      const Event* e = gave_up_on(*f, *host);
      if (!e || !f->wait_timeouts.empty() || f->proc->host == host->proc->host) {
        all = false;
        break;
      }
      // When the call failed, not when it began: 1.13's recv blocks until the kernel gives up.
      if (!first || end_ns(*e) < end_ns(*first)) first = e;
      clients.push_back(f->proc->rank);
      lines.push_back(f->proc->label() + "'s store connection to " + format_sockaddr(e->peer()).value_or("the store") +
                      " timed out at " + rel(c, end_ns(*e)) + " (ETIMEDOUT on a " + kind_name(e->kind) +
                      ": its kernel gave the unacknowledged connection up); it " + ending_words(c, *f));
    }
    if (!all || !first || *served < end_ns(*first)) continue;
    Candidate out;
    Verdict& v = out.verdict;
    v.cls = FailureClass::StoreUnresponsive;
    v.cause = "network";
    v.initiating_rank = host->proc->rank >= 0 ? std::optional<int>(host->proc->rank) : std::nullopt;
    v.initiating_host = host->proc->host;
    v.confidence = "high";
    v.summary = fmt::format("the store host's node {} was cut off from {} {}: their store connections to it timed out "
                            "(ETIMEDOUT from {}: their kernels retransmitted the requests unacknowledged until they "
                            "gave the connections up), while the store's process there, {}, kept running and serving "
                            "its own node (its store sockets still received until {}): not a frozen store, whose "
                            "kernel would have acknowledged them, nor a dead one",
                            host->proc->host, clients.size() == 1 ? "rank" : "ranks", rank_list(clients),
                            rel(c, end_ns(*first)), host->proc->label(), rel(c, *served));
    v.next_step = network_next_step(host->proc->host, address_of(*first));
    Finding fd;
    fd.cls = FailureClass::StoreUnresponsive;
    fd.evidence.push_back(host->proc->label() + " hosts the store; its process kept running: its store sockets "
                          "received until " + rel(c, *served) + "; it " + ending_words(c, *host));
    fd.evidence.insert(fd.evidence.end(), lines.begin(), lines.end());
    out.findings.push_back(fd);
    out.discriminators.set("waiting_ranks", RankSet{clients});
    out.discriminators.set("store_served_own_node", Seconds{seconds(end_ns(*first), *served)});
    return out;
  }
  return std::nullopt;
}

}  // namespace

// Who the clients wait for, and the store host's silence: wait_for.h.
std::optional<Candidate> rule_store_unresponsive(const Context& c) {
  if (auto gave_up = store_connections_timed_out(c)) return gave_up;
  auto found = find_wait_for(c);
  if (!found || found->on != WaitFor::On::StoreHost) return std::nullopt;
  const WaitFor& s = *found;
  std::vector<int> clients;
  for (const ProcessFacts* f : s.waiting) clients.push_back(f->proc->rank);
  const double silent = seconds(s.host_last_seen_ns, s.until_ns);
  const double waited = seconds(s.first_wait_ns, s.until_ns);
  const bool length_known = !(s.bound && diff_ns(s.first_wait_ns, s.until_ns) < kStoreSilentNs);
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
  const std::string store_addr = address_of(*s.waiting.front()->store_wait);
  if (s.network) {
    // The host's own store traffic moved after they asked: what they waited for was the path.
    v.cause = "network";
    v.summary = fmt::format("the store host's node {} was cut off from {} {}: they {}, while the store's process "
                            "there, {}, kept running and serving its own node (its store sockets still received until "
                            "{}, {} after the last of them asked): their requests or its replies were lost between "
                            "the nodes (a node unreachable, a firewall that drops, a link down), not a frozen or dead "
                            "store",
                            s.host->proc->host, clients.size() == 1 ? "rank" : "ranks", rank_list(clients), how_long,
                            s.host->proc->label(), rel(c, s.host_served_ns),
                            fmt_seconds(seconds(s.last_wait_ns, s.host_served_ns)));
    v.next_step = network_next_step(s.host->proc->host, store_addr);
  } else {
    const bool elsewhere = s.waiting_on_other_hosts();
    v.summary = fmt::format("the store host {} stopped answering: {} {} {}, while the store's process showed nothing "
                            "after {} and had not ended (no exit, no end of its connections): stopped (SIGSTOP, a "
                            "debugger), frozen (a node swapping) or blocked, not dead{}",
                            s.host->proc->label(), clients.size() == 1 ? "rank" : "ranks", rank_list(clients), how_long,
                            rel(c, s.host_last_seen_ns),
                            elsewhere ? "; or its node cut off from theirs, if its process sent its store nothing of "
                                        "its own meanwhile (then nothing traced tells the two apart)"
                                      : "");
    v.next_step = "look at the store host while it hangs: `cat /proc/PID/status` (State: T is stopped, D is blocked on "
                  "I/O), `py-spy dump --pid PID`, its node's memory and swap (`vmstat 1`, `journalctl -k`); rdzvscope "
                  "watch shows who waits on whom";
    if (elsewhere)
      v.next_step += fmt::format("; if its process runs (State: S or R), check the network path to its node{} "
                                 "(`ping`, `iptables -S`, `ss -tni` on a waiting node)",
                                 store_addr.empty() ? "" : " (" + store_addr + ")");
  }
  Finding fd;
  fd.cls = FailureClass::StoreUnresponsive;
  if (s.network) {
    fd.evidence.push_back(s.host->proc->label() + " hosts the store; its process kept running: its store sockets "
                          "received until " + rel(c, s.host_served_ns) + " (its own client served on its node), " +
                          fmt_seconds(seconds(s.last_wait_ns, s.host_served_ns)) + " after the last of the others "
                          "asked; it " + ending_words(c, *s.host));
  } else {
    fd.evidence.push_back(s.host->proc->label() + " hosts the store; its last sign of life at " +
                          rel(c, s.host_last_seen_ns) +
                          (s.host_last_seen_ns < s.first_wait_ns ? ", before any of them began to wait"
                                                                 : ", as they began to wait (from " + rel(c, s.first_wait_ns) + ")") +
                          (length_known ? ", then nothing for " + std::string(s.bound ? "at least " : "") + fmt_seconds(silent)
                                        : std::string()) +
                          "; it " + ending_words(c, *s.host));
  }
  for (const ProcessFacts* f : s.waiting)
    fd.evidence.push_back(f->proc->label() + " was waiting in " + waiting_words(c, *f));
  out.findings.push_back(fd);
  out.discriminators.set("waiting_ranks", RankSet{clients});
  if (s.network) {
    // Silent towards the waiting ranks only: its store traffic moved until host_served_ns.
    out.discriminators.set("store_silent", Seconds{seconds(s.last_wait_ns, s.until_ns)});
    out.discriminators.set("store_served_own_node", Seconds{seconds(s.last_wait_ns, s.host_served_ns)});
  } else {
    out.discriminators.set("store_silent", Seconds{silent});
  }
  return out;
}

}  // namespace rdzvscope
