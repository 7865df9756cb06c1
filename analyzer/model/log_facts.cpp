#include "log_facts.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "address.h"
#include "endings.h"

namespace rdzvscope {

std::vector<const LogEvent*> LogFacts::of(std::initializer_list<LogFamily> families) const {
  std::vector<const LogEvent*> out;
  // A line can match several families (a "recvValue failed ...: got 0 bytes" is both a
  // send/recv failure and a zero read): any of them counts.
  for (const auto& e : events)
    if (std::any_of(families.begin(), families.end(), [&](LogFamily f) { return e.has(f); })) out.push_back(&e);
  return out;
}

bool LogFacts::any_rendezvous_error() const {
  return std::any_of(events.begin(), events.end(),
                     [](const LogEvent& e) { return e.family != LogFamily::ReverseLookupFailed; });
}

bool same_source(const LogEvent& a, const LogEvent& b) { return a.file == b.file && a.origin == b.origin; }

namespace {

// "VALUE" of "KEY=VALUE" in a watchdog line (OpType=ALLREDUCE, SeqNum=12), "" when absent.
std::string work_field(const std::string& text, std::string_view key) {
  const std::size_t at = text.find(key);
  if (at == std::string::npos) return "";
  std::size_t end = at + key.size();
  while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
  return text.substr(at + key.size(), end - at - key.size());
}

}  // namespace

std::optional<LoggedWork> logged_work(const LogEvent& e) {
  LoggedWork w;
  w.op = work_field(e.text, "OpType=");
  const std::string seq = work_field(e.text, "SeqNum=");
  if (!seq.empty() && std::all_of(seq.begin(), seq.end(), [](unsigned char ch) { return std::isdigit(ch); }) &&
      seq.size() < 19)
    w.sequence = std::stoll(seq);
  if (w.op.empty() && !w.sequence) return std::nullopt;
  return w;
}



namespace {

// A line that says a connect reached an address (its lookup had answered) and ended the
// address's try: a connect that failed with an errno of its own that c10d does not retry
// (ETIMEDOUT, EHOSTUNREACH...: recorded, then the next address family is asked for). Not a
// refused or reset connect: c10d retries those from a new lookup each round, so a lookup that
// fails later is a failure of its own (a DNS record gone, as a restarted pod's). Not a
// connect/validate retry whose reason is a lookup failure or the deadline, nor "not listening
// yet": c10d prints those while its lookups fail too.
bool reached_an_address(const LogEvent& e) {
  return (e.has(LogFamily::ConnectFailed) || e.has(LogFamily::ConnectValidate)) && e.err && *e.err != ECONNREFUSED &&
         *e.err != ECONNRESET && !e.has(LogFamily::GaiError) && !e.has(LogFamily::HostNotFound);
}

bool same_process(const LogEvent& a, const LogEvent& b) {
  return a.file == b.file && a.origin == b.origin && a.rank == b.rank;
}

}  // namespace

const LogEvent* LogFacts::connect_before(const LogEvent& e) const {
  for (const LogEvent& x : events) {
    if (!same_process(x, e) || x.line >= e.line || !reached_an_address(x)) continue;
    if (x.port && e.port && *x.port != *e.port) continue;
    return &x;
  }
  return nullptr;
}

bool shows_torchrun_agent(const LogFacts& logs) {
  const bool agent_frame = std::any_of(logs.frames.begin(), logs.frames.end(),
                                       [](const LogEvent& f) { return f.setting == "launcher"; });
  return agent_frame || !logs.launch_configs.empty() || !logs.log_dir_run_ids.empty() ||
         !logs.teardown_marks.empty() || !logs.worker_failures.empty() || !logs.worker_failure_lines.empty() ||
         logs.any({LogFamily::RendezvousClosed, LogFamily::RendezvousTimeout});
}

namespace {

// 2.x retries a whole connect that timed out ("TCP client failed to connect/validate to host
// H:P - retrying (try=0, ...)"): a process whose last timed-out connect is such a retry may have
// connected on the next try (a store host late by less than the timeout), and failed nothing.
bool only_retried(const std::vector<const LogEvent*>& timeouts) {
  return std::all_of(timeouts.begin(), timeouts.end(), [&](const LogEvent* e) {
    const LogEvent* last = e;
    for (const LogEvent* x : timeouts)
      if (same_process(*x, *e) && x->line > last->line) last = x;
    return last->has(LogFamily::ConnectValidate) && last->text.find("- retrying") != std::string::npos;
  });
}

}  // namespace

const LogEvent* loopback_store_never_up(const LogFacts& logs) {
  const auto timeouts = logs.of({LogFamily::ClientConnectTimeout});
  if (timeouts.empty() || only_retried(timeouts)) return nullptr;
  if (!std::all_of(timeouts.begin(), timeouts.end(), [](const LogEvent* e) { return is_loopback_name(e->host); }))
    return nullptr;
  // A SYN that went unanswered (ETIMEDOUT: c10d 2.x warns "The server socket on ... has timed
  // out, will retry"), a connect that failed with an errno, an unreachable host, a lookup.
  if (logs.any({LogFamily::ServerTimedOutRetry, LogFamily::ConnectionTimedOutErrno, LogFamily::ConnectFailed,
                LogFamily::NoRouteToHost, LogFamily::GaiError, LogFamily::HostNotFound}))
    return nullptr;
  if (shows_torchrun_agent(logs)) return nullptr;
  // Rank 0 announced entering init_process_group (Lightning): it was no longer busy before it,
  // and its store should have been up; what kept the clients out is not its lateness.
  if (std::any_of(logs.init_entries.begin(), logs.init_entries.end(),
                  [](const LogEvent& e) { return e.setting == "entering" && e.rank == 0; }))
    return nullptr;
  return timeouts.front();
}

std::vector<const LogEvent*> waits_for_main_process(const LogFacts& logs) {
  std::vector<const LogEvent*> out;
  const auto& f = logs.frames;
  for (std::size_t i = 0; i + 1 < f.size(); ++i)
    if (f[i].setting == "main_process_first" && f[i + 1].setting == "context_enter" && f[i + 1].file == f[i].file &&
        f[i + 1].line == f[i].line + 1)
      out.push_back(&f[i]);
  return out;
}

namespace {

// torchrun's name for a launch setting of its INFO block; min_nodes and max_nodes make "nnodes".
const char* option_of(const std::string& setting) {
  if (setting == "run_id") return "rdzv-id";
  if (setting == "rdzv_endpoint") return "rdzv-endpoint";
  if (setting == "rdzv_backend") return "rdzv-backend";
  if (setting == "nproc_per_node") return "nproc-per-node";
  if (setting == "min_nodes") return "min-nodes";
  if (setting == "max_nodes") return "max-nodes";
  return nullptr;
}

// One agent's launch configuration per block of setting lines of one source (launch_configs).
void add_launch_setting(std::vector<LogFacts::LaunchConfig>& configs, const LogEvent& e) {
  const char* option = option_of(e.setting);
  if (!option) return;
  LogFacts::LaunchConfig* current = nullptr;
  for (auto it = configs.rbegin(); it != configs.rend(); ++it)
    if (it->file == e.file && it->origin == e.origin) {
      current = &*it;
      break;
    }
  if (!current || current->settings.count(option)) {
    configs.push_back({e.file, e.origin, e.line, {}});
    current = &configs.back();
  }
  current->settings[option] = e.setting_value;
}

// "nnodes" from min-nodes and max-nodes, as --nnodes gives it: N, or MIN:MAX.
void settle_nnodes(LogFacts::LaunchConfig& c) {
  auto lo = c.settings.find("min-nodes"), hi = c.settings.find("max-nodes");
  if (lo != c.settings.end() && hi != c.settings.end())
    c.settings["nnodes"] = lo->second == hi->second ? lo->second : lo->second + ":" + hi->second;
  c.settings.erase("min-nodes");
  c.settings.erase("max-nodes");
}

bool is_store_io_error(const LogEvent& e) {
  return e.has(LogFamily::RecvZero) || e.has(LogFamily::BrokenPipe) || e.has(LogFamily::SendRecvFailed) ||
         e.has(LogFamily::ConnectionReset);
}

bool is_failed_shutdown(const LogEvent& e) {
  return e.has(LogFamily::RendezvousClosed) && e.text.find("failed to shutdown the rendezvous") != std::string::npos;
}

// The agent's report of a failed shutdown: above the line, the C++ warning of its failed store
// call ("sendBytes failed on SocketImpl(...)", then a backtrace of about 35 lines); below it,
// the Python traceback of the same call (about 10 lines). Above, only that one warning counts:
// a worker's own store error, which the agent's log also holds, ends in an exception line of
// its own, and that line, not a bare warning, is then the last store error before the shutdown.
constexpr std::uint64_t kShutdownReportLines = 64;

// Marks, in one file's events (file order), the store errors of each failed shutdown's report.
void mark_shutdown_errors(const std::vector<LogEvent>& events, std::size_t begin, std::size_t end,
                          std::vector<bool>& part) {
  auto near = [&](std::size_t j, std::size_t shutdown) {  // and of the same host, in a merged log
    const std::uint64_t a = events[j].line, b = events[shutdown].line;
    return (a > b ? a - b : b - a) <= kShutdownReportLines && events[j].origin == events[shutdown].origin;
  };
  for (std::size_t i = begin; i < end; ++i) {
    if (!is_failed_shutdown(events[i])) continue;
    if (i > begin && events[i - 1].has(LogFamily::SendRecvFailed) && near(i - 1, i)) part[i - 1] = true;
    for (std::size_t j = i + 1; j < end && is_store_io_error(events[j]) && near(j, i); ++j) part[j] = true;
  }
}

// Keeps the events whose mark is false, in order.
void erase_marked(std::vector<LogEvent>& events, const std::vector<bool>& marked) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (marked[i]) continue;
    if (kept != i) events[kept] = std::move(events[i]);  // never onto itself: that empties a string
    ++kept;
  }
  events.resize(kept);
}

void set_aside_shutdown_errors(std::vector<LogEvent>& events) {
  std::vector<bool> part(events.size(), false);
  for (std::size_t begin = 0, end = 0; begin < events.size(); begin = end) {
    for (end = begin; end < events.size() && events[end].file == events[begin].file;) ++end;
    mark_shutdown_errors(events, begin, end, part);
  }
  erase_marked(events, part);
}

// The teardown of an agent whose workers ended (log_facts.h): its events of kind `in_teardown`
// after its first teardown mark, and the C++ warning of a failed store call printed just above
// an exit barrier's error (no other event of that agent between them).
void set_aside_teardown(std::vector<LogEvent>& events, const std::vector<LogEvent>& marks,
                        bool (*in_teardown)(const LogEvent&)) {
  if (marks.empty()) return;
  std::vector<bool> teardown(events.size(), false);
  for (std::size_t i = 0; i < events.size(); ++i) {
    const LogEvent& e = events[i];
    for (const LogEvent& m : marks) {
      if (!same_source(m, e)) continue;
      if (m.line < e.line && in_teardown(e)) teardown[i] = true;
      const bool warning_above = e.has(LogFamily::SendRecvFailed) && e.line < m.line &&
                                 m.line - e.line <= kShutdownReportLines;
      if (!warning_above) continue;
      const bool next_is_mark = std::none_of(events.begin() + static_cast<std::ptrdiff_t>(i) + 1, events.end(),
                                             [&](const LogEvent& x) { return same_source(x, e) && x.line < m.line; });
      if (next_is_mark) teardown[i] = true;
    }
  }
  erase_marked(events, teardown);
}

bool is_teardown_store_error(const LogEvent& e) { return is_store_io_error(e) || e.has(LogFamily::RendezvousClosed); }
bool is_any(const LogEvent&) { return true; }

// "2 (local_rank: 2)" -> 2 and 2; "1 (pid: 23296)" -> 1 and 23296: the number at the start,
// and the one after `key`.
std::optional<int> leading_number(const std::string& v) {
  try {
    std::size_t used = 0;
    const int n = std::stoi(v, &used);
    return used ? std::optional<int>(n) : std::nullopt;
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<int> number_after_key(const std::string& v, const char* key) {
  const auto p = v.find(key);
  return p == std::string::npos ? std::nullopt : leading_number(v.substr(p + std::char_traits<char>::length(key)));
}

bool is_exception_text(const LogEvent& e) {
  return e.family == LogFamily::ErrorLine && e.text.find("Traceback (most recent call last)") == std::string::npos &&
         e.text.find("terminate called") == std::string::npos;
}

// The root cause's own exception line, where the agent's log holds its workers' output without
// rank prefixes (torchrun's default). A worker's output goes to the agent's; the agent stops the
// other workers with SIGTERM, whose default action prints nothing. So when every other failure
// of the summary is a signal (a negative exit code), the last unprefixed exception line of that
// file before the agent's "failed (exitcode: N) local_rank: L (pid: P)" line for the root cause
// (same pid), and after the file's previous summary, is the root cause's.
void find_root_cause_exceptions(LogFacts& facts, const std::vector<const LogEvent*>& first_failure_lines) {
  for (LogFacts::WorkerFailure& root : facts.worker_failures) {
    if (!root.root_cause || !root.exception.empty() || !root.pid) continue;
    const bool others_signalled = std::all_of(facts.worker_failures.begin(), facts.worker_failures.end(), [&](const auto& w) {
      const bool same_summary = w.file == root.file && w.origin == root.origin && w.line < root.line && root.line - w.line < 400;
      return &w == &root || !same_summary || (w.exitcode && *w.exitcode < 0);
    });
    if (!others_signalled) continue;
    const LogEvent* agent_line = nullptr;
    for (const LogEvent* e : first_failure_lines)
      if (e->file == root.file && e->origin == root.origin && e->line < root.line &&
          number_after_key(e->setting_value, "(pid: ") == root.pid)
        agent_line = e;
    if (!agent_line) continue;
    std::uint64_t after = 0;  // the file's previous summary
    for (const auto& w : facts.worker_failures)
      if (w.file == root.file && w.root_cause && w.line < agent_line->line) after = std::max(after, w.line);
    for (const LogEvent& e : facts.other_errors)
      if (e.file == root.file && e.origin == root.origin && e.rank < 0 && e.line > after && e.line < agent_line->line &&
          is_exception_text(e)) {
        root.exception = e.text;
        root.exception_line = e.line;
      }
  }
}

// A reaper's report of an end by a negative status (DeepSpeed's launcher, torchrun's agent: the
// signal that ended the process) is an end by that signal.
void add_death(LogFacts& facts, LogEvent e) {
  if (e.setting == "exit" && !e.setting_value.empty() && e.setting_value[0] == '-')
    if (const auto code = leading_number(e.setting_value); code && *code < 0) {
      e.setting = "signal";
      e.setting_value = signal_name(-*code);
    }
  facts.deaths.push_back(std::move(e));
}

// torchrun's agent, once a worker of its node failed, stops the others (SIGTERM) and logs the
// failure it observed first: "failed (exitcode: -9) local_rank: 0 (pid: 5343) of binary: ...".
// A negative status there is the signal that ended that worker: a reaper's report of its death
// (its local rank, not its global rank), also where the log holds no summary below it. A positive
// status only says that the worker raised, not what: the summary's exception (from_logs in
// rule_rank_died.cpp) tells whether that was its own error or a rendezvous failure.
std::optional<LogEvent> agent_reported_death(const LogEvent& line) {
  const auto code = number_after_key(line.setting_value, "exitcode: ");
  if (!code || *code >= 0) return std::nullopt;
  LogEvent d = line;
  d.family = LogFamily::ProcessDied;
  d.setting = "exit";
  d.setting_value = std::to_string(*code);
  d.reason = "torchrun's agent";
  if (const auto local = number_after_key(line.setting_value, "local_rank: "); local && *local >= 0)
    d.died_process = *local;
  return d;
}

// torchrun's summaries put together: in each file (and host of a merged log), a "rank" line
// starts a failure and the lines below it fill it in; the first failure after a "Root Cause"
// header is that summary's root cause. The exception line of a traceback field (a worker whose
// main is wrapped in @record writes its traceback to the error file, and torchrun prints it
// here) is the last exception line of the same file within 60 lines below it.
void put_failures_together(LogFacts& facts) {
  struct Source {
    std::string file, origin;
    bool root_pending = false;
    // A "time" field comes above its failure's "rank" line: held for the next failure.
    std::string time;
    std::uint64_t time_line = 0;
  };
  std::vector<Source> sources;
  auto source_of = [&](const LogEvent& e) -> Source& {
    for (Source& s : sources)
      if (s.file == e.file && s.origin == e.origin) return s;
    sources.push_back({e.file, e.origin, false, {}, 0});
    return sources.back();
  };
  std::vector<std::pair<std::size_t, std::uint64_t>> traceback_at;  // failure, line of its traceback field
  std::vector<const LogEvent*> first_failure_lines;
  for (const LogEvent& e : facts.worker_failure_lines) {
    Source& src = source_of(e);
    if (e.setting == "first_failure") {
      first_failure_lines.push_back(&e);
      if (auto death = agent_reported_death(e)) add_death(facts, std::move(*death));
      continue;
    }
    if (e.setting == "root_cause") {
      src.root_pending = true;
      continue;
    }
    if (e.setting == "time") {
      src.time = e.setting_value;
      src.time_line = e.line;
      continue;
    }
    if (e.setting == "rank") {
      LogFacts::WorkerFailure f;
      f.file = e.file;
      f.origin = e.origin;
      f.line = e.line;
      f.root_cause = src.root_pending;
      src.root_pending = false;
      if (src.time_line && src.time_line < e.line && e.line - src.time_line <= 3) f.time = src.time;
      src.time_line = 0;
      f.rank = leading_number(e.setting_value).value_or(-1);
      f.local_rank = number_after_key(e.setting_value, "(local_rank: ").value_or(-1);
      facts.worker_failures.push_back(std::move(f));
      continue;
    }
    // A field belongs to the last failure of its source, started at most 8 lines above.
    LogFacts::WorkerFailure* f = nullptr;
    for (auto it = facts.worker_failures.rbegin(); it != facts.worker_failures.rend(); ++it)
      if (it->file == e.file && it->origin == e.origin) {
        if (e.line > it->line && e.line - it->line <= 8) f = &*it;
        break;
      }
    if (!f) continue;
    if (e.setting == "exitcode") {
      f->exitcode = leading_number(e.setting_value);
      f->pid = number_after_key(e.setting_value, "(pid: ");
    } else if (e.setting == "error_file") {
      if (e.setting_value != "<N/A>") f->error_file = e.setting_value;
    } else if (e.setting == "traceback") {
      if (e.setting_value.rfind("To enable traceback", 0) != 0) f->traceback = e.setting_value;
      if (e.setting_value.rfind("Traceback (most recent call last)", 0) == 0)
        traceback_at.emplace_back(static_cast<std::size_t>(f - facts.worker_failures.data()), e.line);
    }
  }
  for (const auto& [i, at] : traceback_at) {
    LogFacts::WorkerFailure& f = facts.worker_failures[i];
    for (const LogEvent& e : facts.other_errors)
      if (e.family == LogFamily::ErrorLine && e.file == f.file && e.line > at && e.line <= at + 60 &&
          e.text.find("Traceback (most recent call last)") == std::string::npos) {
        f.exception = e.text;
        f.exception_line = e.line;
      }
  }
  find_root_cause_exceptions(facts, first_failure_lines);
}

}  // namespace

const LogFacts::WorkerFailure* LogFacts::root_cause() const {
  for (const WorkerFailure& f : worker_failures)
    if (f.root_cause) return &f;
  return nullptr;
}

std::vector<const LogFacts::WorkerFailure*> LogFacts::tied_with(const WorkerFailure& root) const {
  std::vector<const WorkerFailure*> out;
  if (root.time.empty()) return out;
  // The same summary: same file and host, near it (2.x lists the root cause last, 1.x first).
  for (const WorkerFailure& w : worker_failures)
    if (&w != &root && w.file == root.file && w.origin == root.origin &&
        (w.line < root.line ? root.line - w.line : w.line - root.line) < 400 && w.time == root.time)
      out.push_back(&w);
  return out;
}

bool says_peer_went_away(const LogEvent& e) {
  auto says = [&](std::initializer_list<const char*> any) {
    return std::any_of(any.begin(), any.end(), [&](const char* w) { return e.text.find(w) != std::string::npos; });
  };
  if (e.family == LogFamily::TransportError) return says({"closed by peer", "closed by remote peer", "reset by peer"});
  return e.family == LogFamily::ErrorLine && says({"ncclRemoteError", "remote process exit"});
}

std::optional<PeerUnanswered> peer_unanswered(const LogEvent& e) {
  if (e.family != LogFamily::TransportError) return std::nullopt;
  if (e.err) {
    if (*e.err != ETIMEDOUT && *e.err != EHOSTUNREACH && *e.err != ENETUNREACH) return std::nullopt;
    return PeerUnanswered{&e, !e.host.empty()};
  }
  const bool mesh = e.text.find("connectFullMesh failed") != std::string::npos;
  if (mesh && (e.text.find("Connect timeout") != std::string::npos || e.text.find(" no error") != std::string::npos))
    return PeerUnanswered{&e, false};
  return std::nullopt;
}

namespace {

bool is_traceback_header(const LogEvent& e) {
  return e.text.find("Traceback (most recent call last)") != std::string::npos;
}

}  // namespace

std::string collective_in_traceback(const LogFacts& logs, const LogEvent& e) {
  std::uint64_t header = 0;
  for (const LogEvent& h : logs.other_errors)
    if (same_process(h, e) && h.line < e.line && is_traceback_header(h)) header = std::max(header, h.line);
  // No header in reach (an excerpt that lost it): the frames just above the line.
  const std::uint64_t from = header ? header : (e.line > 200 ? e.line - 200 : 0);
  std::string op;
  for (const LogEvent& f : logs.frames)
    if (f.setting == "c10d_call" && same_process(f, e) && f.line > from && f.line < e.line &&
        !f.setting_value.starts_with("_"))
      op = f.setting_value;  // the last one is the innermost
  return op;
}

bool in_store_constructor(const LogFacts& logs, const LogEvent& e) {
  return std::any_of(logs.frames.begin(), logs.frames.end(), [&](const LogEvent& f) {
    return f.setting == "store_ctor" && same_process(f, e) && f.line > e.line && f.line <= e.line + 40;
  });
}

bool closed_after_store_constructor(const LogFacts& logs, const LogEvent& e) {
  if (!e.has(LogFamily::RecvZero) || in_store_constructor(logs, e)) return false;
  return e.text.find("recvValueWithTimeout failed") != std::string::npos ||
         e.text.find("\"should dump\" flag") != std::string::npos;
}

std::optional<LoggedWork> first_logged_work(const LogFacts& logs, int rank) {
  for (const LogEvent* e : logs.of({LogFamily::WatchdogTimeout, LogFamily::GlooCollectiveTimeout}))
    if (rank < 0 || e->rank == rank) {
      if (auto w = logged_work(*e); w && !w->op.empty()) return w;
      // gloo's timeout names no op: the rank's traceback through distributed_c10d.py does.
      if (std::string op = collective_in_traceback(logs, *e); !op.empty()) return LoggedWork{op, std::nullopt};
    }
  return std::nullopt;
}

void add_log_event(LogFacts& facts, LogEvent e) {
  if (e.family == LogFamily::LaunchSetting && e.setting == "log_dir_run_id")
    facts.log_dir_run_ids.push_back(e.setting_value);
  else if (e.family == LogFamily::LaunchSetting)
    add_launch_setting(facts.launch_configs, e);
  else if (e.family == LogFamily::AgentTeardown) {
    facts.progress.push_back(rdzv::logs::ProgressLine{e.file, e.line, e.rank, e.text.substr(0, 200)});
    facts.teardown_marks.push_back(std::move(e));
  } else if (e.family == LogFamily::WorkerGroupRestart)
    facts.restarts.push_back(std::move(e));
  else if (e.family == LogFamily::WorkerFailure)
    facts.worker_failure_lines.push_back(std::move(e));
  else if (e.family == LogFamily::ProcessDied)
    add_death(facts, std::move(e));
  else if (e.family == LogFamily::StackFrame)
    facts.frames.push_back(std::move(e));
  else if (e.family == LogFamily::InitAnnounced)
    facts.init_entries.push_back(std::move(e));
  else if (e.family == LogFamily::GroupLeftAtExit)
    facts.exit_marks.push_back(std::move(e));
  else if (e.family == LogFamily::GlooLoopbackFallback)
    facts.gloo_loopback_fallbacks.push_back(std::move(e));
  else if (e.family == LogFamily::AddressFamilyUnsupported)
    facts.family_fallbacks.push_back(std::move(e));
  else if (rdzv::logs::is_other_error(e.family))
    facts.other_errors.push_back(std::move(e));
  else
    facts.events.push_back(std::move(e));
}

const rdzv::logs::ProgressLine* LogFacts::went_on_after(const std::string& file, std::uint64_t line,
                                                        int rank) const {
  const rdzv::logs::ProgressLine* first = nullptr;
  for (const auto& p : progress)
    if (p.file == file && p.line > line && (p.rank == rank || p.rank < 0 || rank < 0) &&
        (!first || p.line < first->line))
      first = &p;
  return first;
}

const rdzv::logs::ProgressLine* LogFacts::went_on_after(const LogEvent& e) const {
  return went_on_after(e.file, e.line, e.rank);
}

namespace {

// c10d's and glog's warning level: "[W socket.cpp:558]", "[W1203 06:05:57.06 ...]", a glog line
// "W20261203 06:02:04 ..." (1.13 with glog), Python logging's "WARNING". c10d logs a retry or a
// fallback so, and raises (an exception line, an error-level line) what it gives up on.
bool logged_as_warning(const LogEvent& e) {
  const std::string& t = e.text;
  if (t.size() > 1 && t[0] == 'W' && t[1] >= '0' && t[1] <= '9') return true;
  for (std::size_t p = t.find("[W"); p != std::string::npos; p = t.find("[W", p + 1))
    if (p + 2 < t.size() && (t[p + 2] == ' ' || (t[p + 2] >= '0' && t[p + 2] <= '9'))) return true;
  return t.find("WARNING") != std::string::npos;
}

bool failure_between(const LogFacts& logs, const std::string& file, std::uint64_t from, std::uint64_t to) {
  auto inside = [&](const LogEvent& e) { return e.file == file && e.line > from && e.line < to; };
  return std::any_of(logs.events.begin(), logs.events.end(), inside) ||
         std::any_of(logs.other_errors.begin(), logs.other_errors.end(), inside) ||
         std::any_of(logs.deaths.begin(), logs.deaths.end(), inside);
}

// LogFacts::ranks_twice. Two world sizes among the announcements are settings that disagree,
// which rule_config_mismatch reads from other lines: not this.
std::optional<LogFacts::RanksTwice> ranks_announced_twice(const LogFacts& logs) {
  LogFacts::RanksTwice out;
  std::map<int, const LogEvent*> first;
  std::set<int> twice;
  bool second_found = false;
  for (std::size_t i = 0; i < logs.init_entries.size(); ++i) {
    const LogEvent& a = logs.init_entries[i];
    if (a.setting != "entering" || a.rank < 0 || !a.expected) continue;
    if (out.world < 0) out.world = *a.expected;
    if (*a.expected != out.world) return std::nullopt;
    const auto [it, fresh] = first.emplace(a.rank, &a);
    if (fresh) {
      ++out.announced;
      continue;
    }
    if (it->second->file != a.file || failure_between(logs, a.file, it->second->line, a.line)) continue;
    ++out.announced;
    twice.insert(a.rank);
    if (!second_found) out.second = i, second_found = true;
  }
  if (twice.empty()) return std::nullopt;
  out.twice.assign(twice.begin(), twice.end());
  for (int r = 0; r < out.world && r < 65536; ++r)
    if (!first.count(r)) out.missing.push_back(r);
  return out;
}

bool went_on_past_its_warnings(const LogFacts& facts) {
  if (facts.progress.empty() || !facts.other_errors.empty() || !facts.deaths.empty() ||
      !facts.worker_failures.empty() || !facts.worker_failure_lines.empty())
    return false;
  for (const auto& u : facts.unread)
    if (!facts.went_on_after(u.file, u.line, u.rank)) return false;
  return std::all_of(facts.events.begin(), facts.events.end(), [&](const LogEvent& e) {
    return logged_as_warning(e) && !e.has(LogFamily::BindFailed) && !e.has(LogFamily::ListenFailed) &&
           facts.went_on_after(e);
  });
}

}  // namespace

void settle_log_facts(LogFacts& facts) {
  for (auto& c : facts.launch_configs) settle_nnodes(c);
  facts.worker_failures.clear();
  put_failures_together(facts);
  set_aside_teardown(facts.events, facts.teardown_marks, is_teardown_store_error);
  set_aside_teardown(facts.other_errors, facts.teardown_marks, is_any);
  set_aside_shutdown_errors(facts.events);
  facts.job_went_on = went_on_past_its_warnings(facts);
  facts.ranks_twice = ranks_announced_twice(facts);
}

LogFacts load_logs(const std::vector<std::string>& paths) {
  LogFacts facts;
  for (const auto& path : paths) {
    facts.stats.add(Stat::LogFiles);
    auto scan = rdzv::logs::scan_log(path);
    if (!scan) facts.errors.push_back(Error{"", scan.error().message, std::nullopt});  // names the file
    // A log cut short (a truncated .gz) still holds what came before the cut: it is used.
    rdzv::logs::LogScan* read = scan ? &scan.value() : scan.partial();
    if (!read) continue;
    if (!scan) facts.stats.add(Stat::PartialLogFiles);
    auto& s = *read;
    facts.stats.add(Stat::LogLines, s.lines);
    facts.stats.add(Stat::LogLinesMatched, s.matched);
    if (facts.torch_version.empty()) facts.torch_version = s.torch_version;
    if (facts.version_hint.empty()) facts.version_hint = rdzv::logs::version_hint(s);
    for (auto& e : s.events) add_log_event(facts, std::move(e));
    for (auto& p : s.progress) facts.progress.push_back(std::move(p));
    for (auto& u : s.unread) facts.unread.push_back(std::move(u));
  }
  settle_log_facts(facts);
  return facts;
}

}  // namespace rdzvscope
