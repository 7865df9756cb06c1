// rdzv_collision: two different jobs joined one rendezvous endpoint. Evidence: distinct job
// ids (TORCHELASTIC_RUN_ID / SLURM_JOB_ID) on one store port of one host, or the same rank
// twice there; from logs, a store barrier that counted more workers than the world size.
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

// Log-only: a store-based barrier that counted more workers than the world size.
std::optional<Candidate> collision_from_logs(const Context& c) {
  for (const LogEvent* e : c.logs.of({LogFamily::StoreBarrierTimeout, LogFamily::RendezvousClosed})) {
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

}  // namespace

std::optional<Candidate> rule_rdzv_collision(const Context& c) {
  for (const auto& [where, procs] : by_endpoint(c)) {
    const Jobs jobs = jobs_of(procs);
    if (jobs.named.size() >= 2 || jobs.dup_rank) return collision_at(where.first, jobs);
  }
  return collision_from_logs(c);
}

}  // namespace rdzvscope
