#include "process_model.h"

#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <memory>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "clock_alignment.h"
#include "reader/file_tree.h"
#include "reader/flight_recorder.h"
#include "reader/names.h"
#include "reader/trace_reader.h"

namespace rdzvscope {

const char* role_name(Role r) {
  switch (r) {
    case Role::StoreServer: return "store server";
    case Role::Agent: return "launcher agent";
    case Role::Helper: return "helper of a rank";
    case Role::EarlierAttempt: return "worker of an earlier attempt";
    case Role::Worker: break;
  }
  return "worker";
}

namespace {

// ", container 3f2a9c1b4d5e", " in PID namespace 4026532301", or "" in the host's own.
std::string namespace_words(const Process& p) {
  if (!p.container.empty()) return ", container " + p.container;
  if (p.own_pidns) return " in PID namespace " + std::to_string(p.own_pidns);
  return "";
}

}  // namespace

std::string Process::pid_words() const { return "pid " + std::to_string(pid) + namespace_words(*this); }

std::string Process::label() const {
  if (rank >= 0) return "rank " + std::to_string(rank) + " (" + host + " " + pid_words() + ")";
  return "pid " + std::to_string(pid) + " on " + host + namespace_words(*this);
}

namespace {

// A damaged or foreign file can hold any bit pattern in its times. Times more than this far
// from the moment the file was created are impossible for a rendezvous; such records are
// counted as invalid and left out, so that no rule or report does arithmetic on garbage.
constexpr std::uint64_t kPlausibleNs = 30ull * 86400 * 1'000'000'000;

bool near(std::uint64_t t, std::uint64_t ref) {
  return t - ref + kPlausibleNs < 2 * kPlausibleNs;  // |t - ref| < kPlausibleNs, modular
}

// A trace's own wall clock must fall in this century, or none of its times mean anything.
constexpr std::uint64_t kClockMin = 946684800ull * 1'000'000'000;   // 2000-01-01
constexpr std::uint64_t kClockMax = 4102444800ull * 1'000'000'000;  // 2100-01-01

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_agent(const std::string& cmdline) {
  return cmdline.find("torch.distributed.run") != std::string::npos ||
         cmdline.find("torchrun") != std::string::npos ||
         cmdline.find("torch.distributed.launch") != std::string::npos;
}

bool has_origin(const rdzv_file_header& h) { return (h.features & RDZV_FEAT_ORIGIN) && h.origin.pidns_inode; }

// "boot-id-in-hex/pidns-inode": the space a pid is unique in, for a file with an origin.
std::string namespace_pid_space(const rdzv_origin& o) {
  std::string s;
  for (std::uint8_t b : o.boot_id) s += fmt::format("{:02x}", b);
  return s + "/" + std::to_string(o.pidns_inode);
}

// A container id as reports show it: its first 12 hex digits, as `docker ps` does. Anything
// but hex digits (a damaged header) gives none.
std::string container_label(const std::string& id) {
  if (id.empty() || id.find_first_not_of("0123456789abcdef") != std::string::npos) return "";
  return id.substr(0, 12);
}

// Files of one process: same pid in the same pid space, started at the same moment (an exec
// keeps all three).
ProcessKey key_of(const rdzv_file_header& h) {
  if (has_origin(h))
    return {namespace_pid_space(h.origin), h.origin.ns_pid, static_cast<std::int64_t>(h.origin.start_ticks)};
  // Start time to 100 ms: two computations of it from the same tick count differ slightly.
  return {bounded_string(h.host), h.pid, static_cast<std::int64_t>(h.start_realtime_ns / 100'000'000)};
}

}  // namespace

ProcessHeader::ProcessHeader(const rdzv_file_header& h)
    : features(h.features), pid(h.pid), ppid(h.ppid), start_realtime_ns(h.start_realtime_ns),
      clock_realtime_ns(h.clock_realtime_ns), ident(h.ident), host(bounded_string(h.host)),
      cmdline(bounded_string(h.cmdline)), cmdline_truncated(h.cmdline_truncated != 0),
      exec_generation(h.exec_generation) {
  std::copy(std::begin(h.store_ports), std::end(h.store_ports), std::begin(store_ports));
  if (has_origin(h)) origin = h.origin;
  if (h.features & RDZV_FEAT_TORCH_VERSION) torch_version = bounded_string(h.torch_version);
}

namespace {

// A store socket's send/recv in flight carries only its descriptor (the shim's hot path):
// the peer is that of the last event of the descriptor before it began (its connect, accept
// or an earlier call), the timeout the socket's last SO_RCVTIMEO/SO_SNDTIMEO set before it.
void complete_inflight(Process& p) {
  for (Event& call : p.inflight) {
    if (call.fd < 0 || call.kind == RDZV_EV_RESOLVE) continue;
    auto* body = std::get_if<SocketCall>(&call.body);
    if (!body) continue;
    const bool is_send = call.kind == RDZV_EV_SEND;
    bool have_peer = body->peer.family != 0, have_timeout = body->timeout_ms >= 0;
    for (auto it = p.events.rbegin(); it != p.events.rend() && !(have_peer && have_timeout); ++it) {
      const Event& e = *it;
      if (e.fd != call.fd || e.wall_ns > call.wall_ns) continue;
      if (!have_peer && e.peer().family != 0 && e.kind != RDZV_EV_LISTEN && e.kind != RDZV_EV_BIND) {
        body->peer = e.peer();
        body->local = e.local();
        have_peer = true;
      }
      if (!have_timeout && e.kind == RDZV_EV_SOCKOPT &&
          e.socket().size == static_cast<std::uint64_t>(is_send ? SO_SNDTIMEO : SO_RCVTIMEO)) {
        body->timeout_ms = e.socket().timeout_ms;
        have_timeout = true;
      }
      if (e.kind == RDZV_EV_CONNECT || e.kind == RDZV_EV_ACCEPT) break;  // the socket's start
    }
  }
}

// attach saw the process killed by a signal (a PROC_EXIT with RDZV_F_SIGNALED): the TCP states
// its sockets go through after it are the kernel closing a dead process's files and its peers'
// FINs reaching them, not what it lived through (the shim, gone with it, writes nothing more).
void drop_teardown(Process& p) {
  const auto killed = std::find_if(p.events.begin(), p.events.end(), [](const Event& e) {
    return e.kind == RDZV_EV_PROC_EXIT && e.has(RDZV_F_SIGNALED);
  });
  if (killed == p.events.end()) return;
  const std::int64_t at = killed->wall_ns;
  p.events.erase(std::remove_if(p.events.begin(), p.events.end(),
                                [at](const Event& e) { return e.kind == RDZV_EV_TCP_STATE && e.wall_ns > at; }),
                 p.events.end());
}

void finish(Process& p) {
  std::stable_sort(p.events.begin(), p.events.end(),
                   [](const Event& a, const Event& b) { return a.wall_ns < b.wall_ns; });
  drop_teardown(p);
  std::stable_sort(p.inflight.begin(), p.inflight.end(),
                   [](const Event& a, const Event& b) { return a.wall_ns < b.wall_ns; });
  complete_inflight(p);
  const ProcessHeader& h = p.header;
  p.host = h.host;
  p.pid = h.pid;
  p.pid_space = h.host;
  if (h.origin) {
    const rdzv_origin& o = *h.origin;
    // attach files give the host's pid, and the host's view is where their ppid counts.
    p.pid_space = h.pid == o.ns_pid ? namespace_pid_space(o) : namespace_pid_space(o) + "/host-view";
    if (o.pidns_inode != RDZV_PIDNS_INIT_INODE) p.own_pidns = o.pidns_inode;
    p.container = container_label(bounded_string(o.container_id));
  }
  p.rank = h.ident.rank >= 0 ? h.ident.rank : h.ident.slurm_procid;
  p.world_size = h.ident.world_size;
  p.restart_count = h.ident.restart_count;
  p.job_key = bounded_string(h.ident.run_id);
  if (p.job_key.empty()) p.job_key = bounded_string(h.ident.slurm_job_id);
  p.launched_ns = (h.features & RDZV_FEAT_PROC_START) && h.start_realtime_ns &&
                          near(h.start_realtime_ns, h.clock_realtime_ns)
                      ? static_cast<std::int64_t>(h.start_realtime_ns)
                      : static_cast<std::int64_t>(h.clock_realtime_ns);
  if (is_agent(h.cmdline)) p.role = Role::Agent;
  for (const Event& e : p.events) {
    if (e.kind == RDZV_EV_LISTEN && e.ret == 0 && e.on_store_socket() && p.role != Role::Agent)
      p.role = Role::StoreServer;
    // attach's record of a death by a signal (RDZV_F_SIGNALED) is no exit: the process ended
    // as one the shim traced ends, with nothing more written, and is judged alike (vanished,
    // unless its parent's reap says more). Read as an exit, a SIGTERM'd rank that waited was
    // a rank that "exited with status 15" on its own.
    if (e.kind == RDZV_EV_PROC_EXIT && e.has(RDZV_F_SIGNALED)) continue;
    if (e.kind == RDZV_EV_PROC_EXIT && !p.exit_ns) {
      p.exit_ns = e.wall_ns;
      if (!e.has(RDZV_F_STATUS_UNKNOWN)) p.exit_status = e.process().status;
    }
  }
}

// A process learns a store port only from its own environment: torchrun's c10d agent picks
// the workers' store port at run time and hosts that store, but only the workers are told
// (MASTER_PORT). A port that any process of the job took for a store port marks the sockets
// on it as store sockets in every process.
void mark_store_sockets(std::map<ProcessKey, Process>& by_key) {
  std::set<std::uint16_t> ports;
  for (const auto& [key, p] : by_key)
    for (std::uint16_t port : p.header.store_ports)
      if (port) ports.insert(port);
  for (auto& [key, p] : by_key)
    for (Event& e : p.events) {
      std::uint16_t port = 0;
      if (e.kind == RDZV_EV_BIND || e.kind == RDZV_EV_LISTEN || e.kind == RDZV_EV_ACCEPT) port = e.local().port;
      else if (e.is_connect()) port = e.peer().port;
      if (port && ports.count(port)) e.flags |= RDZV_F_STORE;
    }
}

bool touched_store(const Process& p) {
  for (const Event& e : p.events)
    if (e.on_store_socket() && (e.kind == RDZV_EV_CONNECT || e.kind == RDZV_EV_LISTEN || e.kind == RDZV_EV_BIND))
      return true;
  return false;
}

// When a process was surely alive: from its start to its exit record, or, with none (killed,
// or still running), to the end of the traces.
std::pair<std::int64_t, std::int64_t> lifetime(const Process& p) {
  return {p.launched_ns, p.exit_ns.value_or(std::numeric_limits<std::int64_t>::max())};
}

// Started after q and over before it: a program q ran (or one of q's children ran), even
// where the process in between was not traced (a shell's `$(...)` subshell forks without
// using the network, so it leaves no file, and its children's ppid leads nowhere).
bool lived_within(const Process& p, const Process& q) {
  const auto [p_start, p_end] = lifetime(p);
  const auto [q_start, q_end] = lifetime(q);
  return q_start <= p_start && p.exit_ns && p_end <= q_end;
}

// A rank's file is made at load (the shim opens it early for processes with RANK set), so the
// programs a rank starts inherit its identity and leave files too: a process of the same rank
// and job that never touched the store is that rank's helper, not the rank, when it is the
// child of another of the rank's processes or lived within one's lifetime (wrapper scripts:
// pyenv's shims, `module load`, a training script's `git rev-parse`, whose exit status says
// nothing about the rank).
void mark_helpers(std::vector<Process>& procs) {
  std::map<std::pair<std::string, std::int32_t>, const Process*> by_pid;
  std::map<std::pair<std::string, std::int32_t>, std::vector<const Process*>> by_rank;
  for (const Process& p : procs) {
    by_pid[{p.pid_space, p.pid}] = &p;
    if (p.rank >= 0 && p.role == Role::Worker) by_rank[{p.job_key, p.rank}].push_back(&p);
  }
  for (Process& p : procs) {
    if (p.rank < 0 || p.role != Role::Worker || touched_store(p)) continue;
    auto parent = by_pid.find({p.pid_space, p.header.ppid});
    if (parent != by_pid.end()) {
      const Process& q = *parent->second;
      if (q.rank == p.rank && q.job_key == p.job_key && q.launched_ns <= p.launched_ns) {
        p.role = Role::Helper;
        continue;
      }
    }
    const auto& same_rank = by_rank[{p.job_key, p.rank}];
    if (std::any_of(same_rank.begin(), same_rank.end(),
                    [&](const Process* q) { return q != &p && q->pid_space == p.pid_space && lived_within(p, *q); }))
      p.role = Role::Helper;
  }
}

// torchrun --max-restarts: the agent restarts every worker, and the new ones carry the next
// TORCHELASTIC_RESTART_COUNT. One rank then appears once per attempt in one trace directory;
// the last attempt of each job is what finally failed, and the one diagnosed. Returns the
// number of attempts seen.
int mark_earlier_attempts(std::vector<Process>& procs) {
  std::map<std::string, std::int32_t> last;  // job key -> highest restart count
  for (const Process& p : procs)
    if (p.rank >= 0 && p.restart_count >= 0) last[p.job_key] = std::max(last[p.job_key], p.restart_count);
  int attempts = 1;
  for (const auto& [job, n] : last) attempts = std::max(attempts, n + 1);
  for (Process& p : procs)
    if (p.rank >= 0 && p.role != Role::Agent && p.restart_count >= 0 && p.restart_count < last[p.job_key])
      p.role = Role::EarlierAttempt;
  return attempts;
}

}  // namespace

namespace {

// A directory of Flight Recorder dumps under their default names (nccl_trace_rank_<N>) is an
// input of analyze as it is (reader/flight_recorder.h), not a trace directory without traces.
bool holds_default_dumps(const std::string& dir) {
  std::vector<std::string> dumps;
  files_below(dir, [](const std::string& name, unsigned char) { return is_default_dump_name(name); }, dumps);
  return !dumps.empty();
}

}  // namespace

Result<std::vector<std::string>> trace_files_in(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Error{path, std::strerror(errno), std::nullopt};
  if (!S_ISDIR(st.st_mode)) return std::vector<std::string>{path};
  if (std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(path.c_str()), ::closedir); !d)
    return Error{path, std::strerror(errno), std::nullopt};
  std::vector<std::string> names;
  files_below(path, [](const std::string& name, unsigned char) {
    return ends_with(name, RDZV_FILE_SUFFIX) && name != RDZV_FILE_SUFFIX;
  }, names);
  if (names.empty() && !holds_default_dumps(path))
    return Error{path, std::string("no *") + RDZV_FILE_SUFFIX + " trace files in this directory or below it",
                 std::nullopt};
  return names;
}

FileRead read_trace_file(const std::string& file) {
  FileRead out;
  auto t = read_trace(file);
  if (!t) {
    out.unusable = t.error();
    return out;
  }
  const Trace& trace = t.value();
  const rdzv_file_header& h = trace.header;
  if (h.clock_realtime_ns < kClockMin || h.clock_realtime_ns > kClockMax) {
    out.unusable = Error{file, "the header's wall clock is outside 2000-2100: the file's times cannot be placed", std::nullopt};
    return out;
  }
  out.key = key_of(h);
  out.header = ProcessHeader(h);
  out.exec_generation = h.exec_generation;
  out.events.reserve(trace.records.size());
  for (const auto& r : trace.records) {
    const std::int64_t wall = wall_ns(h, r.raw.ts_ns);
    if (near(static_cast<std::uint64_t>(wall), h.clock_realtime_ns) && r.raw.dur_ns < kPlausibleNs)
      out.events.push_back(decode_event(wall, r.raw));
    else
      ++out.implausible;
  }
  for (const rdzv_inflight& s : trace.inflight) {
    const std::int64_t wall = wall_ns(h, s.start_ns);
    if (near(static_cast<std::uint64_t>(wall), h.clock_realtime_ns)) out.inflight.push_back(decode_inflight(wall, s));
  }
  if ((h.features & RDZV_FEAT_STORE_RECV) && h.last_store_recv_ns) {
    const std::int64_t wall = wall_ns(h, h.last_store_recv_ns);
    if (near(static_cast<std::uint64_t>(wall), h.clock_realtime_ns)) out.last_store_recv_ns = wall;
  }
  out.records = trace.records.size();
  out.torn = trace.torn;
  out.invalid = trace.invalid;
  out.dropped = trace.dropped();
  out.lost = h.lost;
  out.damage = trace.damage;
  return out;
}

std::vector<FileRead> read_trace_files(const std::vector<std::string>& files) {
  std::vector<FileRead> out(files.size());
  const std::size_t kFilesPerThread = 256;
  const std::size_t threads = std::min<std::size_t>(
      std::max(1u, std::thread::hardware_concurrency()), (files.size() + kFilesPerThread - 1) / kFilesPerThread);
  if (threads <= 1) {
    for (std::size_t i = 0; i < files.size(); ++i) out[i] = read_trace_file(files[i]);
    return out;
  }
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(64)) < files.size();)
      for (std::size_t j = i; j < std::min(i + 64, files.size()); ++j) out[j] = read_trace_file(files[j]);
  };
  std::vector<std::thread> pool;
  for (std::size_t k = 1; k < threads; ++k) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return out;
}

TraceInputs load_traces(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  // A path that lists no file is reported where it stands among the inputs: before the
  // problems of the files listed after it.
  std::vector<std::pair<std::size_t, Error>> listing_errors;
  for (const auto& path : paths) {
    auto listed = trace_files_in(path);
    if (!listed) listing_errors.emplace_back(files.size(), listed.error());
    else files.insert(files.end(), listed.value().begin(), listed.value().end());
  }
  return assemble_traces(files, read_trace_files(files), listing_errors);
}

namespace {

// A usable file's counts, into the inputs' (input_stats.h: what each one means).
void count_file(const FileRead& r, Stats& stats) {
  stats.add(Stat::Events, r.records - r.implausible);
  stats.add(Stat::LostEvents, r.lost + r.dropped);
  stats.add(Stat::DroppedEvents, r.dropped);
  stats.add(Stat::RingBufferLost, r.lost);
  stats.add(Stat::TornRecords, r.torn);
  stats.add(Stat::InvalidRecords, r.invalid);
  stats.add(Stat::ImplausibleRecords, r.implausible);
}

}  // namespace

TraceInputs assemble_traces(const std::vector<std::string>& files, std::vector<FileRead> reads,
                            const std::vector<std::pair<std::size_t, Error>>& listing_errors) {
  TraceInputs in;
  auto report_listing_errors_before = [&, next = std::size_t{0}](std::size_t file_index) mutable {
    for (; next < listing_errors.size() && listing_errors[next].first <= file_index; ++next)
      in.errors.push_back(listing_errors[next].second);
  };

  std::map<ProcessKey, Process> by_key;
  std::map<ProcessKey, std::uint32_t> newest_generation;
  for (std::size_t i = 0; i < files.size(); ++i) {
    report_listing_errors_before(i);
    const std::string& file = files[i];
    FileRead& r = reads[i];
    in.stats.add(Stat::TraceFiles);
    if (r.unusable) {
      in.stats.add(Stat::DamagedFiles);
      in.errors.push_back(std::move(*r.unusable));
      continue;
    }
    if (r.damage || r.torn || r.invalid || r.implausible) in.stats.add(Stat::DamagedFiles);
    if (r.damage) in.errors.push_back(*r.damage);
    if (r.implausible)
      in.errors.push_back(Error{file, std::to_string(r.implausible) + " record(s) with impossible times (more than 30 days from the file's clock) left out", std::nullopt});
    const ProcessKey& key = *r.key;
    Process& p = by_key[key];
    p.files.push_back(file);
    if (p.files.size() == 1 || r.exec_generation >= newest_generation[key]) {
      p.header = std::move(r.header);
      newest_generation[key] = r.exec_generation;
    }
    p.cut_short |= r.damage.has_value();
    count_file(r, in.stats);
    if (p.events.empty()) p.events = std::move(r.events);
    else p.events.insert(p.events.end(), r.events.begin(), r.events.end());
    r.events = {};
    p.inflight.insert(p.inflight.end(), r.inflight.begin(), r.inflight.end());
    if (r.last_store_recv_ns && (!p.last_store_recv_ns || *r.last_store_recv_ns > *p.last_store_recv_ns))
      p.last_store_recv_ns = r.last_store_recv_ns;
  }
  report_listing_errors_before(files.size());
  mark_store_sockets(by_key);
  for (auto& [key, p] : by_key) {
    finish(p);
    in.processes.push_back(std::move(p));
  }
  mark_helpers(in.processes);
  in.attempts = mark_earlier_attempts(in.processes);
  in.clocks = align_clocks(in.processes);
  return in;
}

void read_kernel_log_of_this_boot(TraceInputs& t) {
  const auto boot = this_boot_id();
  const bool ran_here = std::any_of(t.processes.begin(), t.processes.end(), [&](const Process& p) {
    return p.header.origin && std::equal(boot.begin(), boot.end(), p.header.origin->boot_id);
  });
  if (ran_here) t.kernel = read_kernel_log();
}

}  // namespace rdzvscope
