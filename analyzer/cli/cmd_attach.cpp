// rdzvscope attach (--pid PID... | --comm NAME... | --all) [--port P...] --out DIR
//                  [--duration S]: records, with eBPF probes, what the shim would have
// recorded inside processes that were started without it (bpf/loader.h). One trace file per
// process in DIR; Ctrl-C, SIGTERM or the duration stops it, every buffered event written.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "rdzvscope/recorder_core.h"
#include "diagnostics.h"
#include "out_dir.h"

#ifdef RDZVSCOPE_HAVE_BPF
#include "loader.h"
#endif

namespace rdzvscope::cli {
namespace {

struct AttachArgs {
  std::vector<int> pids;
  std::vector<std::string> comms;
  bool all = false;
  bool same_netns = false;
  std::vector<int> ports;
  std::string out;
  double duration = 0;
  unsigned io_events = RDZV_IO_DETAIL_EVENTS;  // the recorder core's limits: as the shim
  unsigned max_mb = RDZV_TRACE_DEFAULT_MAX_MB;
};

int attach_fail(const std::string& msg) {
  log_for("attach")->error("{}", msg);
  return kExitUsage;
}

#ifdef RDZVSCOPE_HAVE_BPF
volatile std::sig_atomic_t g_stop = 0;

void on_signal(int) { g_stop = 1; }

void say_ready(const bpf::AttachResult& r, const bpf::AttachOptions& opt) {
  std::string who = opt.all ? std::string("all processes") : fmt::format("{} process(es)", r.per_pid.size());
  if (!opt.comms.empty()) who += fmt::format(" and every process that starts {}", fmt::join(opt.comms, " or "));
  log_for("attach")->info("recording {} into {} (Ctrl-C stops)", who, opt.out_dir);
}

// On a terminal: one status line, rewritten in place once a second (cleared before the
// summary). Piped or redirected stderr gets the summary only, as before; so does --quiet.
// Written directly, not through the logger: a line rewritten in place ends in no newline.
bool g_status_shown = false;

void say_progress(const bpf::AttachProgress& p) {
  if (!::isatty(STDERR_FILENO) || !log_for("attach")->should_log(spdlog::level::info)) return;
  std::fprintf(stderr, "\rrdzvscope attach: following %zu process(es), %zu store port(s) learnt, %llu events, %llu lost\x1b[K",
               p.processes, p.ports_learnt, static_cast<unsigned long long>(p.events),
               static_cast<unsigned long long>(p.lost));
  std::fflush(stderr);
  g_status_shown = true;
}

void clear_progress() {
  if (g_status_shown) std::fprintf(stderr, "\r\x1b[K");
  g_status_shown = false;
}

// --same-netns: the files of processes outside attach's own network namespace are removed
// once recording ends (each header's origin says where its process lived). The probes see
// every process of the kernel; where "nodes" are network namespaces of one kernel (the Slurm
// test cluster), one attach per node would otherwise write a copy of every node's processes,
// each under the wrong host name, and analyze would merge the copies of one process into one
// with every event repeated. A file whose process's namespace is unknown (it was gone, or
// exiting, when attach made the file: it lived a few ms after its first call) is removed too:
// on one kernel it may be any node's. Not for a node-wide attach on Kubernetes, whose pods
// each have a network namespace of their own.
void keep_own_netns(bpf::AttachResult* r) {
  struct stat own {};
  if (::stat("/proc/self/ns/net", &own) != 0) {
    log_for("attach")->error("--same-netns: cannot read /proc/self/ns/net; every file kept");
    return;
  }
  std::vector<bpf::PidCount> kept;
  std::size_t dropped = 0;
  for (const bpf::PidCount& p : r->per_pid) {
    rdzv_file_header h{};
    std::ifstream in(p.path, std::ios::binary);
    const bool read = static_cast<bool>(in.read(reinterpret_cast<char*>(&h), sizeof h));
    const bool ours = read && (h.features & RDZV_FEAT_ORIGIN) &&
                      h.origin.netns_inode == static_cast<std::uint64_t>(own.st_ino);
    if (!ours && ::unlink(p.path.c_str()) == 0) {
      ++dropped;
      continue;
    }
    kept.push_back(p);
  }
  r->per_pid = std::move(kept);
  if (dropped) log_for("attach")->info("--same-netns: {} process(es) of other or unknown network namespaces left out",
                                       dropped);
}

int run_attach(const AttachArgs& a) {
  const int given = (!a.pids.empty()) + (!a.comms.empty()) + (a.all ? 1 : 0);
  if (given != 1) return attach_fail("give exactly one of --pid, --comm, --all");
  bpf::AttachOptions opt;
  opt.pids = a.pids;
  opt.comms = a.comms;
  opt.all = a.all;
  for (int p : a.ports) opt.ports.push_back(static_cast<std::uint16_t>(p));
  opt.duration_s = a.duration;
  opt.io_events = a.io_events;
  opt.max_bytes = std::uint64_t{a.max_mb} << 20;
  opt.log = log_for("attach");
  auto dir = prepare_out_dir(expand_out_dir(a.out));
  if (!dir) return attach_fail(dir.error().message());
  opt.out_dir = dir.value();

  struct sigaction sa {};
  sa.sa_handler = on_signal;  // no SA_RESTART: the ring buffer poll returns at once
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  bpf::AttachResult r = bpf::attach_and_record(opt, &g_stop, say_ready, say_progress);
  clear_progress();
  if (r.exit_code != 0 && r.per_pid.empty()) return attach_fail(r.error);
  if (a.same_netns) keep_own_netns(&r);
  if (!r.error.empty()) log_for("attach")->error("{}", r.error);
  std::uint64_t total = 0;
  std::vector<std::string> each;
  for (const auto& p : r.per_pid) {
    total += p.events;
    each.push_back(fmt::format("{}: {}", p.pid, p.events));
  }
  log_for("attach")->info("{} events from {} process(es) ({}), {} lost -> {}", total, r.per_pid.size(),
                          fmt::join(each, ", "), r.lost, opt.out_dir);
  return r.exit_code;
}
#else
int run_attach(const AttachArgs&) { return attach_fail("built without BPF support"); }
#endif

}  // namespace

Command add_attach_command(CLI::App& app) {
  auto a = std::make_shared<AttachArgs>();
  CLI::App* sub = app.add_subcommand(
      "attach", "Record running processes with eBPF probes (root): one DIR/<host>.<pid>.rzt each");
  sub->add_option("--pid,-p", a->pids, "Processes to attach to (their children follow)")->type_name("PID...");
  sub->add_option("--comm", a->comms, "Attach to every process with this command name, running now or exec'd later")
      ->type_name("NAME...");
  sub->add_flag("--all", a->all, "Every process (use with --port)");
  sub->add_flag("--same-netns", a->same_netns,
                "Keep only processes in attach's own network namespace (one attach per node "
                "where nodes share a kernel)");
  sub->add_option("--port", a->ports, "Record socket calls on these ports only (they count as store ports)")
      ->type_name("P...")
      ->check(CLI::Range(1, 65535));
  sub->add_option("--out,-o", a->out, "Trace directory, created 0700")->type_name("DIR")->required();
  sub->add_option("--duration", a->duration, "Stop after S seconds (default: at Ctrl-C or SIGTERM)")
      ->type_name("S")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--io-events", a->io_events,
                  "Per store socket, record the first N send/recv calls one by one, then only failures "
                  "and 0-byte reads (default " + std::to_string(RDZV_IO_DETAIL_EVENTS) + ", as the shim; 0 = every call)")
      ->type_name("N");
  sub->add_option("--max-mb", a->max_mb, "Size cap of one trace file in MiB (default " + std::to_string(RDZV_TRACE_DEFAULT_MAX_MB) + ", as the shim)")
      ->type_name("MB")
      ->check(CLI::Range(1u, RDZV_TRACE_MAX_MB));
  return Command{sub, [a] { return run_attach(*a); }};
}

}  // namespace rdzvscope::cli
