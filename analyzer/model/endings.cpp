#include "endings.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <cerrno>
#include <csignal>
#include <map>
#include <tuple>

#include "address.h"
#include "context.h"
#include "rank_facts.h"

namespace rdzvscope {

namespace {

// A read of the end of a store connection by the process at one side of it: 0 bytes (the
// other side's FIN), or a reset. When the other side recorded no close of its socket, the
// kernel closed it: the other side was dead by then.
struct Hangup {
  const Process* seen_by;
  const Event* read;
  bool over_loopback;
};

// A store connection, or a peer one (RDZV_F_PEER: a process group's pair, whose other side
// gloo's I/O thread reads all the time, so that a dead rank's pairs end at once).
bool on_watched_connection(const Event& e) { return e.on_store_socket() || e.has(RDZV_F_PEER); }

bool reads_the_end(const Event& e) {
  if (!on_watched_connection(e)) return false;
  if (e.kind == RDZV_EV_RECV && e.has(RDZV_F_ZERO_READ)) return true;
  return (e.kind == RDZV_EV_RECV || e.kind == RDZV_EV_SEND) && e.ret < 0 && (e.err == ECONNRESET || e.err == EPIPE);
}

// Every such read in the traces, by the connection as the OTHER side saw it (the key a dead
// process's own connect or accept gives): (other side's end, reader's end).
std::map<Connection, std::vector<Hangup>> hangups_by_connection(const TraceInputs& traces) {
  std::map<Connection, std::vector<Hangup>> out;
  for (const Process& q : traces.processes)
    for (const Event& e : q.events)
      if (reads_the_end(e) && e.peer().port && e.local().port)
        out[{connection_end(e.peer()), connection_end(e.local())}].push_back({&q, &e, is_loopback(e.peer())});
  return out;
}

// The store connections a process made or accepted, with the descriptor, and whether it
// closed that socket itself (a close record of the same connection after it was made).
struct OwnConnection {
  Connection conn;
  bool closed_by_itself = false;
};

std::vector<OwnConnection> own_connections(const Process& p) {
  std::vector<OwnConnection> out;
  for (const Event& e : p.events) {
    const bool made = (e.is_connect() && e.succeeded()) || (e.kind == RDZV_EV_ACCEPT && e.ret >= 0);
    if (on_watched_connection(e) && made && e.local().port && e.peer().port)
      out.push_back({{connection_end(e.local()), connection_end(e.peer())}, false});
    if (e.kind == RDZV_EV_CLOSE && e.on_store_socket())
      for (OwnConnection& c : out)
        if (c.conn == Connection{connection_end(e.local()), connection_end(e.peer())}) c.closed_by_itself = true;
  }
  return out;
}

// The first read of the end of one of p's store connections, after its last record, that it
// did not close itself.
void find_hangup(const Process& p, const std::map<Connection, std::vector<Hangup>>& hangups, Ending& out) {
  for (const OwnConnection& c : own_connections(p)) {
    if (c.closed_by_itself) continue;
    auto it = hangups.find(c.conn);
    if (it == hangups.end()) continue;
    for (const Hangup& h : it->second) {
      if (h.seen_by == &p || h.read->wall_ns < out.last_seen_ns) continue;
      if (h.over_loopback && loopback_scope(*h.seen_by) != loopback_scope(p)) continue;
      if (!out.hangup_ns || h.read->wall_ns < *out.hangup_ns) {
        out.hangup_ns = h.read->wall_ns;
        out.hangup_seen_by = h.seen_by;
        out.hangup_event = h.read;
      }
    }
  }
}

// Traced processes by (pid space, pid): a parent's reap and a sender's target are counted in
// the pid space of the process they name.
using PidKey = std::pair<std::string, std::int32_t>;

struct ProcessCalls {
  // (child pid space, child pid) -> (reaper, the reap); -> (sender, the signal).
  std::map<PidKey, std::pair<const Process*, const Event*>> reaps;
  std::map<PidKey, std::vector<std::pair<const Process*, const Event*>>> signals;
};

ProcessCalls process_calls(const TraceInputs& traces) {
  ProcessCalls out;
  for (const Process& q : traces.processes)
    for (const Event& e : q.events) {
      if (e.kind == RDZV_EV_REAP && e.process().child_pid > 0)
        out.reaps.emplace(PidKey{q.pid_space, e.process().child_pid}, std::make_pair(&q, &e));
      // killpg(pgrp) and kill(-pgrp): a launcher that gave each worker its own session
      // (torchrun does) stops it through its group, whose id is the worker's pid.
      if (e.kind == RDZV_EV_SIGNAL && e.ret == 0 && e.process().child_pid != 0 && e.process().child_pid != -1) {
        const std::int32_t target = e.process().child_pid < 0 ? -e.process().child_pid : e.process().child_pid;
        out.signals[PidKey{q.pid_space, target}].push_back({&q, &e});
      }
    }
  return out;
}

Ending ending_of(const Process& p, const ProcessCalls& calls, const std::map<Connection, std::vector<Hangup>>& hangups) {
  Ending out;
  out.last_seen_ns = p.last_event_ns();
  // A call in flight was published when it began: the process was alive then.
  for (const Event& call : p.inflight) out.last_seen_ns = std::max(out.last_seen_ns, call.wall_ns);
  if (p.exit_ns) {
    out.how = Ending::How::Exited;
    out.status = p.exit_status;
    out.over_ns = *p.exit_ns;
  }
  if (auto r = calls.reaps.find({p.pid_space, p.pid}); r != calls.reaps.end() && r->second.second->wall_ns >= p.launched_ns) {
    const int status = r->second.second->process().status;
    const std::int64_t at = r->second.second->wall_ns;
    out.reaped_ns = at;
    if (WIFSIGNALED(status) && !p.exit_ns) {
      out.how = Ending::How::Signaled;
      out.signal = WTERMSIG(status);
      out.over_ns = at;
    } else if (WIFEXITED(status) && !p.exit_ns) {
      out.how = Ending::How::Exited;
      out.status = WEXITSTATUS(status);
      out.over_ns = at;
    }
  }
  for (const Event& e : p.events)
    if (e.kind == RDZV_EV_PROC_EXIT && e.has(RDZV_F_SIGNALED)) {
      out.killed_seen_ns = e.wall_ns;
      out.killed_seen_signal = e.process().status;
      break;
    }
  find_hangup(p, hangups, out);
  // No exit record: the end of its connection, read the moment the kernel closed its sockets,
  // is the earliest sign of its death; its parent's reap can come a poll interval later
  // (torchrun's agent polls its workers every --monitor-interval).
  if (!p.exit_ns && out.hangup_ns && (!out.over_ns || *out.hangup_ns < *out.over_ns)) out.over_ns = out.hangup_ns;
  if (auto s = calls.signals.find({p.pid_space, p.pid}); s != calls.signals.end())
    for (const auto& [sender, e] : s->second) {
      if (sender == &p || e->wall_ns < p.launched_ns || (out.over_ns && e->wall_ns > *out.over_ns)) continue;
      if (!out.signalled_by || e->wall_ns < out.sent_ns) {
        out.signalled_by = sender;
        out.sent_signal = e->process().status;
        out.sent_ns = e->wall_ns;
      }
    }
  return out;
}

// The kernel's OOM kill of p, if its log holds one: the log is of p's boot, the pid is p's in
// the initial PID namespace, and the kill falls between p's start and, within a second, its
// last record and its end. A pid is reused only after its process is gone, so within one boot
// a pid and that window are one process.
std::optional<OomKill> oom_kill_of(const Process& p, const Ending& e, const KernelLog& kernel) {
  const auto& o = p.header.origin;
  if (!kernel.read() || !o || !(p.header.features & RDZV_FEAT_PROC_START) ||
      std::memcmp(o->boot_id, kernel.boot_id.data(), kernel.boot_id.size()) != 0)
    return std::nullopt;
  if (e.how == Ending::How::Exited || (e.how == Ending::How::Signaled && e.signal != SIGKILL)) return std::nullopt;
  const std::int32_t pid = o->pidns_inode == RDZV_PIDNS_INIT_INODE ? o->ns_pid : o->host_pid;
  const long hz = ::sysconf(_SC_CLK_TCK);
  if (pid <= 0 || hz <= 0) return std::nullopt;
  const auto started_boot_ns = static_cast<std::int64_t>(o->start_ticks * (1000000000ull / static_cast<std::uint64_t>(hz)));
  constexpr std::int64_t kSlackNs = 1'000'000'000;  // clock ticks, and the two clocks' reads
  for (const OomKill& k : kernel.kills) {
    if (k.pid != pid || k.boot_ns < started_boot_ns) continue;
    const std::int64_t at = p.launched_ns + (k.boot_ns - started_boot_ns);
    if (at + kSlackNs < e.last_seen_ns || (e.over_ns && at > *e.over_ns + kSlackNs)) continue;
    return k;
  }
  return std::nullopt;
}

}  // namespace

std::vector<Ending> find_endings(const std::vector<ProcessFacts>& facts, const TraceInputs& traces) {
  const ProcessCalls calls = process_calls(traces);
  const auto hangups = hangups_by_connection(traces);
  std::vector<Ending> out;
  out.reserve(facts.size());
  for (const ProcessFacts& f : facts) {
    out.push_back(ending_of(*f.proc, calls, hangups));
    out.back().oom_kill = oom_kill_of(*f.proc, out.back(), traces.kernel);
  }
  return out;
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGXCPU: return "SIGXCPU";
  }
  return "signal " + std::to_string(sig);
}

}  // namespace rdzvscope
