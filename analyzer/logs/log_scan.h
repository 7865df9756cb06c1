// Streaming reader of job logs: finds the c10d / TCPStore / elastic / NCCL-watchdog message
// families of PyTorch 1.13 through 2.9 (docs/c10d-notes.md, section 6) in rank logs, one file
// per rank or one merged file, and turns each matching line into a LogEvent with the values
// the rules need (timeout, errno, gai code, host, port, rank, time).
//
// How it is fast: the file is read in fixed-size chunks (never whole) and a multi-literal
// prefilter (prefilter.h) looks for a small set of anchor strings over each chunk; only the
// lines around an anchor hit are parsed. Every other line is only counted.
//
// Errors are values: nothing here throws past scan_log.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "logs/progress.h"

namespace rdzv::logs {

// Each family is one row of analyzer/logs/families.cpp: what it matches and extracts, the
// versions that print it, an example line.
enum class Family {
  GaiError,            // "network addresses of (H, P) cannot be retrieved (gai error: -2 - ...)"
  HostNotFound,        // "host not found: ..." (a forward lookup of the rendezvous host)
  ConnectValidate,     // "TCP client failed to connect/validate to host H:P - retrying|timed out (...): reason"
  ClientConnectTimeout,// "The client socket has timed out after N(s|ms) while trying to connect to (H, P)"
  ConnectFailed,       // "The client socket has failed to connect to ADDR (errno: N - text)" / "to any network address of (H, P)"
  NotListeningYet,     // "is not yet listening" / "No socket on (H, P) is listening yet, will retry"
  ServerTimedOutRetry, // "The server socket on ... has timed out, will retry."
  SendRecvFailed,      // "sendBytes failed on SocketImpl(...)": reason after ": " (recvValue, recvVector, ...)
  BrokenPipe,          // "Broken pipe"
  ConnectionReset,     // "Connection reset by peer"
  ConnectionTimedOutErrno, // "Connection timed out" as an errno text
  RecvZero,            // "failed to recv, got 0 bytes" / "Failed to recv, got 0 bytes"
  SocketTimeout,       // "Socket Timeout"
  WaitTimeout,         // "wait timeout after Nms, keys: ..."
  WaitForInputTimeout, // "waitForInput: socket ... timed out after Nms" / "poll for socket ... returned 0, likely a timeout"
  ClientsJoinTimeout,  // "Timed out after N seconds waiting for clients. n/N clients joined."
  StoreBarrierTimeout, // "Timed out initializing process group in store based barrier ..." and "Waiting in store based barrier ..."
  BindFailed,          // "The server socket has failed to bind to ADDR (errno: 98 - ...)", "RuntimeError: Address already in use"
  ListenFailed,        // "The server socket has failed to listen on any local network address"
  RendezvousClosed,    // "RendezvousClosedError", "RendezvousConnectionError", "has failed to shutdown the rendezvous"
  ConnectTimeoutLegacy,// "connect() timed out." (optionally "Original timeout was N ms.")
  NcclUniqueIdStoreError, // "... retrieving ncclUniqueId from [0] via c10d key-value store ... got error: ..."
  WatchdogTimeout,     // "Watchdog caught collective operation timeout" (Timeout(ms)=N)
  // gloo's wait in a collective ran out: "Timed out waiting 4000ms for recv operation to
  // complete" (or send), the rank's own timeout; a rank that waited for another in a
  // collective after the rendezvous.
  GlooCollectiveTimeout,
  // Issue 29. c10d's monitored_barrier (gloo) ran out: rank 0 collects every other rank's
  // message and then answers each. Rank 0 names who did not come ("[Rank 0]: Rank 2 failed to
  // pass monitoredBarrier in 1800000 ms", "Ranks 1, 2 failed to pass ..."); a rank that came
  // and got no answer from rank 0 says so ("Rank 3 successfully reached monitoredBarrier, but
  // received errors while waiting for send/recv from rank 0"); sglang's check after loading the
  // model words the same timeout ("TP rank 2 could finish the model loading, but there are
  // other ranks that didn't finish loading"). LogEvent::awaited_rank: the rank that did not
  // come (rank 0's line naming one), or 0 for the other ranks' line (setting "reached").
  MonitoredBarrierTimeout,
  // Issue 29. gloo's own key-value stores (the file and hash stores, Horovod's HTTP store) gave
  // up a wait for keys: "Wait timeout after 30 seconds for key(s): 0". The store answered and
  // the keys were not there; gloo's full mesh names each rank's key by its rank number, so a
  // numeric key is the rank that had not published its address (LogEvent::awaited_rank).
  GlooStoreWaitTimeout,
  // "The hostname of the client socket cannot be retrieved. err=-3" (2.6+): the reverse lookup
  // of a connected socket's own address failed. A resolver that answers no reverse queries (no
  // DNS server in reach) prints it beside any failure; it says nothing about the rendezvous host.
  ReverseLookupFailed,
  // "RendezvousTimeoutError" (torchelastic): the agents' rendezvous did not complete within its
  // join timeout, i.e. not every node joined; the cause is on the nodes that did not.
  RendezvousTimeout,
  // "  run_id                   : job7" and the other lines of torchrun's "Starting
  // elastic_operator with launch configs:" block (INFO, as LOGLEVEL=INFO prints it): the
  // agent's rendezvous settings (LogEvent::setting, setting_value). No failure: LogFacts keeps
  // them apart (launch_configs), for comparing the agents' settings from logs alone.
  LaunchSetting,
  // torchrun's agent past the end of its node's workers: "[default] worker group successfully
  // finished. Waiting 300 seconds for other agents to finish.", "Local worker group finished
  // (WorkerState.SUCCEEDED)" (INFO), and "Error waiting on exit barrier" (the barrier the agent
  // enters once its workers ended; 2.x enters it only after they all exited 0). No failure:
  // LogFacts keeps the lines apart (teardown_marks); what the agent logs after one is the
  // job's teardown.
  AgentTeardown,
  // torchelastic's agent restarting its workers after one failed: "[default] Worker group
  // FAILED. 2/3 attempts left; will restart worker group" (INFO). No failure by itself (the
  // failure came before it): LogFacts keeps the lines apart (restarts); the workers' store
  // outlives the restart, so what they count in it afterwards includes the earlier attempts.
  WorkerGroupRestart,
  // torchrun's failure summary, the ChildFailedError block its agent prints when a worker
  // failed: the header "Root Cause (first observed failure):" and each failure's fields,
  // "  rank      : 2 (local_rank: 2)", "  exitcode  : 1 (pid: 23296)" (-15 and "(SIGTERM)" for
  // the workers the agent stopped), "  error_file: <N/A>", "  traceback : ..."; and the agent's
  // error line above it, "failed (exitcode: 1) local_rank: 2 (pid: 23296) of binary: ..."
  // (LogEvent::setting "root_cause", "rank", "exitcode", "error_file", "traceback" or
  // "first_failure", setting_value the rest). No failure by itself: LogFacts puts each
  // failure's lines together (worker_failures).
  WorkerFailure,
  // Issues 28 and 29. A stack frame that says where a process was: a Python frame of
  // torch/distributed/distributed_c10d.py ('  File ".../distributed_c10d.py", line 2501, in
  // all_reduce': the collective or store call the rank was in; LogEvent::setting "c10d_call",
  // setting_value the function), or a C++ frame of TCPStore's constructor ("frame #4:
  // c10d::TCPStore::ping() + 0xf9", "#10 c10d::TCPStore::waitForWorkers()": the store's
  // connect and validation; setting "store_ctor", setting_value the function). No failure:
  // LogFacts keeps them apart (frames).
  StackFrame,
  // Issue 29. A process that ended, as whoever reaped it reports: the shell's job report
  // ("line 8: 11641 Killed   python train.py", or a bare "Killed"), the kernel's OOM killer
  // ("Out of memory: Killed process 1234 (python)", "oom-kill:..."), torch.multiprocessing's
  // spawn ("process 1 terminated with signal SIGKILL", "... with exit code 1", "-- Process 2
  // terminated with the following error:"), the old launcher's CalledProcessError ("died with
  // <Signals.SIGKILL: 9>", "returned non-zero exit status 1"). LogEvent::setting "signal" or
  // "exit", setting_value the signal's name or the exit code; died_process the spawn index when
  // the line names one. No store failure: LogFacts keeps them apart (deaths).
  ProcessDied,
  // c10d's TCPStore of 2.x checks the peer at the other end of a store connection: the client
  // pings with its own nonce and wants it echoed ("Ping failed, invalid value returned from
  // server. Expected: N, Got: M"), the server wants a VALIDATE query with c10d's magic number
  // first ("Miscellaneous client without VALIDATE query is detected", "... with incorrect
  // VALIDATE query ..."). Either says that what answered on the store port does not speak this
  // store's protocol: another job's store (another PyTorch version), or another program.
  ForeignStorePeer,
  // The launcher's environment was not there: env:// rendezvous "environment variable
  // MASTER_ADDR expected, but not set", torchelastic's "Environment variable X expected, but not
  // set", a script's KeyError on RANK / LOCAL_RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT.
  // LogEvent::setting "missing_env", setting_value the variable.
  LauncherEnvMissing,
  // A rank outside its world: gloo's "[enforce fail at ...gloo/context.cc:23] rank < size. 2
  // vs 2", NCCL's "Invalid rank requested : 2/2". RANK (or the node rank) and WORLD_SIZE
  // disagree.
  RankOutOfRange,
  // Issue 29. PyTorch Lightning's line of each process as it calls init_process_group
  // ("initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/8"; later "Initializing distributed: ..."),
  // and rank 0's once it returned ("All distributed processes registered. Starting with 8
  // processes"; older "All DDP processes registered. Starting ddp with 8 processes").
  // LogEvent::rank the GLOBAL_RANK, expected the world size, setting "entering" or "registered".
  // No failure: LogFacts keeps them apart (init_entries).
  InitAnnounced,
  // Issue 29. ProcessGroupNCCL's destructor finding its group never destroyed (2.4+): "Warning:
  // WARNING: process group has NOT been destroyed before we destruct ProcessGroupNCCL. On normal
  // program exit, ...". The group is destructed as the interpreter exits, after the script
  // returned or raised: the rank got past its rendezvous and reached its exit. No failure:
  // LogFacts keeps the lines apart (exit_marks).
  GroupLeftAtExit,
  // Issue 29. gloo's device found no address for the host name and bound loopback: "Warning:
  // Unable to resolve hostname to a (local) address. Using the loopback address as fallback.
  // Manually set the network interface to bind to with GLOO_SOCKET_IFNAME." The rank then
  // publishes 127.0.0.1 as its address. No failure by itself (a job on one node works so):
  // LogFacts keeps the lines apart (gloo_loopback_fallbacks).
  GlooLoopbackFallback,
  // Issue 29. c10d's warning that a socket of one address family could not be made: "[c10d] The
  // server socket cannot be initialized on [::]:29500 (errno: 97 - Address family not supported
  // by protocol)", "... client socket cannot be initialized to connect to [host]:29500 (errno:
  // 97 ...)". A host without IPv6 prints it for the IPv6 address of every store socket, and c10d
  // goes on to the next address (IPv4): every job on such a host logs it. No failure: LogFacts
  // keeps the lines apart (family_fallbacks).
  AddressFamilyUnsupported,
  // Issue 13. The families below are not rendezvous (store) failures: LogFacts keeps them
  // apart from the events the rules read (LogFacts::other_errors), so that a log holding only
  // them is `unknown` with the line quoted, never `healthy`.
  // "gloo::IoException ... connect [ADDR]:PORT: Connection refused", NCCL "socketStartConnect:
  // Connect to ... failed", "NCCL WARN Connect to ... failed : Connection refused", "Proxy Call to
  // rank N failed (Connect)", a reset or closed connection on an NCCL/gloo line: the ranks' own
  // transport connections after the store, not the store.
  TransportError,
  // "Bootstrap : no socket interface found" / "no NCCL_SOCKET_IFNAME interface found": NCCL has
  // no network interface to bootstrap on.
  NcclNoSocketInterface,
  // A bare "No route to host" (EHOSTUNREACH) that no c10d connect line words: an unreachable
  // store host (route, firewall REJECT) or, on old gloo, a store not up yet.
  NoRouteToHost,
  // A Python exception line ("RuntimeError: ...", "torch.distributed.DistNetworkError: ...",
  // "...RendezvousClosedError"), "Traceback (most recent call last):", "terminate called after
  // throwing": an error that no other family matched.
  ErrorLine,
};
inline constexpr int kFamilyCount = static_cast<int>(Family::ErrorLine) + 1;
// The families that say nothing about the store (see TransportError above).
inline bool is_other_error(Family f) {
  return f == Family::TransportError || f == Family::NcclNoSocketInterface || f == Family::ErrorLine;
}
// The families of c10d / TCPStore / elastic messages about the rendezvous (what LogScan::matched
// counts): neither another error nor a statement of the launcher (a setting, a success).
inline bool is_rendezvous_message(Family f) {
  return !is_other_error(f) && f != Family::LaunchSetting && f != Family::AgentTeardown &&
         f != Family::WorkerGroupRestart && f != Family::WorkerFailure && f != Family::ProcessDied &&
         f != Family::StackFrame && f != Family::InitAnnounced && f != Family::GroupLeftAtExit &&
         f != Family::GlooLoopbackFallback && f != Family::AddressFamilyUnsupported;
}

struct LogEvent {
  std::string file;          // path as given
  uint64_t line = 0;         // 1-based line number
  int rank = -1;             // prefix "[rankN]:" "[defaultN]:" "[N]:" "N: " (srun -l), else "rank: R" /
                             // "[Rank R]" / "[R] is setting up" in the text, else the file's default
  Family family{};           // the most specific family of the line (see `also`)
  std::string text;          // the matched line, without the rank prefix, cut to 500 bytes
  std::string origin;        // the host or pod that wrote the line, from a "host:N:" / "[host:N]"
                             // / kubectl "[pod/NAME/CONTAINER]" prefix; "" when none
  std::optional<int64_t> timeout_ms;   // "after Ns|Nms", "timeout=Nms", "Timeout(ms)=N", "N seconds",
                                       // "timeout was N ms", "timeout=0:30:00", in ms
  std::optional<int> err;              // errno from "(errno: N - ...)", "code: -98", or the reason text
  std::optional<int> gai_code;         // from "gai error: -2" or "err=-3"
  std::string host;                    // from "remote=[H]:P", "(H, P)", "host H:P", "[H]:P", "H:P"
  std::optional<int> port;
  std::optional<double> wall_time;     // seconds since the epoch (local time of the log), when the
                                       // line has a glog "[W1129 23:19:18.123456" (year from the
                                       // file's mtime) or ISO "2026-11-29 23:19:18,123" stamp
  // Added beyond the first interface:
  uint64_t also = 0;                   // bit (1 << int(F)) for every other family the line matched
  std::string reason;                  // the error text after "...: " / "got error: " / "with error: "
  std::optional<int> joined;           // "1/3 clients joined" -> 1; store barrier worker_count
  std::optional<int> expected;         // "1/3 clients joined" -> 3; store barrier world_size
  // "wait timeout after 3000ms, keys: /default_pg/0//cpu//0/2" (2.x, a gloo group's address
  // exchange): the rank whose key was awaited, 2; the first key's last path element.
  std::optional<int> awaited_rank;
  // ProcessDied: the index torch.multiprocessing's spawn gave the process ("process 1 ..."):
  // its local rank (its rank when the job is one node's).
  std::optional<int> died_process;
  // LaunchSetting: the setting's name as torchrun prints it ("run_id", "rdzv_endpoint",
  // "rdzv_backend", "min_nodes", "max_nodes", "nproc_per_node") and its value. WorkerFailure:
  // the field's name ("root_cause", "rank", "exitcode", "error_file", "traceback") and value.
  std::string setting, setting_value;
  bool has(Family f) const { return family == f || (also >> static_cast<int>(f)) & 1u; }
  static_assert(kFamilyCount <= 64, "a bit of `also` for every family");
};

struct LogScan {
  std::vector<LogEvent> events;        // in file order
  // Issue 29: the first progress line (progress.h) of each process after each of its events,
  // and the file's first, in file order.
  std::vector<ProgressLine> progress;
  // Issue 29: the last line of each process (rank) that held an anchor and that neither a family
  // nor the progress test took ("Exception raised from ...", an error no family knows).
  std::vector<ProgressLine> unread;
  std::string torch_version;           // "" unknown; the first "torch 2.3.1", "torch==2.3.1",
                                       // "PyTorch version: 2.3.1", "torch.__version__ = 2.3.1", ...
  uint64_t lines = 0, matched = 0, bytes = 0;
  uint64_t cut_lines = 0;              // lines longer than ScanOptions::max_line (their tail unsearched)
  uint64_t binary_lines = 0;           // candidate lines skipped because they held NUL bytes
};

struct LogError {
  std::string message;                 // one line, naming the file
};

// An expected-like result (C++23 std::expected stand-in). A log whose reading stopped part
// way (a truncated or corrupt .gz) is an error that also holds what was read before it.
class ScanResult {
 public:
  ScanResult(LogScan s) : v_(std::move(s)) {}    // NOLINT: implicit on purpose
  ScanResult(LogError e) : v_(std::move(e)) {}   // NOLINT
  ScanResult(LogError e, LogScan partial) : v_(std::move(e)), partial_(std::move(partial)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  LogScan& value() & { return std::get<0>(v_); }
  const LogScan& value() const& { return std::get<0>(v_); }
  LogScan&& value() && { return std::get<0>(std::move(v_)); }
  const LogError& error() const { return std::get<1>(v_); }
  LogScan* operator->() { return &std::get<0>(v_); }
  const LogScan* operator->() const { return &std::get<0>(v_); }
  // The events and counts read before the error, or nullptr (nothing could be read).
  const LogScan* partial() const { return partial_ ? &*partial_ : nullptr; }
  LogScan* partial() { return partial_ ? &*partial_ : nullptr; }

 private:
  std::variant<LogScan, LogError> v_;
  std::optional<LogScan> partial_;
};

struct ScanOptions {
  size_t buffer_size = size_t{1} << 20; // bytes read per chunk (tests use tiny ones)
  size_t max_line = size_t{64} << 10;   // a line is searched up to this many bytes; the rest
                                        // of a longer line is skipped ('\r' also ends a segment,
                                        // so tqdm redraws do not make long lines)
};

// path: a file, or "-" for standard input (called "<stdin>" in events and errors); plain or
// gzip text (log_source.h). default_rank: the rank of lines without a prefix; -1 = guess from
// the file name (rank_from_filename), and -1 when that finds nothing.
ScanResult scan_log(const std::string& path, int default_rank = -1);
ScanResult scan_log(const std::string& path, int default_rank, const ScanOptions& options);

// The rank a log file's name gives its unprefixed lines, in these patterns only (-1 for any
// other name; a number elsewhere in a name is no rank):
//   "rank3.log", "rank_3.txt", "train.rank-3.log", "RANK4.LOG"   the word rank, then the number
//   "r3.out", "job_r7.log"                                      r and the number, as a word
//   "worker-3.log"                                              the word worker, then the number
//   "job-123-3.out", "slurm-123-3.out", "123-3.out"             Slurm --output=...%j-%t: job id,
//                                                               '-', task id, at the name's end
//   ".../attempt_0/3/stderr.log" (stdout.log)                   torchrun --log-dir: the local
//                                                               rank's directory
// A trailing ".gz" is ignored. "slurm-123.out" (%j) and "slurm-123_4.out" (%A_%a: an array
// task) give no rank.
int rank_from_filename(std::string_view path);

// Classifies one line (no newline) as scan_log does, without file, line or wall_time year
// context (glog stamps get `year`). nullopt when it matches no family.
std::optional<LogEvent> classify_line(std::string_view line, int default_rank = -1, int year = 0);

// The torch version a line states ("torch 2.3.1", "pytorch 2.7.1+cu128", ...), or "".
std::string version_in_line(std::string_view line);

const char* family_name(Family);     // snake_case, e.g. "gai_error", "socket_timeout"

// "" or ">=2.5" / "<=2.4", guessed from message styles when torch_version is empty ("" when it
// is known, when there is no sign, or when the signs disagree). ">=2.5": timeouts printed in
// ms ("timed out after 600000ms", "timeout=...ms", "wait timeout after"), "TCP client failed
// to connect/validate", waitForInput, the 2.8+ "Failed to recv, got 0 bytes". "<=2.4":
// "Socket Timeout", client timeouts printed in s, "connect() timed out", store based barrier,
// "host not found".
std::string version_hint(const LogScan&);

}  // namespace rdzv::logs
