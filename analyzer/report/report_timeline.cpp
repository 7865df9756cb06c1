// --timeline: the rendezvous as Chrome trace-event JSON, for ui.perfetto.dev and
// chrome://tracing. One process track per host (pid = 1-based host index: pid 0 reads as the
// kernel's idle task in some viewers), one thread track per rank (tid = rank; processes
// without a rank, such as launcher agents, get tid = 1,000,000 + OS pid so they never clash
// with a rank; + 10,000,000 for each other process with that pid on the host). Times are µs after the earliest launch, the report's +0.00 s.
//
// The Diagnosis keeps only the first resolve/connect/error of a rank; a timeline must show
// every attempt, so this writer walks the trace events itself (through the same facts).
#include <algorithm>
#include <cerrno>
#include <map>
#include <set>

#include <fmt/format.h>

#include "model/context.h"
#include "reader/names.h"
#include "report.h"

namespace rdzvscope {

namespace {

using ojson = nlohmann::ordered_json;

constexpr long kUnrankedTidBase = 1'000'000;
constexpr long kSamePidTidStep = 10'000'000;  // above base + the largest pid (pid_max 2^22)

struct Track {
  int pid = 0;
  long tid = 0;
};

// An "X" span waiting for the nesting check (see nest()), its arguments already serialized:
// at 131,072 ranks, millions of small JSON trees cost more in malloc and free than the rest
// of the analysis.
struct Span {
  Track track;
  std::int64_t begin_ns = 0, end_ns = 0;
  std::string name;
  const char* cat = "";
  std::string args;  // a JSON object
  bool cut = false;  // ended at its parent's end instead of its own
};

// A JSON value's text: nlohmann's own escaping and number format.
template <class T>
std::string json_text(const T& v) {
  return ojson(v).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Failures worth a red instant: what the rules count as errors, plus the rest of the
// failed calls (a timeline shows everything; the verdict picks).
bool is_error(const Event& e) {
  switch (e.kind) {
    case RDZV_EV_RESOLVE: return e.ret != 0;
    case RDZV_EV_CONNECT: return e.err != 0 && e.err != EINPROGRESS && e.err != EINTR;
    case RDZV_EV_CONNECT_DONE: return e.err != 0;
    case RDZV_EV_BIND:
    case RDZV_EV_LISTEN: return e.ret < 0;
    case RDZV_EV_ACCEPT: return e.ret < 0 && e.err != EAGAIN && e.err != EINTR;
    case RDZV_EV_SEND:
    case RDZV_EV_RECV: return e.ret < 0 || e.has(RDZV_F_ZERO_READ);
    case RDZV_EV_POLL: return true;  // only waits that timed out or failed are recorded
    case RDZV_EV_CLOSE: return e.has(RDZV_F_ABANDONED);
    default: return false;
  }
}

class TimelineWriter {
 public:
  TimelineWriter(const Diagnosis& d, const Context& c) : d_(d), c_(c), t0_(d.t0_ns.value_or(0)) {
    // Looked up once per process: a scan of the rank table for each was quadratic (131,072
    // ranks: most of a minute).
    for (const RankRow& r : d_.ranks) {
      if (r.late && r.process) late_.insert(r.process);
      if (r.collective && r.process) collective_[r.process] = &*r.collective;
    }
  }

  std::string build(const LogFacts& logs) {
    std::set<std::string> hosts;
    for (const auto& f : c_.facts) hosts.insert(f.proc->host);
    int pid = 0;
    for (const auto& h : hosts) {
      host_pid_[h] = ++pid;
      meta(Track{pid, 0}, "process_name", "host " + h);
      meta_sort(Track{pid, 0}, "process_sort_index", pid);
    }
    verdict_track_ = Track{pid + 1, 0};
    for (const auto& f : c_.facts) add_process(f);
    add_absent_ranks();
    if (!c_.has_traces()) add_log_only(logs);
    add_verdict();
    for (const Span& sp : nest()) append(span_text(sp));
    spans_.clear();
    return "{\"traceEvents\":[" + std::move(events_) + "],\"displayTimeUnit\":\"ms\",\"metadata\":" +
           json_text(metadata()) + "}";
  }

 private:
  double us(std::int64_t ns) const { return (ns - t0_) / 1000.0; }

  // Events are serialized as they are made, into one text: the trace-event array's body.
  void append(const std::string& event) {
    if (!events_.empty()) events_ += ',';
    events_ += event;
  }

  void meta(Track t, const char* what, const std::string& name) {
    append(fmt::format(R"({{"name":"{}","ph":"M","ts":0,"pid":{},"tid":{},"args":{{"name":{}}}}})", what, t.pid,
                       t.tid, json_text(name)));
  }
  void meta_sort(Track t, const char* what, long index) {
    append(fmt::format(R"({{"name":"{}","ph":"M","ts":0,"pid":{},"tid":{},"args":{{"sort_index":{}}}}})", what,
                       t.pid, t.tid, index));
  }

  void span(Track t, const std::string& name, const char* cat, std::int64_t b, std::int64_t e, const ojson& args) {
    if (e < b) e = b;
    spans_.push_back(Span{t, b, e, name, cat, json_text(args)});
  }

  std::string span_text(const Span& sp) const {
    std::string args = sp.args;
    if (sp.cut) args.insert(args.size() - 1, args.size() > 2 ? ",\"cut_at_parent_end\":true" : "\"cut_at_parent_end\":true");
    return fmt::format(R"({{"name":{},"cat":"{}","ph":"X","ts":{},"dur":{},"pid":{},"tid":{},"args":{}}})",
                       json_text(sp.name), sp.cat, json_text(us(sp.begin_ns)),
                       json_text((sp.end_ns - sp.begin_ns) / 1000.0), sp.track.pid, sp.track.tid, args);
  }

  void instant(Track t, const std::string& name, const char* cat, std::int64_t at, const ojson& args,
               const char* scope = "t") {
    append(fmt::format(R"({{"name":{},"cat":"{}","ph":"i","s":"{}","ts":{},"pid":{},"tid":{},"args":{}}})",
                       json_text(name), cat, scope, json_text(us(at)), t.pid, t.tid, json_text(args)));
  }

  Track track_for(const ProcessFacts& f) {
    const Process& p = *f.proc;
    Track t{host_pid_[p.host], kUnrankedTidBase + p.pid};
    // Two processes claiming one rank on one host (a collision) must not share a track, nor
    // two with one pid (PID namespaces of their own: each container's pid 1).
    if (p.role != Role::Agent && p.rank >= 0 && used_.insert({t.pid, p.rank}).second) {
      t.tid = p.rank;
      return t;
    }
    while (!used_.insert({t.pid, t.tid}).second) t.tid += kSamePidTidStep;
    return t;
  }

  std::string thread_name(const ProcessFacts& f, Track t) const {
    const Process& p = *f.proc;
    std::string name = t.tid < kUnrankedTidBase ? "rank " + std::to_string(p.rank) : std::string(role_name(p.role));
    name += " (" + p.pid_words() + (p.role == Role::StoreServer ? ", store host" : "") + ")";
    if (p.rank >= 0 && d_.verdict.initiating_rank == p.rank && p.role != Role::Agent) name += " - initiating";
    if (late_.count(&p)) name += " - late";
    return name;
  }

  void add_process(const ProcessFacts& f) {
    const Process& p = *f.proc;
    Track t = track_for(f);
    meta(t, "thread_name", thread_name(f, t));
    meta_sort(t, "thread_sort_index", t.tid);
    const std::int64_t end = p.exit_ns.value_or(p.last_event_ns());

    // The whole life as the parent span, so every call nests under its process.
    span(t, p.vanished() ? "process (vanished)" : "process (exit " + (p.exit_status ? std::to_string(*p.exit_status) : std::string("?")) + ")",
         "process", p.launched_ns, end,
         {{"host", p.host}, {"pid", p.pid}, {"role", role_name(p.role)}, {"cmdline", p.header.cmdline}});

    for (std::size_t i = 0; i < p.events.size(); ++i) {
      const Event& e = p.events[i];
      if (e.kind == RDZV_EV_RESOLVE) add_resolve(t, e);
      else if (e.kind == RDZV_EV_CONNECT) add_connect(t, p, i, end);
      else if (e.kind == RDZV_EV_LISTEN && e.ret == 0 && e.has(RDZV_F_STORE))
        add_held(t, p, i, end, "store server listening on :" + std::to_string(e.local().port), e.wall_ns);
      if (is_error(e))
        instant(t, describe(e), "error", end_ns(e),
                {{"call", op_name(e.op)}, {"errno", e.err ? ojson(errno_name(e.err)) : ojson(nullptr)}, {"store", e.has(RDZV_F_STORE)}});
    }
    if (p.exit_ns)
      instant(t, "exit " + (p.exit_status ? std::to_string(*p.exit_status) : std::string("(status unknown)")), "exit", *p.exit_ns, ojson::object());
    else
      instant(t, "vanished (last event)", "exit", end, {{"note", "no exit record: killed by a signal, or still running"}});

    add_collective(t, p);

    // Where this rank's own wait would end: its connect plus the timeout it configured.
    std::optional<std::int64_t> timeout = f.timeout_ms ? f.timeout_ms : c_.timeout_ms();
    if (f.connected_ns && timeout && *timeout > 0)
      instant(t, "timeout deadline (" + fmt_seconds(*timeout / 1000.0) + " after connect)", "deadline",
              *f.connected_ns + *timeout * 1'000'000, {{"timeout_ms", *timeout}});
  }

  // The first collective after the rendezvous (issue 28), as the model found it for the rank
  // (RankRow::collective): before its first collective message, its wait in it, and its own
  // timeout deadline; a rank that never entered it, or entered it only after the first
  // failure, or died, is named so on the span.
  void add_collective(Track t, const Process& p) {
    const auto it = collective_.find(&p);
    if (it == collective_.end()) return;
    const CollectiveSpan& c = *it->second;
    using Part = CollectiveSpan::Part;
    const std::int64_t timeout_ms = d_.collective ? d_.collective->timeout_ms.value_or(0) : 0;  // 0: not recorded
    const ojson args = {{"part", part_words(c.part)},
                        {"timeout_ms", timeout_ms ? ojson(timeout_ms) : ojson(nullptr)},
                        {"entered", c.entered_ns ? ojson(us(*c.entered_ns)) : ojson(nullptr)}};
    const std::int64_t before_end = c.entered_ns ? std::min(*c.entered_ns, c.end_ns) : c.end_ns;
    const std::string before = c.part == Part::Dead         ? "dead in the first collective: " + c.ended
                               : c.part == Part::NeverEntered ? std::string("never entered the first collective")
                               : c.part == Part::EnteredLate  ? std::string("not in the first collective until after the first failure")
                                                             : std::string("before its first collective message");
    span(t, before, "collective", c.begin_ns, before_end, args);
    if (c.entered_ns && c.end_ns > before_end)
      span(t, c.part == Part::EnteredLate ? "in the first collective, late" : "waiting in the first collective",
           "collective", before_end, c.end_ns, args);
    if (c.deadline_ns && timeout_ms && c.part != Part::Dead)
      instant(t, "collective timeout deadline (" + fmt_seconds(timeout_ms / 1000.0) + " after entering)", "deadline",
              *c.deadline_ns, {{"timeout_ms", timeout_ms}});
    if (c.gone_ns) instant(t, "dead: " + c.ended + " (gone by then)", "exit", *c.gone_ns, {{"part", "dead"}});
  }

  void add_resolve(Track t, const Event& e) {
    const std::string host = e.resolve().host, service = e.resolve().service;
    auto first = format_sockaddr(e.resolve().first);
    span(t, "resolve " + host + (service.empty() ? "" : ":" + service), "resolve", e.wall_ns, end_ns(e),
         {{"call", op_name(e.op)},
          {"result", e.ret == 0 ? std::string("ok") : resolver_error_name(e.op, e.ret)},
          {"addresses", e.resolve().addresses},
          {"first", first ? ojson(*first) : ojson(nullptr)}});
  }

  // One span per attempt. A non-blocking connect returns EINPROGRESS at once; its outcome is
  // the CONNECT_DONE record of the same fd and start, whose duration covers the whole wait.
  void add_connect(Track t, const Process& p, std::size_t i, std::int64_t proc_end) {
    const Event& e = p.events[i];
    const Event* outcome = &e;
    bool pending = e.err == EINPROGRESS;
    if (pending)
      for (std::size_t j = i + 1; j < p.events.size(); ++j) {
        const Event& o = p.events[j];
        // the same call: the same fd and start
        if (o.kind == RDZV_EV_CONNECT_DONE && o.fd == e.fd && o.wall_ns == e.wall_ns) {
          outcome = &p.events[j];
          pending = false;
          break;
        }
      }
    const Event& o = *outcome;
    const bool ok = !pending && o.err == 0 && (o.kind == RDZV_EV_CONNECT_DONE || o.ret == 0);
    auto peer = format_sockaddr(e.peer());
    const std::string where = peer ? *peer : "?";
    span(t, "connect " + where, "connect", e.wall_ns, pending ? e.wall_ns + static_cast<std::int64_t>(e.dur_ns) : end_ns(*outcome),
         {{"outcome", ok ? std::string("connected") : pending ? std::string("in progress, outcome not seen") : errno_name(o.err)},
          {"errno", !ok && !pending ? ojson(errno_name(o.err)) : ojson(nullptr)},
          {"store", e.has(RDZV_F_STORE)},
          {"nonblocking", e.has(RDZV_F_NONBLOCK)},
          {"fd", e.fd}});
    if (ok && e.has(RDZV_F_STORE))
      add_held(t, p, i, proc_end, "connected to store " + where, end_ns(*outcome));
  }

  // A store socket held open: from `from` to the close of its fd, else the process's end.
  void add_held(Track t, const Process& p, std::size_t i, std::int64_t proc_end, const std::string& name, std::int64_t from) {
    const int fd = p.events[i].fd;
    std::int64_t until = proc_end;
    ojson args = {{"fd", fd}, {"ended_by", p.exit_ns ? "exit" : "end of trace"}};
    for (std::size_t j = i + 1; j < p.events.size(); ++j) {
      const Event& c = p.events[j];
      if (c.kind == RDZV_EV_CLOSE && c.fd == fd && c.wall_ns >= from) {
        until = c.wall_ns;
        args = {{"fd", fd}, {"ended_by", "close"},
                {"bytes_sent", c.close().bytes_sent}, {"bytes_recv", c.close().bytes_received}};
        break;
      }
    }
    span(t, name, "store", from, until, std::move(args));
  }

  // Ranks the job expected and no trace shows (Context::absent_ranks): a track each under a
  // process of their own, with one span over the whole job, so that the rank that never came
  // is as visible as the ones waiting for it. The first kAbsentTracks of them, and the
  // initiating rank; the rest share one track that lists them: a job with thousands of ranks
  // missing (a whole partition, a damaged WORLD_SIZE) must not make a timeline of millions of
  // tracks that no viewer opens.
  static constexpr std::size_t kAbsentTracks = 64;

  void add_absent_ranks() {
    if (c_.absent_ranks.empty()) return;
    const int pid = verdict_track_.pid;
    verdict_track_.pid = pid + 1;
    meta(Track{pid, 0}, "process_name", "expected, never traced");
    meta_sort(Track{pid, 0}, "process_sort_index", pid);
    std::int64_t end = t0_;
    for (const auto& f : c_.facts) end = std::max(end, f.proc->exit_ns.value_or(f.proc->last_event_ns()));
    std::vector<int> shown, rest;
    const auto initiating = d_.verdict.initiating_rank;
    for (int rank : c_.absent_ranks)
      (shown.size() < kAbsentTracks || (rank == initiating && shown.size() == kAbsentTracks) ? shown : rest)
          .push_back(rank);
    if (rest.size() == 1) {  // one more fits where its summary would go
      shown.push_back(rest[0]);
      rest.clear();
    }
    for (int rank : shown) {
      const Track t{pid, rank};
      meta(t, "thread_name", "rank " + std::to_string(rank) + " (absent)" + (initiating == rank ? " - initiating" : ""));
      meta_sort(t, "thread_sort_index", rank);
      span(t, "absent: no trace of this rank", "absent", t0_, end,
           {{"rank", rank}, {"why", "WORLD_SIZE expects it; it was not started under rdzvscope, or its trace "
                                    "file is not in the given directories"}});
    }
    if (rest.empty()) return;
    const Track t{pid, rest.front()};
    meta(t, "thread_name", std::to_string(rest.size()) + " more ranks (absent)");
    meta_sort(t, "thread_sort_index", rest.front());
    span(t, "absent: no trace of these ranks", "absent", t0_, end,
         {{"ranks", rank_list(rest)}, {"count", rest.size()}});
  }

  // Without traces the logs are the only clock: one track per rank seen in them, one instant
  // per stamped line (unstamped lines have no place on a time line).
  void add_log_only(const LogFacts& logs) {
    std::optional<double> first;
    for (const auto& e : logs.events)
      if (e.wall_time && (!first || *e.wall_time < *first)) first = e.wall_time;
    const int pid = verdict_track_.pid;
    verdict_track_.pid = pid + 1;
    meta(Track{pid, 0}, "process_name", "logs (no traces)");
    std::set<long> seen;
    for (const auto& e : logs.events) {
      Track t{pid, e.rank >= 0 ? e.rank : kUnrankedTidBase};
      if (seen.insert(t.tid).second)
        meta(t, "thread_name", e.rank >= 0 ? "rank " + std::to_string(e.rank) : std::string("unknown rank"));
      if (!e.wall_time) continue;
      const std::int64_t at = t0_ + static_cast<std::int64_t>((*e.wall_time - *first) * 1e9);
      instant(t, e.text, "error", at, {{"file", e.file}, {"line", e.line}, {"family", rdzv::logs::family_name(e.family)}});
    }
  }

  void add_verdict() {
    const Verdict& v = d_.verdict;
    meta(verdict_track_, "process_name", "rdzvscope verdict");
    meta_sort(verdict_track_, "process_sort_index", -1);  // above the hosts
    meta(verdict_track_, "thread_name", "verdict");
    // At the first failure, where the story turns; global scope draws it across every track.
    std::optional<std::int64_t> at;
    for (const RankRow& r : d_.ranks)
      if (r.first_error_ns && (!at || *r.first_error_ns < *at)) at = r.first_error_ns;
    std::string name = "verdict: " + std::string(name_of(v.cls));
    if (v.initiating_rank) name += " (rank " + std::to_string(*v.initiating_rank) + ")";
    instant(verdict_track_, name, "verdict", at.value_or(t0_), {{"summary", v.summary}, {"next_step", v.next_step}}, "g");
  }

  ojson metadata() const {
    const Verdict& v = d_.verdict;
    auto opt = [](const auto& o) { return o ? ojson(*o) : ojson(nullptr); };
    return {{"rdzvscope", {{"schema", "rdzvscope.timeline/1"},
                           {"t0", d_.t0_ns ? ojson(iso8601_utc(*d_.t0_ns)) : ojson(nullptr)},
                           {"verdict", {{"class", name_of(v.cls)}, {"cause", opt(v.cause)},
                                        {"initiating_rank", opt(v.initiating_rank)},
                                        {"initiating_host", opt(v.initiating_host)},
                                        {"confidence", v.confidence}, {"summary", v.summary},
                                        {"next_step", v.next_step}}},
                           {"store", d_.store_endpoint}}}};
  }

  // Viewers need the X spans of one thread properly nested (Perfetto drops a span that ends
  // after its parent). A parent here is a longer span that started earlier; a child that
  // outlives it is cut at the parent's end and says so.
  std::vector<Span>& nest() {
    std::stable_sort(spans_.begin(), spans_.end(), [](const Span& a, const Span& b) {
      if (a.track.pid != b.track.pid) return a.track.pid < b.track.pid;
      if (a.track.tid != b.track.tid) return a.track.tid < b.track.tid;
      if (a.begin_ns != b.begin_ns) return a.begin_ns < b.begin_ns;
      return a.end_ns > b.end_ns;
    });
    std::vector<const Span*> stack;
    for (std::size_t i = 0; i < spans_.size(); ++i) {
      Span& s = spans_[i];
      if (i > 0 && (spans_[i - 1].track.pid != s.track.pid || spans_[i - 1].track.tid != s.track.tid)) stack.clear();
      while (!stack.empty() && stack.back()->end_ns <= s.begin_ns) stack.pop_back();
      if (!stack.empty() && s.end_ns > stack.back()->end_ns) {
        s.end_ns = stack.back()->end_ns;
        s.cut = true;
      }
      stack.push_back(&s);
    }
    return spans_;
  }

  const Diagnosis& d_;
  const Context& c_;
  std::int64_t t0_;
  std::map<std::string, int> host_pid_;
  std::set<std::pair<int, long>> used_;
  std::set<const Process*> late_;  // the late ranks' processes (host and pid are not unique)
  std::map<const Process*, const CollectiveSpan*> collective_;  // RankRow::collective by process
  Track verdict_track_;
  std::string events_;
  std::vector<Span> spans_;
};

}  // namespace

std::string timeline_json(const Diagnosis& d, const Context& model) {
  return TimelineWriter(d, model).build(model.logs);
}

}  // namespace rdzvscope
