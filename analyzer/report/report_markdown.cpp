// --format markdown: what a support ticket needs, ready to paste (GitHub, Jira, Slack all read
// Markdown): the exact error line, PyTorch version, launcher command with its rendezvous
// flags, the first failing rank, the verdict and next step (and where Flight Recorder dumps say
// the ranks parted, when they were read). Whether it reproduces is unknown
// from one run, and the summary says so rather than leaving the field out.
#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "model/context.h"
#include "model/fr_parting.h"
#include "reader/names.h"
#include "report.h"

namespace rdzvscope {

std::string md_inline(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '\n' || ch == '\r') out += ' ';
    else if (std::string("\\`*[<>|").find(ch) != std::string::npos) (out += '\\') += ch;
    else out += ch;
  }
  return out;
}

namespace {

// A fenced block longer than any run of backticks inside, so log text cannot close it.
std::string md_block(const std::string& text, const char* lang) {
  std::size_t run = 0, longest = 0;
  for (char ch : text) longest = std::max(longest, run = ch == '`' ? run + 1 : 0);
  const std::string fence(std::max<std::size_t>(3, longest + 1), '`');
  return fence + lang + "\n" + text + "\n" + fence + "\n";
}

std::string at(const Diagnosis& d, std::int64_t ns) {
  if (!d.t0_ns) return "";
  return fmt::format("{:+.2f} s", (ns - *d.t0_ns) / 1e9);
}

const RankRow* first_failing(const Diagnosis& d) {
  const RankRow* best = nullptr;
  for (const RankRow& r : d.ranks)
    if (r.first_error_ns && (!best || *r.first_error_ns < *best->first_error_ns)) best = &r;
  return best;
}

// The log line a reader should see first: one a finding quotes, else the first line of the
// rank that failed first, else of the initiating rank, else the earliest stamped line.
const LogEvent* most_relevant_line(const Diagnosis& d, const LogFacts& logs) {
  for (const Finding& f : d.findings)
    for (const std::string& ev : f.evidence)
      for (const LogEvent& e : logs.events)
        if (ev.rfind(e.file + ":" + std::to_string(e.line) + ": ", 0) == 0) return &e;
  auto first_of = [&](int rank) -> const LogEvent* {
    for (const LogEvent& e : logs.events)
      if (e.rank == rank) return &e;
    return nullptr;
  };
  if (const RankRow* r = first_failing(d); r && r->rank)
    if (const LogEvent* e = first_of(*r->rank)) return e;
  if (d.verdict.initiating_rank)
    if (const LogEvent* e = first_of(*d.verdict.initiating_rank)) return e;
  const LogEvent* best = nullptr;
  for (const LogEvent& e : logs.events)
    if (!best || (e.wall_time && (!best->wall_time || *e.wall_time < *best->wall_time))) best = &e;
  return best;
}

// The command that started the job: a launcher agent's (torchrun carries the --rdzv flags),
// else the lowest rank's.
const Process* launcher(const TraceInputs& traces) {
  const Process* best = nullptr;
  for (const Process& p : traces.processes) {
    if (p.role == Role::Agent) return &p;
    if (!best || (p.rank >= 0 && (best->rank < 0 || p.rank < best->rank))) best = &p;
  }
  return best;
}

std::vector<std::string> rdzv_flags(const std::string& cmdline) {
  static const char* kFlags[] = {"--rdzv", "--nnodes", "--nproc", "--node", "--master", "--standalone", "--max-restarts",
                                 "--max_restarts"};
  std::vector<std::string> out;
  std::istringstream in(cmdline);
  std::string tok;
  while (in >> tok)
    for (const char* f : kFlags)
      if (tok.rfind(f, 0) == 0) {
        out.push_back(tok);
        break;
      }
  return out;
}

// The heading, verdict and next step.
std::string verdict_part(const Verdict& v, const std::vector<Alternative>& alternatives) {
  std::string s = "## Rendezvous failure report: `" + std::string(name_of(v.cls)) + "`" + (v.cause ? " (" + *v.cause + ")" : "") + "\n\n";
  s += "**Verdict:** " + md_inline(v.summary) + " (confidence: " + v.confidence + ")\n\n";
  if (!alternatives.empty()) {
    s += "**Or (the logs cannot tell these apart):**\n\n";
    for (const Alternative& a : alternatives) s += "- " + md_inline(alternative_words(a)) + "\n";
    s += "\n";
  }
  s += "**Next step:** " + md_inline(v.next_step) + "\n\n";
  return s;
}

// "rank 2 (node1 pid 7) at +3.00 s: ECONNREFUSED on connect", or from the logs, or unknown.
std::string first_failing_words(const Diagnosis& d, const LogFacts& logs) {
  if (const RankRow* r = first_failing(d))
    return "rank " + (r->rank ? std::to_string(*r->rank) : std::string("?")) + " (" + r->host + " pid " +
           std::to_string(r->pid) + ") at " + at(d, *r->first_error_ns) + ": " + r->first_error;
  if (const LogEvent* e = most_relevant_line(d, logs); e && e->rank >= 0)
    return "rank " + std::to_string(e->rank) + " (from logs, order within the logs only)";
  return "unknown";
}

std::string ranks_traced_row(const Diagnosis& d) {
  if (d.ranks.empty()) return "";
  std::set<std::string> hosts;
  std::size_t traced = 0;
  for (const RankRow& r : d.ranks)
    if (!r.absent) hosts.insert(r.host), ++traced;
  return "| Ranks traced | " + std::to_string(traced) + " on " + std::to_string(hosts.size()) + " host(s) |\n";
}

// The table of facts a ticket asks for first.
std::string facts_table(const Diagnosis& d, const LogFacts& logs) {
  const Verdict& v = d.verdict;
  std::string s = "| | |\n|---|---|\n";
  s += "| First failing rank | " + md_inline(first_failing_words(d, logs)) + " |\n";
  std::string init = v.initiating_rank ? "rank " + std::to_string(*v.initiating_rank) : std::string("none named");
  if (v.initiating_host) init += " on " + *v.initiating_host;
  s += "| Where it started | " + md_inline(init) + " |\n";
  const std::string torch = d.evidence.torch_version ? d.evidence.torch_version->words() : "unknown";
  s += "| PyTorch | " + md_inline(torch) + " |\n";
  s += ranks_traced_row(d);
  if (!d.evidence.absent_ranks.empty())
    s += "| Ranks absent | " + rank_list(d.evidence.absent_ranks) + " of WORLD_SIZE=" +
         std::to_string(d.evidence.expected_world_size.value_or(0)) + ": no trace of them |\n";
  if (!d.store_endpoint.empty()) s += "| Store | " + md_inline(d.store_endpoint) + " |\n";
  for (const ClockEstimate& c : d.clocks)
    if (!c.reference) s += "| Clock of " + md_inline(c.host) + " | " + md_inline(describe_clock(c, d.clocks[0].host)) + " |\n";
  s += "| Reproduced across runs | unknown (one run given) |\n\n";
  return s;
}

// Other distinct messages than `shown`, each with the ranks that printed it: one block of the
// ticket shows whether every rank saw the same thing.
std::string other_lines(const LogFacts& logs, const LogEvent& shown) {
  std::vector<std::pair<std::string, std::vector<int>>> others;
  for (const LogEvent& o : logs.events) {
    if (o.text == shown.text) continue;
    auto it = std::find_if(others.begin(), others.end(), [&](const auto& p) { return p.first == o.text; });
    if (it == others.end()) others.push_back({o.text, {}}), it = others.end() - 1;
    if (o.rank >= 0) it->second.push_back(o.rank);
  }
  if (others.empty()) return "";
  std::string s = "\nOther error lines in the logs:\n\n";
  for (std::size_t i = 0; i < others.size() && i < 8; ++i)
    s += "- " + (others[i].second.empty() ? std::string("") : "rank " + rank_list(others[i].second) + ": ") +
         md_inline(others[i].first.substr(0, 300)) + "\n";
  if (others.size() > 8) s += "- ... and " + std::to_string(others.size() - 8) + " more\n";
  return s;
}

// The most relevant log line and the others, else the first error in the traces.
std::string error_part(const Diagnosis& d, const LogFacts& logs) {
  std::string s = "### Error\n\n";
  if (const LogEvent* e = most_relevant_line(d, logs)) {
    s += "The most relevant log line (" + md_inline(e->file) + ":" + std::to_string(e->line) +
         (e->rank >= 0 ? ", rank " + std::to_string(e->rank) : std::string()) + "):\n\n";
    s += md_block(e->text, "text");
    s += other_lines(logs, *e);
  } else if (const RankRow* r = first_failing(d)) {
    s += "No log line given (pass the logs with --log); the first error in the traces:\n\n" +
         md_block("rank " + (r->rank ? std::to_string(*r->rank) : std::string("?")) + ": " + r->first_error, "text");
  } else {
    s += "No error line: no logs given (--log) and no failed call in the traces.\n";
  }
  return s;
}

// "MASTER_ADDR=node0 MASTER_PORT=29500 ...": the rendezvous variables in a trace's header.
std::string rdzv_environment(const rdzv_identity& id) {
  std::string env;
  if (id.master_addr[0]) env += " MASTER_ADDR=" + bounded_string(id.master_addr);
  if (id.master_port >= 0) env += " MASTER_PORT=" + std::to_string(id.master_port);
  if (id.world_size >= 0) env += " WORLD_SIZE=" + std::to_string(id.world_size);
  if (id.run_id[0]) env += " TORCHELASTIC_RUN_ID=" + bounded_string(id.run_id);
  if (id.slurm_job_id[0]) env += " SLURM_JOB_ID=" + bounded_string(id.slurm_job_id);
  return env.empty() ? env : env.substr(1);
}

std::string launcher_part(const TraceInputs& traces) {
  std::string s = "\n### Launcher command\n\n";
  const Process* p = launcher(traces);
  if (!p) return s + "unknown (no traces; rerun under `rdzvscope run` to record it)\n";
  const std::string cmd = p->header.cmdline;
  s += "From the trace of " + md_inline(p->label()) + (p->role == Role::Agent ? " (launcher agent)" : "") + ":\n\n";
  s += md_block(cmd + (p->header.cmdline_truncated ? " ...(cut)" : ""), "sh");
  std::string f;
  for (const auto& x : rdzv_flags(cmd)) f += (f.empty() ? "" : " ") + x;
  s += "\nRendezvous flags: " + (f.empty() ? std::string("none on the command line") : "`" + f + "`") + "\n";
  const std::string env = rdzv_environment(p->header.ident);
  if (!env.empty()) s += "Rendezvous environment: `" + env + "`\n";
  return s;
}

// Where the Flight Recorder dumps say the ranks parted (Diagnosis::flight_recorder): the
// parting in words, then a row per rank of the group, the ranks the others waited for in bold.
std::string flight_recorder_part(const Diagnosis& d) {
  if (!d.flight_recorder) return "";
  const FlightRecorderParting& p = *d.flight_recorder;
  std::string s = "\n### Flight Recorder\n\nFrom PyTorch's Flight Recorder (" + md_inline(fr_dumps_words(p)) + "): " +
                  md_inline(fr_parting_words(p)) + ".\n\n| Rank | Last collective of process group " + md_inline(p.pg_name) +
                  " | In " + md_inline(fr_collective_words(p)) + " |\n|---|---|---|\n";
  for (int r : fr_ranks(p)) {
    const std::string part = md_inline(fr_rank_part_words(p, r));
    s += "| " + std::to_string(r) + " | " + fr_last_sequence_of(p, r) + " | " + (fr_is_behind(p, r) ? "**" + part + "**" : part) +
         " |\n";
  }
  return s;
}

std::string evidence_part(const Diagnosis& d) {
  if (d.findings.empty()) return "";
  std::string s = "\n### Evidence\n\n";
  for (const Finding& f : d.findings)
    for (const std::string& e : f.evidence) s += "- " + md_inline(e) + "\n";
  return s;
}

// The counters of input_stats.h, in one line.
std::string inputs_part(const InputStats& in) {
  return fmt::format("\n_rdzvscope analyze read {} trace file(s) ({} damaged, {} events lost) and {} log(s) ({} lines matched)._\n",
                     in[Stat::TraceFiles], in[Stat::DamagedFiles], in[Stat::LostEvents], in[Stat::LogFiles],
                     in[Stat::LogLinesMatched]);
}

}  // namespace

std::string diagnosis_markdown(const Diagnosis& d, const Context& model) {
  return verdict_part(d.verdict, d.alternatives) + facts_table(d, model.logs) + error_part(d, model.logs) + launcher_part(model.traces) +
         flight_recorder_part(d) + evidence_part(d) + inputs_part(d.inputs);
}

}  // namespace rdzvscope
