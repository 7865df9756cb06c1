// One model per traced process: its identity, role and events on the wall clock. Files of one
// process (a new file after each exec) are merged; damage is counted, never fatal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <rdzvscope/trace_format.h>

#include "clock_estimate.h"
#include "event.h"
#include "input_stats.h"
#include "kernel_log.h"
#include "reader/error.h"

namespace rdzvscope {

// Helper: a process started by a rank that inherited its RANK (a compiler worker, a tool the
// rank ran) and never touched the store; it is not that rank.
// EarlierAttempt: a worker of an attempt that torchrun restarted (--max-restarts): a later
// attempt of the same job (TORCHELASTIC_RESTART_COUNT) is the one diagnosed.
enum class Role { Worker, StoreServer, Agent, Helper, EarlierAttempt };
const char* role_name(Role r);

// What the analysis keeps of a file's header: the identity and settings, without the rest of
// the 4 KiB block (at 131,072 processes whole headers alone would take 512 MiB).
struct ProcessHeader {
  std::uint32_t features = 0;
  std::int32_t pid = 0, ppid = 0;
  std::uint64_t start_realtime_ns = 0, clock_realtime_ns = 0;
  std::uint16_t store_ports[RDZV_MAX_STORE_PORTS] = {};
  rdzv_identity ident{};
  std::string host, cmdline;
  bool cmdline_truncated = false;
  std::uint32_t exec_generation = 0;
  std::optional<rdzv_origin> origin;  // RDZV_FEAT_ORIGIN: boot, namespaces, container
  std::string torch_version;          // RDZV_FEAT_TORCH_VERSION, else ""

  ProcessHeader() = default;
  explicit ProcessHeader(const rdzv_file_header& h);
};

struct Process {
  std::vector<std::string> files;
  ProcessHeader header;  // of the newest image (identity may change across exec)
  std::string host;
  std::int32_t pid = 0;       // as its recorder saw it: the shim its own, attach the host's
  // Where pid and ppid are counted: the host name, or (with an origin) the boot and the PID
  // namespace they belong to. Two processes with one pid_space and one pid are one process.
  std::string pid_space;
  std::string container;      // the container id (cut to 12 characters), "" when none
  std::uint64_t own_pidns = 0;  // the PID namespace when it is not the host's initial one
  std::int32_t rank = -1;     // RANK, else SLURM_PROCID; -1 when neither
  std::int32_t world_size = -1;
  std::int32_t restart_count = -1;  // TORCHELASTIC_RESTART_COUNT: torchrun's attempt, from 0
  std::string job_key;        // TORCHELASTIC_RUN_ID or SLURM_JOB_ID ("" when neither)
  Role role = Role::Worker;
  std::int64_t launched_ns = 0;  // process start on the wall clock (file creation if unknown)
  std::vector<Event> events;     // merged, in time order
  // Calls that had begun and not returned when its files were read (RDZV_FEAT_INFLIGHT): what
  // it was waiting in when it was killed (or still is). A store socket's send/recv is given
  // the peer and SO_RCVTIMEO/SO_SNDTIMEO of its descriptor's events. By start time.
  std::vector<Event> inflight;
  // The latest receive on one of its store sockets that returned bytes, on the wall clock
  // (RDZV_FEAT_STORE_RECV): its store traffic still moved then, past what its records show
  // (they stop after each socket's first calls). nullopt when unknown or none.
  std::optional<std::int64_t> last_store_recv_ns;
  bool cut_short = false;  // a file of it was truncated: what it did after the cut is unknown

  // How it ended: exit record, or nothing (killed by a signal, or still running).
  std::optional<std::int64_t> exit_ns;
  std::optional<int> exit_status;  // nullopt: unknown (main returned unseen, or no exit)
  bool vanished() const { return !exit_ns.has_value(); }
  std::int64_t last_event_ns() const { return events.empty() ? launched_ns : events.back().wall_ns; }
  // "rank 3 (node7 pid 1234)" or "pid 1234 on node7"; a process in a PID namespace of its
  // own says which: "rank 3 (node7 pid 1, container 3f2a9c1b4d5e)", or "... pid 1 in PID
  // namespace 4026532301)" where no container id is known.
  std::string label() const;
  // "pid 1234"; "pid 1, container 3f2a9c1b4d5e"; "pid 1 in PID namespace 4026532301".
  std::string pid_words() const;
};

struct TraceInputs {
  std::vector<Process> processes;
  std::vector<Error> errors;  // unreadable or damaged files: reported, analysis goes on
  // What was read and what was damaged or lost: the trace rows of the table (input_stats.h).
  Stats stats;
  int attempts = 1;  // torchrun attempts in these traces (the highest restart count + 1)
  // Hosts' clocks against the store host's (clock_alignment.h); the processes' times are
  // already moved onto it. Empty for a one-host job, or when no host could be placed.
  std::vector<ClockEstimate> clocks;
  // The kernel's OOM kills of this machine's boot, when the caller read them (the CLI, on the
  // node that ran the job): not a file of the traces, so load_traces leaves it empty.
  KernelLog kernel;
};

// Reads this machine's kernel log into t.kernel when a process of t ran in this boot of this
// machine (the analysis runs on its node: `run --verdict`, an epilog), so that the OOM
// killer's kills are named (endings.h). Otherwise, or when the log cannot be read, leaves it.
void read_kernel_log_of_this_boot(TraceInputs& t);

// Paths are trace files or directories of them (*.rzt). Never throws on bad input.
// The same as trace_files_in + read_trace_files + assemble_traces.
TraceInputs load_traces(const std::vector<std::string>& paths);

// One file as read, decoded and checked, before it is merged into its process. Files are
// read in parallel into these (each independent of the others) and merged in file order, so
// the result does not depend on the number of threads. `watch` keeps them between refreshes
// and reads again only the files that changed.
// Which process a file is of: (pid space, pid, start). With an origin: the boot and PID
// namespace, the pid the process saw and its start in clock ticks, the same whichever
// recorder wrote the file. Without one (files of older recorders): the host name, the pid and
// the start to 100 ms.
using ProcessKey = std::tuple<std::string, std::int32_t, std::int64_t>;
struct FileRead {
  std::optional<Error> unusable;   // the file could not be used at all
  std::optional<ProcessKey> key;
  ProcessHeader header;
  std::uint32_t exec_generation = 0;
  std::vector<Event> events;       // on the wall clock, plausible times only
  std::vector<Event> inflight;     // calls in flight, likewise
  std::optional<std::int64_t> last_store_recv_ns;  // RDZV_FEAT_STORE_RECV, likewise
  std::uint64_t torn = 0, invalid = 0, implausible = 0, dropped = 0, lost = 0, records = 0;
  std::optional<Error> damage;     // the file was cut: what it holds before the cut is kept
};
FileRead read_trace_file(const std::string& file);
// Reading is most of analyze's time on a large job (one open, read and decode per file): it
// is spread over the machine's cores. Small inputs are read on this thread.
std::vector<FileRead> read_trace_files(const std::vector<std::string>& files);

// The processes of these files (reads[i] is files[i]): files of one process merged, roles
// found, clocks aligned. listing_errors (a path that listed no file, with the number of files
// listed before it) are reported in their place among the files' errors.
TraceInputs assemble_traces(const std::vector<std::string>& files, std::vector<FileRead> reads,
                            const std::vector<std::pair<std::size_t, Error>>& listing_errors = {});

// Expands a directory into its *.rzt files and those of its subdirectories (a per-host or
// per-job layout), sorted; a file is returned as is.
Result<std::vector<std::string>> trace_files_in(const std::string& path);

}  // namespace rdzvscope
