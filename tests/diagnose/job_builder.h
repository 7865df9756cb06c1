// Synthetic jobs for the rule tests: one TraceBuilder per process, with helpers that add the
// events the shim records, at times in seconds after the shared clock point.
#pragma once

#include <netdb.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "logs/prefilter.h"
#include "model/log_facts.h"
#include "rules/consistency.h"
#include "rules/rules.h"
#include "temp_dir.h"
#include "trace_builder.h"

namespace rdzvscope::test {

inline constexpr std::uint16_t kPort = 29500;

class Proc {
 public:
  Proc(int rank, int pid, const std::string& host = "node0", const std::string& job = "")
      : b_(4096) {
    auto& h = b_.header();
    h.pid = pid;
    h.ident.rank = rank;
    h.ident.local_rank = rank;
    h.ident.world_size = 4;
    std::strcpy(h.host, host.c_str());
    std::strcpy(h.ident.master_addr, "node0");
    std::strcpy(h.ident.run_id, job.c_str());
    add(make_record(RDZV_EV_PROC_START, RDZV_OP_INIT, 0.0));
  }
  rdzv_file_header& header() { return b_.header(); }
  // Moves this process on the wall clock by s seconds: a later run, or a host whose
  // CLOCK_REALTIME is off (the header's realtime readings move, the monotonic ones stay).
  Proc& shift_clock(double s) {
    const auto d = static_cast<std::int64_t>(s * 1e9);
    b_.header().clock_realtime_ns += static_cast<std::uint64_t>(d);
    b_.header().start_realtime_ns += static_cast<std::uint64_t>(d);
    return *this;
  }

  // MASTER_ADDR / MASTER_PORT in this process's header (port -1: unset).
  Proc& master(const char* addr, int port) {
    std::snprintf(b_.header().ident.master_addr, sizeof b_.header().ident.master_addr, "%s", addr);
    b_.header().ident.master_port = port;
    return *this;
  }
  // Where the recorder placed the process (RDZV_FEAT_ORIGIN): one boot of one machine, a PID
  // namespace, the pid the process saw and its start in clock ticks, a container id.
  Proc& origin(std::uint64_t pidns, int ns_pid, std::uint64_t start_ticks, const char* container = "") {
    rdzv_file_header& h = b_.header();
    h.features |= RDZV_FEAT_ORIGIN;
    for (int i = 0; i < 16; ++i) h.origin.boot_id[i] = static_cast<std::uint8_t>(0xb0 + i);
    h.origin.pidns_inode = pidns;
    h.origin.netns_inode = 4026531840ull;
    h.origin.ns_pid = ns_pid;
    h.origin.start_ticks = start_ticks;
    std::snprintf(h.origin.container_id, sizeof h.origin.container_id, "%s", container);
    return *this;
  }
  // The PyTorch the shim found loaded (RDZV_FEAT_TORCH_VERSION).
  Proc& torch(const char* version) {
    rdzv_file_header& h = b_.header();
    h.features |= RDZV_FEAT_TORCH_VERSION;
    std::snprintf(h.torch_version, sizeof h.torch_version, "%s", version);
    return *this;
  }
  // The command line in the header: "torchrun ..." makes the process a launcher agent.
  Proc& cmdline(const char* line) {
    std::snprintf(b_.header().cmdline, sizeof b_.header().cmdline, "%s", line);
    return *this;
  }
  Proc& resolve(double t, const char* host, int ret, std::uint16_t port = kPort) {
    rdzv_record r = make_record(RDZV_EV_RESOLVE, RDZV_OP_GETADDRINFO, t);
    r.ret = ret;
    std::strcpy(r.u.resolve.host, host);
    std::snprintf(r.u.resolve.service, sizeof r.u.resolve.service, "%u", port);
    if (ret == 0) r.u.resolve.first = ipv4(10, 0, 0, 1, 0);
    return add(r);
  }
  // A lookup that gave `answer` (its port ignored), or failed with `ret`, taking dur seconds.
  Proc& resolve_to(double t, const char* host, const rdzv_sockaddr& answer, double dur = 0.001,
                   int ret = 0) {
    rdzv_record r = make_record(RDZV_EV_RESOLVE, RDZV_OP_GETADDRINFO, t);
    r.ret = ret;
    r.dur_ns = static_cast<std::uint64_t>(dur * 1e9);
    std::snprintf(r.u.resolve.host, sizeof r.u.resolve.host, "%s", host);
    std::snprintf(r.u.resolve.service, sizeof r.u.resolve.service, "%u", kPort);
    if (ret == 0) {
      r.u.resolve.first = answer;
      r.u.resolve.first.port = 0;
      r.u.resolve.naddrs = 1;
    }
    return add(r);
  }
  // A store connect to `peer` (its address and port).
  Proc& connect_to(double t, int err, const rdzv_sockaddr& peer, double dur = 0.001,
                   std::uint16_t local_port = 40000) {
    rdzv_record r = make_record(RDZV_EV_CONNECT, RDZV_OP_CONNECT, t);
    r.flags = RDZV_F_STORE;
    r.ret = err ? -1 : 0;
    r.err = err;
    r.dur_ns = static_cast<std::uint64_t>(dur * 1e9);
    r.u.net.peer = peer;
    if (!err) r.u.net.local = ipv4(10, 0, 0, 2, local_port);
    return add(r);
  }
  Proc& connect(double t, int err, std::uint16_t port = kPort, double dur = 0.001, std::uint16_t local_port = 40000) {
    rdzv_record r = make_record(RDZV_EV_CONNECT, RDZV_OP_CONNECT, t);
    r.flags = RDZV_F_STORE;
    r.ret = err ? -1 : 0;
    r.err = err;
    r.dur_ns = static_cast<std::uint64_t>(dur * 1e9);
    r.u.net.peer = ipv4(10, 0, 0, 1, port);
    if (!err) r.u.net.local = ipv4(10, 0, 0, 2, local_port);
    return add(r);
  }
  // A connection to a peer rank that is not the store (gloo's pair connections), made.
  Proc& peer_connect(double t, std::uint16_t peer_port = 50000) {
    rdzv_record r = make_record(RDZV_EV_CONNECT, RDZV_OP_CONNECT, t);
    r.u.net.peer = ipv4(10, 0, 0, 3, peer_port);
    r.u.net.local = ipv4(10, 0, 0, 2, 41000);
    return add(r);
  }
  // The two ends of pair fd (its own, the other side's) for pair() and pair_io() on it; without
  // this call, 10.0.0.2:41000+fd and 10.0.0.3:50000+fd, which match no other process's pair.
  Proc& pair_ends(int fd, const rdzv_sockaddr& local, const rdzv_sockaddr& peer) {
    pair_ends_[fd] = {local, peer};
    return *this;
  }
  // One of the process group's pairs as a shim that knows peer sockets records it (RDZV_F_PEER):
  // connected by this process (a non-blocking connect's outcome) or accepted, on descriptor fd.
  Proc& pair(double t, int fd, bool connected_here) {
    rdzv_record r = make_record(connected_here ? RDZV_EV_CONNECT_DONE : RDZV_EV_ACCEPT,
                                connected_here ? RDZV_OP_GETSOCKOPT : RDZV_OP_ACCEPT, t);
    r.flags = RDZV_F_PEER;
    r.fd = fd;
    r.ret = connected_here ? 0 : fd;
    set_pair_ends(r, fd);
    return add(r);
  }
  // A send or recv on pair fd (ret bytes, or -1 with err; RDZV_F_ZERO_READ for a read of 0).
  Proc& pair_io(unsigned kind, double t, int fd, std::int64_t ret, int err = 0, std::uint16_t flags = 0) {
    rdzv_record r = make_record(kind, kind == RDZV_EV_SEND ? RDZV_OP_WRITEV : RDZV_OP_RECV, t);
    r.flags = static_cast<std::uint16_t>(RDZV_F_PEER | RDZV_F_NONBLOCK | flags);
    r.fd = fd;
    r.ret = ret;
    r.err = err;
    set_pair_ends(r, fd);
    return add(r);
  }
  // The timeout gloo sets on a pair (SO_RCVTIMEO; a plain socket's record, no store flag).
  Proc& pair_timeout(double t, int fd, std::int64_t ms) {
    rdzv_record r = make_record(RDZV_EV_SOCKOPT, RDZV_OP_SETSOCKOPT, t);
    r.fd = fd;
    r.u.net.size = SO_RCVTIMEO;
    r.u.net.timeout_ms = ms;
    return add(r);
  }
  // A process group's own listening socket (gloo's), at 10.0.0.2:port: not a store socket.
  Proc& peer_listen(double t, std::uint16_t port) {
    rdzv_record r = make_record(RDZV_EV_LISTEN, RDZV_OP_LISTEN, t);
    r.u.net.local = ipv4(10, 0, 0, 2, port);
    return add(r);
  }
  // A connection to a peer at 10.0.0.2:peer_port that was refused (nothing listened there).
  Proc& peer_refused(double t, std::uint16_t peer_port) {
    rdzv_record r = make_record(RDZV_EV_CONNECT, RDZV_OP_CONNECT, t);
    r.ret = -1;
    r.err = ECONNREFUSED;
    r.u.net.peer = ipv4(10, 0, 0, 2, peer_port);
    return add(r);
  }
  Proc& bind(double t, int err, std::uint16_t port = kPort) {
    rdzv_record r = make_record(RDZV_EV_BIND, RDZV_OP_BIND, t);
    r.flags = RDZV_F_STORE;
    r.ret = err ? -1 : 0;
    r.err = err;
    r.u.net.local = ipv4(0, 0, 0, 0, port);
    return add(r);
  }
  Proc& listen(double t, std::uint16_t port = kPort) {
    rdzv_record r = make_record(RDZV_EV_LISTEN, RDZV_OP_LISTEN, t);
    r.flags = RDZV_F_STORE;
    r.u.net.local = ipv4(0, 0, 0, 0, port);
    return add(r);
  }
  Proc& accept(double t, std::uint16_t peer_port, std::uint16_t port = kPort) {
    rdzv_record r = make_record(RDZV_EV_ACCEPT, RDZV_OP_ACCEPT, t);
    r.flags = RDZV_F_STORE;
    r.ret = 9;
    r.u.net.peer = ipv4(10, 0, 0, 2, peer_port);
    r.u.net.local = ipv4(10, 0, 0, 1, port);
    return add(r);
  }
  Proc& io(unsigned kind, double t, std::int64_t ret, int err, std::uint16_t flags = 0,
           std::uint16_t local_port = 40000, std::uint16_t port = kPort) {
    rdzv_record r = make_record(kind, kind == RDZV_EV_SEND ? RDZV_OP_SEND : RDZV_OP_RECV, t);
    r.flags = static_cast<std::uint16_t>(RDZV_F_STORE | flags);
    r.ret = ret;
    r.err = err;
    r.u.net.peer = ipv4(10, 0, 0, 1, port);
    r.u.net.local = ipv4(10, 0, 0, 2, local_port);
    return add(r);
  }
  // Store server side of a client's connection: send/recv on the socket accept() returned
  // for the client at 10.0.0.2:client_port.
  Proc& serve(unsigned kind, double t, std::int64_t ret, std::uint16_t client_port, std::uint16_t port = kPort,
              std::uint16_t flags = 0) {
    rdzv_record r = make_record(kind, kind == RDZV_EV_SEND ? RDZV_OP_SEND : RDZV_OP_RECV, t);
    r.flags = static_cast<std::uint16_t>(RDZV_F_STORE | flags);
    r.ret = ret;
    r.u.net.peer = ipv4(10, 0, 0, 2, client_port);
    r.u.net.local = ipv4(10, 0, 0, 1, port);
    return add(r);
  }
  Proc& rcvtimeo(double t, std::int64_t ms) {
    rdzv_record r = make_record(RDZV_EV_SOCKOPT, RDZV_OP_SETSOCKOPT, t);
    r.flags = RDZV_F_STORE;
    r.u.net.size = SO_RCVTIMEO;
    r.u.net.timeout_ms = ms;
    return add(r);
  }
  Proc& snapshot(double t, rdzv_snapshot_reason why, double cpu_s, std::uint64_t read_bytes, double age_s) {
    rdzv_record r = make_record(RDZV_EV_SNAPSHOT, why, t);
    r.u.snap.utime_us = static_cast<std::uint64_t>(cpu_s * 1e6);
    r.u.snap.read_bytes = read_bytes;
    r.u.snap.rchar = read_bytes;
    r.u.snap.since_start_ns = static_cast<std::uint64_t>(age_s * 1e9);
    return add(r);
  }
  // Its parent's pid (a launcher agent's, for a torchrun worker).
  Proc& parent(int ppid) {
    b_.header().ppid = ppid;
    return *this;
  }
  // A signal this process sent (kill, or killpg of the target's process group).
  Proc& signal(double t, int target, int sig, unsigned op = RDZV_OP_KILLPG) {
    rdzv_record r = make_record(RDZV_EV_SIGNAL, op, t);
    r.u.proc.child_pid = target;
    r.u.proc.status = sig;
    return add(r);
  }
  // A child this process reaped, with its raw wait status (exit code << 8, or the signal).
  Proc& reap(double t, int child, int wait_status) {
    rdzv_record r = make_record(RDZV_EV_REAP, RDZV_OP_WAITPID, t);
    r.ret = child;
    r.u.proc.child_pid = child;
    r.u.proc.status = wait_status;
    return add(r);
  }
  Proc& exit(double t, int status) {
    rdzv_record r = make_record(RDZV_EV_PROC_EXIT, RDZV_OP_EXIT, t);
    r.ret = status;
    r.u.proc.status = status;
    return add(r);
  }
  // A call in flight when the process ended (trace_format.h: struct rdzv_inflight), begun at
  // t, in header slot `slot`: a wait (poll) on its store connection to kPort by default.
  // fd: its descriptor (the records' is 7: the store connection's).
  Proc& inflight(double t, unsigned kind = RDZV_EV_POLL, unsigned op = RDZV_OP_POLL, std::int64_t timeout_ms = 1800000,
                 std::size_t slot = 0, std::uint16_t port = kPort, int fd = 9) {
    rdzv_inflight& s = b_.add_inflight(slot, kind, op, fd, t);
    s.flags = RDZV_F_STORE;
    s.u.peer = ipv4(10, 0, 0, 1, port);
    s.has = RDZV_INFLIGHT_HAS_PEER;
    if (timeout_ms >= 0) {
      s.timeout_ms = timeout_ms;
      s.has |= RDZV_INFLIGHT_HAS_TIMEOUT;
    }
    return *this;
  }
  // The header's last receive on a store socket that returned bytes (RDZV_FEAT_STORE_RECV), at
  // t: past each socket's first calls no record says the store still moved, this does.
  Proc& store_recv_at(double t) {
    rdzv_file_header& h = b_.header();
    h.features |= RDZV_FEAT_STORE_RECV;
    h.last_store_recv_ns = kClockMonotonicNs + static_cast<std::uint64_t>(t * 1e9);
    return *this;
  }
  Proc& add(const rdzv_record& r) {
    b_.add(r);
    return *this;
  }
  void write(const std::string& path) const { b_.write(path); }

 private:
  void set_pair_ends(rdzv_record& r, int fd) const {
    const auto it = pair_ends_.find(fd);
    r.u.net.local = it != pair_ends_.end() ? it->second.first : ipv4(10, 0, 0, 2, static_cast<std::uint16_t>(41000 + fd));
    r.u.net.peer = it != pair_ends_.end() ? it->second.second : ipv4(10, 0, 0, 3, static_cast<std::uint16_t>(50000 + fd));
  }
  TraceBuilder b_;
  std::map<int, std::pair<rdzv_sockaddr, rdzv_sockaddr>> pair_ends_;
};

class Job {
 public:
  Proc& proc(int rank, int pid, const std::string& host = "node0", const std::string& job = "") {
    procs_.push_back(std::make_unique<Proc>(rank, pid, host, job));
    return *procs_.back();
  }
  Proc& proc_at(std::size_t i) { return *procs_.at(i); }
  // A log line of rank `rank` (-1: none) in log file `file`, classified as the log reader would.
  Job& log_line(const std::string& text, int rank = -1, const std::string& file = "job.log") {
    auto ev = rdzv::logs::classify_line(text, rank, 2026);
    ++log_lines_;
    if (ev) {
      ev->file = file;
      ev->line = log_lines_;
      add_log_event(logs_, std::move(*ev));  // as load_logs
    } else if (rdzv::logs::says_job_progressed(text)) {
      // load_logs keeps the first progress line after each event of a process; every one is the
      // same for went_on_after.
      logs_.progress.push_back(rdzv::logs::ProgressLine{file, log_lines_, rank, text});
    } else if (const auto& pf = rdzv::logs::detail::default_prefilter();
               pf.find(text.data(), text.data() + text.size()) != text.data() + text.size()) {
      note_unread(file, rank, text);  // as the scanner: an anchor that nothing took
    }
    logs_.stats.add(Stat::LogLines);
    if (log_files_.insert(file).second) logs_.stats.add(Stat::LogFiles);  // as load_logs, once a file
    return *this;
  }
  // WORLD_SIZE in every process's header (-1: unset, as when the job did not export it);
  // without this call each process says 4.
  Job& world_size(int n) {
    world_size_ = n;
    return *this;
  }
  // The kernel's log of the machine the analysis runs on, as the CLI reads it (kernel_log.h).
  Job& kernel(KernelLog k) {
    kernel_ = std::move(k);
    return *this;
  }
  // Writes every process's trace file and reads them back, as `analyze` would.
  const TraceInputs& load_it() {
    int n = 0;
    for (const auto& p : procs_) {
      if (world_size_) p->header().ident.world_size = *world_size_;
      p->write(dir_.file("p" + std::to_string(n++) + ".rzt"));
    }
    traces_ = load_traces({dir_.path()});
    traces_.kernel = kernel_;
    return traces_;
  }
  // As `analyze`: the log facts settled (settle_log_facts) once every line is in. Every
  // verdict a test makes is checked against its own facts (rules/consistency.h).
  // The scanner keeps the last unread line of each process of a file (LogScan::unread).
  void note_unread(const std::string& file, int rank, const std::string& text) {
    for (auto& u : logs_.unread)
      if (u.file == file && u.rank == rank) {
        u.line = log_lines_;
        u.text = text;
        return;
      }
    logs_.unread.push_back(rdzv::logs::ProgressLine{file, log_lines_, rank, text});
  }

  Diagnosis diagnose_it() {
    settle_log_facts(logs_);
    Diagnosis d = diagnose(load_it(), logs_);
    CHECK(contradictions(d) == std::vector<std::string>{});
    return d;
  }
  const TraceInputs& traces() const { return traces_; }
  const LogFacts& logs() const { return logs_; }

 private:
  std::set<std::string> log_files_;
  TempDir dir_;
  std::vector<std::unique_ptr<Proc>> procs_;
  TraceInputs traces_;
  LogFacts logs_;
  std::uint64_t log_lines_ = 0;
  std::optional<int> world_size_;
  KernelLog kernel_;
};

// The wall-clock time of the builder's time s (its processes start with PROC_START at 0).
inline std::int64_t at(const Context& c, double s) {
  return c.facts.front().proc->events.front().wall_ns + static_cast<std::int64_t>(s * 1e9);
}

}  // namespace rdzvscope::test
