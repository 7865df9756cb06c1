// The family table (families.h) and, above it, the matchers and value finders that no list of
// words can say. Most rows match by words alone: says<>, says_all<>, says_any<> name them in
// place, so that the row reads as what the line says.
#include "families.h"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>

#include "line_text.h"

namespace rdzv::logs::detail {
namespace {

using sv = std::string_view;
constexpr size_t npos = sv::npos;

// A string literal as a template argument, so that a row names the words it matches in place.
template <size_t N>
struct Literal {
  char text[N]{};
  constexpr Literal(const char (&s)[N]) { std::copy_n(s, N, text); }  // NOLINT: implicit on purpose
  constexpr sv view() const { return {text, N - 1}; }
};

// The line holds `word`; every one of `words`; at least one of `words`.
template <Literal word>
bool says(sv s) {
  return contains(s, word.view());
}
template <Literal... words>
bool says_all(sv s) {
  return (contains(s, words.view()) && ...);
}
template <Literal... words>
bool says_any(sv s) {
  return (contains(s, words.view()) || ...);
}

// --- Matchers ---------------------------------------------------------------------------

// gloo's and NCCL's own connections between ranks (after the store): their refused, reset or
// closed connects are no store failure. Nor is a read or write on one of gloo's pairs (pair.cc)
// that found the connection reset or closed ("Read error [H]:P: Connection reset by peer",
// "Connection closed by peer [H]:P"): the rank at the other end of that pair went away.
bool transport_connect_failed(sv s) {
  if (says_all<"pair.cc", "connect ">(s)) return true;  // gloo::IoException
  if (says<"pair.cc">(s) && says_any<"Read error", "Write error", "closed by peer", "reset by peer">(s)) return true;
  if (says<"gloo::IoException">(s)) return true;
  // gloo of 2.x: a pair's connect retried and given up ("failed to connect, willRetry=1, ...
  // remote=[H]:P, error=SO_ERROR: Connection refused"), then "Gloo connectFullMesh failed with
  // [...pair.cc:152] timed out connecting: ..." (pair.cc above).
  if (says_all<"failed to connect, willRetry", "remote=">(s)) return true;
  // ProcessGroupGloo's words for any exception of gloo's full mesh connect: "Gloo
  // connectFullMesh failed with [...pair.cc:152] timed out connecting", "[...pair.h:311] Connect
  // timeout" (2.13's passive side), with the path or without it (a quote that elided it)
  if (says<"connectFullMesh failed">(s)) return true;
  if (says_all<"Proxy Call to rank", "failed">(s)) return true;  // NCCL proxy
  return says<"NCCL WARN">(s) &&
         says_any<"socketStartConnect", "Connect to ", "socketPollConnect", "socketProgress",
                  "Connection refused", "Connection reset", "Connection closed", "No route to host">(s);
}

// The NCCL watchdog's timeout, or (issue 29) the C++ backtrace of its exception without the
// message above it: c10's Error records the backtrace where it is made, so frame #0 is its
// constructor and frame #1 the function that raised it; WorkNCCL::checkTimeout raises only the
// collective's timeout.
bool watchdog_timed_out(sv s) {
  return says<"Watchdog caught collective operation timeout">(s) ||
         says_all<"frame #1: ", "WorkNCCL::checkTimeout(">(s);
}

bool store_barrier_timed_out(sv s) {
  return says<"store based barrier">(s) &&
         says_any<"Timed out initializing", "Waiting in store based barrier">(s);
}

// The full message, or its DistStoreError title cut short before "waiting for clients".
bool clients_join_timed_out(sv s) {
  // "workers" is the same wait as worded by the change that added the count (pytorch#111805).
  return says_all<"Timed out after", "waiting for clients">(s) ||
         says_all<"Timed out after", "waiting for workers", " workers joined">(s) ||
         says_all<"DistStoreError", " clients joined">(s);
}

bool wait_for_input_timed_out(sv s) {
  return says<"waitForInput">(s) &&
         says_any<"timed out after", "likely a timeout", "returned 0">(s);
}

// "Address already in use" beside "failed to listen" is the libuv listen failure's (ListenFailed).
bool bind_failed(sv s) {
  return says<"failed to bind">(s) ||
         (says<"Address already in use">(s) && !says<"failed to listen">(s));
}

bool is_ident(char c) { return is_alnum(c) || c == '_' || c == '.'; }

// Past what precedes a log message: spaces, glog/ISO stamps, "[...]" groups, pytest's "E   ",
// Ray's "(Actor pid=N, ip=...)", "INFO:"-style levels are kept (they are part of the line).
sv message_start(sv s) {
  for (int round = 0; round < 6; ++round) {
    size_t p = 0;
    while (p < s.size() && (s[p] == ' ' || s[p] == '\t')) ++p;
    s.remove_prefix(p);
    if (s.size() >= 3 && s[0] == 'E' && s[1] == ' ' && s[2] == ' ') {  // pytest "E       ..."
      s.remove_prefix(1);
      continue;
    }
    if (!s.empty() && (s[0] == '[' || s[0] == '(')) {
      const size_t close = s.find(s[0] == '[' ? ']' : ')');
      if (close != npos && close < 200) {
        s.remove_prefix(close + 1);
        if (!s.empty() && s[0] == ':') s.remove_prefix(1);
        continue;
      }
    }
    // ISO date "2022-05-10 05:38:33,123" / "2022-05-10T05:38:33Z" and what follows up to " - "
    // or " | "
    if (s.size() >= 19 && is_digit(s[0]) && s[4] == '-' && s[7] == '-' && s[13] == ':') {
      size_t q = 19;
      while (q < s.size() && s[q] != ' ') ++q;
      s.remove_prefix(q);
      continue;
    }
    break;
  }
  return s;
}

// A Python exception line, a traceback header or a C++ terminate. "frame #0:
// c10::Error::Error(...)" and "Exception raised from" lines are not.
bool is_exception_line(sv s) {
  const sv m = message_start(s);
  if (m.starts_with("Traceback (most recent call last)") ||
      m.starts_with("terminate called after throwing"))
    return true;
  size_t q = 0;
  while (q < m.size() && is_ident(m[q])) ++q;
  if (q == 0) return false;
  const sv word = m.substr(0, q);
  if (!(word.ends_with("Error") || word.ends_with("Exception"))) return false;
  return q == m.size() || m[q] == ':' ||
         (m[q] == ' ' && m.substr(q).find_first_not_of(' ') == npos);
}

// THC, the CUDA layer of PyTorch up to 1.10, prints its failed check ("THCudaCheck FAIL file=...
// error=N : <what>") and then raises it as a RuntimeError, which a posted excerpt often leaves out.
bool error_line(sv s) { return is_exception_line(s) || says<"NCCL WARN">(s) || says<"THCudaCheck FAIL">(s); }

struct LaunchSettingLine {
  sv name, value;
};

// torchrun's launch configuration, one setting a line: the name first in the message (after
// a glog "I1202 08:07:31.995000 28075 torch/distributed/launcher/api.py:254]" prefix, or
// none on 1.x), then spaces, ": " and the value. Only the settings that must agree across nodes.
// torchelastic's "log directory set to: BASE/torchelastic_XXXX/RUNID_YYYY" (INFO; 1.x prints
// it by default): the agent's log directory is made with the run id and '_' as its prefix, so
// the last path component up to its last '_' is the run id ("none" when --rdzv-id was not given).
std::optional<LaunchSettingLine> log_dir_run_id_in(sv body) {
  const size_t key = body.find("log directory set to: ");
  if (key == npos) return std::nullopt;
  sv path = body.substr(key + 22);
  while (!path.empty() && (path.back() == ' ' || path.back() == '\r' || path.back() == '/')) path.remove_suffix(1);
  const size_t slash = path.rfind('/');
  const sv last = slash == npos ? path : path.substr(slash + 1);
  const size_t underscore = last.rfind('_');
  if (underscore == npos || underscore == 0 || last.find(' ') != npos) return std::nullopt;
  return LaunchSettingLine{"log_dir_run_id", last.substr(0, underscore)};
}

std::optional<LaunchSettingLine> launch_setting_in(sv body) {
  if (auto d = log_dir_run_id_in(body)) return d;
  static constexpr sv kNames[] = {"run_id",    "rdzv_endpoint", "rdzv_backend",
                                  "min_nodes", "max_nodes",     "nproc_per_node"};
  if (size_t close = body.find("] "); close != npos && contains(body.substr(0, close), "api.py:"))
    body.remove_prefix(close + 1);
  size_t p = 0;
  while (p < body.size() && (body[p] == ' ' || body[p] == '\t')) ++p;
  body.remove_prefix(p);
  for (sv name : kNames) {
    if (!body.starts_with(name)) continue;
    sv rest = body.substr(name.size());
    size_t spaces = 0;
    while (spaces < rest.size() && rest[spaces] == ' ') ++spaces;
    if (spaces == 0 || !rest.substr(spaces).starts_with(": ")) return std::nullopt;
    sv value = rest.substr(spaces + 2);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\r')) value.remove_suffix(1);
    if (value.empty() || value.find(' ') != npos) return std::nullopt;
    return LaunchSettingLine{name, value};
  }
  return std::nullopt;
}

bool states_launch_setting(sv s) { return launch_setting_in(s).has_value(); }

// One line of torchrun's failure summary (the ChildFailedError block): its header, or a field
// of one failure, "  NAME<spaces>: VALUE", with the forms each field's value takes there.
std::optional<LaunchSettingLine> failure_summary_field_in(sv body) {
  const sv m = message_start(body);
  if (m.starts_with("Root Cause (first observed failure)")) return LaunchSettingLine{"root_cause", ""};
  // The agent's own error line before the summary: "failed (exitcode: 1) local_rank: 2 (pid:
  // 23296) of binary: ...", behind a glog prefix on 2.x, "ERROR:torch...api:" on 1.x.
  // A line cut short after "local_rank" (a paste that lost the rest) is still that line.
  if (const size_t p = body.find("failed (exitcode: "); p != npos && contains(body.substr(p), ") local_rank"))
    return LaunchSettingLine{"first_failure", body.substr(p + 8)};
  static constexpr sv kNames[] = {"rank", "exitcode", "error_file", "traceback", "time"};
  for (sv name : kNames) {
    if (!m.starts_with(name)) continue;
    sv rest = m.substr(name.size());
    size_t spaces = 0;
    while (spaces < rest.size() && rest[spaces] == ' ') ++spaces;
    if (!rest.substr(spaces).starts_with(":")) return std::nullopt;
    sv value = rest.substr(spaces + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\r')) value.remove_suffix(1);
    // The forms torchrun gives them: "2 (local_rank: 2)", "1 (pid: 23296)", and names
    // padded to one column ("traceback :", not a word that merely starts a sentence).
    if (name == "rank" && !(contains(value, "(local_rank: ") && !value.empty() && is_digit(value[0])))
      return std::nullopt;
    if (name == "exitcode" && !(contains(value, "(pid: ") && !value.empty() && (is_digit(value[0]) || value[0] == '-')))
      return std::nullopt;
    if (name == "traceback" && spaces == 0) return std::nullopt;
    // "time      : 2024-03-01_12:00:05": when torchrun saw the failure, in whole seconds.
    if (name == "time" && !(value.size() >= 19 && is_digit(value[0]) && value[10] == '_')) return std::nullopt;
    return LaunchSettingLine{name, value};
  }
  return std::nullopt;
}

bool states_failure_summary_field(sv s) { return failure_summary_field_in(s).has_value(); }

// --- Issue 29: ends of processes, foreign store peers, the launcher's environment -----------

// The shell's report of a child it reaped after SIGKILL: bash prints the job's pid (or its job
// spec "[1]+") before "Killed" and the command after it ("line 8: 11641 Killed   python
// train.py"), and an interactive shell whose foreground child was killed a bare "Killed". The
// kernel's OOM killer writes "Out of memory: Killed process 1234 (python)" (its log, dmesg)
// and "oom-kill:constraint=..." lines.
bool killed_after_pid_or_job(sv m);

bool shell_reported_killed(sv s) {
  if (says_any<"Killed process", "oom-kill:", "invoked oom-killer">(s)) return true;
  // An interactive shell's job spec "[1]+" looks like a log prefix: the line as it is, too.
  return killed_after_pid_or_job(message_start(s)) || killed_after_pid_or_job(s);
}

// "Killed" after a pid or a job spec and before the command's column (two spaces or more), or
// alone on its line.
bool killed_after_pid_or_job(sv m) {
  for (size_t p = m.find("Killed"); p != npos; p = m.find("Killed", p + 1)) {
    const sv after = m.substr(p + 6);
    if (!after.empty() && after[0] != ' ' && after[0] != '\t' && after[0] != '\r') continue;
    sv before = m.substr(0, p);
    while (!before.empty() && (before.back() == ' ' || before.back() == '\t')) before.remove_suffix(1);
    if (before.empty()) return after.find_first_not_of(" \t\r") == npos || after.starts_with("  ");
    if (is_digit(before.back()) || before.ends_with("]+") || before.ends_with("]-") || before.ends_with("]"))
      return after.empty() || after.starts_with("  ") || after.starts_with("\t") ||
             after.find_first_not_of(" \t\r") == npos;
  }
  return false;
}

// torch.multiprocessing's spawn, after one of its processes ended: "process 1 terminated with
// signal SIGKILL", "process 1 terminated with exit code 1", "-- Process 2 terminated with the
// following error:" (its traceback follows).
bool spawn_reported_end(sv s) {
  for (sv key : {sv("rocess "), sv("ROCESS ")}) {
    for (size_t p = s.find(key); p != npos; p = s.find(key, p + 1)) {
      size_t after = 0;
      if (!number_at(s, p + key.size(), &after)) continue;
      const sv rest = s.substr(after);
      if (rest.starts_with(" terminated with signal ") || rest.starts_with(" terminated with exit code ") ||
          rest.starts_with(" terminated with the following error"))
        return true;
    }
  }
  return false;
}

// The old launcher (torch.distributed.launch before torchrun) waits for each worker and raises
// CalledProcessError for the first that failed: "Command '[..., '--local_rank=1']' died with
// <Signals.SIGKILL: 9>." or "... returned non-zero exit status 1.".
bool launcher_reported_end(sv s) {
  return says<"CalledProcessError">(s) && says_any<"died with <Signals.", "returned non-zero exit status">(s);
}

// DeepSpeed's launcher (deepspeed.launcher.launch) polls its workers and, for one that ended
// with a non-zero status, logs the command and "exits with return code = -9" (a negative
// status is the signal that ended it) before it kills the others ("Killing subprocess N").
bool deepspeed_launcher_reported_end(sv s) {
  const auto code = number_after(s, "exits with return code = ");
  return code && *code != 0;
}

// DeepSpeed's launcher kills every worker it started ("[launch.py:178:sigkill_handler] Killing
// subprocess 97277", one line per worker) once one of them ended with a non-zero status, or once
// it was itself stopped (SIGINT, SIGTERM); its "exits with return code = N" line follows.
bool deepspeed_launcher_stopping(sv s) { return says_all<"sigkill_handler", "Killing subprocess ">(s); }

// Ray's memory monitor kills a worker (SIGKILL) when its node's memory use passes the
// monitor's threshold; the task's caller then raises "ray.exceptions.OutOfMemoryError: Task was
// killed due to the node running low on memory."
bool ray_memory_monitor_killed(sv s) { return says<"Task was killed due to the node running low on memory">(s); }

// UCX's fatal-signal handler (loaded with NCCL's and MPI's UCX transports, and in many CUDA
// containers) prints "[host:pid:tid:N] Caught signal 7 (Bus error: nonexistent physical address)"
// and a backtrace, then lets the signal end the process: the process that printed it died of
// that signal. The number, or nullopt.
std::optional<int64_t> crash_handler_signal(sv s) {
  const auto n = number_after(s, "Caught signal ");
  if (!n || *n <= 0 || *n >= 65) return std::nullopt;
  const size_t p = s.find("Caught signal ");
  size_t after = 0;
  if (!number_at(s, p + 14, &after) || after + 1 >= s.size() || s.substr(after, 2) != " (") return std::nullopt;
  return n;
}

bool process_died(sv s) {
  return shell_reported_killed(s) || spawn_reported_end(s) || launcher_reported_end(s) ||
         deepspeed_launcher_reported_end(s) || deepspeed_launcher_stopping(s) || ray_memory_monitor_killed(s) ||
         crash_handler_signal(s);
}

bool foreign_store_peer(sv s) {
  return says_any<"Ping failed, invalid value returned", "VALIDATE query is detected">(s);
}

// The variables a launcher (torchrun, torch.distributed.launch, a scheduler's wrapper) sets for
// every worker and env:// reads.
constexpr sv kLauncherVariables[] = {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                                     "MASTER_PORT", "GROUP_RANK", "NODE_RANK"};

// "KeyError: 'RANK'": the variable a script read from os.environ and did not find.
std::optional<sv> key_error_variable(sv s) {
  const size_t k = s.find("KeyError: ");
  if (k == npos) return std::nullopt;
  sv q = s.substr(k + 10);
  if (q.size() < 3 || (q[0] != '\'' && q[0] != '"')) return std::nullopt;
  const size_t close = q.find(q[0], 1);
  if (close == npos) return std::nullopt;
  const sv name = q.substr(1, close - 1);
  for (sv v : kLauncherVariables)
    if (name == v) return name;
  return std::nullopt;
}

// "environment variable MASTER_ADDR expected, but not set" (env:// rendezvous; torchelastic
// says "Environment variable ..."): the variable's name.
std::optional<sv> unset_variable(sv s) {
  const size_t e = s.find(" expected, but not set");
  if (e == npos) return std::nullopt;
  const size_t k = s.rfind("nvironment variable ", e);
  if (k == npos) return std::nullopt;
  const size_t from = k + 20;
  if (from >= e) return std::nullopt;
  return s.substr(from, e - from);
}

bool launcher_env_missing(sv s) { return unset_variable(s).has_value() || key_error_variable(s).has_value(); }

bool rank_out_of_range(sv s) {
  return says_any<"Invalid rank requested">(s) || says_all<"enforce fail", "rank < size">(s);
}

// --- Value finders ----------------------------------------------------------------------

// "N/M" right after the "seconds waiting for clients. " at body[p]: the clients joined of
// expected.
void find_clients_waited_for(sv body, size_t p, LogEvent& ev) {
  size_t after = 0;
  auto n = number_at(body, p + 29, &after);
  if (n && after < body.size() && body[after] == '/') {
    auto m = number_at(body, after + 1);
    ev.joined = static_cast<int>(*n);
    if (m) ev.expected = static_cast<int>(*m);
  }
}

// "16/32 clients joined" ending at body[q], without the "waiting for clients" before it.
void find_clients_joined_at(sv body, size_t q, LogEvent& ev) {
  size_t b = q;
  while (b > 0 && (is_digit(body[b - 1]) || body[b - 1] == '/')) --b;
  size_t after = 0;
  auto n = number_at(body, b, &after);
  if (n && after < q && body[after] == '/') {
    size_t end = 0;
    auto m = number_at(body, after + 1, &end);
    if (m && end == q) {
      ev.joined = static_cast<int>(*n);
      ev.expected = static_cast<int>(*m);
    }
  }
}

void find_clients_joined(sv body, LogEvent& ev) {
  if (size_t p = body.find("seconds waiting for clients. "); p != npos)
    find_clients_waited_for(body, p, ev);
  else if (size_t q = body.find(" clients joined"); q != npos)
    find_clients_joined_at(body, q, ev);
  else if (size_t w = body.find(" workers joined"); w != npos)
    find_clients_joined_at(body, w, ev);
}

// The rank a store wait was for: the number ending the first key in "keys: /.../N".
void find_awaited_rank(sv body, LogEvent& ev) {
  size_t p = body.find("keys: /");
  if (p == npos) return;
  size_t end = body.find_first_of(", \t", p + 7);
  sv key = body.substr(p + 6, end == npos ? npos : end - (p + 6));
  if (size_t slash = key.rfind('/'); slash != npos && slash + 1 < key.size()) {
    size_t after = 0;
    auto r = number_at(key, slash + 1, &after);
    if (r && *r >= 0 && after == key.size()) ev.awaited_rank = static_cast<int>(*r);
  }
}

// The store based barrier's "world_size=W, worker_count=C": C of W workers arrived.
void find_barrier_counts(sv body, LogEvent& ev) {
  if (auto w = number_after(body, "world_size=")) ev.expected = static_cast<int>(*w);
  if (auto c = number_after(body, "worker_count=")) ev.joined = static_cast<int>(*c);
}

// A lookup's own error code "err=-3" where the line has no "gai error: N" (read for every
// family, classify.cpp).
void find_lookup_error_code(sv body, LogEvent& ev) {
  if (ev.gai_code) return;
  if (auto e = number_after(body, "err=")) ev.gai_code = static_cast<int>(*e);
}

// c10d 2.x's connect/validate line ends with the error that ended the try; when the store host's
// lookup failed, that is getaddrinfo's own words for its code (glibc's gai_strerror): the code.
void find_lookup_failure_words(sv body, LogEvent& ev) {
  if (ev.gai_code) return;
  if (contains(body, "Name or service not known")) ev.gai_code = -2;                  // EAI_NONAME
  else if (contains(body, "Temporary failure in name resolution")) ev.gai_code = -3;  // EAI_AGAIN
  else if (contains(body, "No address associated with hostname")) ev.gai_code = -5;   // EAI_NODATA
}

void find_launch_setting(sv body, LogEvent& ev) {
  if (auto s = launch_setting_in(body)) {
    ev.setting = std::string(s->name);
    ev.setting_value = std::string(s->value.substr(0, 200));
  }
}

void find_failure_summary_field(sv body, LogEvent& ev) {
  if (auto f = failure_summary_field_in(body)) {
    ev.setting = std::string(f->name);
    ev.setting_value = std::string(f->value.substr(0, 300));
  }
}

// ProcessDied: how it ended (setting "signal" or "exit", setting_value the signal's name or the
// code), the spawn index or the old launcher's --local_rank, and who said so (reason).
void find_process_end(sv body, LogEvent& ev) {
  if (shell_reported_killed(body)) {
    ev.setting = "signal";
    ev.setting_value = "SIGKILL";
    ev.reason = says_any<"Killed process", "oom-kill", "oom-killer">(body) ? "the kernel's OOM killer"
                                                                              : "the shell's job report";
    return;
  }
  if (ray_memory_monitor_killed(body)) {
    ev.setting = "signal";
    ev.setting_value = "SIGKILL";
    ev.reason = "Ray's memory monitor (the node ran low on memory)";
    return;
  }
  if (const auto sig = crash_handler_signal(body)) {
    ev.setting = "exit";  // a negative status: the model names its signal (add_death)
    ev.setting_value = std::to_string(-*sig);
    ev.reason = "its crash handler (UCX's)";
    return;
  }
  if (deepspeed_launcher_stopping(body)) {
    ev.setting = "exit";
    ev.setting_value = "nonzero";  // the status is on the launcher's next line, when it is there
    ev.reason = "DeepSpeed's launcher (killing its workers)";
    return;
  }
  ev.reason = spawn_reported_end(body)      ? "torch.multiprocessing's spawn"
              : launcher_reported_end(body) ? "the launcher's CalledProcessError"
                                            : "DeepSpeed's launcher";
  // A negative status (DeepSpeed's) stays a number here: the model names its signal.
  if (auto ds = number_after(body, "exits with return code = "); ds && !launcher_reported_end(body)) {
    ev.setting = "exit";
    ev.setting_value = std::to_string(*ds);
  } else if (size_t p = body.find("with signal "); p != npos) {
    const size_t from = p + 12;
    size_t end = from;
    while (end < body.size() && (is_alnum(body[end]) || body[end] == '_')) ++end;
    ev.setting = "signal";
    ev.setting_value = std::string(body.substr(from, end - from));
  } else if (size_t q = body.find("<Signals."); q != npos) {
    const size_t from = q + 9;
    const size_t end = body.find(':', from);
    ev.setting = "signal";
    ev.setting_value = std::string(body.substr(from, end == npos ? npos : end - from));
  } else if (auto code = number_after(body, "exit code ")) {
    ev.setting = "exit";
    ev.setting_value = std::to_string(*code);
  } else if (auto status = number_after(body, "exit status ")) {
    ev.setting = "exit";
    ev.setting_value = std::to_string(*status);
  } else {
    ev.setting = "exit";  // "terminated with the following error": an exception, traceback below
    ev.setting_value = "exception";
  }
  for (sv key : {sv("rocess "), sv("ROCESS ")})
    for (size_t p = body.find(key); p != npos && !ev.died_process; p = body.find(key, p + 1)) {
      size_t after = 0;
      auto n = number_at(body, p + key.size(), &after);
      if (n && *n >= 0 && body.substr(after).starts_with(" terminated with")) ev.died_process = static_cast<int>(*n);
    }
  for (sv key : {sv("--local_rank="), sv("--local-rank=")})
    if (auto n = number_after(body, key); n && !ev.died_process && *n >= 0) ev.died_process = static_cast<int>(*n);
}

// ForeignStorePeer's ping: "Expected: 1769, Got: 1347703880". The value is the first four
// bytes the other end sent, read as a number in the host's byte order (little-endian on the
// hosts PyTorch runs on). Four printable bytes ("HTTP", "SSH-") are a text protocol's answer:
// setting "reply", value "text"; anything else "binary" (a store of another protocol version).
void find_ping_reply(sv body, LogEvent& ev) {
  auto got = number_after(body, "Got: ");
  if (!got || *got < 0 || *got > 0xffffffffLL) return;
  bool text = true;
  for (int b = 0; b < 4; ++b) {
    const auto c = static_cast<unsigned char>((*got >> (8 * b)) & 0xff);
    text = text && c >= 0x20 && c < 0x7f;
  }
  ev.setting = "reply";
  ev.setting_value = text ? "text" : "binary";
}

// monitored_barrier's lines (MonitoredBarrierTimeout): rank 0 naming the one rank that did not
// come ("Rank 2 failed to pass"; "Ranks 1, 2 failed" names several: no single one), or a rank
// that came and waited for rank 0's answer ("Rank 3 successfully reached monitoredBarrier, ...
// from rank 0": rank 0 awaited; the line's own rank is read with the others', rank_in_text).
void find_barrier_ranks(sv body, LogEvent& ev) {
  if (body.find(" successfully reached monitoredBarrier") != npos) {
    ev.setting = "reached";
    if (auto v = number_after(body, "send/recv from rank ")) ev.awaited_rank = static_cast<int>(*v);
    return;
  }
  if (size_t p = body.find(" failed to pass monitoredBarrier"); p != npos) {
    size_t r = body.rfind("Rank ", p);
    size_t after = 0;
    if (r == npos) return;
    if (auto v = number_at(body, r + 5, &after); v && after == p) ev.awaited_rank = static_cast<int>(*v);
  }
}

// gloo's store wait: "for key(s): 0" (Horovod's HTTP store) or "for key(s): [0]" (gloo's own):
// a key that is a number alone is a rank's (gloo's full mesh).
void find_awaited_key(sv body, LogEvent& ev) {
  size_t p = body.find("for key(s): ");
  if (p == npos) return;
  p += 12;
  if (p < body.size() && body[p] == '[') ++p;
  size_t after = 0;
  auto v = number_at(body, p, &after);
  if (v && *v >= 0 && (after == body.size() || !is_alnum(body[after]))) ev.awaited_rank = static_cast<int>(*v);
}

// A frame of distributed_c10d.py in a Python traceback, or of TCPStore's constructor in a C++
// backtrace (StackFrame).
constexpr std::string_view kStoreCtorFrames[] = {"c10d::TCPStore::TCPStore(", "c10d::TCPStore::waitForWorkers(",
                                                 "c10d::TCPStore::ping(", "c10d::TCPStore::validate("};

// Issue 29: a Python frame of torchrun's own code (its entry point, torch/distributed/run.py,
// the elastic agent and rendezvous): the traceback is an agent's, whose store is the rendezvous
// endpoint's, not a worker's init_process_group store.
bool is_launcher_frame(sv s) {
  return says_all<"File \"", "\", line ">(s) &&
         says_any<"distributed/elastic/", "bin/torchrun\"", "distributed/run.py\"">(s);
}

// Issue 29: the two lines of a traceback through the entry of transformers' (or accelerate's)
// main_process_first: the caller's source line, then contextlib's __enter__ frame below it.
bool is_main_process_first_line(sv s) { return says_all<"with ", "main_process_first(">(s); }
bool is_context_enter_frame(sv s) { return says_all<"contextlib.py\", line ", ", in __enter__">(s); }

bool is_stack_frame(sv s) {
  if (says_all<"distributed_c10d.py\", line ", ", in ">(s)) return true;
  if (is_launcher_frame(s) || is_main_process_first_line(s) || is_context_enter_frame(s)) return true;
  return std::any_of(std::begin(kStoreCtorFrames), std::end(kStoreCtorFrames),
                     [&](sv f) { return contains(s, f); });
}

void find_frame_function(sv body, LogEvent& ev) {
  if (size_t p = body.find("distributed_c10d.py\", line "); p != npos) {
    size_t in = body.find(", in ", p);
    if (in == npos) return;
    size_t b = in + 5, e = b;
    while (e < body.size() && (is_alnum(body[e]) || body[e] == '_')) ++e;
    if (e == b) return;
    ev.setting = "c10d_call";
    ev.setting_value = std::string(body.substr(b, e - b));
    return;
  }
  if (is_launcher_frame(body)) {
    ev.setting = "launcher";
    return;
  }
  if (is_main_process_first_line(body) || is_context_enter_frame(body)) {
    ev.setting = is_context_enter_frame(body) ? "context_enter" : "main_process_first";
    return;
  }
  for (sv f : kStoreCtorFrames)
    if (size_t p = body.find(f); p != npos) {
      ev.setting = "store_ctor";
      ev.setting_value = std::string(f.substr(6, f.size() - 7));  // "TCPStore::ping"
      return;
    }
}

// Lightning's announcement of a process entering init_process_group, or rank 0's that it
// returned (InitAnnounced).
bool announces_init(sv s) {
  return says_all<"GLOBAL_RANK: ", ", MEMBER: ">(s) || says_all<"processes registered. Starting ", " processes">(s);
}

// "GLOBAL_RANK: 1, MEMBER: 2/8": rank 1 of 8 entering; "Starting with 8 processes": 8 registered.
void find_init_announcement(sv body, LogEvent& ev) {
  if (auto r = number_after(body, "GLOBAL_RANK: ")) {
    const size_t member = body.find(", MEMBER: ");
    const size_t slash = member == npos ? npos : body.find('/', member);
    if (slash == npos) return;
    ev.rank = static_cast<int>(*r);
    if (auto n = number_after(body.substr(slash), "/")) ev.expected = static_cast<int>(*n);
    ev.setting = "entering";
    return;
  }
  const size_t start = body.find("processes registered. Starting ");
  const size_t end = start == npos ? npos : body.find(" processes", start + 31);
  if (end == npos) return;
  size_t b = end;
  while (b > start && is_digit(body[b - 1])) --b;
  if (b == end) return;
  if (auto n = number_at(body, b)) ev.expected = static_cast<int>(*n);
  ev.setting = "registered";
}

void find_missing_variable(sv body, LogEvent& ev) {
  auto v = unset_variable(body);
  if (!v) v = key_error_variable(body);
  if (!v) return;
  ev.setting = "missing_env";
  ev.setting_value = std::string(v->substr(0, 64));
}

// --- The table --------------------------------------------------------------------------

constexpr FamilyRow kFamilies[] = {
    // First: a line of it is nothing else (its "Error" is the barrier's, not a failure).
    {.family = Family::AgentTeardown,
     .name = "agent_teardown",
     .scope = Scope::Alone,
     .anchors = {"successfully finished", "SUCCEEDED)", "exit barrier"},
     // Not "Local worker group finished (FAILED)", which older agents print before their exit
     // barrier too: the workers failed there, and that is no teardown of a success.
     .matches = says_any<"worker group successfully finished", "worker group finished (SUCCEEDED)",
                         "worker group finished (WorkerState.SUCCEEDED)", "Error waiting on exit barrier">,
     .versions = "torchelastic (1.10 on): the first two at INFO, the barrier's error at ERROR",
     .example = "E1203 02:46:20.982000 10114 torch/distributed/elastic/agent/server/api.py:1008] Error "
                "waiting on exit barrier. Elapsed: 0.028573036193847656 seconds"},
    {.family = Family::NcclNoSocketInterface,
     .name = "nccl_no_socket_interface",
     .scope = Scope::Alone,
     .anchors = {"interface found"},
     .matches = says_all<"interface found", "Bootstrap">,
     .versions = "NCCL, any torch",
     .example = "Bootstrap : no socket interface found"},  // MambaTree#14
    {.family = Family::TransportError,
     .name = "transport_error",
     .scope = Scope::Alone,
     .anchors = {"pair.cc", "Exception", "Proxy Call", "NCCL WARN", "willRetry", "FullMesh"},
     .matches = transport_connect_failed,
     .versions = "all (gloo, NCCL)",
     // pytorch#15592
     .example = "  what():  [/opt/conda/conda-bld/pytorch_1544084119927/work/third_party/gloo/"
                "gloo/transport/tcp/pair.cc:724] connect [127.0.1.1]:3210: Connection refused"},
    // The prefilter hashes an anchor's first four bytes and compares a hit with every anchor:
    // the rows of issue 29 start theirs where ordinary output rarely does ("< size", not "rank
    // < size"; ", but not set"), and reuse the anchors their lines already hold (an exception's
    // "Error", NCCL's "NCCL WARN", the connect/validate line's "failed to connect").
    {.family = Family::ForeignStorePeer,
     .name = "foreign_store_peer",
     .anchors = {"failed to connect", "Error", "VALIDATE query"},
     .matches = foreign_store_peer,
     .reason_after = {},
     .values = find_ping_reply,
     .era = Era::Since2_5,
     .versions = "2.x (the ping from about 2.5, the VALIDATE check of the legacy server from 2.0)",
     // 2.13, a program answering in text on the store port, run here
     .example = "[W1203 10:09:27.955431535 TCPStore.cpp:340] [c10d] TCP client failed to connect/validate to "
                "host 127.0.0.1:29661 - retrying (try=0, timeout=8000ms, delay=253ms): Ping failed, invalid "
                "value returned from server. Expected: 1769, Got: 1347703880"},
    {.family = Family::LauncherEnvMissing,
     .name = "launcher_env_missing",
     .anchors = {", but not set", "Error"},
     .matches = launcher_env_missing,
     .reason_after = {},
     .values = find_missing_variable,
     .versions = "all",
     .example = "ValueError: Error initializing torch.distributed using env:// rendezvous: environment "
                "variable MASTER_ADDR expected, but not set"},  // 2.13, run here without MASTER_ADDR
    {.family = Family::RankOutOfRange,
     .name = "rank_out_of_range",
     .anchors = {"< size", "NCCL WARN"},
     .matches = rank_out_of_range,
     .reason_after = {},
     .versions = "all (gloo's enforce; NCCL's own check)",
     // 2.13, RANK=2 with WORLD_SIZE=2, run here
     .example = "RuntimeError: [enforce fail at /__w/pytorch/pytorch/third_party/gloo/gloo/context.cc:23] "
                "rank < size. 2 vs 2"},
    {.family = Family::ProcessDied,
     .name = "process_died",
     .anchors = {"Kill", "oom-kill", "terminated with", "Error", "return code = ", "Caught signal "},
     .matches = process_died,
     .reason_after = {},
     .values = find_process_end,
     .versions = "any (the shell, the kernel, torch.multiprocessing, torch.distributed.launch, DeepSpeed's "
                 "launcher, Ray's memory monitor, UCX's crash handler)",
     // 2.13, torch.multiprocessing.spawn, one process SIGKILLed, run here
     .example = "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGKILL"},
    {.family = Family::WatchdogTimeout,
     .name = "watchdog_timeout",
     .anchors = {"Watchdog caught", "WorkNCCL::checkTimeout("},
     .matches = watchdog_timed_out,
     .versions = "1.10 on",
     .example = "[E ProcessGroupNCCL.cpp:567] [Rank 3] Watchdog caught collective operation "
                "timeout: WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=60000) ran for 67438 milliseconds "
                "before timing out."},
    {.family = Family::GlooCollectiveTimeout,
     .name = "gloo_collective_timeout",
     .anchors = {"Timed out"},
     .matches = says_all<"Timed out waiting", "operation to complete">,
     .versions = "all with gloo (seen on 1.13 and 2.13)",
     // 2.13, tests/e2e's rank stalled after init_process_group; 1.13 prints
     // "[./gloo/transport/tcp/unbound_buffer.cc:81]" instead of the build path
     .example = "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/"
                "unbound_buffer.cc:78] Timed out waiting 4000ms for recv operation to complete"},
    {.family = Family::MonitoredBarrierTimeout,
     .name = "monitored_barrier_timeout",
     .anchors = {"monitoredBarrier", "could finish the model loading"},
     .matches = says_any<"failed to pass monitoredBarrier", "successfully reached monitoredBarrier",
                         "could finish the model loading, but there are other ranks">,
     .reason_after = {},
     .values = find_barrier_ranks,
     .versions = "1.9 on (gloo's monitored_barrier); sglang's check after loading the model",
     .example = "[E ProcessGroupGloo.cpp:138] Rank 3 successfully reached monitoredBarrier, but "
                "received errors while waiting for send/recv from rank 0."},
    {.family = Family::GlooStoreWaitTimeout,
     .name = "gloo_store_wait_timeout",
     .anchors = {"Wait timeout"},
     .matches = says_all<"Wait timeout", "for key(s)">,
     .reason_after = {},
     .values = find_awaited_key,
     .versions = "any with gloo's own stores (Horovod's Gloo rendezvous)",
     .example = "  what():  [horovod/common/gloo/http_store.cc:57] Wait timeout after 30 seconds for "
                "key(s): 0. You may want to increase the timeout via HOROVOD_GLOO_TIMEOUT_SECONDS"},
    {.family = Family::NcclUniqueIdStoreError,
     .name = "nccl_unique_id_store_error",
     .anchors = {"ncclUniqueId"},
     .matches = says_all<"ncclUniqueId", "got error">,
     .reason_after = {"got error: "},
     .versions = "about 1.12 to 2.1",
     .example = "[3] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d "
                "key-value store by key '0', but store->get('0') got error: Socket Timeout"},
    {.family = Family::StoreBarrierTimeout,
     .name = "store_barrier_timeout",
     .anchors = {"store based barrier"},
     .matches = store_barrier_timed_out,
     .reason_after = {},
     .values = find_barrier_counts,
     .era = Era::UpTo2_4,
     .versions = "1.8 to 1.13",
     .example = "RuntimeError: Timed out initializing process group in store based barrier on "
                "rank: 1, for key: store_based_barrier_key:1 (world_size=4, worker_count=3, "
                "timeout=0:30:00)"},
    {.family = Family::ClientsJoinTimeout,
     .name = "clients_join_timeout",
     .anchors = {"Timed out", "Error"},
     .matches = clients_join_timed_out,
     .reason_after = {},
     .values = find_clients_joined,
     .versions = "about 2.2 on",
     .example = "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for "
                "clients. 1/3 clients joined."},
    {.family = Family::WaitForInputTimeout,
     .name = "wait_for_input_timeout",
     .anchors = {"waitForInput"},
     .matches = wait_for_input_timed_out,
     .era = Era::Since2_5,
     .versions = "about 2.5 on",
     .example = "[rank4]:[W1129 10:00:00.123456 123 socket.cpp:487] [c10d] waitForInput: socket "
                "SocketImpl(fd=12, addr=[node4]:41234, remote=[node0]:29500) "
                "timed out after 600000ms"},
    {.family = Family::WaitTimeout,
     .name = "wait_timeout",
     .anchors = {"wait timeout"},
     .matches = says<"wait timeout after">,
     .reason_after = {},
     .values = find_awaited_rank,
     .era = Era::Since2_5,
     .versions = "about 2.5 on",
     .example = "torch.distributed.DistStoreError: wait timeout after 600000ms, keys: "
                "/default_pg/0//cuda//0"},
    {.family = Family::ConnectValidate,
     .name = "connect_validate",
     .anchors = {"failed to connect"},
     .matches = says<"failed to connect/validate">,
     .reason_after = {"ms): ", "): "},
     .values = find_lookup_failure_words,
     .era = Era::Since2_5,
     .versions = "about 2.5 on",
     .example = "[W1129 10:00:00.123456 123 TCPStore.cpp:347] [c10d] TCP client failed to "
                "connect/validate to host node0:29500 - retrying (try=6, timeout=1800000ms, "
                "delay=5241ms): Connection reset by peer"},
    {.family = Family::SendRecvFailed,
     .name = "send_recv_failed",
     .anchors = {"failed on SocketImpl"},
     .matches = says<" failed on SocketImpl">,
     .reason_after = {"): "},
     .versions = "about 2.4 on",
     .example = "[rank5]:[W1129 10:00:00.123456 123 TCPStore.cpp:106] [c10d] sendBytes failed on "
                "SocketImpl(fd=81, addr=[node3]:50612, remote=[node0]:29500): Broken pipe"},
    {.family = Family::ClientConnectTimeout,
     .name = "client_connect_timeout",
     .anchors = {"timed out"},
     .matches = says_all<"socket has timed out after", "while trying to connect">,
     .era = Era::ByTimeoutUnit,
     .versions = "all; the timeout in s up to 2.4, in ms after",
     .example = "[E socket.cpp:793] [c10d] The client socket has timed out after 1800s while "
                "trying to connect to (127.0.0.1, 29500)."},
    {.family = Family::GaiError,
     .name = "gai_error",
     .anchors = {"gai error"},
     .matches = says<"gai error">,
     .versions = "1.13 to 2.9",
     .example = "[rank3]:[W1129 10:00:00.123456 123 socket.cpp:767] [c10d] The IPv6 network "
                "addresses of (node0, 29500) cannot be retrieved "
                "(gai error: -2 - Name or service not known)."},
    {.family = Family::HostNotFound,
     .name = "host_not_found",
     .anchors = {"host not found"},
     .matches = says<"host not found">,
     .values = find_lookup_error_code,
     .era = Era::UpTo2_4,
     .versions = "1.x (seen up to about 1.11)",
     .example = "ValueError: host not found: Name or service not known"},
    {.family = Family::RendezvousTimeout,
     .name = "rendezvous_timeout",
     .anchors = {"Rendezvous"},
     .matches = says<"RendezvousTimeoutError">,
     .versions = "torchelastic (seen on 2.13)",
     // 2.13, a node never joined
     .example = "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError"},
    {.family = Family::ReverseLookupFailed,
     .name = "reverse_lookup_failed",
     .anchors = {"hostname of the client socket"},
     .matches = says<"hostname of the client socket cannot be retrieved">,
     .values = find_lookup_error_code,
     .era = Era::Since2_5,
     .versions = "about 2.6 on",
     .example = "[W1201 10:06:20.880618784 socket.cpp:207] [c10d] The hostname of the client "
                "socket cannot be retrieved. err=-3"},
    {.family = Family::ServerTimedOutRetry,
     .name = "server_timed_out_retry",
     .anchors = {"timed out"},
     .matches = says<"has timed out, will retry">,
     .versions = "2.x",
     .example = "[W1129 10:00:00.123456 123 socket.cpp:933] [c10d] The server socket on "
                "[::ffff:10.0.0.2]:29500 has timed out, will retry."},
    {.family = Family::NotListeningYet,
     .name = "not_listening_yet",
     .anchors = {"not yet listening", "listening yet"},
     .matches = says_any<"is not yet listening", "is listening yet">,
     .versions = "all",
     .example = "[I socket.cpp:717] [c10d] No socket on (node0, 29500) "
                "is listening yet, will retry."},
    {.family = Family::BindFailed,
     .name = "bind_failed",
     .anchors = {"failed to bind", "Address already in use"},
     .matches = bind_failed,
     .versions = "all",
     .example = "[W socket.cpp:401] [c10d] The server socket has failed to bind to [::]:29500 "
                "(errno: 98 - Address already in use)."},
    {.family = Family::ListenFailed,
     .name = "listen_failed",
     .anchors = {"failed to listen"},
     .matches = says<"failed to listen on">,
     .versions = "all; the libuv form (code: -98, name: EADDRINUSE) from 2.4",
     .example = "[E socket.cpp:435] [c10d] The server socket has failed to listen on any local "
                "network address."},
    {.family = Family::ConnectFailed,
     .name = "connect_failed",
     .anchors = {"failed to connect"},
     .matches = says<"failed to connect to">,
     .versions = "all",
     .example = "[W socket.cpp:558] [c10d] The client socket has failed to connect to "
                "[::ffff:0.0.0.5]:40323 (errno: 110 - Connection timed out)."},
    {.family = Family::ConnectTimeoutLegacy,
     .name = "connect_timeout_legacy",
     .anchors = {"timed out"},
     .matches = says<"connect() timed out">,
     .era = Era::UpTo2_4,
     .versions = "about 1.5 to 1.10",
     .example = "RuntimeError: connect() timed out. Original timeout was 60000 ms."},
    {.family = Family::RendezvousClosed,
     .name = "rendezvous_closed",
     .anchors = {"Rendezvous", "failed to shutdown"},
     .matches = says_any<"RendezvousClosedError", "RendezvousConnectionError",
                         "failed to shutdown the rendezvous">,
     .versions = "torchelastic (1.10 on)",
     .example = "\"message\": \"RendezvousClosedError: \""},
    {.family = Family::RecvZero,
     .name = "recv_zero",
     .anchors = {"got 0 bytes"},
     .matches = says<"ailed to recv, got 0 bytes">,  // "failed", and 2.9's "Failed"
     .versions = "later 2.x (seen on 2.6 to 2.9)",
     .example = "[rank0]:[W1129 10:00:00.123456 123 ProcessGroupNCCL.cpp:1659] [PG ID 0 PG GUID "
                "0(default_pg) Rank 0] Failed to check the \"should dump\" flag on TCPStore, "
                "(maybe TCPStore server has shut down too early), with error: "
                "failed to recv, got 0 bytes"},
    {.family = Family::SocketTimeout,
     .name = "socket_timeout",
     .anchors = {"Socket Timeout"},
     .matches = says<"Socket Timeout">,
     .era = Era::UpTo2_4,
     .versions = "up to 2.4",
     .example = "RuntimeError: Socket Timeout"},
    {.family = Family::BrokenPipe,
     .name = "broken_pipe",
     .anchors = {"Broken pipe"},
     .matches = says<"Broken pipe">,
     .versions = "all",
     .example = "RuntimeError: Broken pipe"},
    {.family = Family::ConnectionReset,
     .name = "connection_reset",
     .anchors = {"Connection reset by peer"},
     .matches = says<"Connection reset by peer">,
     .versions = "all",
     .example = "torch.distributed.DistNetworkError: Connection reset by peer"},
    {.family = Family::ConnectionTimedOutErrno,
     .name = "connection_timed_out_errno",
     .anchors = {"timed out"},
     .matches = says<"Connection timed out">,
     .versions = "all",
     .example = "RuntimeError: Connection timed out"},
    {.family = Family::NoRouteToHost,
     .name = "no_route_to_host",
     .scope = Scope::Fallback,
     .anchors = {"No route to host"},
     .matches = says<"No route to host">,
     .versions = "all",
     .example = "RuntimeError: No route to host"},  // PyTorch-BigGraph#99
    {.family = Family::ErrorLine,
     .name = "error_line",
     .scope = Scope::Error,
     .anchors = {"Error", "Exception", "Traceback", "terminate called", "NCCL WARN", "THCudaCheck FAIL"},
     .matches = error_line,
     .versions = "all",
     // MambaTree#14
     .example = "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/"
                "ProcessGroupNCCL.cpp:1201, internal error, NCCL version 2.14.3"},
    {.family = Family::LaunchSetting,
     .name = "launch_setting",
     .scope = Scope::Setting,
     .anchors = {"run_id", "rdzv_", "_node", "directory set to"},
     .matches = states_launch_setting,
     .values = find_launch_setting,
     .versions = "torchrun with LOGLEVEL=INFO: bare on 1.x, after a glog prefix on 2.x",
     .example = "I1202 08:07:31.995000 28075 torch/distributed/launcher/api.py:254]"
                "   run_id                   : info1"},
    {.family = Family::WorkerGroupRestart,
     .name = "worker_group_restart",
     .scope = Scope::Setting,
     .anchors = {"will restart worker group"},
     .matches = says<"will restart worker group">,
     .versions = "torchelastic (1.9 on), at INFO; seen on 1.10 and 2.x",
     // open-mmlab/mmdetection#6779
     .example = "INFO:torch.distributed.elastic.agent.server.api:[default] Worker group FAILED. 2/3 attempts "
                "left; will restart worker group"},
    {.family = Family::WorkerFailure,
     .name = "worker_failure",
     .scope = Scope::Setting,
     .anchors = {"Root Cause", "exitcode", "error_file", "traceback :", "local_rank:", "time      :"},
     .matches = states_failure_summary_field,
     .values = find_failure_summary_field,
     .versions = "torchrun (torchelastic), 1.10 on; seen on 2.13",
     .example = "  exitcode  : 1 (pid: 23296)"},
    {.family = Family::StackFrame,
     .name = "stack_frame",
     .scope = Scope::Setting,
     // "TCPStore::" for the constructor's frames (TCPStore(, waitForWorkers, ping, validate).
     .anchors = {"distributed_c10d.py", "TCPStore::", "run\", line", "distributed/elastic/", "main_process_first(",
                 "in __enter__"},
     .matches = is_stack_frame,
     .reason_after = {},
     .values = find_frame_function,
     .versions = "all (Python tracebacks; c10d's C++ backtraces of 2.x)",
     // 2.13, tests/e2e's rank stalled after init_process_group, its traceback
     .example = "  File \"/work/main/.venv/torch-2.13.0/lib/python3.11/site-packages/torch/distributed/"
                "distributed_c10d.py\", line 3252, in all_reduce"},
    {.family = Family::InitAnnounced,
     .name = "init_announced",
     .scope = Scope::Setting,
     .anchors = {"GLOBAL_RANK", "processes registered"},
     .matches = announces_init,
     .reason_after = {},
     .values = find_init_announcement,
     .versions = "any (PyTorch Lightning's DDP strategies)",
     .example = "initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/8"},  // Lightning-AI#8707
    {.family = Family::GroupLeftAtExit,
     .name = "group_left_at_exit",
     .scope = Scope::Setting,
     .anchors = {"NOT been destroyed"},
     .matches = says_all<"process group has NOT been destroyed", "destruct ProcessGroup">,
     .reason_after = {},
     .versions = "2.4 and later (ProcessGroupNCCL's destructor)",
     // dmlcloud#61
     .example = "[rank0]:[W227 10:54:51.986111855 ProcessGroupNCCL.cpp:1374] Warning: WARNING: process group has NOT "
                "been destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should "
                "call destroy_process_group to ensure that any pending NCCL operations have finished in this process. "
                "In rare cases this process can exit before this point and block the progress of another member of "
                "the process group. This constraint has always been present,  but this warning has only been added "
                "since PyTorch 2.4 (function operator())"},
    {.family = Family::GlooLoopbackFallback,
     .name = "gloo_loopback_fallback",
     .scope = Scope::Setting,
     .anchors = {"GLOO_SOCKET_IFNAME"},
     .matches = says_all<"Unable to resolve hostname", "loopback address as fallback">,
     .reason_after = {},
     .versions = "2.x (ProcessGroupGloo's default device)",
     // 2.13, run here: two network namespaces whose host name resolves to nothing
     .example = "[W1207 23:08:57.442164623 ProcessGroupGloo.cpp:524] Warning: Unable to resolve hostname to a (local) "
                "address. Using the loopback address as fallback. Manually set the network interface to bind to with "
                "GLOO_SOCKET_IFNAME. (function operator())"},
    {.family = Family::AddressFamilyUnsupported,
     .name = "address_family_unsupported",
     .scope = Scope::Setting,
     .anchors = {"Address family not supported"},
     .matches = says_all<"cannot be initialized", "Address family not supported">,
     .reason_after = {},
     .versions = "1.10 and later (c10d's socket.cpp)",
     .example = "[W socket.cpp:401] [c10d] The server socket cannot be initialized on [::]:29500 (errno: 97 - Address "
                "family not supported by protocol)."},  // heat#1003
};

// What the classifier and the prefilter rely on, checked where the rows are written.
constexpr bool each_family_has_one_row() {
  for (int f = 0; f < kFamilyCount; ++f) {
    int rows = 0;
    for (const auto& row : kFamilies) rows += static_cast<int>(row.family) == f;
    if (rows != 1) return false;
  }
  return std::size(kFamilies) == static_cast<size_t>(kFamilyCount);
}

constexpr bool scopes_in_order() {
  for (size_t i = 1; i < std::size(kFamilies); ++i)
    if (kFamilies[i].scope < kFamilies[i - 1].scope) return false;
  return true;
}

constexpr bool rows_complete() {
  for (const auto& row : kFamilies) {
    if (row.name.empty() || row.matches == nullptr || row.example.empty() || row.versions.empty() ||
        row.anchors[0].empty())
      return false;
    // By reference: GCC 12 rejects the copy of a row's string_view in a constant expression.
    for (const sv& a : row.anchors)
      if (!a.empty() && a.size() < 4) return false;
  }
  return true;
}

static_assert(each_family_has_one_row(), "every Family needs exactly one row");
static_assert(scopes_in_order(),
              "rows go Alone, Ranked, Fallback, Error, Setting (detect tries them so)");
static_assert(rows_complete(),
              "every row needs a name, anchors of 4+ bytes, a matcher, versions, an example");

// kFamilies' index of each family's row.
constexpr auto kRowOf = [] {
  std::array<size_t, kFamilyCount> index{};
  for (size_t i = 0; i < std::size(kFamilies); ++i)
    index[static_cast<size_t>(kFamilies[i].family)] = i;
  return index;
}();

// Where each scope's rows start in kFamilies (they are in scope order); the last is the end.
constexpr auto kScopeStart = [] {
  std::array<size_t, kScopeCount + 1> start{};
  for (int scope = 0; scope <= kScopeCount; ++scope) {
    size_t i = 0;
    while (i < std::size(kFamilies) && static_cast<int>(kFamilies[i].scope) < scope) ++i;
    start[static_cast<size_t>(scope)] = i;
  }
  return start;
}();

}  // namespace

std::span<const FamilyRow> family_table() { return kFamilies; }

std::span<const FamilyRow> family_rows(Scope scope) {
  const auto s = static_cast<size_t>(scope);
  return std::span<const FamilyRow>(kFamilies).subspan(kScopeStart[s],
                                                       kScopeStart[s + 1] - kScopeStart[s]);
}

const FamilyRow& family_row(Family f) { return kFamilies[kRowOf[static_cast<size_t>(f)]]; }

}  // namespace rdzv::logs::detail

namespace rdzv::logs {

const char* family_name(Family f) {
  const auto i = static_cast<size_t>(f);
  return i < static_cast<size_t>(kFamilyCount) ? detail::family_row(f).name.data() : "unknown";
}

}  // namespace rdzv::logs
