// name_resolution: the rendezvous host did not resolve on some rank, and that rank never
// resolved it at all (an IPv6 miss followed by an IPv4 hit is not a failure).
#include <map>
#include <set>

#include "reader/names.h"
#include "rules.h"

namespace rdzvscope {

std::optional<Candidate> rule_name_resolution(const Context& c) {
  Candidate out;
  struct Hit {
    const ProcessFacts* f;
    const Event* e;
  };
  std::vector<Hit> hits;
  std::map<std::string, std::set<std::string>> resolved_on;  // name -> hosts where it resolved
  std::map<std::string, std::vector<int>> resolved_ranks;
  for (const auto& f : c.facts)
    for (const Event* e : f.resolves)
      if (e->rec.ret == 0) {
        std::string name = bounded_string(e->rec.u.resolve.host);
        resolved_on[name].insert(f.proc->host);
        if (f.proc->rank >= 0) resolved_ranks[name].push_back(f.proc->rank);
      }
  for (const auto& f : c.facts) {
    if (f.failed_resolves.empty()) continue;
    for (const Event* e : f.failed_resolves) {
      std::string name = bounded_string(e->rec.u.resolve.host);
      bool resolved_here = false;
      for (const Event* ok : f.resolves)
        resolved_here |= ok->rec.ret == 0 && bounded_string(ok->rec.u.resolve.host) == name;
      if (resolved_here || !(f.failed() || !f.connected_ns)) continue;
      hits.push_back({&f, e});
      break;
    }
  }
  // A "failed to connect/validate" retry line (PyTorch >= 2.4) counts only through its reason:
  // a lookup failure in it also matches GaiError / HostNotFound; a timeout or a refusal does
  // not make a name-resolution failure.
  std::vector<const LogEvent*> log_hits = c.logs.of({LogFamily::GaiError, LogFamily::HostNotFound});
  if (hits.empty() && log_hits.empty()) return std::nullopt;

  Verdict& v = out.verdict;
  v.cls = FailureClass::NameResolution;
  std::string name;
  std::vector<int> bad_ranks;
  std::vector<std::string> bad_others;  // processes without a rank: a torchrun agent, say
  std::set<std::string> bad_hosts;
  if (!hits.empty()) {
    const Hit* first = &hits.front();
    for (const Hit& h : hits) {
      if (h.e->wall_ns < first->e->wall_ns) first = &h;
      if (h.f->proc->rank >= 0) bad_ranks.push_back(h.f->proc->rank);
      else bad_others.push_back(h.f->proc->label() + (h.f->proc->role == Role::Agent ? " (torchrun agent)" : ""));
      bad_hosts.insert(h.f->proc->host);
      Finding fd = finding_for(FailureClass::NameResolution, *h.f, h.e->wall_ns);
      fd.evidence.push_back(h.f->proc->label() + ": " + describe(*h.e) + " at " + rel(c, h.e->wall_ns) +
                            " (" + std::to_string(h.f->failed_resolves.size()) + " failed lookups, " +
                            (h.f->connected_ns ? "connected later" : "never reached the store") + ")");
      out.findings.push_back(fd);
    }
    name = bounded_string(first->e->rec.u.resolve.host);
    v.initiating_rank = rank_of(*first->f);
    v.initiating_host = first->f->proc->host;
    v.confidence = "high";
  } else {
    const LogEvent* first = log_hits.front();
    for (const LogEvent* e : log_hits) {
      if (e->rank >= 0) bad_ranks.push_back(e->rank);
      if (e->rank >= 0 && (first->rank < 0 || e->rank < first->rank)) first = e;
    }
    name = first->host;
    v.initiating_rank = rank_of(*first);
    v.confidence = "medium";
    out.findings.push_back(log_finding(FailureClass::NameResolution, *first));
  }
  std::string elsewhere;
  if (auto it = resolved_on.find(name); it != resolved_on.end() && !it->second.empty()) {
    elsewhere = "; the same name resolved on " + std::to_string(it->second.size()) + " host(s) (ranks " +
                rank_list(resolved_ranks[name]) + ")";
  } else if (!hits.empty()) {
    elsewhere = "; it resolved nowhere";
  }
  std::string where_failed = bad_ranks.empty() ? std::string() : "rank(s) " + rank_list(bad_ranks);
  for (const std::string& o : bad_others) where_failed += (where_failed.empty() ? "" : ", ") + o;
  v.summary = "\"" + name + "\" did not resolve on " + (where_failed.empty() ? std::string("some ranks") : where_failed) +
              elsewhere;
  std::string where = v.initiating_host ? *v.initiating_host : std::string("the failing node");
  v.next_step = "from " + where + ": getent hosts " + (name.empty() ? std::string("<rendezvous host>") : name) +
                " ; if it prints nothing while the IP works, fix the node's resolver (/etc/hosts, DNS search "
                "domain) or use the IP in MASTER_ADDR / --rdzv-endpoint; a PyTorch upgrade will not help";
  out.evidence.unresolved_name = name;
  out.discriminators["host_name"] = name;
  out.discriminators["failed_on_ranks"] = bad_ranks;
  out.discriminators["failed_on_hosts"] = bad_hosts;
  out.discriminators["resolved_elsewhere"] = resolved_on.count(name) ? resolved_on[name] : std::set<std::string>{};
  return out;
}

}  // namespace rdzvscope
