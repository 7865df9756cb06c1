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
std::pair<std::string, std::string> endpoint_of(const ProcessFacts& f) {
  std::uint16_t port = f.store_port ? f.store_port : f.listen_port;
  if (!port) return {};
  std::string host = bounded_string(f.proc->header.ident.master_addr);
  if (host.empty()) host = f.proc->host;
  return {host + ":" + std::to_string(port), is_loopback_name(host) ? loopback_scope(*f.proc) : ""};
}
}  // namespace

std::optional<Candidate> rule_rdzv_collision(const Context& c) {
  std::map<std::pair<std::string, std::string>, std::vector<const ProcessFacts*>> by_endpoint;
  for (const auto& f : c.facts)
    if (f.proc->role != Role::Agent) {
      auto ep = endpoint_of(f);
      if (!ep.first.empty()) by_endpoint[ep].push_back(&f);
    }
  for (const auto& [where, procs] : by_endpoint) {
    const std::string& ep = where.first;
    std::map<std::string, std::vector<const ProcessFacts*>> jobs;
    std::map<int, int> rank_count;
    for (const ProcessFacts* f : procs) {
      jobs[f->proc->job_key].push_back(f);
      if (f->proc->rank >= 0) ++rank_count[f->proc->rank];
    }
    std::set<std::string> named;
    for (const auto& [k, v] : jobs)
      if (!k.empty()) named.insert(k);
    bool dup_rank = false;
    for (const auto& [r, n] : rank_count) dup_rank |= n > 1;
    if (named.size() < 2 && !dup_rank) continue;

    Candidate out;
    Verdict& v = out.verdict;
    v.cls = FailureClass::RdzvCollision;
    v.confidence = named.size() >= 2 ? "high" : "medium";
    std::string job_list;
    for (const auto& [k, members] : jobs) {
      Finding fd;
      fd.cls = FailureClass::RdzvCollision;
      std::vector<int> ranks;
      for (const ProcessFacts* f : members) ranks.push_back(f->proc->rank);
      fd.evidence.push_back("job " + (k.empty() ? std::string("(no id)") : k) + ": ranks " + rank_list(ranks) +
                            " used the endpoint " + ep);
      out.findings.push_back(fd);
      job_list += (job_list.empty() ? "" : ", ") + (k.empty() ? std::string("(no id)") : k);
    }
    v.summary = named.size() >= 2
                    ? "jobs " + job_list + " joined the same rendezvous endpoint " + ep
                    : "the same rank joined the rendezvous endpoint " + ep + " twice: two launches share it";
    v.next_step = "give each job its own endpoint and id: --rdzv-id=$SLURM_JOB_ID and a port derived from the job id (MASTER_PORT / --rdzv-endpoint)";
    out.discriminators["endpoint"] = ep;
    out.discriminators["job_ids"] = named;
    return out;
  }
  // Log-only: a store-based barrier that counted more workers than the world size.
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

}  // namespace rdzvscope
