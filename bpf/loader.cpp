#include "loader.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include <spdlog/spdlog.h>

#include "inflight.h"
#include "proc_info.h"
#include "rdzv.h"
#include "rdzv.skel.h"
#include "rdzvscope/recorder_core.h"
#include "seed.h"
#include "snapshots.h"
#include "trace_file.h"

namespace rdzvscope::bpf {
namespace {

std::string g_last_libbpf_error;
// libbpf's print callback takes no context: the logger of the attach in progress.
std::shared_ptr<spdlog::logger> g_log;

// One libbpf message, whole (a verifier log runs to many lines), without its last newline.
std::string libbpf_message(const char* fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (n <= 0) return {};
  std::string msg(static_cast<std::size_t>(n) + 1, '\0');
  std::vsnprintf(msg.data(), msg.size(), fmt, args);
  msg.resize(static_cast<std::size_t>(n));
  while (!msg.empty() && msg.back() == '\n') msg.pop_back();
  return msg;
}

// Which level a libbpf message is said at: a normal run says one line, not a verifier log;
// --verbose shows libbpf's warnings, RDZVSCOPE_BPF_VERBOSE all of its messages.
spdlog::level::level_enum libbpf_level(enum libbpf_print_level level) {
  if (std::getenv("RDZVSCOPE_BPF_VERBOSE")) return spdlog::level::info;
  return level == LIBBPF_DEBUG ? spdlog::level::trace : spdlog::level::debug;
}

// libbpf's own messages: the last warning is kept (it explains a failed load), every one goes
// to the logger at its level.
int libbpf_print(enum libbpf_print_level level, const char* fmt, va_list args) {
  std::string msg = libbpf_message(fmt, args);
  if (g_log) g_log->log(libbpf_level(level), "{}", msg);  // libbpf starts its lines with "libbpf: "
  if (level != LIBBPF_DEBUG) g_last_libbpf_error = std::move(msg);
  return 0;
}

std::uint64_t mono_ns() { return rdzv_clock_ns(CLOCK_MONOTONIC); }

// A target in the kernel's map and in the filter in front of it (rdzv_maps.bpf.h: target_bits,
// in the mmapped .bss, which the programs update with atomics too).
bool add_target(rdzv_bpf* skel, int pid) {
  const std::uint32_t tgid = static_cast<std::uint32_t>(pid);
  const std::uint8_t one = 1;
  if (bpf_map__update_elem(skel->maps.targets, &tgid, sizeof tgid, &one, sizeof one, BPF_ANY) != 0)
    return false;
  __atomic_fetch_or(&skel->bss->target_bits[rdzv_target_word(tgid)], rdzv_target_mask(tgid), __ATOMIC_SEQ_CST);
  return true;
}

struct Recorder {
  const AttachOptions* opt = nullptr;
  bool group_read = false;  // RDZVSCOPE_GROUP_READ, as for the shim's files
  rdzv_bpf* skel = nullptr;
  std::map<int, std::unique_ptr<TraceFile>> files;
  std::set<int> failed;  // pids whose file could not be created (said once)
  std::map<int, SnapshotPolicy> snapshots;
  // The iterator of the calls in flight (rdzv_calls_in_flight), attached apart from the
  // skeleton's links; null when it could not be (the files then have no calls in flight).
  bpf_link* inflight_iter = nullptr;
  // The calls found blocked at attach that the kernel rebuilds at their exit: their slots.
  std::map<int, std::map<std::uint32_t, SlotCall>> found_calls;

  CallContext call_context() const {
    CallContext ctx;
    ctx.store_sock_of = [this](int pid, int fd, store_sock* out) {
      const std::uint64_t key = (static_cast<std::uint64_t>(pid) << 32) | static_cast<std::uint32_t>(fd);
      // Peer sockets share the table; the calls in flight and the waits are the store's.
      return bpf_map__lookup_elem(skel->maps.store_socks, &key, sizeof key, out, sizeof *out, 0) == 0 &&
             !out->peer_socket;
    };
    ctx.connect_pending = [this](int pid) {
      std::uint64_t key = 0, next = 0;
      for (const void* prev = nullptr;
           bpf_map__get_next_key(skel->maps.store_socks, prev, &next, sizeof next) == 0; prev = &key) {
        key = next;
        store_sock ss{};
        if (static_cast<int>(key >> 32) == pid &&
            bpf_map__lookup_elem(skel->maps.store_socks, &key, sizeof key, &ss, sizeof ss, 0) == 0 && ss.pending)
          return true;
      }
      return false;
    };
    ctx.found_call = [this](int pid, std::uint32_t tid) -> std::optional<SlotCall> {
      auto p = found_calls.find(pid);
      if (p == found_calls.end()) return std::nullopt;
      auto t = p->second.find(tid);
      if (t == p->second.end()) return std::nullopt;
      return t->second;
    };
    ctx.read_memory = read_memory;
    return ctx;
  }

  // One pass of the iterator: each file's slots made equal to the calls its threads are in.
  void sync_inflight() {
    if (!inflight_iter) return;
    const int fd = bpf_iter_create(bpf_link__fd(inflight_iter));
    if (fd < 0) return;
    std::string raw;
    char buf[8192];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) raw.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    std::map<int, std::vector<SlotCall>> calls;
    std::map<int, std::set<std::uint32_t>> alive;
    const CallContext ctx = call_context();
    for (std::size_t at = 0; at + sizeof(rdzv_bpf_inflight) <= raw.size(); at += sizeof(rdzv_bpf_inflight)) {
      rdzv_bpf_inflight in;
      std::memcpy(&in, raw.data() + at, sizeof in);
      const int pid = static_cast<int>(in.tgid);
      alive[pid].insert(in.tid);
      if (in.from == RDZV_BPF_FROM_NONE) continue;
      if (auto s = slot_of(in, ctx)) calls[pid].push_back(*s);
    }
    for (auto& [pid, f] : files) f->sync_inflight(calls[pid], alive[pid]);
  }

  // Once every call found blocked at attach has ended (the kernel drops each entry at its
  // exit), the probes stop looking for them (late_calls_made): no entry is made after start.
  void forget_found_calls() {
    if (!skel->bss->late_calls_made) return;
    std::uint32_t next = 0;
    if (bpf_map__get_next_key(skel->maps.late_calls, nullptr, &next, sizeof next) != 0)
      skel->bss->late_calls_made = 0;
  }

  // Each file's latest store receive made the kernel's (store_recv_last).
  void sync_store_recv() {
    for (auto& [pid, f] : files) f->store_recv(last_store_recv(pid));
  }

  // The start of pid's latest receive on a store socket that returned bytes, 0 if none yet.
  std::uint64_t last_store_recv(int pid) const {
    const std::uint32_t key = static_cast<std::uint32_t>(pid);
    std::uint64_t ns = 0;
    if (bpf_map__lookup_elem(skel->maps.store_recv_last, &key, sizeof key, &ns, sizeof ns, 0) != 0) return 0;
    return ns;
  }

  // The kernel's notice that a thread was killed in its call (RDZV_BPF_EV_DIED_IN_CALL).
  void died_in_call(TraceFile* f, int pid, const rdzv_record& rec) {
    rdzv_bpf_inflight in{};
    in.tgid = static_cast<std::uint32_t>(pid);
    in.tid = rec.tid;
    in.from = rec.kind == RDZV_EV_RESOLVE                              ? RDZV_BPF_FROM_LOOKUP
              : (!rec.kind || (rec.flags & RDZV_F_PREEXISTING)) ? RDZV_BPF_FROM_FOUND
                                                                : RDZV_BPF_FROM_ENTER;
    in.c.rec = rec;
    f->died_in_call(rec.tid, slot_of(in, call_context()));
  }

  TraceFile* file_for(int pid) {
    auto it = files.find(pid);
    if (it != files.end()) return it->second.get();
    if (failed.count(pid)) return nullptr;
    auto f = std::make_unique<TraceFile>();
    std::string err = f->create(opt->out_dir, pid, store_ports_of(pid, opt->ports), opt->max_bytes,
                                group_read);
    if (!err.empty()) {
      if (opt->log) opt->log->warn("cannot create trace file for pid {}: {}", pid, err);
      failed.insert(pid);
      return nullptr;
    }
    // With --all, a process is "known" once seen: its fork/exit/getaddrinfo count from now on.
    if (opt->all) add_target(skel, pid);
    return files.emplace(pid, std::move(f)).first->second.get();
  }

  AttachProgress progress() const {
    AttachProgress p;
    p.processes = files.size();
    for (const auto& [pid, f] : files) p.events += f->events();
    p.lost = lost();
    std::uint16_t key = 0, next = 0;
    for (const void* prev = nullptr; bpf_map__get_next_key(skel->maps.learnt_ports, prev, &next, sizeof next) == 0;
         prev = &key, key = next)
      ++p.ports_learnt;
    return p;
  }

  std::uint64_t lost() const {
    const int ncpu = libbpf_num_possible_cpus();
    if (ncpu <= 0) return 0;
    std::vector<std::uint64_t> per_cpu(static_cast<std::size_t>(ncpu));
    const std::uint32_t zero = 0;
    if (bpf_map__lookup_elem(skel->maps.lost, &zero, sizeof zero, per_cpu.data(),
                             per_cpu.size() * sizeof(std::uint64_t), 0) != 0)
      return 0;
    std::uint64_t total = 0;
    for (auto n : per_cpu) total += n;
    return total;
  }
};

// The store ports of `pid`'s environment (MASTER_PORT, ...) count from now on for every
// target's sockets (learnt_ports in rdzv_maps.bpf.h).
void learn_ports(rdzv_bpf* skel, int pid, const std::vector<std::uint16_t>& extra) {
  const std::uint8_t one = 1;
  for (std::uint16_t port : store_ports_of(pid, extra))
    bpf_map__update_elem(skel->maps.learnt_ports, &port, sizeof port, &one, sizeof one, BPF_ANY);
}

int on_event(void* ctx, void* data, size_t size) {
  auto* rec = static_cast<Recorder*>(ctx);
  if (size < sizeof(rdzv_bpf_event)) return 0;
  const auto* ev = static_cast<const rdzv_bpf_event*>(data);
  const int pid = static_cast<int>(ev->tgid);
  TraceFile* f = rec->file_for(pid);
  if (ev->what == RDZV_BPF_EV_DIED_IN_CALL) {
    if (f) rec->died_in_call(f, pid, ev->rec);
    return 0;
  }
  if (ev->rec.kind == RDZV_EV_EXEC) {
    learn_ports(rec->skel, pid, rec->opt->ports);
    // A file made before the exec (a vfork child's first calls) has the launcher's identity.
    if (f) f->after_exec(store_ports_of(pid, rec->opt->ports));
  }
  if (!f) return 0;
  f->append(ev->rec);
  f->call_returned(ev->rec);
  if (auto reason = rec->snapshots[pid].after(ev->rec, mono_ns())) {
    rdzv_record snap;
    if (read_snapshot(pid, f->start_realtime_ns(), *reason, &snap)) f->append(snap);
  }
  return 0;
}

// The slot of a call found blocked at attach that the kernel rebuilds at its exit (a receive
// on a found store socket, a poll on one), dated when it was found, flag preexisting, as its
// record will be.
void found_call_slot(Recorder& rec, int pid, const BlockedCall& b, const std::vector<FoundSocket>& found,
                     std::uint64_t now_ns) {
  SlotCall s;
  s.tid = static_cast<std::uint32_t>(b.tid);
  s.fd = b.call_fd;
  s.start_ns = now_ns;
  s.flags = RDZV_F_STORE | RDZV_F_PREEXISTING;
  switch (b.nr) {
    case 0: case 19: s.kind = RDZV_EV_RECV; s.op = RDZV_OP_READ; break;  // read, readv
    case 45: s.kind = RDZV_EV_RECV; s.op = RDZV_OP_RECVFROM; break;
    case 47: s.kind = RDZV_EV_RECV; s.op = RDZV_OP_RECVMSG; break;
    case 7: s.kind = RDZV_EV_POLL; s.op = RDZV_OP_POLL; s.timeout_ms = b.call_timeout_ms; break;
    default: return;  // sends: never published
  }
  const auto sock = std::find_if(found.begin(), found.end(), [&](const FoundSocket& x) { return x.fd == s.fd; });
  if (sock == found.end()) return;
  s.peer = sock->peer;
  if (s.kind == RDZV_EV_POLL && sock->tcp_state == 2) s.flags |= RDZV_F_NONBLOCK;  // SYN_SENT
  rec.found_calls[pid][s.tid] = s;
}

// Every process, for --all: their store sockets opened before attach are seeded too.
std::vector<int> all_pids() {
  std::vector<int> pids;
  for (long pid : numbered_entries("/proc"))
    if (pid != getpid()) pids.push_back(static_cast<int>(pid));
  return pids;
}

// The store sockets `pid` had before attach started go into the kernel's table (identity
// unknown: store_identify in rdzv_sock.bpf.h reads it at their first call), and a record in
// its trace says they were found. Done after the probes are attached, so that a close racing
// with this look is seen (or the identity check drops the entry); an entry the kernel
// learnt meanwhile is kept (BPF_NOEXIST).
void seed_process(Recorder& rec, int pid, const std::vector<std::uint16_t>& ports, std::uint64_t now_ns) {
  const auto found = find_store_sockets(pid, ports);
  if (found.empty()) return;
  TraceFile* f = rec.file_for(pid);
  bool any = false, reached = false;
  for (const FoundSocket& s : found) {
    store_sock ss{};
    ss.opened_ns = now_ns;  // the CLOSE record's open time counts from attach
    ss.peer = s.peer;
    ss.local = s.local;
    ss.rcvtimeo_ms = ss.sndtimeo_ms = -1;
    ss.pending = s.tcp_state == 2;  // SYN_SENT: rdzv_identify_found watches for its outcome
    const std::uint64_t key = (static_cast<std::uint64_t>(pid) << 32) | static_cast<std::uint32_t>(s.fd);
    if (bpf_map__update_elem(rec.skel->maps.store_socks, &key, sizeof key, &ss, sizeof ss, BPF_NOEXIST) != 0)
      continue;
    any = true;
    reached = reached || (s.tcp_state == 1 && std::find(ports.begin(), ports.end(), s.peer.port) != ports.end());
    if (f) f->append(found_record(pid, s, ports, now_ns));
  }
  if (!any) return;
  const std::uint32_t tgid = static_cast<std::uint32_t>(pid);
  const std::uint8_t one = 1;
  bpf_map__update_elem(rec.skel->maps.has_store, &tgid, sizeof tgid, &one, sizeof one, BPF_ANY);
  // Connected to its store already: the connections it makes from now on are peer sockets
  // (its pairs opened before attach are not found: /proc cannot tell them from any socket).
  if (reached) {
    const proc_peers pp{1, 0};
    bpf_map__update_elem(rec.skel->maps.proc_peers, &tgid, sizeof tgid, &pp, sizeof pp, BPF_NOEXIST);
  }
  // A call already blocked on one of them (a hung rank's recv) is recorded at its exit. Should
  // the thread have moved on to a call recorded from its enter, that call's entry (in the
  // thread's storage) is taken first at its exit, and this one is dropped at a later exit.
  for (const BlockedCall& b : blocked_calls(pid, found)) {
    if (b.wait_fd < 0) found_call_slot(rec, pid, b, found, now_ns);
    call c{};
    c.id = static_cast<std::uint64_t>(b.nr);
    c.late = 1;
    if (b.wait_fd >= 0) c.rec = found_wait_record(b, now_ns);  // completed by late_wait_exit
    const std::uint32_t tid = static_cast<std::uint32_t>(b.tid);
    if (bpf_map__update_elem(rec.skel->maps.late_calls, &tid, sizeof tid, &c, sizeof c, BPF_NOEXIST) == 0)
      rec.skel->bss->late_calls_made = 1;
  }
}

// The found sockets get their kernel identity now (rdzv.bpf.c: rdzv_identify_found, one pass
// over every process's descriptors), not only at their next call. Should it fail, that next
// call still does it (store_identify).
void identify_found(rdzv_bpf* skel) {
  if (!skel->links.rdzv_identify_found) return;
  const int fd = bpf_iter_create(bpf_link__fd(skel->links.rdzv_identify_found));
  if (fd < 0) return;
  char buf[256];
  while (read(fd, buf, sizeof buf) > 0) {
  }
  close(fd);
}

AttachResult fail(std::string msg) {
  AttachResult r;
  r.exit_code = 2;
  r.error = std::move(msg);
  return r;
}

struct SkelDeleter {
  void operator()(rdzv_bpf* s) const { rdzv_bpf::destroy(s); }
};
using Skel = std::unique_ptr<rdzv_bpf, SkelDeleter>;

// The steps of attach_and_record, in its order. Each returns the error that stops attach (the
// message of its AttachResult), or an empty string when attach goes on.

// Root, BTF, --max-mb and the trace directory, checked before anything else. The trace files
// and their directory as the shim makes them: RDZVSCOPE_GROUP_READ=1 (in attach's own
// environment) gives the group read access.
std::string check_host(const AttachOptions& opt, bool* group_read) {
  if (geteuid() != 0) return "needs root (CAP_BPF and CAP_PERFMON): run it as root";
  if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
    return "no BPF support here: the kernel has no BTF (/sys/kernel/btf/vmlinux)";
  if (opt.max_bytes > (std::uint64_t{RDZV_TRACE_MAX_MB} << 20))
    return "a trace file is at most " + std::to_string(RDZV_TRACE_MAX_MB) +
           " MiB, as the shim's (--max-mb)";
  *group_read = rdzv_env_flag(rdzv_env_self(nullptr, "RDZVSCOPE_GROUP_READ")) != 0;
  if (rdzv_trace_dir_ensure(opt.out_dir.c_str(), *group_read) != 0)
    return "trace directory unusable: " + opt.out_dir + ": " + std::strerror(errno);
  return {};
}

// The targets, found before anything is loaded (their ports go into the programs): --pid's,
// and those running now under a --comm name (those that exec later are followed by the kernel
// side), sorted, once each, never attach itself.
std::string choose_targets(const AttachOptions& opt, std::vector<int>* pids) {
  for (int pid : opt.pids) {
    if (!process_exists(pid)) return "no such process: " + std::to_string(pid);
    pids->push_back(pid);
  }
  if (opt.comms.size() > RDZV_BPF_MAX_COMMS)
    return "at most " + std::to_string(RDZV_BPF_MAX_COMMS) + " --comm names";
  for (const auto& comm : opt.comms) {
    auto found = pids_with_comm(comm);
    pids->insert(pids->end(), found.begin(), found.end());
  }
  std::sort(pids->begin(), pids->end());
  pids->erase(std::unique(pids->begin(), pids->end()), pids->end());
  pids->erase(std::remove(pids->begin(), pids->end(), static_cast<int>(getpid())), pids->end());
  if (pids->empty() && !opt.all && opt.comms.empty()) return "no process to attach to";
  return {};
}

// The store ports the programs watch: the targets' (their environment's), with --all attach's
// own, with --port exactly those (the filter); at most RDZV_BPF_MAX_PORTS.
std::vector<std::uint16_t> choose_ports(const AttachOptions& opt, const std::vector<int>& pids) {
  std::vector<std::uint16_t> ports;
  for (int pid : pids)
    for (auto p : store_ports_of(pid, opt.ports))
      if (std::find(ports.begin(), ports.end(), p) == ports.end()) ports.push_back(p);
  if (opt.all) ports = store_ports_of(getpid(), opt.ports);
  if (!opt.ports.empty()) ports = opt.ports;
  if (ports.size() > RDZV_BPF_MAX_PORTS) ports.resize(RDZV_BPF_MAX_PORTS);
  return ports;
}

// The programs' read-only configuration, set between open and load.
void configure(rdzv_bpf* skel, const AttachOptions& opt, const std::vector<std::uint16_t>& ports) {
  skel->rodata->trace_all = opt.all;
  skel->rodata->filter_ports = !opt.ports.empty();
  skel->rodata->self_tgid = static_cast<std::uint32_t>(getpid());
  skel->rodata->io_detail = opt.io_events;
  for (std::size_t i = 0; i < ports.size(); ++i) skel->rodata->ports[i] = ports[i];
  for (std::size_t i = 0; i < opt.comms.size(); ++i) {
    const std::string name = opt.comms[i].substr(0, RDZV_BPF_COMM_LEN - 1);  // the kernel's cut
    std::memcpy(const_cast<char*>(skel->rodata->comms[i]), name.c_str(), name.size() + 1);
  }
}

// open, configure, load: libbpf's messages go to opt.log from here on.
std::string open_and_load(const AttachOptions& opt, const std::vector<std::uint16_t>& ports,
                          Skel* skel) {
  g_log = opt.log;
  libbpf_set_print(libbpf_print);
  skel->reset(rdzv_bpf::open());
  if (!*skel) return "no BPF support here: cannot open the BPF object: " + g_last_libbpf_error;
  configure(skel->get(), opt, ports);
  // Attached by the loader itself (Recorder::inflight_iter), so that it outlives the probes'
  // links for the last pass when attach stops.
  bpf_program__set_autoattach((*skel)->progs.rdzv_calls_in_flight, false);
  if (int err = rdzv_bpf::load(skel->get()); err != 0)
    return "no BPF support here: loading the probes failed (" + std::string(std::strerror(-err)) +
           "): " + g_last_libbpf_error;
  return {};
}

// The explicit targets in the kernel's map, then their files, so that their PROC_START sorts
// before any event.
std::string add_targets(rdzv_bpf* skel, Recorder& recorder, const std::vector<int>& pids) {
  for (int pid : pids) {
    if (!add_target(skel, pid))
      return "cannot add pid " + std::to_string(pid) + " to the target map";
  }
  for (int pid : pids)
    if (!recorder.file_for(pid))
      return "cannot create the trace file of pid " + std::to_string(pid);
  return {};
}

void destroy_links(const std::vector<bpf_link*>& links) {
  for (auto* l : links) bpf_link__destroy(l);
}

// gethostbyname and co. in the libc at `path`: a uprobe pair each, the op as its cookie (the
// programs publish them in flight), into *links; "" or what failed.
std::string attach_gethostbyname(rdzv_bpf* skel, const std::string& path, std::vector<bpf_link*>* links) {
  const std::pair<const char*, std::uint8_t> fns[] = {{"gethostbyname", RDZV_OP_GETHOSTBYNAME},
                                                      {"gethostbyname2", RDZV_OP_GETHOSTBYNAME2},
                                                      {"gethostbyname_r", RDZV_OP_GETHOSTBYNAME_R},
                                                      {"gethostbyname2_r", RDZV_OP_GETHOSTBYNAME2_R}};
  for (const auto& [name, op] : fns) {
    LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = op, .retprobe = false, .func_name = name);
    bpf_link* in = bpf_program__attach_uprobe_opts(skel->progs.rdzv_ghbn_enter, -1, path.c_str(), 0, &uo);
    if (!in) return std::string("cannot attach the ") + name + " uprobe to " + path + ": " + g_last_libbpf_error;
    links->push_back(in);
    LIBBPF_OPTS(bpf_uprobe_opts, ro, .bpf_cookie = op, .retprobe = true, .func_name = name);
    bpf_link* out = bpf_program__attach_uprobe_opts(skel->progs.rdzv_ghbn_exit, -1, path.c_str(), 0, &ro);
    if (!out) return std::string("cannot attach the ") + name + " uretprobe to " + path + ": " + g_last_libbpf_error;
    links->push_back(out);
  }
  return {};
}

// getaddrinfo: one uprobe pair per libc the targets use (uprobes sit on the file; the
// programs filter by tgid), into *links. Should one fail, none is left attached.
std::string attach_getaddrinfo(rdzv_bpf* skel, const AttachOptions& opt,
                               const std::vector<int>& pids, std::vector<bpf_link*>* links) {
  std::set<std::string> libcs;
  for (int pid : pids) {
    std::string path = libc_path_of(pid);
    if (!path.empty()) libcs.insert(path);
  }
  // --all and --comm: processes not running yet use, most likely, this machine's own libc.
  if (opt.all || !opt.comms.empty()) libcs.insert(libc_path_of(0));
  for (const auto& path : libcs) {
    LIBBPF_OPTS(bpf_uprobe_opts, uo, .retprobe = false, .func_name = "getaddrinfo");
    bpf_link* in = bpf_program__attach_uprobe_opts(skel->progs.rdzv_gai_enter, -1, path.c_str(), 0, &uo);
    LIBBPF_OPTS(bpf_uprobe_opts, ro, .retprobe = true, .func_name = "getaddrinfo");
    bpf_link* out = in ? bpf_program__attach_uprobe_opts(skel->progs.rdzv_gai_exit, -1, path.c_str(), 0, &ro) : nullptr;
    if (!in || !out) {
      if (in) bpf_link__destroy(in);
      destroy_links(*links);
      return "cannot attach the getaddrinfo uprobe to " + path + ": " + g_last_libbpf_error;
    }
    links->push_back(in);
    links->push_back(out);
    if (std::string err = attach_gethostbyname(skel, path, links); !err.empty()) {
      destroy_links(*links);
      return err;
    }
  }
  return {};
}

// The ring buffer polled until *stop or --duration; every half second the files learn the
// kernel's lost count, every second on_progress is told. A failed poll ends it with an error
// in *result.
void poll_until_stopped(ring_buffer* rb, Recorder& recorder, const AttachOptions& opt,
                        volatile std::sig_atomic_t* stop,
                        void (*on_progress)(const AttachProgress&), AttachResult* result) {
  const std::uint64_t deadline = opt.duration_s > 0 ? mono_ns() + static_cast<std::uint64_t>(opt.duration_s * 1e9) : 0;
  std::uint64_t last_lost_update = 0, last_progress = mono_ns();
  while (!*stop && (!deadline || mono_ns() < deadline)) {
    // Events are submitted without a wakeup until the buffer fills (rdzv_sock.bpf.h): after
    // a timeout, what is there is taken anyway.
    int n = ring_buffer__poll(rb, RDZV_BPF_POLL_MS);
    if (n == 0) n = ring_buffer__consume(rb);
    if (n < 0 && n != -EINTR) {
      result->error = "ring buffer poll failed: " + std::string(std::strerror(-n));
      result->exit_code = 2;
      break;
    }
    if (mono_ns() - last_lost_update > 500'000'000ull) {
      const std::uint64_t lost = recorder.lost();
      for (auto& [pid, f] : recorder.files) f->set_lost(lost);
      recorder.sync_inflight();  // watch sees the calls in flight live
      recorder.sync_store_recv();
      recorder.forget_found_calls();
      last_lost_update = mono_ns();
    }
    if (on_progress && mono_ns() - last_progress >= 1'000'000'000ull) {
      on_progress(recorder.progress());
      last_progress = mono_ns();
    }
  }
}

// The summary, once the ring buffer is drained: the lost count, and each file's events, closed.
void summarize(Recorder& recorder, AttachResult* result) {
  result->lost = recorder.lost();
  result->per_pid.clear();
  for (auto& [pid, f] : recorder.files) {
    f->set_lost(result->lost);
    result->per_pid.push_back({pid, f->events(), f->path()});
    f->close();
  }
}

}  // namespace

// open -> configure (read-only data) -> load -> attach, as libbpf-tools do, each step
// checked; then the store sockets that were there before, the ring buffer polled, a summary.
AttachResult attach_and_record(const AttachOptions& opt, volatile std::sig_atomic_t* stop,
                               void (*on_ready)(const AttachResult&, const AttachOptions&),
                               void (*on_progress)(const AttachProgress&)) {
  bool group_read = false;
  if (std::string err = check_host(opt, &group_read); !err.empty()) return fail(std::move(err));
  std::vector<int> pids;
  if (std::string err = choose_targets(opt, &pids); !err.empty()) return fail(std::move(err));
  const std::vector<std::uint16_t> ports = choose_ports(opt, pids);

  Skel skel;
  if (std::string err = open_and_load(opt, ports, &skel); !err.empty()) return fail(std::move(err));
  Recorder recorder;
  recorder.opt = &opt;
  recorder.group_read = group_read;
  recorder.skel = skel.get();
  if (std::string err = add_targets(skel.get(), recorder, pids); !err.empty())
    return fail(std::move(err));
  if (int err = rdzv_bpf::attach(skel.get()); err != 0)
    return fail("attaching the probes failed (" + std::string(std::strerror(-err)) +
                "): " + g_last_libbpf_error);
  std::vector<bpf_link*> links;
  if (std::string err = attach_getaddrinfo(skel.get(), opt, pids, &links); !err.empty())
    return fail(std::move(err));
  recorder.inflight_iter = bpf_program__attach_iter(skel->progs.rdzv_calls_in_flight, nullptr);
  if (!recorder.inflight_iter && opt.log)
    opt.log->warn("cannot attach the iterator of calls in flight: the traces will show none ({})",
                  g_last_libbpf_error);

  // Store sockets opened before attach: without them a hung rank's connections stay unseen.
  const std::uint64_t found_ns = mono_ns();
  for (int pid : opt.all ? all_pids() : pids) seed_process(recorder, pid, ports, found_ns);
  identify_found(skel.get());

  ring_buffer* rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_event, &recorder, nullptr);
  if (!rb) {
    destroy_links(links);
    return fail("cannot open the ring buffer: " + std::string(std::strerror(errno)));
  }
  AttachResult result;
  for (int pid : pids) result.per_pid.push_back({pid, 0, recorder.files[pid]->path()});
  if (on_ready) on_ready(result, opt);

  poll_until_stopped(rb, recorder, opt, stop, on_progress, &result);
  // The calls in progress as attach stops, while the probes still run; then stop the probes
  // and drain what they left in the ring buffer (nothing is lost between the last poll and the
  // exit): a call that returned meanwhile empties its slot, a thread killed in one keeps it.
  recorder.sync_inflight();
  recorder.sync_store_recv();
  destroy_links(links);
  rdzv_bpf::detach(skel.get());
  ring_buffer__consume(rb);
  ring_buffer__free(rb);
  for (auto& [pid, f] : recorder.files) f->finish_inflight();
  if (recorder.inflight_iter) bpf_link__destroy(recorder.inflight_iter);
  summarize(recorder, &result);
  return result;
}

}  // namespace rdzvscope::bpf
