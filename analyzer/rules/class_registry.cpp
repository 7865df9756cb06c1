#include "class_registry.h"

#include <array>

#include "rules.h"

namespace rdzvscope {

namespace {

// --runs: what to do when every run failed the same way on the same host, by class.

std::string name_resolution_on(const std::string& host, const Diagnosis& last) {
  return "on " + host + ", run `getent hosts " + last.evidence.unresolved_name.value_or("RDZV_HOST") +
         "` and compare /etc/hosts, /etc/resolv.conf and the search domains with a node where the name "
         "resolves; this is the node's configuration, a PyTorch upgrade will not help";
}

std::string connect_timeout_on(const std::string& host, const Diagnosis&) {
  return "on " + host + ", check the firewall and routes (`iptables -S`, `ip route`) and whether it answers "
         "from another node (`nc -zv " + host + " PORT`)";
}

std::string config_mismatch_on(const std::string& host, const Diagnosis&) {
  return "on " + host + ", find what sets the rendezvous settings differently from the other nodes (the job "
         "script, the environment, a profile: `env | grep -E 'MASTER_|WORLD_SIZE|TORCHELASTIC'`) and make them "
         "identical on every node";
}

std::string store_unreachable_on(const std::string& host, const Diagnosis&) {
  return "on " + host + ", check what rejects its connections to the store every time (`iptables -S`, "
         "`ip route get <store address>`, `getent hosts <MASTER_ADDR>`) against a node that gets through";
}

std::string straggler_on(const std::string& host, const Diagnosis&) {
  return "find what makes " + host + " slow before init_process_group every time (its storage, load, a slow disk: "
         "`iostat -x 1`, `uptime` there)";
}

std::string store_unresponsive_on(const std::string& host, const Diagnosis&) {
  return "find what freezes the store host on " + host + " every time (memory pressure and swapping: `vmstat 1`, "
         "`journalctl -k`; a debugger or a job-control stop; a node that stalls): its process existed and did not answer";
}

std::string broken_pipe_on(const std::string& host, const Diagnosis& last) {
  return "find why the process on " + host + " dies or drops its store connection every time "
         "(`journalctl -k | grep -i -E 'oom|killed'` there); " + last.verdict.next_step;
}

std::string rank_died_on(const std::string& host, const Diagnosis& last) {
  return "find why the process on " + host + " dies every time: its crash in its own log, and "
         "`journalctl -k | grep -i -E 'oom|killed'` there; " + last.verdict.next_step;
}

std::string port_conflict_on(const std::string& host, const Diagnosis&) {
  return "on " + host + ", find what holds the store port (`ss -ltnp`) and pick another MASTER_PORT";
}

std::string any_class_on(const std::string& host, const Diagnosis& last) {
  return "check " + host + "'s configuration against a healthy node; " + last.verdict.next_step;
}

// --runs: what to do when the failure moved between ranks and hosts, by class.

std::string broken_pipe_moving(const Diagnosis& last) {
  if (last.verdict.cause && *last.verdict.cause == "peer_died")
    return "a different process died first in each run: look at what killed each (OOM killer, the scheduler: "
           "`journalctl -k | grep -i -E 'oom|killed'`); if none died, a broken pipe on a random rank is the "
           "TCPStore bug of PyTorch <= 2.7: upgrade PyTorch past 2.8";
  return "a broken pipe on a different rank each run is the signature of the c10d TCPStore bug of PyTorch "
         "<= 2.7: upgrade PyTorch past 2.8 (2.9.1 confirmed) and retest before debugging nodes or the network";
}

std::string rank_died_moving(const Diagnosis&) {
  return "a different rank died first in each run: read each one's crash (its log, its exit status or signal) "
         "and look at what they share (memory limits and the OOM killer, the data they read, the code path)";
}

std::string transient_moving(const Diagnosis&) {
  return "a transient: relaunch, and investigate only if it keeps reproducing (no node is to blame, it moved)";
}

std::string straggler_moving(const Diagnosis&) {
  return "a different rank was late in each run: look at what the ranks share (shared storage, data loading) "
         "rather than one node, or raise init_process_group(timeout=...)";
}

std::string any_class_moving(const Diagnosis& last) {
  return "the failure moves between ranks and nodes, so it is not one node's configuration: look at what they "
         "share (network, the store host, the PyTorch version); " + last.verdict.next_step;
}

// Strongest first. Precedence follows causality (class_registry.h).
constexpr std::array<ClassRow, 13> kRegistry{{
    {FailureClass::RdzvCollision, 95, 95, rule_rdzv_collision, false, any_class_on, any_class_moving},
    {FailureClass::PortConflict, 90, 90, rule_port_conflict, true, port_conflict_on, any_class_moving},
    {FailureClass::NameResolution, 85, 85, rule_name_resolution, true, name_resolution_on, any_class_moving},
    // Below name_resolution: a MASTER_ADDR of one rank that does not resolve is named more
    // precisely by its lookups; above every symptom a setting of one rank causes (the refused
    // connects, the others' timeouts, the pipes broken when they gave up).
    {FailureClass::ConfigMismatch, 84, 84, rule_config_mismatch, true, config_mismatch_on, any_class_moving},
    // Above the symptoms of ranks that could not reach a store the others used (the others'
    // timeouts, the pipes broken when the store host gave up); below a setting that explains it.
    // A restarted attempt's worker sent to a dead worker's address by the store's stale keys:
    // the cause of that attempt's failure, of which a peer's lateness or the broken pipes of
    // the others are symptoms; below a setting of one rank.
    {FailureClass::StalePeerAddress, 83, 83, rule_stale_peer_address, false, any_class_on, any_class_moving},
    {FailureClass::StoreUnreachable, 82, 82, rule_store_unreachable, true, store_unreachable_on, any_class_moving},
    {FailureClass::BrokenPipe, 80, 60, rule_broken_pipe, false, broken_pipe_on, broken_pipe_moving},
    // A store host that stopped answering (alive, no reply): the cause of its clients' waits
    // and of whatever they did about it; below a dead store (broken_pipe: the clients read
    // its end), whose evidence is a different one.
    {FailureClass::StoreUnresponsive, 78, 78, rule_store_unresponsive, false, store_unresponsive_on, any_class_moving},
    {FailureClass::ConnectTimeout, 75, 75, rule_connect_timeout, true, connect_timeout_on, any_class_moving},
    {FailureClass::StragglerTimeout, 70, 70, rule_straggler, false, straggler_on, straggler_moving},
    // A rank that died on its own first, the others stopped by their launcher or failing after
    // it: below the symptoms that name the dead rank in their own words (the others' timeouts
    // waiting for it, their connections to it broken), above a start-up race they survived.
    // A rank can die at any time, after the rendezvous too: not startup_only.
    {FailureClass::RankDied, 68, 68, rule_rank_died, false, rank_died_on, rank_died_moving},
    {FailureClass::StoreNotReady, 65, 65, rule_store_not_ready, true, any_class_on, any_class_moving},
    {FailureClass::TransientRecv, 40, 40, rule_transient_recv, false, any_class_on, transient_moving},
}};

}  // namespace

std::span<const ClassRow> class_registry() { return kRegistry; }

const ClassRow* row_of(FailureClass c) {
  for (const ClassRow& r : kRegistry)
    if (r.cls == c) return &r;
  return nullptr;
}

int precedence_of(const Candidate& c) {
  const ClassRow* r = row_of(c.verdict.cls);
  if (!r) return 0;
  return c.cause_shown ? r->precedence : r->precedence_unshown;
}

std::string same_host_step(FailureClass c, const std::string& host, const Diagnosis& last) {
  const ClassRow* r = row_of(c);
  return r ? r->same_host_step(host, last) : any_class_on(host, last);
}

std::string moving_step(FailureClass c, const Diagnosis& last) {
  const ClassRow* r = row_of(c);
  return r ? r->moving_step(last) : any_class_moving(last);
}

}  // namespace rdzvscope
