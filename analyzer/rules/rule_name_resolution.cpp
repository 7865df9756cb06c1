// name_resolution: the rendezvous host did not resolve on some rank, and that rank never
// resolved it at all (an IPv6 miss followed by an IPv4 hit is not a failure).
//
// What the failed lookup says is the resolver's (glibc's) own mechanism, and it decides the
// repair (the verdict's cause): EAI_NONAME / HOST_NOT_FOUND (and EAI_NODATA / NO_DATA) are an
// answer, the name does not exist for that node (no /etc/hosts line, no DNS record), however
// long it took: check the name. EAI_AGAIN / TRY_AGAIN is no answer: res_send waits at least a
// second for a DNS server before it tries again or gives up, so an EAI_AGAIN after a second or
// more is a server that did not answer (resolver_not_answering), and one at once a server that
// answered with a failure (SERVFAIL, REFUSED) or could not be reached, like EAI_FAIL /
// NO_RECOVERY (resolver_failed): check /etc/resolv.conf and that server from the node.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include <fmt/format.h>

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

// res_send's shortest wait for a DNS server is one second: an EAI_AGAIN that took this long
// or more waited for an answer that never came (with some slack for the clock).
constexpr std::uint64_t kResolverWaitNs = 900'000'000;

// How long lookups took: "after 8.01 s", "after 3.99 s to 4.02 s"; a short one by its upper
// bound, "within 2 ms" (a millisecond rounded up).
std::string took_words(std::uint64_t shortest_ns, std::uint64_t longest_ns) {
  if (longest_ns < 1'000'000'000)
    return fmt::format("within {} ms", (longest_ns + 999'999) / 1'000'000);
  const std::string a = fmt_seconds(static_cast<double>(shortest_ns) / 1e9);
  const std::string b = fmt_seconds(static_cast<double>(longest_ns) / 1e9);
  return "after " + (a == b ? a : a + " to " + b);
}

// What a failed lookup says (see the top of the file): its cause, and the words for it.
struct LookupKind {
  std::optional<std::string> cause;
  std::string meaning;
};

LookupKind lookup_kind(const std::string& code, std::uint64_t dur_ns) {
  if (code == "EAI_NONAME" || code == "EAI_NODATA" || code == "HOST_NOT_FOUND" || code == "NO_DATA")
    return {"name_unknown",
            "the resolver answered that the name does not exist there (no /etc/hosts line, no DNS "
            "record)"};
  if ((code == "EAI_AGAIN" || code == "TRY_AGAIN") && dur_ns >= kResolverWaitNs)
    return {"resolver_not_answering",
            "the resolver did not answer (no reply from its DNS server within its timeout)"};
  if (code == "EAI_AGAIN" || code == "TRY_AGAIN")
    return {"resolver_failed",
            "the resolver failed at once, without waiting for an answer (its DNS server answered "
            "SERVFAIL or REFUSED, or none could be reached)"};
  if (code == "EAI_FAIL" || code == "NO_RECOVERY")
    return {"resolver_failed",
            "its DNS server failed or refused the query (a non-recoverable failure)"};
  return {std::nullopt, ""};
}

// The failed lookups of one name by one process: their code, count and how long they took.
struct Lookups {
  std::string code;
  int count = 0;
  std::uint64_t first_ns = 0, min_ns = 0,
                max_ns = 0;  // how long the first took, the shortest, the longest
  LookupKind kind;
  // "its lookup ended in EAI_AGAIN after 8.01 s", "rank 2's 3 lookups ended in EAI_NONAME
  // within 4 ms each" (owner: "its", or "rank 2's" when several processes failed).
  std::string words(const std::string& owner) const {
    return owner +
           (count == 1 ? std::string(" lookup") : " " + std::to_string(count) + " lookups") +
           " ended in " + code + " " + took_words(min_ns, max_ns) + (count > 1 ? " each" : "");
  }
};

Lookups lookups_of(const ProcessFacts& f, const Event& first) {
  Lookups l;
  l.code = resolver_error_name(first.op, first.ret);
  l.first_ns = l.min_ns = l.max_ns = first.dur_ns;
  for (const Event* e : f.failed_resolves) {
    if (e->resolve().host != first.resolve().host || resolver_error_name(e->op, e->ret) != l.code)
      continue;
    ++l.count;
    l.min_ns = std::min(l.min_ns, e->dur_ns);
    l.max_ns = std::max(l.max_ns, e->dur_ns);
  }
  l.kind = lookup_kind(l.code, first.dur_ns);
  return l;
}

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
  std::optional<Lookups> lookups;  // the initiating process's failed lookups (traces)
  std::string first_owner;         // that process in words, "rank 2" (traces)
  std::string log_code;            // the gai error a log line gave ("EAI_AGAIN"), logs only
};

// "gai error: -3" in a log line: the getaddrinfo code it printed, as its name.
std::string gai_code_in(const std::string& text) {
  const auto at = text.find("gai error: ");
  if (at == std::string::npos) return "";
  char* end = nullptr;
  const long code = std::strtol(text.c_str() + at + 11, &end, 10);
  if (end == text.c_str() + at + 11 || code >= 0 || code < -200) return "";
  return eai_name(static_cast<int>(code));
}

Failure from_traces(const Context& c, const std::vector<Hit>& hits, Candidate& out) {
  Failure fail;
  const Hit* first = &hits.front();
  for (const Hit& h : hits) {
    if (h.e->wall_ns < first->e->wall_ns) first = &h;
    if (h.f->proc->rank >= 0) fail.ranks.push_back(h.f->proc->rank);
    else fail.others.push_back(h.f->proc->label() + (h.f->proc->role == Role::Agent ? " (torchrun agent)" : ""));
    fail.hosts.insert(h.f->proc->host);
    Finding fd = finding_for(FailureClass::NameResolution, *h.f, h.e->wall_ns);
    const Lookups l = lookups_of(*h.f, *h.e);
    fd.evidence.push_back(h.f->proc->label() + ": lookup of \"" + h.e->resolve().host + "\" from " +
                          rel(c, h.e->wall_ns) + " failed: " + l.code + " " +
                          took_words(h.e->dur_ns, h.e->dur_ns) +
                          (l.kind.meaning.empty() ? std::string() : ": " + l.kind.meaning) + "; " +
                          std::to_string(h.f->failed_resolves.size()) + " failed lookup(s), " +
                          (h.f->connected_ns ? "connected later" : "never reached the store"));
    out.findings.push_back(fd);
  }
  fail.name = first->e->resolve().host;
  fail.lookups = lookups_of(*first->f, *first->e);
  fail.first_owner = first->f->proc->rank >= 0 ? "rank " + std::to_string(first->f->proc->rank)
                                               : first->f->proc->label();
  out.verdict.cause = fail.lookups->kind.cause;
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
  fail.log_code = gai_code_in(first->text);
  if (fail.log_code.empty() && first->gai_code && first->has(LogFamily::ConnectValidate))
    fail.log_code = eai_name(*first->gai_code);
  if (fail.log_code == "EAI_NONAME" || fail.log_code == "EAI_NODATA")
    out.verdict.cause = "name_unknown";
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
  std::string how;
  if (fail.lookups) {
    const bool several = fail.ranks.size() + fail.others.size() > 1;
    how = ": " + fail.lookups->words(several ? fail.first_owner + "'s" : "its") +
          (several ? " (the first to fail)" : "") +
          (fail.lookups->kind.meaning.empty() ? std::string() : ", " + fail.lookups->kind.meaning);
  } else if (fail.log_code == "EAI_AGAIN") {
    how =
        ": EAI_AGAIN (gai error -3), a temporary failure: its DNS server did not answer, or failed "
        "(the logs do "
        "not say how long the lookup took)";
  } else if (!fail.log_code.empty()) {
    const LookupKind k = lookup_kind(fail.log_code, 0);
    how = ": " + fail.log_code + (k.meaning.empty() ? std::string() : ", " + k.meaning);
  }
  v.summary = "\"" + name + "\" did not resolve on " +
              (where_failed.empty() ? std::string("some ranks") : where_failed) + how + elsewhere;
  const std::string where = v.initiating_host ? *v.initiating_host
                                              : std::string("the failing node");
  const std::string shown = name.empty() ? std::string("<rendezvous host>") : name;
  const std::string kind = v.cause                        ? *v.cause
                           : fail.log_code == "EAI_AGAIN" ? "resolver_failed"
                                                          : "";
  if (kind == "resolver_not_answering") {
    v.next_step = "on " + where +
                  ": the DNS server in /etc/resolv.conf did not answer: `cat /etc/resolv.conf` "
                  "there, "
                  "then `dig " +
                  shown + " @<its nameserver>` (is that server up, and reachable from " + where +
                  " on port 53?); or list " + shown + " in " + where +
                  "'s /etc/hosts, or put the IP in MASTER_ADDR / "
                  "--rdzv-endpoint; a PyTorch upgrade will not help";
  } else if (kind == "resolver_failed") {
    v.next_step = "on " + where + ": `cat /etc/resolv.conf`, then `dig " + shown +
                  " @<its nameserver>` (SERVFAIL, "
                  "REFUSED, or no server reachable from there): fix that server or the node's "
                  "resolver "
                  "configuration, or list " +
                  shown +
                  " in /etc/hosts or put the IP in MASTER_ADDR / "
                  "--rdzv-endpoint; a PyTorch upgrade will not help";
  } else if (kind == "name_unknown") {
    v.next_step = "from " + where + ": `getent hosts " + shown +
                  "` prints nothing there: check the spelling of " + shown +
                  " in MASTER_ADDR / --rdzv-endpoint, then " + where +
                  "'s /etc/hosts and the DNS record (and "
                  "search domain) that should hold it; or use the IP; a PyTorch upgrade will not "
                  "help";
  } else {
    v.next_step = "from " + where + ": getent hosts " + shown +
                  " ; if it prints nothing while the IP works, fix the node's resolver "
                  "(/etc/hosts, DNS search "
                  "domain) or use the IP in MASTER_ADDR / --rdzv-endpoint; a PyTorch upgrade will "
                  "not help";
  }
}

// c10d (2.6 on) formats a connected socket's own address with a reverse lookup; when it fails it
// warns "The hostname of the client socket cannot be retrieved. err=-3" (EAI_AGAIN: the resolver
// did not answer, or failed) and goes on. That says nothing of the rendezvous host, which had
// resolved (the socket had connected), and beside a store failure it is a bystander. Alone, on
// every process of the logs, it is the one thing that went wrong: each such lookup waits for
// the resolver first, a start-up slowed by its timeout on every connect.
std::optional<Candidate> reverse_lookups_alone(const Context& c) {
  if (c.has_traces() || c.logs.events.empty()) return std::nullopt;
  // A transport error between ranks is a failure of its own, which the reverse lookups beside
  // it did not cause (stale_peer_address, or unknown with the transport's words).
  for (const LogEvent& e : c.logs.other_errors)
    if (e.family == LogFamily::TransportError || e.family == LogFamily::NcclNoSocketInterface) return std::nullopt;
  std::set<std::pair<std::string, int>> failing;
  for (const LogEvent& e : c.logs.events) {
    if (e.family != LogFamily::ReverseLookupFailed) return std::nullopt;
    failing.insert({e.file + "\n" + e.origin, e.rank});
  }
  const LogEvent& first = c.logs.events.front();
  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::NameResolution;
  v.cause = "reverse_lookup_failed";
  v.confidence = "low";
  v.summary = "the only rendezvous lines are c10d's failed reverse lookups of the ranks' own connections (\"The "
              "hostname of the client socket cannot be retrieved\"" +
              (first.gai_code ? ", err=" + std::to_string(*first.gai_code) : std::string()) + ", " +
              std::to_string(c.logs.events.size()) + " line(s) from " + std::to_string(failing.size()) +
              " process(es)): the resolver does not answer reverse (PTR) queries; every connect waits for it first, "
              "a slow start-up when its DNS server times out; the store's own name had resolved";
  v.next_step = "on a node: `time getent hosts <its own address>` (seconds: the DNS server in /etc/resolv.conf does "
                "not answer PTR queries); add the nodes' addresses to /etc/hosts or fix the resolver";
  out.findings.push_back(log_finding(FailureClass::NameResolution, first));
  out.alternatives.push_back(
      {FailureClass::StragglerTimeout, std::nullopt,
       "the warnings are harmless where the resolver refuses at once, and the job failed or hung for another "
       "reason the logs do not show (a rank late or stuck elsewhere)",
       "how long a reverse lookup takes on the nodes (`time getent hosts <address>`), and rank 0's log or a trace "
       "(rdzvscope run) for who arrived when"});
  return out;
}

// c10d prints a failed lookup of one address family ("The IPv6 network addresses of (H, P) cannot
// be retrieved") as a warning and tries again, the other family too, until its timeout: such
// warnings with no line that ended a wait (a timeout, an exception) and no other error show a
// lookup that failed for a while, not a rendezvous that failed.
bool lookup_warnings_alone(const LogFacts& logs) {
  const bool only_gai = std::all_of(logs.events.begin(), logs.events.end(), [](const LogEvent& e) {
    return e.family == LogFamily::GaiError || e.family == LogFamily::ReverseLookupFailed;
  });
  return only_gai && logs.other_errors.empty() && logs.deaths.empty() && logs.worker_failures.empty();
}

}  // namespace

std::optional<Candidate> rule_name_resolution(const Context& c) {
  Resolved resolved = resolved_names(c);
  const std::vector<Hit> hits = unresolved_lookups(c);
  // A "failed to connect/validate" retry line (PyTorch >= 2.4) counts only through its reason:
  // a lookup failure in it also matches GaiError / HostNotFound; a timeout or a refusal does
  // not make a name-resolution failure.
  std::vector<const LogEvent*> log_hits = c.logs.of({LogFamily::GaiError, LogFamily::HostNotFound});
  // A connect/validate try that ended in the lookup's own error ("... - Name or service not
  // known") is a lookup failure too.
  for (const LogEvent* e : c.logs.of({LogFamily::ConnectValidate}))
    if (e->gai_code && !e->has(LogFamily::GaiError) && !e->has(LogFamily::HostNotFound)) log_hits.push_back(e);
  // A lookup failure after the same process's connect had reached an address follows that
  // connect's error (the first error of a process outranks its follow-on lines).
  std::erase_if(log_hits, [&](const LogEvent* e) { return c.logs.connect_before(*e) != nullptr; });
  if (hits.empty() && log_hits.empty()) return reverse_lookups_alone(c);

  Candidate out;
  out.verdict.cls = FailureClass::NameResolution;
  const Failure fail = !hits.empty() ? from_traces(c, hits, out) : from_logs(log_hits, out);
  word_verdict(fail, resolved, !hits.empty(), out.verdict);
  if (hits.empty() && lookup_warnings_alone(c.logs)) {
    out.verdict.confidence = "low";
    out.verdict.summary += "; but the logs hold only c10d's warnings of failed lookups and no error that ended the "
                           "wait: c10d retries the lookup (and the other address family) until its timeout, so the "
                           "job either hung retrying or went on once the name existed (a pod's DNS name appears "
                           "when the pod is up); the job's end, or a later line of this log, tells which";
  }
  out.evidence.unresolved_name = fail.name;
  out.discriminators.set("host_name", fail.name);
  out.discriminators.set("failed_on_ranks", RankSet{fail.ranks});
  out.discriminators.set("failed_on_hosts", NameList{{fail.hosts.begin(), fail.hosts.end()}});
  NameList elsewhere;  // empty when the name resolved nowhere
  if (auto it = resolved.on.find(fail.name); it != resolved.on.end())
    elsewhere.names.assign(it->second.begin(), it->second.end());
  out.discriminators.set("resolved_elsewhere", std::move(elsewhere));
  // How the initiating process's lookups failed (traces; a log line gives only the code).
  if (fail.lookups) {
    out.discriminators.set("lookup_error", fail.lookups->code);
    out.discriminators.set("seconds_of_failed_lookup",
                           Seconds{std::round(static_cast<double>(fail.lookups->first_ns) / 1e6) /
                                   1000});
  } else if (!fail.log_code.empty()) {
    out.discriminators.set("lookup_error", fail.log_code);
  }
  return out;
}

}  // namespace rdzvscope
