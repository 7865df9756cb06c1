// What each traced process did during the rendezvous, derived once from its events: the
// rules read these facts instead of walking raw records each time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "process_model.h"

namespace rdzvscope {

struct ProcessFacts {
  const Process* proc = nullptr;

  // Name resolution of the rendezvous host (a lookup whose service is a store port, or whose
  // host is MASTER_ADDR); passive and reverse lookups are not the rendezvous host.
  std::vector<const Event*> resolves;
  std::vector<const Event*> failed_resolves;

  // Store connects (client side): every attempt, its outcome.
  std::optional<std::int64_t> first_store_attempt_ns;
  std::optional<std::int64_t> connected_ns;
  std::uint16_t store_port = 0;        // the store port this process connected to (or tried)
  std::vector<const Event*> refused;   // ECONNREFUSED on a store connect
  std::vector<const Event*> connect_timeouts; // ETIMEDOUT, or given up while SYN_SENT
  std::vector<const Event*> connect_other_failures;
  // Connects to peers outside the store refused (a process group's own connections): not
  // errors of the rendezvous by themselves, evidence for the rule that explains them.
  std::vector<const Event*> peer_refused;

  // Store server side.
  std::optional<std::int64_t> listen_ns;   // its first store listen
  std::uint16_t listen_port = 0;
  // Every store port it listened on: torchrun's c10d agent hosts two stores (the rendezvous
  // endpoint, and the workers' store on a port picked at run time).
  std::vector<std::uint16_t> listen_ports;
  bool listens_on(std::uint16_t port) const {
    return std::find(listen_ports.begin(), listen_ports.end(), port) != listen_ports.end();
  }
  const Event* bind_failure = nullptr;  // EADDRINUSE (or other) on a store port
  int accepts = 0;

  // Store traffic after connecting.
  std::vector<const Event*> io_failures;  // send/recv errors other than timeouts (EPIPE, ECONNRESET...)
  std::vector<const Event*> wait_timeouts; // recv EAGAIN after SO_RCVTIMEO, poll timeouts on store sockets
  std::vector<const Event*> zero_reads;
  std::optional<std::int64_t> timeout_ms;  // the timeout this process configured, when seen

  // Its first TCP connection to a peer that is not the store (a connect that succeeded, or an
  // accept) after it reached the store: the process group's own connections (gloo's pairs,
  // NCCL's bootstrap ring), made once the rendezvous gave every rank its peers' addresses.
  std::optional<std::int64_t> peer_connected_ns;

  // Resource snapshot at arrival (first store connect, or the first failure snapshot).
  const Event* arrival_snapshot = nullptr;

  const Event* first_error = nullptr;  // earliest failure of any kind above

  // Calls it had begun and not returned from when its trace was read (Process::inflight):
  // what it was waiting in when it was killed, or still is. By start.
  // store_wait: a client's wait for the store (a recv, a send, or a wait on a socket to a
  // store port): a reply, or another rank's key. connect_wait: a store connect that had not
  // completed (a blocking connect, or a wait on a connect in progress). lookup_wait: a lookup
  // of a name that had not answered. The earliest of each (for store_wait, the earliest of
  // its main thread's when it has one: a helper thread's wait may be idle by design).
  const Event* store_wait = nullptr;
  // The request store_wait waits for the reply to: the last send recorded on the same
  // connection (descriptor) by the same thread before the wait began. TCPStore's client sends
  // a request, then reads its reply, on one socket, in one thread. Null when none is recorded.
  const Event* store_request = nullptr;
  const Event* connect_wait = nullptr;
  const Event* lookup_wait = nullptr;
  // Its first in-flight wait of any of the three kinds above.
  const Event* waiting_in() const;

  bool failed() const;  // exited non-zero, or vanished (killed, or still hung)
  // When the process reached the store: its first store connect attempt, else nullopt.
  std::optional<std::int64_t> arrival_ns() const { return first_store_attempt_ns; }
  // When it is known to have reached the store: its first attempt, else (a connection attach
  // found already made, which is no attempt of then) when it was seen connected.
  std::optional<std::int64_t> at_store_ns() const { return first_store_attempt_ns ? first_store_attempt_ns : connected_ns; }
};

std::vector<ProcessFacts> derive_facts(const std::vector<Process>& processes);

// A timeout a job can really have configured (a damaged file or log can say anything):
// positive and at most a year.
inline bool plausible_timeout_ms(std::int64_t ms) { return ms > 0 && ms <= 366LL * 86400 * 1000; }

// When an event's call ended (a wait that timed out failed at its end, not its start).
// Modular arithmetic, like wall_ns(): a damaged record's times must not be UB.
inline std::int64_t end_ns(const Event& e) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(e.wall_ns) + e.dur_ns);
}

// to_ns - from_ns, modular: times from a damaged trace must not be UB.
inline std::int64_t diff_ns(std::int64_t from_ns, std::int64_t to_ns) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(to_ns) - static_cast<std::uint64_t>(from_ns));
}

// Seconds between two wall-clock times, for reports.
inline double seconds(std::int64_t from_ns, std::int64_t to_ns) {
  return static_cast<double>(diff_ns(from_ns, to_ns)) / 1e9;
}

}  // namespace rdzvscope
