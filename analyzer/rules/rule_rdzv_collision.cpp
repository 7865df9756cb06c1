// rdzv_collision: two different jobs joined one rendezvous endpoint. Evidence: distinct job
// ids (TORCHELASTIC_RUN_ID / SLURM_JOB_ID) on one store port of one host, or the same rank
// twice there; from logs, a store barrier that counted more workers than the world size.
#include <algorithm>
#include <cerrno>
#include <map>
#include <set>

#include "reader/names.h"
#include "rules.h"

namespace rdzvscope {

namespace {
// The endpoint a process used, and where it leads: a loopback MASTER_ADDR is one endpoint
// per network namespace (jobs in two containers, each on its own 127.0.0.1:29500, do not
// share a store); any other address is one endpoint everywhere.
using Endpoint = std::pair<std::string, std::string>;

Endpoint endpoint_of(const ProcessFacts& f) {
  std::uint16_t port = f.store_port ? f.store_port : f.listen_port;
  if (!port) return {};
  std::string host = bounded_string(f.proc->header.ident.master_addr);
  if (host.empty()) host = f.proc->host;
  return {host + ":" + std::to_string(port), is_loopback_name(host) ? loopback_scope(*f.proc) : ""};
}

// The workers (agents aside) by the endpoint they used.
std::map<Endpoint, std::vector<const ProcessFacts*>> by_endpoint(const Context& c) {
  std::map<Endpoint, std::vector<const ProcessFacts*>> out;
  for (const auto& f : c.facts)
    if (f.proc->role != Role::Agent) {
      auto ep = endpoint_of(f);
      if (!ep.first.empty()) out[ep].push_back(&f);
    }
  return out;
}

// The processes of one endpoint by job id ("" when none), and whether a rank came twice.
struct Jobs {
  std::map<std::string, std::vector<const ProcessFacts*>> members;
  std::set<std::string> named;  // the job ids that are not empty
  bool dup_rank = false;
};

Jobs jobs_of(const std::vector<const ProcessFacts*>& procs) {
  Jobs j;
  std::map<int, int> rank_count;
  for (const ProcessFacts* f : procs) {
    j.members[f->proc->job_key].push_back(f);
    if (f->proc->rank >= 0) ++rank_count[f->proc->rank];
  }
  for (const auto& [k, v] : j.members)
    if (!k.empty()) j.named.insert(k);
  for (const auto& [r, n] : rank_count) j.dup_rank |= n > 1;
  return j;
}

// Two jobs (or one rank twice) on endpoint `ep`: a finding per job, and the verdict.
Candidate collision_at(const std::string& ep, const Jobs& jobs) {
  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::RdzvCollision;
  v.confidence = jobs.named.size() >= 2 ? "high" : "medium";
  std::string job_list;
  for (const auto& [k, members] : jobs.members) {
    Finding fd;
    fd.cls = FailureClass::RdzvCollision;
    std::vector<int> ranks;
    for (const ProcessFacts* f : members) ranks.push_back(f->proc->rank);
    fd.evidence.push_back("job " + (k.empty() ? std::string("(no id)") : k) + ": ranks " + rank_list(ranks) +
                          " used the endpoint " + ep);
    out.findings.push_back(fd);
    job_list += (job_list.empty() ? "" : ", ") + (k.empty() ? std::string("(no id)") : k);
  }
  v.summary = jobs.named.size() >= 2
                  ? "jobs " + job_list + " joined the same rendezvous endpoint " + ep
                  : "the same rank joined the rendezvous endpoint " + ep + " twice: two launches share it";
  v.next_step = "give each job its own endpoint and id: --rdzv-id=$SLURM_JOB_ID and a port derived from the job id (MASTER_PORT / --rdzv-endpoint)";
  out.discriminators.set("endpoint", ep);
  out.discriminators.set("job_ids", NameList{{jobs.named.begin(), jobs.named.end()}});
  return out;
}

// torchelastic restarted the workers of `e`'s source (a restart line anywhere in it: an excerpt
// may begin after the first restart). The workers' store can outlive a restart with keys that
// carry no attempt (see stale_peer_address), so a count in it may include the workers of an
// earlier attempt of the same job.
bool job_restarted(const LogFacts& logs, const LogEvent& e) {
  return std::any_of(logs.restarts.begin(), logs.restarts.end(),
                     [&](const LogEvent& r) { return same_source(r, e); });
}

// Log-only: a store-based barrier that counted more workers than the world size, in a job that
// was not restarted (in one that was, the excess may be its own earlier attempts).
std::optional<Candidate> collision_from_logs(const Context& c) {
  for (const LogEvent* e : c.logs.of({LogFamily::StoreBarrierTimeout, LogFamily::RendezvousClosed})) {
    if (job_restarted(c.logs, *e)) continue;
    auto w = e->text.find("world_size=");
    auto k = e->text.find("worker_count=");
    if (w == std::string::npos || k == std::string::npos) continue;
    long ws = std::strtol(e->text.c_str() + w + 11, nullptr, 10);
    long wc = std::strtol(e->text.c_str() + k + 13, nullptr, 10);
    if (wc <= ws) continue;
    Candidate out;
    out.verdict.cls = FailureClass::RdzvCollision;
    out.verdict.confidence = "medium";
    out.verdict.summary = "the store barrier counted " + std::to_string(wc) + " workers for a world of " +
                          std::to_string(ws) + ": two launches share one store";
    out.verdict.next_step = "give each job its own rendezvous id and port (derive them from the job id)";
    out.findings.push_back(log_finding(FailureClass::RdzvCollision, *e));
    return out;
  }
  return std::nullopt;
}

// Log-only (issue 29): c10d's TCPStore of 2.x checks the other end of a store connection. The
// client pings with a nonce of its own and wants it echoed; the server wants c10d's VALIDATE
// query with its magic number first and drops a client that sends anything else. Either check
// failing says that what is on the store port does not speak this store's protocol: another
// job's store (a store of another PyTorch version answers differently), or another program
// that took the port. One rendezvous endpoint, two users.
std::optional<Candidate> foreign_peer_from_logs(const Context& c) {
  // A ping answered in text is another program's (rule_port_conflict).
  const LogEvent* hit = nullptr;
  for (const LogEvent* e : c.logs.of({LogFamily::ForeignStorePeer}))
    if (e->setting_value != "text" && !hit) hit = e;
  if (!hit) return std::nullopt;
  const LogEvent& e = *hit;
  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::RdzvCollision;
  v.confidence = "medium";
  const bool server_side = e.text.find("VALIDATE") != std::string::npos;
  v.summary = server_side
                  ? "the store host was reached by a client that does not speak its TCPStore protocol (no or a wrong "
                    "VALIDATE query): another job's ranks (another PyTorch version) or another program use this "
                    "store's endpoint"
                  : "the store port answered this client's ping with another value than its own: what listens there is "
                    "not this job's TCPStore (another job's store of another PyTorch version, or another program)";
  v.next_step = "give each job its own endpoint port (derive it from the job id); `ss -tnp 'sport = :PORT'` on the "
                "store host shows which processes hold and use the port";
  out.findings.push_back(log_finding(FailureClass::RdzvCollision, e));
  out.alternatives.push_back({FailureClass::PortConflict, std::nullopt,
                              "a program that is no PyTorch job holds the store port and answers on it",
                              "`ss -ltnp 'sport = :PORT'` on the store host: the process that listens there"});
  return out;
}

bool says(const LogEvent& e, const char* words) { return e.text.find(words) != std::string::npos; }

// A store bind that failed because the port was taken (the legacy backend's bind line, libuv's
// listen line with code -98).
bool port_taken(const LogEvent& e) {
  return (e.has(LogFamily::BindFailed) || e.has(LogFamily::ListenFailed)) &&
         (e.err ? *e.err == EADDRINUSE : e.has(LogFamily::BindFailed));
}

// The run id the logs show is torchelastic's default, `none`, which every job launched without
// --rdzv-id shares: torchrun's launch settings (LOGLEVEL=INFO), or a line naming the rendezvous.
bool default_run_id_shown(const LogFacts& logs) {
  for (const auto& cfg : logs.launch_configs)
    if (auto it = cfg.settings.find("rdzv-id"); it != cfg.settings.end() && it->second == "none") return true;
  for (const LogEvent& e : logs.events)
    if (e.has(LogFamily::RendezvousClosed) && says(e, "rendezvous 'none'")) return true;
  return std::find(logs.log_dir_run_ids.begin(), logs.log_dir_run_ids.end(), "none") != logs.log_dir_run_ids.end();
}

// A torchrun agent whose store bind failed on a taken port did not stop there: c10d's
// rendezvous backend then connects as a client to whatever store holds the port (its agents
// fall back so, since two agents of one job on one host share one store). A rendezvous error
// of that same agent afterwards, the rendezvous closed or its store gone, says that it had
// joined a store that another launch ran and ended: two jobs on one endpoint. So does the same
// process going on after the bind failure (issue 29: LogFacts::went_on_after, its training
// lines): a store server that cannot bind raises, and a process that raised at its store's
// construction goes no further unless something retried it as a client of the port's store.
struct JoinedAfterBind {
  const LogEvent* bind = nullptr;
  const LogEvent* ended = nullptr;  // the first rendezvous error after it, same source
  const rdzv::logs::ProgressLine* went_on = nullptr;  // else its first progress line after it
};

JoinedAfterBind joined_after_bind_failure(const LogFacts& logs) {
  JoinedAfterBind out;
  for (const LogEvent& b : logs.events) {
    if (!port_taken(b)) continue;
    for (const LogEvent& e : logs.events)
      if (e.has(LogFamily::RendezvousClosed) && same_source(e, b) && e.line > b.line) return {&b, &e, nullptr};
    if (!out.bind)
      if (const auto* p = logs.went_on_after(b)) out = {&b, nullptr, p};
  }
  return out;
}

// The first error line of `p`'s file after it (an exception, a transport error, a rendezvous
// line), or nullptr: how the job that went on on another job's store ended, where its log says.
const LogEvent* first_error_after(const LogFacts& logs, const rdzv::logs::ProgressLine& p) {
  const LogEvent* first = nullptr;
  for (const auto* lines : {&logs.events, &logs.other_errors})
    for (const LogEvent& e : *lines)
      if (e.file == p.file && e.line > p.line && (!first || e.line < first->line)) first = &e;
  return first;
}

std::string where(const std::string& file, std::uint64_t line) { return file + ":" + std::to_string(line); }

// What the agent did after it joined: found the rendezvous closed, lost it, or went on (and
// what ended it, where the log says).
std::string after_joining(const LogFacts& logs, const JoinedAfterBind& j, bool closed) {
  if (j.ended) return closed ? "found the rendezvous closed" : "lost that rendezvous";
  std::string words = "went on (" + where(j.went_on->file, j.went_on->line) + ": " + j.went_on->text.substr(0, 100) +
                      ") in a rendezvous on that store";
  if (const LogEvent* e = first_error_after(logs, *j.went_on))
    words += ", and failed later (" + where(e->file, e->line) + ": " + e->text.substr(0, 100) +
             "): when the store's own job ends, its store and rendezvous go with it";
  else
    words += ": it depends on a store that the other launch runs, and ends with it";
  return words;
}

const LogEvent* first_closed_rendezvous(const LogFacts& logs) {
  for (const LogEvent& e : logs.events)
    if (e.has(LogFamily::RendezvousClosed) && says(e, "RendezvousClosedError")) return &e;
  return nullptr;
}

Alternative own_store_host_ended() {
  return {FailureClass::BrokenPipe, std::string("peer_died"),
          "two agents of this one job ran on this host: the second joins the first's store the same way, and the "
          "first, the store's host, ended before it",
          "the other agents' logs and run ids (one job or two?), and `ss -tnp 'sport = :PORT'` on this host while "
          "the jobs run: which processes hold the store port"};
}

Alternative own_agents_closed_it() {
  return {FailureClass::RankDied, std::nullopt,
          "this job's own agents closed the rendezvous: another node's workers failed (or finished) and its agent "
          "shut the rendezvous down before this node joined",
          "the other nodes' agent logs (a ChildFailedError summary, or a clean finish, just before this error); "
          "the run ids of the jobs that use this endpoint"};
}

// A process that went on after its bind failure and logged nothing fatal: the store it joined
// may be its own job's (a second agent of the job on the host joins the first's the same way).
Alternative own_agents_share_it() {
  return {FailureClass::Healthy, std::nullopt,
          "two agents of this one job ran on this host: the second joins the first's store the same way, and "
          "nothing failed",
          "the run ids of the jobs on this host (torchrun prints them with LOGLEVEL=INFO), and `ss -tnp "
          "'sport = :PORT'` while the job runs: which processes hold the store port"};
}

std::optional<Candidate> collision_after_bind_failure(const Context& c, bool default_id) {
  const JoinedAfterBind j = joined_after_bind_failure(c.logs);
  if (!j.bind) return std::nullopt;
  const bool closed = j.ended && says(*j.ended, "RendezvousClosedError");
  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::RdzvCollision;
  v.confidence = closed || default_id ? "medium" : "low";
  v.summary = "this agent could not host the store (its port was taken), joined the store that held the port as "
              "a client (c10d's rendezvous does so), and then " +
              after_joining(c.logs, j, closed) + (j.ended ? ": another launch ran and ended it" : "") +
              (default_id ? "; the run id is torchelastic's default `none`, which every job without --rdzv-id shares"
                          : std::string());
  v.next_step = "give each job its own endpoint port and --rdzv-id (derive them from the job id); `ss -ltnp "
                "'sport = :PORT'` on the store host shows who else holds the port";
  out.findings.push_back(log_finding(FailureClass::RdzvCollision, *j.bind));
  if (j.ended) out.findings.push_back(log_finding(FailureClass::RdzvCollision, *j.ended));
  if (!closed && j.ended) out.alternatives.push_back(own_store_host_ended());
  if (j.went_on && !first_error_after(c.logs, *j.went_on)) out.alternatives.push_back(own_agents_share_it());
  return out;
}

// A rendezvous found closed under the shared default run id: jobs launched without --rdzv-id
// on one endpoint are one rendezvous, and the first to end closes it for the others. The job's
// own agents close it the same way when a node's workers end, so the log alone leans, no more.
std::optional<Candidate> collision_by_default_run_id(const Context& c) {
  const LogEvent* closed = first_closed_rendezvous(c.logs);
  if (!closed) return std::nullopt;
  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::RdzvCollision;
  v.confidence = "low";
  v.summary = "the rendezvous was closed when this agent came to it, and its run id is torchelastic's default "
              "`none`: every job launched without --rdzv-id on this endpoint shares that rendezvous, and the first "
              "to end closes it for the others";
  v.next_step = "give each job its own --rdzv-id (the scheduler's job id) and endpoint port";
  out.findings.push_back(log_finding(FailureClass::RdzvCollision, *closed));
  out.alternatives.push_back(own_agents_closed_it());
  return out;
}

// The alternative: one job of more processes than its world size says (a --nproc or
// --ntasks larger than the trainer's devices), numbered alike.
Alternative one_job_numbered_twice() {
  return {FailureClass::ConfigMismatch, std::nullopt,
          "one job launched with more processes than its world size, whose nodes numbered them alike (the same "
          "node rank on each, an allocation that disagrees with the trainer's node and device counts)",
          "the job id (SLURM_JOB_ID) beside each copy: one job is its settings, two are two launches on one "
          "MASTER_PORT"};
}

// Log-only: ranks announced twice, more announcements than the world size (LogFacts::ranks_twice):
// more processes than one job of that world has took its ranks, two launches on one rendezvous.
std::optional<Candidate> collision_by_rank_twice(const Context& c) {
  const auto& t = c.logs.ranks_twice;
  if (!t || !t->more_than_the_world()) return std::nullopt;
  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::RdzvCollision;
  v.confidence = "low";
  v.summary = std::to_string(t->announced) + " processes entered init_process_group for a world of " +
              std::to_string(t->world) + ", rank(s) " + rank_list(t->twice) +
              " each announced twice in one start-up: two launches took the same ranks of one rendezvous" +
              ranks_never_came_words(*t);
  v.next_step = "check that no second launch used the same MASTER_PORT (a job id beside each copy); give each node "
                "its own node rank (NODE_RANK, SLURM_NODEID, --node_rank) and match the allocation to the trainer";
  out.findings.push_back(log_finding(FailureClass::RdzvCollision, c.logs.init_entries[t->second]));
  out.alternatives.push_back(one_job_numbered_twice());
  return out;
}

}  // namespace

std::string ranks_never_came_words(const LogFacts::RanksTwice& t) {
  if (t.missing.empty()) return {};
  return ", and rank(s) " + rank_list(t.missing) + " never came, so the rendezvous could not complete";
}

std::optional<Candidate> rule_rdzv_collision(const Context& c) {
  for (const auto& [where, procs] : by_endpoint(c)) {
    const Jobs jobs = jobs_of(procs);
    if (jobs.named.size() >= 2 || jobs.dup_rank) return collision_at(where.first, jobs);
  }
  if (auto barrier = collision_from_logs(c)) return barrier;
  if (c.has_traces()) return std::nullopt;
  if (auto foreign = foreign_peer_from_logs(c)) return foreign;
  if (auto twice = collision_by_rank_twice(c)) return twice;
  const bool default_id = default_run_id_shown(c.logs);
  if (auto joined = collision_after_bind_failure(c, default_id)) return joined;
  if (default_id) return collision_by_default_run_id(c);
  return std::nullopt;
}

}  // namespace rdzvscope
