// config_mismatch: the rendezvous settings that must be the same on every rank of a job
// (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, TORCHELASTIC_RUN_ID; for torchrun agents
// --rdzv-endpoint, --rdzv-id, --rdzv-backend, --nnodes, --master-addr, --master-port) differ
// between traced processes of a job that failed. The processes that disagree with the rest
// (the fewer; on a tie, those that disagree with the store host, or that point at a port where
// no traced store listens while one listens at the others' port) initiated it: their refused
// connects, and the others' timeouts waiting for them, are its symptoms.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "reader/names.h"
#include "model/launcher_options.h"
#include "rules.h"

namespace rdzvscope {

namespace {

// One traced process of the job that carries settings: a rank (a worker or the store host) or
// a torchrun agent; the two kinds are compared among themselves only (an agent's own settings
// are not its workers').
struct Member {
  const ProcessFacts* f;
  std::map<std::string, std::string> settings;  // name -> value; a setting not set is absent
};

// Whether a rank's store connects went to another port than its header's MASTER_PORT.
bool connected_elsewhere(const ProcessFacts& f) {
  const int at_start = f.proc->header.ident.master_port;
  return f.first_store_attempt_ns && f.store_port != 0 && at_start > 0 && f.store_port != at_start;
}

// The MASTER_PORT a rank used: env:// reads it when init_process_group runs, and a script may
// set its own before that (os.environ), after the header took the environment at the start
// (under torchrun, the launcher's). Where most ranks that tried the store went to their
// header's port, one that went elsewhere used the port its connects went to.
int used_master_port(const ProcessFacts& f, bool most_used_the_header) {
  return most_used_the_header && connected_elsewhere(f) ? f.store_port : f.proc->header.ident.master_port;
}

bool most_used_the_header_port(const std::vector<const ProcessFacts*>& ranks) {
  int same = 0, elsewhere = 0;
  for (const ProcessFacts* f : ranks)
    if (f->first_store_attempt_ns) ++(connected_elsewhere(*f) ? elsewhere : same);
  return same > elsewhere;
}

// The rank's own store wait for the key of a rank its header's WORLD_SIZE does not have: a
// gloo group's init_process_group reads every rank's address key (".../0" to ".../W-1", W the
// world_size it was given), so a rank waiting for ".../N" with N >= its header's WORLD_SIZE was
// given a world_size above it, by its script (init_process_group(world_size=...)) after the
// header took its environment (under torchrun, the launcher's).
const LogEvent* wait_beyond_header_world(const Context& c, const ProcessFacts& f) {
  const int header = f.proc->header.ident.world_size;
  if (header <= 0 || f.proc->rank < 0) return nullptr;
  for (const auto* lines : {&c.logs.events, &c.logs.other_errors})
    for (const LogEvent& e : *lines)
      if (e.rank == f.proc->rank && e.awaited_rank && *e.awaited_rank >= header) return &e;
  return nullptr;
}

// The WORLD_SIZE a rank used: its header's, or "N or more" when its own wait shows it waited
// for rank N-1's key beyond it.
std::string used_world_size(const Context& c, const ProcessFacts& f) {
  if (const LogEvent* e = wait_beyond_header_world(c, f)) return std::to_string(*e->awaited_rank + 1) + " or more";
  return std::to_string(f.proc->header.ident.world_size);
}

std::map<std::string, std::string> rank_settings(const Context& c, const ProcessFacts& f, bool most_used_the_header) {
  const rdzv_identity& id = f.proc->header.ident;
  std::map<std::string, std::string> out;
  if (const std::string a = bounded_string(id.master_addr); !a.empty()) out["MASTER_ADDR"] = a;
  if (const int port = used_master_port(f, most_used_the_header); port > 0) out["MASTER_PORT"] = std::to_string(port);
  if (id.world_size > 0) out["WORLD_SIZE"] = used_world_size(c, f);
  if (const std::string r = bounded_string(id.run_id); !r.empty()) out["TORCHELASTIC_RUN_ID"] = r;
  return out;
}

// A rank, not a torchrun agent: named "rank N" rather than by its label.
bool is_worker_rank(const ProcessFacts& f) { return f.proc->rank >= 0 && f.proc->role != Role::Agent; }

std::string who(const ProcessFacts& f) {
  return is_worker_rank(f) ? "rank " + std::to_string(f.proc->rank) : f.proc->label();
}

// A setting on which the members disagree, and who is wrong.
struct Mismatch {
  std::string setting;
  std::string expected;  // the value the job agrees on
  std::map<std::string, std::vector<const ProcessFacts*>> by_value;
  std::vector<const ProcessFacts*> deviants;
};

// The value more members have than any other, if one does.
template <typename Value, typename Member>
std::optional<Value> strict_majority(const std::map<Value, std::vector<Member>>& by) {
  std::size_t best = 0, second = 0;
  std::optional<Value> best_value;
  for (const auto& [v, ms] : by) {
    if (ms.size() > best) {
      second = best;
      best = ms.size();
      best_value = v;
    } else if (ms.size() > second) {
      second = ms.size();
    }
  }
  return best > second ? best_value : std::nullopt;
}

// Whose value is the job's: the strict majority; on a tie, the store host's (or the value of a
// MASTER_PORT where a traced store listens, when only one of them has a listener).
std::optional<std::string> expected_value(
    const Context& c, const std::string& setting,
    const std::map<std::string, std::vector<const ProcessFacts*>>& by) {
  if (auto most = strict_majority(by)) return most;
  std::set<std::string> hosts_value;
  for (const auto& [v, ms] : by)
    for (const ProcessFacts* f : ms)
      if (f->listen_ns) hosts_value.insert(v);
  if (hosts_value.size() == 1) return *hosts_value.begin();
  if (setting == "MASTER_PORT") {
    std::set<std::string> listened;
    for (const auto& [v, ms] : by)
      if (c.store_server(static_cast<std::uint16_t>(std::stoi(v)))) listened.insert(v);
    if (listened.size() == 1) return *listened.begin();
  }
  return std::nullopt;
}

std::vector<Mismatch> mismatches_among(const Context& c, const std::vector<Member>& members) {
  std::set<std::string> names;
  for (const Member& m : members)
    for (const auto& kv : m.settings) names.insert(kv.first);
  std::vector<Mismatch> out;
  for (const std::string& name : names) {
    Mismatch mm;
    mm.setting = name;
    for (const Member& m : members)
      if (auto it = m.settings.find(name); it != m.settings.end())
        mm.by_value[it->second].push_back(m.f);
    if (mm.by_value.size() < 2) continue;
    auto expected = expected_value(c, name, mm.by_value);
    if (!expected) continue;
    mm.expected = *expected;
    for (const auto& [v, ms] : mm.by_value)
      if (v != mm.expected) mm.deviants.insert(mm.deviants.end(), ms.begin(), ms.end());
    out.push_back(std::move(mm));
  }
  return out;
}

// The traced store a process connected to: the listener on its store port.
const ProcessFacts* store_of(const Context& c, const ProcessFacts& f) {
  return f.connected_ns && f.store_port ? c.store_server(f.store_port) : nullptr;
}

// The differing processes connected to one traced store and the agreeing ones to another: the
// job split in two rendezvous (a torchrun agent whose --rdzv-endpoint named a port of its own
// host, and hosted a store there), which no relay in front of one store does.
bool split_between_stores(const Context& c, const Mismatch& m) {
  std::set<const ProcessFacts*> deviant_stores;
  for (const ProcessFacts* f : m.deviants)
    if (const ProcessFacts* s = store_of(c, *f)) deviant_stores.insert(s);
  for (const ProcessFacts* f : m.by_value.at(m.expected)) {
    const ProcessFacts* s = store_of(c, *f);
    if (s && !deviant_stores.empty() && !deviant_stores.count(s)) return true;
  }
  return false;
}

// Where the store is reached may legitimately differ between ranks: a different spelling of
// one host ("node0" and "node0.cluster", a name and its address), or another port in front of
// the same store (a relay, port forwarding, a Kubernetes Service). Such a difference is no
// mismatch unless it did harm: a process of the job failed without ever reaching the store.
bool did_harm(const Context& c, const Mismatch& m) {
  static const std::set<std::string> kEndpointSettings{"MASTER_ADDR", "master-addr", "MASTER_PORT",
                                                       "master-port", "rdzv-endpoint"};
  if (!kEndpointSettings.count(m.setting)) return true;
  for (const auto& f : c.facts)
    if (f.proc->role != Role::Helper && f.failed() && !f.connected_ns) return true;
  return split_between_stores(c, m);
}

bool job_failed(const Context& c) {
  for (const auto& f : c.facts)
    if (f.proc->role != Role::Helper && f.failed()) return true;
  return false;
}

// What a deviant rank's endpoint did: "12 refused connect(s) to 127.0.0.1:29501, where no
// traced store listens; never connected".
std::string endpoint_words(const Context& c, const ProcessFacts& f) {
  std::string out;
  std::vector<const Event*> failed = f.refused;
  failed.insert(failed.end(), f.connect_timeouts.begin(), f.connect_timeouts.end());
  failed.insert(failed.end(), f.connect_other_failures.begin(), f.connect_other_failures.end());
  if (!failed.empty()) {
    const Event* e = failed.front();
    const std::string dest = format_sockaddr(e->peer())
                                 .value_or("port " + std::to_string(f.store_port));
    out = std::to_string(failed.size()) + " failed store connect(s) to " + dest + " (first " +
          describe(*e) + " at " + rel(c, e->wall_ns) + ")";
    if (f.store_port && !c.store_server(f.store_port)) out += ", where no traced store listens";
  }
  if (f.first_store_attempt_ns)
    out += std::string(out.empty() ? "" : "; ") + (f.connected_ns
                                                       ? "connected at " + rel(c, *f.connected_ns)
                                                       : std::string("never connected"));
  return out;
}

// From the logs alone: the store endpoint a rank's lines show, and whether it got there. A
// wait on a store socket names the remote end it had connected to (2.x "waitForInput: ...
// remote=[H]:P"); a connect timeout, a failed lookup, a retried or failed connect name where it
// tried.
struct LogEndpoint {
  int rank = -1;
  std::string where;  // "127.0.0.1:29500"
  int port = 0;
  bool reached = false;
  const LogEvent* line = nullptr;
};

std::vector<LogEndpoint> log_endpoints(const Context& c) {
  std::map<int, LogEndpoint> first;  // by rank: its first line that names the store endpoint
  for (const LogEvent& e : c.logs.events) {
    const bool reached = e.has(LogFamily::WaitForInputTimeout);
    const bool tried = e.has(LogFamily::ClientConnectTimeout) || e.has(LogFamily::GaiError) ||
                       e.has(LogFamily::ConnectValidate) || e.has(LogFamily::ConnectFailed);
    if (e.rank < 0 || !e.port || *e.port <= 0 || e.host.empty() || (!reached && !tried) || first.count(e.rank))
      continue;
    std::string host = e.host;
    if (host.rfind("::ffff:", 0) == 0) host = host.substr(7);  // a dual-stack socket's IPv4 peer
    first[e.rank] = {e.rank, host + ":" + std::to_string(*e.port), *e.port, reached, &e};
  }
  std::vector<LogEndpoint> out;
  for (auto& [rank, ep] : first) out.push_back(ep);
  return out;
}

// The port the job agrees on: the strict majority of the ranks; on a tie, the one port some
// rank reached (a store listened there).
std::optional<int> job_port(const std::map<int, std::vector<const LogEndpoint*>>& by_port) {
  if (auto most = strict_majority(by_port)) return most;
  std::set<int> reached;
  for (const auto& [port, eps] : by_port)
    for (const LogEndpoint* ep : eps)
      if (ep->reached) reached.insert(port);
  if (reached.size() == 1) return *reached.begin();
  return std::nullopt;
}

// Ranks whose logs show them trying a store port where the others were (MASTER_PORT differs),
// and never reaching it: a rank that reached its port reached a store there (a relay, port
// forwarding), which is no mismatch. Only the port is compared: one host spelled two ways
// ("node0", its address) is one host.
std::optional<Candidate> from_logs(const Context& c) {
  const std::vector<LogEndpoint> eps = log_endpoints(c);
  std::map<int, std::vector<const LogEndpoint*>> by_port;
  for (const LogEndpoint& ep : eps) by_port[ep.port].push_back(&ep);
  if (by_port.size() < 2) return std::nullopt;
  const auto expected = job_port(by_port);
  if (!expected) return std::nullopt;
  std::vector<const LogEndpoint*> deviants, agreeing = by_port.at(*expected);
  for (const LogEndpoint& ep : eps)
    if (ep.port != *expected) {
      if (ep.reached) return std::nullopt;
      deviants.push_back(&ep);
    }

  auto ranks_of = [](const std::vector<const LogEndpoint*>& v) {
    std::vector<int> r;
    for (const LogEndpoint* ep : v) r.push_back(ep->rank);
    return r;
  };
  auto names_of = [](const std::vector<const LogEndpoint*>& v) {
    std::vector<std::string> r;
    for (const LogEndpoint* ep : v) r.push_back("rank " + std::to_string(ep->rank));
    return r;
  };
  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::ConfigMismatch;
  v.cause = "MASTER_PORT";
  v.confidence = "medium";  // logs only: what each rank was given is in the traces' headers
  v.initiating_rank = deviants.front()->rank;
  const std::vector<int> dev_ranks = ranks_of(deviants), ok_ranks = ranks_of(agreeing);
  v.summary = (dev_ranks.size() == 1 ? "rank " : "ranks ") + rank_list(dev_ranks) + " tried the store at " +
              deviants.front()->where + " and never reached it, where rank" + (ok_ranks.size() == 1 ? " " : "s ") +
              rank_list(ok_ranks) + " used " + agreeing.front()->where +
              ": the ranks of one job must agree on MASTER_PORT (from the logs; each rank's settings are in "
              "its trace under rdzvscope run)";
  v.next_step = "make MASTER_ADDR/MASTER_PORT identical on every rank: find what set port " +
                std::to_string(deviants.front()->port) + " for rank " + std::to_string(deviants.front()->rank) +
                " (its job script, environment or profile: `env | grep -E 'MASTER_|WORLD_SIZE|TORCHELASTIC'`)";
  MismatchedSetting setting{"MASTER_PORT", std::to_string(*expected), {}, names_of(deviants)};
  for (const auto& [port, v_eps] : by_port) {
    setting.values.emplace_back(std::to_string(port), names_of(v_eps));
    for (const LogEndpoint* ep : v_eps) out.findings.push_back(log_finding(FailureClass::ConfigMismatch, *ep->line));
  }
  out.discriminators.set("mismatched_settings", std::vector<MismatchedSetting>{std::move(setting)});
  out.discriminators.set("differing_processes", NameList{names_of(deviants)});
  return out;
}

// Logs alone, torchrun agents: the launch configuration each agent's INFO lines printed
// (LogFacts::launch_configs). Where one agent's value of a setting that must agree differs from
// the strict majority's, and the logs show a failure, that agent's log is the odd one.
using LaunchConfig = LogFacts::LaunchConfig;

std::string source_words(const LaunchConfig& cfg) {
  return "the agent of " + cfg.file + ":" + std::to_string(cfg.line) + (cfg.origin.empty() ? "" : " (" + cfg.origin + ")");
}

struct AgentLogMismatch {
  std::string setting, expected;
  std::map<std::string, std::vector<const LaunchConfig*>> by_value;
  std::vector<const LaunchConfig*> deviants;
};

std::optional<AgentLogMismatch> find_agent_log_mismatch(const Context& c) {
  if (c.logs.launch_configs.size() < 2 || (c.logs.events.empty() && c.logs.other_errors.empty())) return std::nullopt;
  for (const char* setting : {"rdzv-endpoint", "rdzv-id", "nnodes", "rdzv-backend"}) {
    AgentLogMismatch m{setting, "", {}, {}};
    for (const LaunchConfig& cfg : c.logs.launch_configs)
      if (auto it = cfg.settings.find(setting); it != cfg.settings.end()) m.by_value[it->second].push_back(&cfg);
    if (m.by_value.size() < 2) continue;
    const auto expected = strict_majority(m.by_value);
    if (!expected) continue;
    m.expected = *expected;
    for (const auto& [value, cfgs] : m.by_value)
      if (value != m.expected) m.deviants.insert(m.deviants.end(), cfgs.begin(), cfgs.end());
    return m;
  }
  return std::nullopt;
}

std::optional<Candidate> from_agent_logs(const Context& c) {
  const auto m = find_agent_log_mismatch(c);
  if (!m) return std::nullopt;
  const LaunchConfig& odd = *m->deviants.front();
  const std::string odd_value = odd.settings.at(m->setting);
  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::ConfigMismatch;
  v.cause = m->setting;
  v.confidence = "medium";  // logs only: the agents' command lines are in their traces under rdzvscope run
  if (!odd.origin.empty()) v.initiating_host = odd.origin;
  const std::size_t agreeing = m->by_value.at(m->expected).size();
  v.summary = source_words(odd) + " has " + m->setting + "=" + odd_value + " where " + std::to_string(agreeing) +
              " other agent" + (agreeing == 1 ? " has " : "s have ") + m->expected +
              ": the torchrun agents of one job must agree on it (from torchrun's INFO lines "
              "\"Starting elastic_operator with launch configs\")";
  v.next_step = "make --rdzv-endpoint, --rdzv-id and --nnodes identical on every node: find what set " + m->setting +
                "=" + odd_value + " for the agent of " + odd.file +
                " (its job script, or PET_* variables in its environment: `env | grep PET_`)";
  Finding fd;
  fd.cls = FailureClass::ConfigMismatch;
  std::vector<std::string> dev;
  for (const LaunchConfig* cfg : m->deviants) dev.push_back(cfg->file + ":" + std::to_string(cfg->line));
  MismatchedSetting setting{m->setting, m->expected, {}, dev};
  for (const auto& [value, cfgs] : m->by_value) {
    std::vector<std::string> who_list;
    for (const LaunchConfig* cfg : cfgs) {
      who_list.push_back(cfg->file + ":" + std::to_string(cfg->line));
      fd.evidence.push_back(m->setting + "=" + value + " in " + source_words(*cfg) + (value == m->expected ? "" : "  <- differs"));
    }
    setting.values.emplace_back(value, std::move(who_list));
  }
  out.findings.push_back(fd);
  out.discriminators.set("mismatched_settings", std::vector<MismatchedSetting>{std::move(setting)});
  out.discriminators.set("differing_processes", NameList{std::move(dev)});
  return out;
}

// What config_mismatch found among the traced processes: the settings they disagree on (that
// did harm), and the processes that disagree with the job.
struct TracedMismatches {
  std::vector<Mismatch> found;
  std::vector<const ProcessFacts*> deviants;  // on any setting, ranks in rank order, then agents
};

// The ranks' settings, when they are the ranks of one job.
std::vector<Member> rank_members(const Context& c) {
  std::vector<Member> ranks;
  // One rank twice is two launches (rdzv_collision), not one job whose ranks disagree.
  std::set<int> seen;
  bool one_job = true;
  for (const ProcessFacts* f : c.ranks()) one_job &= seen.insert(f->proc->rank).second;
  const bool most_used_the_header = most_used_the_header_port(c.ranks());
  if (one_job)
    for (const ProcessFacts* f : c.ranks()) ranks.push_back({f, rank_settings(c, *f, most_used_the_header)});
  return ranks;
}

std::vector<Member> agent_members(const Context& c) {
  std::vector<Member> agents;
  for (const auto& f : c.facts)
    if (f.proc->role == Role::Agent) agents.push_back({&f, torchrun_options(f.proc->header.cmdline)});
  return agents;
}

// The processes that disagree on any setting, in rank order (agents after ranks).
std::vector<const ProcessFacts*> deviants_in_rank_order(const std::vector<Mismatch>& found) {
  std::vector<const ProcessFacts*> deviants;
  for (const Mismatch& m : found)
    for (const ProcessFacts* f : m.deviants)
      if (std::find(deviants.begin(), deviants.end(), f) == deviants.end()) deviants.push_back(f);
  std::stable_sort(deviants.begin(), deviants.end(),
                   [](const ProcessFacts* a, const ProcessFacts* b) {
                     const bool ra = is_worker_rank(*a);
                     const bool rb = is_worker_rank(*b);
                     if (ra != rb) return ra;
                     return a->proc->rank < b->proc->rank;
                   });
  return deviants;
}

std::optional<TracedMismatches> find_traced_mismatches(const Context& c) {
  if (!job_failed(c)) return std::nullopt;
  TracedMismatches t;
  t.found = mismatches_among(c, rank_members(c));
  for (Mismatch& m : mismatches_among(c, agent_members(c))) t.found.push_back(std::move(m));
  std::erase_if(t.found, [&](const Mismatch& m) { return !did_harm(c, m); });
  if (t.found.empty()) return std::nullopt;
  t.deviants = deviants_in_rank_order(t.found);
  return t;
}

// Side by side: each setting, each value, who has it (and whether a traced store listens there).
std::vector<MismatchedSetting> word_settings_side_by_side(const Context& c, const std::vector<Mismatch>& found,
                                                          Candidate& out) {
  std::vector<MismatchedSetting> settings;
  for (const Mismatch& m : found) {
    Finding fd;
    fd.cls = FailureClass::ConfigMismatch;
    MismatchedSetting setting{m.setting, m.expected, {}, {}};
    for (const auto& [value, ms] : m.by_value) {
      std::string line = m.setting + "=" + value + " on " + processes_words(ms);
      if (m.setting == "MASTER_PORT") {
        const ProcessFacts* s = c.store_server(static_cast<std::uint16_t>(std::stoi(value)));
        line += s ? " (the store of " + s->proc->label() + " listens there)"
                  : " (no traced store listens there)";
      }
      line += value == m.expected ? "" : "  <- differs";
      fd.evidence.push_back(line);
      std::vector<std::string> who_list;
      for (const ProcessFacts* f : ms) who_list.push_back(who(*f));
      setting.values.emplace_back(value, std::move(who_list));
    }
    out.findings.push_back(fd);
    for (const ProcessFacts* f : m.deviants) setting.differing.push_back(who(*f));
    settings.push_back(std::move(setting));
  }
  return settings;
}

// What each differing process's endpoint did, where it shows; and the wait that showed a
// WORLD_SIZE its header does not.
void word_deviant_endpoints(const Context& c, const std::vector<const ProcessFacts*>& deviants, Candidate& out) {
  for (const ProcessFacts* f : deviants) {
    if (const LogEvent* e = wait_beyond_header_world(c, *f)) {
      Finding fd = log_finding(FailureClass::ConfigMismatch, *e);
      fd.evidence.push_back(f->proc->label() + " waited for rank " + std::to_string(*e->awaited_rank) +
                            "'s address key, beyond the " + std::to_string(f->proc->header.ident.world_size) +
                            " ranks of WORLD_SIZE in its environment at start: its init_process_group was given a "
                            "larger world_size (by its script, after its launcher set WORLD_SIZE)");
      out.findings.push_back(fd);
    }
    const std::string ep = endpoint_words(c, *f);
    if (ep.empty()) continue;
    Finding fd = finding_for(FailureClass::ConfigMismatch, *f,
                             f->first_error ? std::optional(f->first_error->wall_ns)
                                            : std::nullopt);
    fd.evidence.push_back(f->proc->label() + ": " + ep);
    out.findings.push_back(fd);
  }
}

// The values of a setting other than the one the job agrees on: "29501, 29502".
std::string differing_values(const Mismatch& m) {
  std::string values;
  for (const auto& [value, ms] : m.by_value)
    if (value != m.expected) values += (values.empty() ? "" : ", ") + value;
  return values;
}

std::string mismatch_summary(const std::vector<Mismatch>& found, const ProcessFacts& first) {
  const Mismatch& m0 = found.front();
  const std::vector<const ProcessFacts*>& agreeing = m0.by_value.at(m0.expected);
  std::string summary = processes_words(m0.deviants) + " ha" + (m0.deviants.size() == 1 ? "s " : "ve ") +
                        m0.setting + "=" + differing_values(m0) + " where " + processes_words(agreeing) + " ha" +
                        (agreeing.size() == 1 ? "s " : "ve ") + m0.expected +
                        (first.proc->role == Role::Agent
                             ? ": the torchrun agents of one job must agree on it"
                             : ": the ranks of one job must agree on it");
  if (found.size() > 1) {
    std::string more;
    for (std::size_t i = 1; i < found.size(); ++i)
      more += (more.empty() ? "" : ", ") + found[i].setting;
    summary += " (also different: " + more + ")";
  }
  if (m0.setting == "MASTER_PORT" || m0.setting == "MASTER_ADDR" || m0.setting == "rdzv-endpoint" ||
      m0.setting == "master-addr" || m0.setting == "master-port")
    summary += "; " + who(first) +
               " looked for the store elsewhere and the others waited for it";
  return summary;
}

std::string mismatch_next_step(const Mismatch& m0, const ProcessFacts& first) {
  return "make the rendezvous settings identical on every rank (MASTER_ADDR/MASTER_PORT, WORLD_SIZE; "
         "torchrun: --rdzv-endpoint, --rdzv-id, --nnodes): find what set " +
         m0.setting + "=" + differing_values(m0) + " for " + who(first) +
         (who(first) == first.proc->label() ? std::string() : " on " + first.proc->host) +  // a label names it
         " (its job script, environment or profile: `env | grep -E "
         "'MASTER_|WORLD_SIZE|TORCHELASTIC'`)";
}

// Log-only: ranks announced twice by no more processes than the world has
// (LogFacts::ranks_twice): the job's own processes, numbered alike by nodes that were given the
// same node rank (or an allocation the trainer's counts disagree with), and the ranks nobody
// took never came. Two launches on one rendezvous would bring more processes than one world.
std::optional<Candidate> from_ranks_numbered_alike(const Context& c) {
  const auto& t = c.logs.ranks_twice;
  if (!t || t->more_than_the_world()) return std::nullopt;
  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::ConfigMismatch;
  v.confidence = "low";
  v.cause = "node_rank";
  v.summary = "rank(s) " + rank_list(t->twice) + " of a world of " + std::to_string(t->world) +
              " were each announced twice in one start-up, by " + std::to_string(t->announced) +
              " processes, no more than the world has: one job whose nodes numbered their processes alike (the same "
              "node rank on each, or an allocation that disagrees with the trainer's node and device counts)" +
              ranks_never_came_words(*t);
  v.next_step = "give each node its own node rank (NODE_RANK, SLURM_NODEID, --node_rank) and match the allocation "
                "to the trainer (srun --ntasks-per-node = devices per node, --nodes = num_nodes)";
  out.findings.push_back(log_finding(FailureClass::ConfigMismatch, c.logs.init_entries[t->second]));
  out.alternatives.push_back({FailureClass::RdzvCollision, std::nullopt,
                              "two launches on one MASTER_PORT, each with only part of its processes started",
                              "the job id (SLURM_JOB_ID) beside each copy: two ids are two launches"});
  return out;
}

}  // namespace

std::optional<Candidate> rule_config_mismatch(const Context& c) {
  if (!c.has_traces()) {
    if (auto env = config_mismatch_from_launcher_env(c)) return env;
    if (auto agents = from_agent_logs(c)) return agents;
    if (auto alike = from_ranks_numbered_alike(c)) return alike;
    return from_logs(c);
  }
  const std::optional<TracedMismatches> t = find_traced_mismatches(c);
  if (!t) return std::nullopt;
  const ProcessFacts& first = *t->deviants.front();
  Candidate out;
  Verdict& v = out.verdict;
  v.cls = FailureClass::ConfigMismatch;
  v.confidence = "high";
  v.cause = t->found.front().setting;
  if (is_worker_rank(first)) v.initiating_rank = first.proc->rank;
  v.initiating_host = first.proc->host;
  std::vector<MismatchedSetting> settings = word_settings_side_by_side(c, t->found, out);
  word_deviant_endpoints(c, t->deviants, out);
  v.summary = mismatch_summary(t->found, first);
  v.next_step = mismatch_next_step(t->found.front(), first);
  out.discriminators.set("mismatched_settings", std::move(settings));
  NameList dev;
  for (const ProcessFacts* f : t->deviants) dev.names.push_back(who(*f));
  out.discriminators.set("differing_processes", std::move(dev));
  return out;
}

}  // namespace rdzvscope
