// The analysis: facts -> every rule -> the strongest candidate, or healthy / unknown; then
// the per-rank table and the discriminators that every verdict carries (docs/classes.md).
#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "reader/names.h"
#include "model/attempts.h"
#include "class_registry.h"
#include "rules.h"

namespace rdzvscope {

namespace {

// The internal c10d/elastic timeouts that users did not set (docs/c10d-notes.md, section 4).
const char* internal_default_name(std::int64_t ms) {
  switch (ms) {
    case 60000: return "the elastic rendezvous store's read_timeout (60 s), not init_process_group's";
    case 300000: return "Store::kDefaultTimeout (300 s)";
    case 600000: return "the NCCL process-group default (10 min)";
    case 1800000: return "the default process-group timeout (30 min)";
  }
  return nullptr;
}

RankRow row_for(const Context& c, const ProcessFacts& f) {
  RankRow r;
  r.rank = rank_of(f);
  r.host = f.proc->host;
  r.pid = f.proc->pid;
  r.container = f.proc->container;
  r.pid_namespace = f.proc->own_pidns;
  r.process = f.proc;
  r.role = role_name(f.proc->role);
  r.launched_ns = f.proc->launched_ns;
  for (const Event* e : f.resolves)
    if (e->ret == 0) {
      r.resolved_ns = e->wall_ns + static_cast<std::int64_t>(e->dur_ns);
      break;
    }
  r.first_store_connect_ns = f.first_store_attempt_ns;
  r.connected_ns = f.connected_ns;
  if (f.first_error && f.failed()) {
    r.first_error_ns = end_ns(*f.first_error);
    r.first_error = describe(*f.first_error);
  } else if (f.failed()) {
    for (const auto& e : c.logs.events)
      if (e.rank == f.proc->rank && e.family != LogFamily::ReverseLookupFailed) {  // a warning, no error
        r.first_error = std::string(rdzv::logs::family_name(e.family)) + " (log)";
        break;
      }
  }
  r.exit_ns = f.proc->exit_ns;
  r.exit_status = f.proc->exit_status;
  r.vanished = f.proc->vanished();
  r.last_seen_ns = f.proc->last_event_ns();
  return r;
}

// The evidence every verdict carries, whatever its class.
void find_common_evidence(const Context& c, Evidence& ev) {
  std::optional<double> first_failure_s;
  for (const ProcessFacts* f : c.ranks())
    if (f->failed()) {
      ev.failed_ranks.push_back(f->proc->rank);
      if (f->first_error) {
        double s = seconds(f->proc->launched_ns, end_ns(*f->first_error));
        if (!first_failure_s || s < *first_failure_s) first_failure_s = s;
      }
    }
  ev.expected_world_size = c.expected_world_size;
  ev.absent_ranks = c.absent_ranks;
  ev.absent_nodes = c.absent_nodes;
  ev.torch_version = c.torch_version;
  if (first_failure_s) ev.seconds_to_first_failure = std::round(*first_failure_s * 100) / 100;
  if (auto t = c.timeout_ms()) {
    const char* internal = internal_default_name(*t);
    ev.timeout = TimeoutFact{*t, internal != nullptr,
                             internal ? internal : "set by the job (init_process_group / store timeout)"};
  }
}

// Name-resolution warnings in the logs, "FILE:LINE": the lines above a timeout may explain it.
std::vector<std::string> name_resolution_lines(const LogFacts& logs) {
  std::vector<std::string> above;
  for (const auto& e : logs.events)
    if (e.family == LogFamily::GaiError || e.family == LogFamily::HostNotFound)
      above.push_back(e.file + ":" + std::to_string(e.line));
  return above;
}

DiscriminatorValue pytorch_version(const Evidence& ev) {
  if (ev.torch_version) return ev.torch_version->words();
  return NotKnown{};
}

void common_discriminators(const Context& c, Diagnosis& d) {
  Discriminators& out = d.discriminators;
  const Evidence& ev = d.evidence;
  out.set("which_ranks_failed", RankSet{ev.failed_ranks});
  out.set("seconds_from_launch_to_first_failure",
          ev.seconds_to_first_failure ? DiscriminatorValue(Seconds{*ev.seconds_to_first_failure}) : NotKnown{});
  out.set("timeout", ev.timeout ? DiscriminatorValue(*ev.timeout) : NotKnown{});
  out.set("name_resolution_lines_in_logs", NameList{name_resolution_lines(c.logs)});
  // Added in issue 17, present only when some expected rank has no trace (older reports,
  // and every job with all its ranks traced, keep their keys).
  if (!ev.absent_ranks.empty()) {
    out.set("absent_ranks", RankSet{ev.absent_ranks});
    out.set("expected_world_size", std::int64_t{*ev.expected_world_size});
  }
  // Added with absent_ranks' whole nodes: present only when absent ranks make up whole nodes.
  if (!ev.absent_nodes.empty()) out.set("absent_nodes", ev.absent_nodes);
  out.set("pytorch", pytorch_version(ev));
}

}  // namespace

namespace {

// A torchrun agent that exited non-zero or vanished: with no worker at fault, its failure is
// still a failure (a rendezvous that never completed, say), never "healthy".
const ProcessFacts* failed_agent(const Context& c) {
  for (const auto& f : c.facts)
    if (f.proc->role == Role::Agent && (f.proc->vanished() || f.proc->exit_status.value_or(0) != 0)) return &f;
  return nullptr;
}

// Workers (and the store host) that failed, with their ranks where they have one.
struct FailedWorkers {
  bool any = false;
  std::vector<int> ranks;
};

FailedWorkers failed_workers(const Context& c) {
  FailedWorkers out;
  for (const auto& f : c.facts)
    if (f.failed() && f.proc->role != Role::Agent && f.proc->role != Role::Helper) {
      out.any = true;
      if (f.proc->rank >= 0) out.ranks.push_back(f.proc->rank);
    }
  return out;
}

// The classes that the other ranks' view of a dead peer makes: their waits for its key or its
// arrival (straggler_timeout), their store connections to it broken (broken_pipe), a store
// host that no longer answers (store_unresponsive), refused connects to a store host that died
// before it listened (store_not_ready), a lost connection retried (transient_recv).
bool is_symptom_of_a_dead_peer(FailureClass cls) {
  return cls == FailureClass::StragglerTimeout || cls == FailureClass::BrokenPipe ||
         cls == FailureClass::StoreUnresponsive || cls == FailureClass::StoreNotReady ||
         cls == FailureClass::TransientRecv;
}

// Issue 29: a death the logs show (Candidate::death_shown) explains those symptoms; they do not
// explain it (a dead rank is dead, not late). Its candidate moves ahead of theirs; the causes
// that rank above it (a taken port, a name, a setting) stay ahead.
void put_shown_death_before_its_symptoms(std::vector<Candidate>& candidates) {
  const auto death = std::find_if(candidates.begin(), candidates.end(), [](const Candidate& c) {
    return c.death_shown && c.verdict.cls == FailureClass::RankDied;
  });
  if (death == candidates.end()) return;
  auto first_symptom = candidates.begin();
  while (first_symptom != death && !is_symptom_of_a_dead_peer(first_symptom->verdict.cls)) ++first_symptom;
  std::rotate(first_symptom, death, death + 1);
}

// Every rule's answer, strongest first (the registry's precedence; ties keep registry order).
std::vector<Candidate> candidates_of(const Context& c) {
  std::vector<Candidate> candidates;
  for (const ClassRow& row : class_registry())
    if (auto cand = row.rule(c)) candidates.push_back(std::move(*cand));
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return precedence_of(a) > precedence_of(b); });
  put_shown_death_before_its_symptoms(candidates);
  return candidates;
}

// The strongest candidate is the verdict; the others are noted as also consistent.
void adopt(std::vector<Candidate>& candidates, Diagnosis& d) {
  Candidate& best = candidates.front();
  d.verdict = best.verdict;
  d.findings = best.findings;
  d.discriminators = best.discriminators;
  d.evidence = best.evidence;
  for (const Alternative& a : best.alternatives)
    if (a.cls != d.verdict.cls) d.alternatives.push_back(a);
  for (std::size_t i = 1; i < candidates.size(); ++i) {
    // transient_recv means "no other cause": beside another verdict it says nothing.
    if (candidates[i].verdict.cls == FailureClass::TransientRecv) continue;
    // rank_died names the rank that died first; a verdict that names the same rank (the others'
    // timeouts waiting for it, their connections to it broken) says that in its own words.
    if (candidates[i].verdict.cls == FailureClass::RankDied && candidates[i].verdict.initiating_rank &&
        candidates[i].verdict.initiating_rank == d.verdict.initiating_rank)
      continue;
    Finding also;
    also.cls = candidates[i].verdict.cls;
    also.evidence.push_back("also consistent with " + std::string(name_of(also.cls)) + ": " +
                            candidates[i].verdict.summary);
    d.findings.push_back(also);
  }
}

std::string absent_ranks_words(const Context& c) {
  return "rank(s) " + rank_list(c.absent_ranks) + " of WORLD_SIZE=" + std::to_string(*c.expected_world_size);
}

// Every traced rank did well, but ranks the job expected have no trace: they ran where
// rdzvscope did not look (another node's directory not given, started without it). Not
// "healthy": the rendezvous of ranks nobody traced is unknown.
Verdict unknown_for_absent_ranks(const Context& c) {
  Verdict v;
  v.cls = FailureClass::Unknown;
  v.confidence = "low";
  v.summary = "all " + std::to_string(c.ranks().size()) + " traced ranks reached the store and exited 0, but " +
              absent_ranks_words(c) +
              " have no trace: they ran untraced or their trace files are not in the given directories "
              "(the traced ranks completing suggests they did join)";
  v.next_step = "pass the trace directories of every node (or run the missing ranks under rdzvscope run) "
                "to check their rendezvous too";
  return v;
}

constexpr const char* kNothingToFix =
    "nothing to fix in the rendezvous; if the job still misbehaved, look past start-up";

Verdict healthy_from_traces(const Context& c) {
  Verdict v;
  v.cls = FailureClass::Healthy;
  v.confidence = "high";
  v.summary = "all " + std::to_string(c.ranks().size()) + " traced ranks reached the store and exited 0";
  v.next_step = kNothingToFix;
  return v;
}

// A healthy job's near miss (Context::ranks_far_behind): the ranks that arrived far behind the
// others are named, with their lateness against the timeout the others waited under, in the
// summary, the rank table (late) and the discriminators late_ranks and seconds_late.
void note_near_miss(const Context& c, Diagnosis& d) {
  if (d.verdict.cls != FailureClass::Healthy || d.verdict.confidence != "high") return;
  const std::vector<Context::FarBehind> far = c.ranks_far_behind();
  if (far.empty()) return;
  const Context::FarBehind& worst = far.front();
  std::vector<int> ranks;
  for (const auto& b : far) ranks.push_back(b.f->proc->rank);
  std::sort(ranks.begin(), ranks.end());
  const double late_s = static_cast<double>(worst.late_ns) / 1e9;
  const bool one = far.size() == 1;
  std::string words = std::string(one ? "rank " : "ranks ") + rank_list(ranks) + " arrived " +
                      (one ? "" : "up to ") + fmt_seconds(late_s) +
                      " after the others (their median first store connect)";
  if (const auto t = c.timeout_ms(); t && *t > 0) {
    const double t_s = static_cast<double>(*t) / 1000.0;
    words += fmt::format(", {:.0f}% of the {} timeout they waited under", 100.0 * late_s / t_s,
                         fmt_seconds(t_s));
    words += late_s < t_s ? "; about " + fmt_seconds(t_s - late_s) +
                                " later and the others' waits time out "
                                "(straggler_timeout)"
                          : "; more than the timeout, and the job still completed";
  } else {
    words += "; the timeout they waited under is not in the traces";
  }
  d.verdict.summary += "; but " + words;
  const std::string look = "look at what " + worst.f->proc->label() +
                           " does before init_process_group (its launch, imports, checkpoint or "
                           "data loading, storage "
                           "on " +
                           worst.f->proc->host +
                           "): the job fails the day it is later by the rest of the timeout";
  // The plain healthy step says there is nothing to do; a restarted job's says what the restart cost.
  if (d.verdict.next_step == kNothingToFix)
    d.verdict.next_step = "nothing failed; but " + look;
  else {
    if (!d.verdict.next_step.empty() && d.verdict.next_step.back() == '.')
      d.verdict.next_step.pop_back();
    d.verdict.next_step += "; and " + look;
  }
  d.evidence.late_ranks = ranks;
  d.discriminators.set("late_ranks", RankSet{ranks});
  d.discriminators.set("seconds_late", Seconds{std::round(late_s * 100) / 100});
  Finding f = finding_for(FailureClass::Healthy, *worst.f, worst.f->arrival_ns());
  for (const auto& b : far) {
    const std::string act = activity(*b.f);
    f.evidence.push_back(b.f->proc->label() + ": launched at " + rel(c, b.f->proc->launched_ns) +
                         ", first store connect at " + rel(c, *b.f->arrival_ns()) + ", " +
                         fmt_seconds(static_cast<double>(b.late_ns) / 1e9) +
                         " after the usual arrival" +
                         (act.empty() ? std::string() : "; before arriving: " + act));
  }
  d.findings.push_back(f);
}

// Traces of processes none of which is a rank or went near a store port (a `curl` run under
// the shim, a directory of the wrong job): nothing to call healthy (issue 13 item 3).
bool no_rank_found(const Context& c) {
  if (!c.ranks().empty()) return false;
  return std::none_of(c.facts.begin(), c.facts.end(), [](const ProcessFacts& f) {
    return f.first_store_attempt_ns || f.listen_ns || f.connected_ns || f.bind_failure;
  });
}

Verdict unknown_no_rank_found(const Context& c) {
  Verdict v;
  v.cls = FailureClass::Unknown;
  v.confidence = "low";
  v.summary = "no rank found: the " + std::to_string(c.traces.processes.size()) +
              " traced process(es) carry no RANK (or SLURM_PROCID) and never used a store port, so these traces "
              "do not show a rendezvous at all";
  v.next_step = "check that these are the job's traces (rdzvscope dump DIR | head); trace the training command "
                "itself under rdzvscope run, and give --ports PORT when the store listens on a port other than "
                "MASTER_PORT, 29400 or 29500";
  return v;
}

// Logs alone, with no error in them: the job may have hung (a hang prints nothing: a rank stuck
// before init_process_group or in its first collective, a store host that stopped answering),
// or the logs end before its failure. Healthy only when a line says the workers finished: a
// torchrun agent's teardown marks (it logs them once its worker group succeeded), or
// ProcessGroupNCCL's warning as a rank's interpreter exits (the rank ran to its end).
bool logs_show_workers_finished(const LogFacts& logs) {
  return !logs.teardown_marks.empty() || !logs.exit_marks.empty();
}

// The line that says so, in words.
std::string workers_finished_words(const LogFacts& logs) {
  const bool agent = !logs.teardown_marks.empty();
  const LogEvent& m = agent ? logs.teardown_marks.front() : logs.exit_marks.front();
  const std::string where = m.file + ":" + std::to_string(m.line);
  if (agent) return "torchrun's agent says its workers finished (" + where + ")";
  return "a rank reached its exit (" + where +
         ": ProcessGroupNCCL's warning as the interpreter exits with the process group never destroyed; the "
         "script does not call destroy_process_group(), which is no failure)";
}

Verdict unknown_from_quiet_logs(const LogFacts& logs) {
  Verdict v;
  v.cls = FailureClass::Unknown;
  v.confidence = "low";
  v.summary = "no error in " + std::to_string(logs.stats[Stat::LogLines]) +
              " log lines, and none says the job finished: a job that hangs prints nothing (a rank stuck before "
              "init_process_group or in its first collective, a store host that stopped answering), and a log that "
              "ends before the failure shows none";
  v.next_step = "if the job hung: `py-spy dump --pid PID` on each rank shows where it waits; rdzvscope attach on "
                "the running job, or a rerun under rdzvscope run, shows which rank the others wait for";
  return v;
}

// Logs whose only c10d lines are its warnings that an IPv6 socket could not be made (errno 97,
// EAFNOSUPPORT: the host has no IPv6; c10d goes on to IPv4), with no error anywhere: every job
// on such a host prints them, the failed and the working alike, so they are not the failure. The
// verdict says they are noise; that nothing else is in the logs is all it knows of the rest.
Verdict healthy_from_family_noise(const LogFacts& logs) {
  const LogEvent& w = logs.family_fallbacks.front();
  Verdict v;
  v.cls = FailureClass::Healthy;
  v.confidence = "low";
  v.summary = "the only c10d lines in " + std::to_string(logs.stats[Stat::LogLines]) + " log lines are " +
              std::to_string(logs.family_fallbacks.size()) + " warning(s) that an IPv6 socket could not be made (" +
              w.file + ":" + std::to_string(w.line) +
              ": errno 97, Address family not supported): this host has no IPv6, and c10d goes on to the IPv4 "
              "address, so every job on it prints them, working or not; nothing in these logs failed, and logs alone "
              "cannot show a hang after them";
  v.next_step = "nothing to fix for these warnings; if the job did fail or hang, its lines are not in these logs: "
                "pass every rank's whole log, or `py-spy dump --pid PID` on a hung rank";
  return v;
}

Verdict healthy_from_logs(const LogFacts& logs) {
  Verdict v;
  v.cls = FailureClass::Healthy;
  v.confidence = "low";
  v.summary = "no c10d / TCPStore error in " + std::to_string(logs.stats[Stat::LogLines]) + " log lines, and " +
              workers_finished_words(logs) + "; logs alone cannot show a hang or a late rank";
  v.next_step = "if the job still hung, rerun under rdzvscope run to trace every rank";
  return v;
}

// Issue 29: why a c10d warning that its process went on from was noise (LogFacts::job_went_on).
std::string why_noise(const LogEvent& e) {
  switch (e.family) {
    case LogFamily::GaiError:
    case LogFamily::HostNotFound:
      return "a lookup that c10d retries (and asks again for the other address family) until its connect "
             "timeout: the name resolved in time";
    case LogFamily::ReverseLookupFailed:
      return "a reverse lookup of a connected socket's own address, which the rendezvous does not need";
    case LogFamily::ConnectValidate:
    case LogFamily::ConnectionReset:
    case LogFamily::RecvZero:
    case LogFamily::SendRecvFailed:
    case LogFamily::BrokenPipe:
      return "a store connection that broke while TCPStore connected and validated it, which its constructor "
             "retries: the retry connected";
    case LogFamily::ConnectFailed:
    case LogFamily::NotListeningYet:
    case LogFamily::ServerTimedOutRetry:
    case LogFamily::ClientConnectTimeout:
      return "a connect that c10d retries until its timeout: the store was up in time";
    default:
      return "a warning that c10d logs and goes on from (what it gives up on, it raises)";
  }
}

// Logs whose job went on past every c10d line it logged, with nothing fatal after
// (LogFacts::job_went_on): the rendezvous completed; its warnings were retries that succeeded.
Verdict healthy_from_progress(const LogFacts& logs) {
  const rdzv::logs::ProgressLine& last = logs.progress.back();
  Verdict v;
  v.cls = FailureClass::Healthy;
  v.confidence = "low";
  v.summary = "the job went on past its rendezvous (" + last.file + ":" + std::to_string(last.line) + ": " +
              last.text.substr(0, 120) + ") and logged no error after";
  if (!logs.events.empty()) {
    const LogEvent& w = logs.events.front();
    v.summary += "; its " + std::to_string(logs.events.size()) + " c10d warning(s) (first " + w.file + ":" +
                 std::to_string(w.line) + ": " + w.text.substr(0, 120) + ") were noise: " + why_noise(w) +
                 ", and the process that logged each went on after it";
  }
  v.next_step = "nothing to fix in the rendezvous; logs alone cannot show a hang after the lines they end with";
  return v;
}

// Issue 13: errors in the logs that no rendezvous family matched, quoted with where they are
// and what would settle them; never "healthy".
std::string other_error_words(const std::vector<LogEvent>& errors) {
  const LogEvent* first = &errors.front();
  for (const auto& e : errors)  // a transport or NCCL line says more than a bare exception line
    if (e.family != LogFamily::ErrorLine) {
      first = &e;
      break;
    }
  const std::string where = first->file + ":" + std::to_string(first->line) + ": " +
                            first->text.substr(0, 200);
  switch (first->family) {
    case LogFamily::TransportError:
      if (first->text.find("closed by peer") != std::string::npos || first->text.find("reset by peer") != std::string::npos)
        return "a gloo connection between ranks was closed or reset by the rank at its other end, not the c10d "
               "store (" + where + "): that rank most likely died first (killed: its log then ends without an "
               "error); the ranks' logs side by side, or a trace with rdzvscope run, name it";
      return "gloo/NCCL's own connections between ranks failed, not the c10d store (" + where +
             "); check the interface they use (GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME) and the "
             "firewall between nodes";
    case LogFamily::NcclNoSocketInterface:
      return "NCCL found no network interface to bootstrap on (" + where +
             "); set NCCL_SOCKET_IFNAME";
    case LogFamily::NoRouteToHost:
      return "a connect ended in EHOSTUNREACH (" + where +
             "): an unreachable store host (route, firewall REJECT) or, on old gloo, a store not "
             "up yet; `nc -vz HOST PORT` from this node and the master's own log tell them apart";
    default:
      return "the logs hold an error that is no rendezvous failure rdzvscope knows (" + where +
             "); the rank's full log, or a trace with rdzvscope run, would settle it";
  }
}

// A log line of a store wait for rank N's address key, N at or beyond the WORLD_SIZE in every
// traced rank's environment, that no rank prefix or per-rank file attributes: some process
// was given a larger world_size by its script (gloo's init reads the keys of ranks 0 to
// world_size - 1), but the line cannot say which (torchrun's merged output, issue 32 item 3).
// What would settle it: per-rank files or rank-prefixed lines.
std::string unattributed_wait_beyond_world(const Context& c) {
  int world = 0;
  for (const ProcessFacts* f : c.ranks()) world = std::max(world, f->proc->header.ident.world_size);
  if (world <= 0) return {};
  for (const auto* lines : {&c.logs.events, &c.logs.other_errors})
    for (const LogEvent& e : *lines)
      if (e.rank < 0 && e.awaited_rank && *e.awaited_rank >= world)
        return "a process waited for rank " + std::to_string(*e.awaited_rank) + "'s address key (" + e.file + ":" +
               std::to_string(e.line) + "), beyond the " + std::to_string(world) +
               " ranks of WORLD_SIZE in every traced rank's environment: one was given a larger world_size by its "
               "script, but the line carries no rank; per-rank logs (torchrun --log-dir DIR, one file per rank) or "
               "rank-prefixed lines (torchrun --tee 3, or a logging format with the rank) name it";
  return {};
}

// No class fits: say what is missing to tell, and how to get it.
Verdict unknown_with_what_is_missing(const Context& c, const FailedWorkers& failed) {
  const LogFacts& logs = c.logs;
  std::vector<std::string> missing;
  if (!c.has_traces()) missing.push_back("no traces (rerun under rdzvscope run)");
  if (logs.stats[Stat::LogFiles] == 0) missing.push_back("no logs (--log)");
  else if (logs.events.empty() && logs.other_errors.empty())
    missing.push_back("no c10d/TCPStore line in the logs");
  if (failed.any)
    missing.push_back("rank(s) " + rank_list(failed.ranks) + " failed without a rendezvous error in their traces");
  if (const std::string w = unattributed_wait_beyond_world(c); !w.empty()) missing.push_back(w);
  if (!c.absent_ranks.empty())
    missing.push_back(absent_ranks_words(c) +
                      " have no trace (not started, started without rdzvscope, or their directories not given)");
  if (const ProcessFacts* a = failed_agent(c))
    missing.push_back("the launcher agent " + a->proc->label() + " failed" +
                      (c.ranks().empty() ? std::string(" before any worker started") : std::string()));
  // A reverse lookup's warning beside it says nothing of the rendezvous (any_rendezvous_error).
  if (!logs.other_errors.empty() && !logs.any_rendezvous_error())
    missing.push_back(other_error_words(logs.other_errors));
  for (const LogEvent* e : logs.of({LogFamily::RendezvousClosed}))
    if (e->text.find("RendezvousClosedError") != std::string::npos) {
      missing.push_back("the agents' rendezvous was closed when this agent came to it (RendezvousClosedError, " +
                        e->file + ":" + std::to_string(e->line) +
                        "): another job sharing its run id and endpoint ended it, or this job's own agents shut it "
                        "down (a node's workers ended); the run id (torchrun prints it with LOGLEVEL=INFO) and the "
                        "other nodes' logs tell which");
      break;
    }
  if (logs.any({LogFamily::RendezvousTimeout}))
    missing.push_back("the agents' rendezvous never completed (RendezvousTimeoutError: not every node joined "
                      "within the join timeout); the nodes that did not join hold the cause: add their traces and logs");
  Verdict v;
  v.cls = FailureClass::Unknown;
  v.summary = "no failure class fits: " + (missing.empty() ? std::string("nothing went wrong that rdzvscope can see")
                                                           : fmt::format("{}", fmt::join(missing, "; ")));
  v.next_step = "rerun with rdzvscope run --out DIR and pass every rank's log with --log";
  return v;
}

// Flight Recorder dumps with no parting among them (fr_parting.h): every dumped rank reached
// the same collective, and the members of its group that would settle it left no dump, or
// nothing parts at all. Said as what the dumps show, and what would settle it.
Verdict unknown_from_flight_recorder(const FlightRecorderParting* p) {
  Verdict v;
  v.cls = FailureClass::Unknown;
  v.confidence = "low";
  if (!p) {
    v.summary = "PyTorch's Flight Recorder dumps show no rank behind the others (every dumped rank reached the same "
                "collective of each process group, none after the others' timeout), and there are no traces or log "
                "errors";
    v.next_step = "pass every rank's log with --log; if the job hung inside a collective every rank entered, "
                  "`py-spy dump --pid PID` on each rank shows where it waits";
    return v;
  }
  v.summary = "PyTorch's Flight Recorder dumps: " + fr_parting_words(*p);
  v.next_step = "find the dump of rank(s) " + rank_list(p->no_dump) +
                " (TORCH_FR_DUMP_TEMP_FILE<rank> on its host, /tmp/nccl_trace_rank_<rank> by default) or its log: "
                "a rank with no dump either died (its log or the launcher says how) or never entered the collective";
  return v;
}

// The verdict when no rule answered: healthy when everything that can be seen went well.
Verdict verdict_without_candidates(const Context& c) {
  if (!c.has_traces() && c.logs.events.empty() && c.logs.other_errors.empty() && c.flight_recorder_given)
    return unknown_from_flight_recorder(c.fr_parting ? &*c.fr_parting : nullptr);
  const FailedWorkers failed = failed_workers(c);
  const bool traced_ranks_fine = c.has_traces() && !failed.any && !failed_agent(c);
  if (traced_ranks_fine && !c.absent_ranks.empty()) return unknown_for_absent_ranks(c);
  if (traced_ranks_fine && no_rank_found(c)) return unknown_no_rank_found(c);
  if (traced_ranks_fine) return healthy_from_traces(c);
  if (!c.has_traces() && c.logs.stats[Stat::LogFiles] > c.logs.errors.size() && c.logs.events.empty() &&
      c.logs.other_errors.empty())
  {
    if (logs_show_workers_finished(c.logs)) return healthy_from_logs(c.logs);
    if (!c.logs.family_fallbacks.empty()) return healthy_from_family_noise(c.logs);
    return unknown_from_quiet_logs(c.logs);
  }
  return unknown_with_what_is_missing(c, failed);
}

// Absent ranks beside a verdict that is not about them (straggler_timeout says it itself).
void note_absent_ranks(const Context& c, Diagnosis& d) {
  if (c.absent_ranks.empty() || d.verdict.cls == FailureClass::StragglerTimeout || d.verdict.cls == FailureClass::Unknown)
    return;
  Finding f;
  f.cls = d.verdict.cls;
  f.evidence.push_back(absent_ranks_words(c) +
                       " have no trace: not started, started without rdzvscope, or their trace files not given");
  d.findings.push_back(f);
}

// When a rank's failure showed: its first error, else its end (a non-zero exit, or the last
// thing seen of it when it vanished).
std::optional<std::int64_t> failure_time(const ProcessFacts& f) {
  if (!f.failed()) return std::nullopt;
  if (f.first_error) return end_ns(*f.first_error);
  return f.proc->exit_ns.value_or(f.proc->last_event_ns());
}

// The rank whose failure showed first, and when.
std::optional<std::pair<const ProcessFacts*, std::int64_t>> first_failure(const Context& c) {
  std::optional<std::pair<const ProcessFacts*, std::int64_t>> out;
  for (const ProcessFacts* f : c.ranks())
    if (auto t = failure_time(*f); t && (!out || *t < out->second)) out = {{f, *t}};
  return out;
}

// A job whose rendezvous completed before anything failed did not fail at start-up: the
// verdict says so first, and names the rank that failed first (issue 17 item 6).
void note_after_startup(const Context& c, Diagnosis& d) {
  if (d.verdict.cls == FailureClass::Healthy) return;
  const auto completed = c.rendezvous_completed_ns();
  auto first = first_failure(c);
  // The verdict found which rank died first (Evidence::dead_ranks): that one, whatever the
  // last records of the ranks stopped or killed after it say.
  if (!d.evidence.dead_ranks.empty())
    if (const ProcessFacts* dead = c.rank(d.evidence.dead_ranks.front())) {
      // A rank that left early (exit 0) did not fail: it ended then.
      auto t = failure_time(*dead);
      if (!t) t = c.ending(*dead).over_ns;
      if (t) first = {{dead, *t}};
    }
  // At the first collective the verdict names who failed first among the ranks that waited
  // (CollectivePhase::first_failed): not a rank that only went silent before them, whose last
  // record is no failure.
  if (d.evidence.phase && c.collective) first = {{c.collective->first_failed, c.collective->first_failure_ns}};
  // A store host that stopped answering after the rendezvous: no rank failed; every other
  // rank was ended while it waited for the store's reply. Naming the last of them to leave a
  // record "first" (a wait is no record) would send the reader to a rank with nothing to say.
  if (completed && d.verdict.cls == FailureClass::StoreUnresponsive) {
    d.evidence.rendezvous_completed_ns = *completed;
    d.verdict.summary = "the rendezvous completed at " + rel(c, *completed) +
                        " (every rank reached the store and its peers); after it: " + d.verdict.summary;
    d.verdict.next_step = "not a start-up failure: " + d.verdict.next_step;
    return;
  }
  if (!completed || !first) return;
  const Process& p = *first->first->proc;
  // A rank that vanished was alive at its last record and gone by the time another process
  // read the end of its connection (endings.h): when it was last seen a moment before the
  // others finished connecting, it died after them all the same if it was gone only after.
  const Ending& e = c.ending(*first->first);
  const bool vanished_then_gone = p.vanished() && e.over_ns.has_value();
  const std::int64_t gone_ns = vanished_then_gone ? *e.over_ns : first->second;
  const std::int64_t at = first->second < *completed && gone_ns >= *completed ? gone_ns : first->second;
  if (at < *completed) return;
  Evidence& ev = d.evidence;
  ev.rendezvous_completed_ns = *completed;
  ev.first_failed_rank = p.rank;
  ev.first_failure_ns = at;
  const std::string how = e.oom_kill ? "was killed by the kernel's OOM killer"
                          : p.vanished() ? "vanished (killed by a signal?)"
                          : p.exit_status ? "exited with status " + std::to_string(*p.exit_status)
                                          : "failed";
  d.verdict.summary = "the rendezvous completed at " + rel(c, *completed) +
                      " (every rank reached the store and its peers); the failure came after it, first on " +
                      p.label() + (p.vanished() ? ", last seen at " : " at ") + rel(c, first->second) +
                      (gone_ns > first->second ? " and gone by " + rel(c, gone_ns) : std::string()) + ": " +
                      d.verdict.summary;
  // At the first collective the verdict names the rank the first to fail waited for: its
  // next step is about that rank, not the first one's log.
  if (ev.phase)
    d.verdict.next_step = "not a start-up failure: " + d.verdict.next_step;
  else
    d.verdict.next_step = "not a start-up failure: read " + p.label() + "'s log around " + rel(c, first->second) +
                          " (it " + how + " first); " + d.verdict.next_step;
  d.discriminators.set("rendezvous_completed", AfterRendezvous{rel(c, *completed), p.rank, rel(c, at)});
}

// A job torchrun restarted: the diagnosis is the last attempt's.
void note_attempts(int attempts, Diagnosis& d) {
  if (attempts <= 1) return;
  d.discriminators.set("attempts", std::int64_t{attempts});
  Finding f;
  f.cls = d.verdict.cls;
  f.evidence.push_back("torchrun restarted the workers " + std::to_string(attempts - 1) +
                       " time(s) (TORCHELASTIC_RESTART_COUNT 0-" + std::to_string(attempts - 1) +
                       "): this is the last attempt's diagnosis; the earlier attempts' workers are left out "
                       "(analyze them with --runs on one directory per attempt to compare)");
  d.findings.insert(d.findings.begin(), f);
  if (d.verdict.cls != FailureClass::Healthy)
    d.verdict.summary += " (attempt " + std::to_string(attempts) + " of " + std::to_string(attempts) + ")";
}

// A job torchrun restarted whose last attempt succeeded: still healthy (the failure did not
// end the job), but the attempt before it failed, or torchrun would not have restarted: its
// own diagnosis says what cost the restart.
void note_failed_earlier_attempt(const Context& c, Diagnosis& d) {
  const int attempts = c.traces.attempts;
  if (attempts <= 1 || d.verdict.cls != FailureClass::Healthy) return;
  const TraceInputs view = attempt_view(c.traces, attempts - 2);
  const Context earlier_context(view, c.logs);
  const Diagnosis earlier = diagnose(earlier_context);
  const Verdict& e = earlier.verdict;
  const std::string which = "attempt " + std::to_string(attempts - 1);
  const std::string what = std::string(name_of(e.cls)) +
                           (e.initiating_rank ? ", initiating rank " + std::to_string(*e.initiating_rank) : "");
  d.verdict.summary += " in attempt " + std::to_string(attempts) + " of " + std::to_string(attempts) +
                       ", after torchrun restarted the workers: " + which + " failed (" + what + ": " + e.summary + ")";
  d.verdict.next_step = "nothing kept the job from starting; the restart cost " + which + ": " + e.next_step;
  d.discriminators.set("failed_attempt", std::int64_t{attempts - 1});
  d.discriminators.set("failed_attempt_class", std::string(name_of(e.cls)));
  d.discriminators.set("failed_attempt_initiating_rank",
                       e.initiating_rank ? DiscriminatorValue{std::int64_t{*e.initiating_rank}} : NotKnown{});
}

// One row per rank, late ones marked; the absent ranks' own rows among them, in rank order,
// but not for a world of thousands of which one node's directory was given (the
// discriminator lists them).
std::vector<RankRow> rank_rows(const Context& c, const Diagnosis& d) {
  std::vector<RankRow> rows;
  // Late: straggler_timeout's late ranks, or a healthy job's ranks far behind the others.
  const std::set<int> late(d.evidence.late_ranks.begin(), d.evidence.late_ranks.end());
  const std::set<int> dead(d.evidence.dead_ranks.begin(), d.evidence.dead_ranks.end());
  for (const ProcessFacts* f : c.ranks()) {
    RankRow row = row_for(c, *f);
    row.dead = dead.count(f->proc->rank) > 0;
    row.late = late.count(f->proc->rank) > 0 && !row.dead && !d.evidence.phase;
    row.stalled = late.count(f->proc->rank) > 0 && !row.dead && d.evidence.phase;
    if (row.dead || c.ending(*f).stopped()) row.ended = ending_short(c, *f);
    row.collective = collective_span(c, *f, d.evidence.dead_ranks);
    rows.push_back(row);
  }
  constexpr std::size_t kMaxAbsentRows = 256;
  if (c.absent_ranks.empty() || c.absent_ranks.size() > kMaxAbsentRows) return rows;
  for (int r : c.absent_ranks) {
    RankRow row;
    row.rank = r;
    row.role = "absent";
    row.absent = true;
    rows.push_back(row);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const RankRow& a, const RankRow& b) { return a.rank.value_or(-1) < b.rank.value_or(-1); });
  return rows;
}

// "node1:29500, hosted by rank 0 (node1 pid 4242); timeout 3.00 s (configured)".
std::string store_endpoint_line(const Context& c, const Evidence& ev) {
  const ProcessFacts* s = c.store_server(0);
  if (!s) return "";
  std::string line = fmt::format("{}:{}, hosted by {}", s->proc->host, s->listen_port, s->proc->label());
  if (const auto& t = ev.timeout)
    line += "; timeout " + fmt_seconds(t->ms / 1000.0) + " (" + (t->internal_default ? "internal default" : "configured") + ")";
  return line;
}

std::vector<std::string> hosts_of(const TraceInputs& traces) {
  std::vector<std::string> hosts;
  for (const Process& p : traces.processes) hosts.push_back(p.host);
  // Sorted, then unique: a search per process was quadratic (131,072 ranks on 16,384 hosts).
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  return hosts;
}

InputStats input_stats(const TraceInputs& traces, const LogFacts& logs) {
  InputStats in;
  in.counts = traces.stats;
  in.counts += logs.stats;
  for (const auto& e : traces.errors) in.problems.push_back(e.message());
  for (const auto& e : logs.errors) in.problems.push_back(e.message());
  for (const Process& p : traces.processes) {
    std::uint64_t n = 0;
    for (const Event& e : p.events)
      if (e.has(RDZV_F_INJECTED)) ++n;
    if (!n) continue;
    in.counts.add(Stat::InjectedEvents, n);
    in.injected_ranks.push_back(p.rank);
  }
  std::sort(in.injected_ranks.begin(), in.injected_ranks.end());
  in.injected_ranks.erase(std::unique(in.injected_ranks.begin(), in.injected_ranks.end()),
                          in.injected_ranks.end());
  return in;
}

}  // namespace

namespace {
// Logs alone (no trace, no Flight Recorder dump) of a job that went on past its c10d warnings.
// Without any c10d line there is nothing that progress answers: such logs stay with
// verdict_without_candidates (a hang after the last line prints nothing).
bool logs_only_and_went_on(const Context& c) {
  return !c.has_traces() && !c.flight_recorder_given && c.logs.job_went_on && !c.logs.events.empty();
}
}  // namespace

Diagnosis diagnose(const TraceInputs& traces, const LogFacts& logs) {
  const Context model(traces, logs);
  return diagnose(model);
}

Diagnosis diagnose(const Context& c) {
  Diagnosis d;
  d.t0_ns = c.t0();
  // A job that went on past its c10d warnings made them noise: no rule reads them (issue 29).
  std::vector<Candidate> candidates = logs_only_and_went_on(c) ? std::vector<Candidate>{} : candidates_of(c);
  if (!candidates.empty()) adopt(candidates, d);
  else if (logs_only_and_went_on(c)) d.verdict = healthy_from_progress(c.logs);
  else d.verdict = verdict_without_candidates(c);
  find_common_evidence(c, d.evidence);
  common_discriminators(c, d);
  note_absent_ranks(c, d);
  note_after_startup(c, d);
  note_attempts(c.traces.attempts, d);
  note_failed_earlier_attempt(c, d);
  note_near_miss(c, d);
  d.ranks = rank_rows(c, d);
  d.collective = collective_outline(c);
  d.flight_recorder = c.fr_parting;
  d.store_endpoint = store_endpoint_line(c, d.evidence);
  d.clocks = c.traces.clocks;
  d.hosts = hosts_of(c.traces);
  d.inputs = input_stats(c.traces, c.logs);
  return d;
}

}  // namespace rdzvscope
