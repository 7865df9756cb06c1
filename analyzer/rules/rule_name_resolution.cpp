// name_resolution: the rendezvous host did not resolve on some rank, and that rank never
// resolved it at all (an IPv6 miss followed by an IPv4 hit is not a failure).
#include <map>
#include <set>

#include "reader/names.h"
#include "rules.h"

namespace rdzvscope {

namespace {

// Where each name resolved: the hosts, and the ranks.
struct Resolved {
  std::map<std::string, std::set<std::string>> on;
  std::map<std::string, std::vector<int>> ranks;
};

Resolved resolved_names(const Context& c) {
  Resolved r;
  for (const auto& f : c.facts)
    for (const Event* e : f.resolves)
      if (e->ret == 0) {
        std::string name = e->resolve().host;
        r.on[name].insert(f.proc->host);
        if (f.proc->rank >= 0) r.ranks[name].push_back(f.proc->rank);
      }
  return r;
}

struct Hit {
  const ProcessFacts* f;
  const Event* e;
};

// Per process that failed (or never reached the store), its first failed lookup of a name it
// never resolved.
std::vector<Hit> unresolved_lookups(const Context& c) {
  std::vector<Hit> hits;
  for (const auto& f : c.facts) {
    for (const Event* e : f.failed_resolves) {
      std::string name = e->resolve().host;
      bool resolved_here = false;
      for (const Event* ok : f.resolves)
        resolved_here |= ok->ret == 0 && ok->resolve().host == name;
      if (resolved_here || !(f.failed() || !f.connected_ns)) continue;
      hits.push_back({&f, e});
      break;
    }
  }
  return hits;
}

// The name that failed, and where.
struct Failure {
  std::string name;
  std::vector<int> ranks;
  std::vector<std::string> others;  // processes without a rank: a torchrun agent, say
  std::set<std::string> hosts;
};

Failure from_traces(const Context& c, const std::vector<Hit>& hits, Candidate& out) {
  Failure fail;
  const Hit* first = &hits.front();
  for (const Hit& h : hits) {
    if (h.e->wall_ns < first->e->wall_ns) first = &h;
    if (h.f->proc->rank >= 0) fail.ranks.push_back(h.f->proc->rank);
    else fail.others.push_back(h.f->proc->label() + (h.f->proc->role == Role::Agent ? " (torchrun agent)" : ""));
    fail.hosts.insert(h.f->proc->host);
    Finding fd = finding_for(FailureClass::NameResolution, *h.f, h.e->wall_ns);
    fd.evidence.push_back(h.f->proc->label() + ": " + describe(*h.e) + " at " + rel(c, h.e->wall_ns) + " (" +
                          std::to_string(h.f->failed_resolves.size()) + " failed lookups, " +
                          (h.f->connected_ns ? "connected later" : "never reached the store") + ")");
    out.findings.push_back(fd);
  }
  fail.name = first->e->resolve().host;
  out.verdict.initiating_rank = rank_of(*first->f);
  out.verdict.initiating_host = first->f->proc->host;
  out.verdict.confidence = "high";
  return fail;
}

// The lowest rank that printed a lookup failure.
Failure from_logs(const std::vector<const LogEvent*>& log_hits, Candidate& out) {
  Failure fail;
  const LogEvent* first = log_hits.front();
  for (const LogEvent* e : log_hits) {
    if (e->rank >= 0) fail.ranks.push_back(e->rank);
    if (e->rank >= 0 && (first->rank < 0 || e->rank < first->rank)) first = e;
  }
  fail.name = first->host;
  out.verdict.initiating_rank = rank_of(*first);
  out.verdict.confidence = "medium";
  out.findings.push_back(log_finding(FailureClass::NameResolution, *first));
  return fail;
}

void word_verdict(const Failure& fail, Resolved& resolved, bool traced, Verdict& v) {
  const std::string& name = fail.name;
  std::string elsewhere;
  if (auto it = resolved.on.find(name); it != resolved.on.end() && !it->second.empty()) {
    elsewhere = "; the same name resolved on " + std::to_string(it->second.size()) + " host(s) (ranks " +
                rank_list(resolved.ranks[name]) + ")";
  } else if (traced) {
    elsewhere = "; it resolved nowhere";
  }
  std::string where_failed = fail.ranks.empty() ? std::string() : "rank(s) " + rank_list(fail.ranks);
  for (const std::string& o : fail.others) where_failed += (where_failed.empty() ? "" : ", ") + o;
  v.summary = "\"" + name + "\" did not resolve on " + (where_failed.empty() ? std::string("some ranks") : where_failed) +
              elsewhere;
  std::string where = v.initiating_host ? *v.initiating_host : std::string("the failing node");
  v.next_step = "from " + where + ": getent hosts " + (name.empty() ? std::string("<rendezvous host>") : name) +
                " ; if it prints nothing while the IP works, fix the node's resolver (/etc/hosts, DNS search "
                "domain) or use the IP in MASTER_ADDR / --rdzv-endpoint; a PyTorch upgrade will not help";
}

}  // namespace

std::optional<Candidate> rule_name_resolution(const Context& c) {
  Resolved resolved = resolved_names(c);
  const std::vector<Hit> hits = unresolved_lookups(c);
  // A "failed to connect/validate" retry line (PyTorch >= 2.4) counts only through its reason:
  // a lookup failure in it also matches GaiError / HostNotFound; a timeout or a refusal does
  // not make a name-resolution failure.
  std::vector<const LogEvent*> log_hits = c.logs.of({LogFamily::GaiError, LogFamily::HostNotFound});
  if (hits.empty() && log_hits.empty()) return std::nullopt;

  Candidate out;
  out.verdict.cls = FailureClass::NameResolution;
  const Failure fail = !hits.empty() ? from_traces(c, hits, out) : from_logs(log_hits, out);
  word_verdict(fail, resolved, !hits.empty(), out.verdict);
  out.evidence.unresolved_name = fail.name;
  out.discriminators.set("host_name", fail.name);
  out.discriminators.set("failed_on_ranks", RankSet{fail.ranks});
  out.discriminators.set("failed_on_hosts", NameList{{fail.hosts.begin(), fail.hosts.end()}});
  NameList elsewhere;  // empty when the name resolved nowhere
  if (auto it = resolved.on.find(fail.name); it != resolved.on.end())
    elsewhere.names.assign(it->second.begin(), it->second.end());
  out.discriminators.set("resolved_elsewhere", std::move(elsewhere));
  return out;
}

}  // namespace rdzvscope
