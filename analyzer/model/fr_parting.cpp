#include "fr_parting.h"

#include <algorithm>
#include <set>
#include <vector>

#include "context.h"  // rank_list, fmt_seconds

namespace rdzvscope {

namespace {

// One process group as the dumps show it.
struct Group {
  std::string name, desc;
  std::set<int> members;                           // pg_config's ranks, else the ranks dumped
  std::map<int, const FrDump*> dumps;              // the members' dumps
  std::map<int, std::int64_t> last;                // each dump's last collective in the group
};

const FrEntry* entry_of(const FrDump& d, const std::string& pg, std::int64_t seq) {
  for (const FrEntry& e : d.entries)
    if (!e.is_p2p && e.pg_name == pg && e.collective_seq_id == seq) return &e;
  return nullptr;
}

std::map<std::string, Group> groups_of(const FrInputs& in) {
  std::map<std::string, Group> out;
  for (const FrDump& d : in.dumps) {
    for (const auto& [pg, ranks] : d.pg_ranks) {
      Group& g = out[pg];
      g.name = pg;
      g.members.insert(ranks.begin(), ranks.end());
    }
    for (const FrEntry& e : d.entries) {
      if (e.is_p2p) continue;
      Group& g = out[e.pg_name];
      g.name = e.pg_name;
      if (g.desc.empty()) g.desc = e.pg_desc;
      g.last[d.rank] = std::max(g.last[d.rank], e.collective_seq_id);
    }
  }
  for (auto& [name, g] : out) {
    // Every process is a member of WORLD (group "0"), whatever pg_config says: on the 2.13 CPU
    // build gloo's pg_config holds WORLD under the name "", not "0".
    if (name == "0")
      for (const auto& [n, other] : out)
        if (n.empty()) g.members.insert(other.members.begin(), other.members.end());
    // A dump of a member that has no entry of the group never entered any of its collectives.
    for (const FrDump& d : in.dumps)
      if (name == "0" || g.members.count(d.rank) || g.last.count(d.rank)) {
        g.dumps[d.rank] = &d;
        g.last.emplace(d.rank, 0);
        g.members.insert(d.rank);
      }
  }
  return out;
}

void fill_common(const Group& g, std::int64_t seq, FlightRecorderParting& p) {
  p.pg_name = g.name;
  p.pg_desc = g.desc;
  p.sequence = seq;
  p.last_sequence = g.last;
  for (int r : g.members)
    if (!g.dumps.count(r)) p.no_dump.push_back(r);
  for (int r : p.waited) {
    const FrEntry* e = entry_of(*g.dumps.at(r), g.name, seq);
    if (!e) continue;
    if (p.op.empty()) {
      p.op = e->op;
      p.backend = e->backend;
    }
    p.state[r] = e->state;
    if (e->timeout_ms && !p.timeout_ms) p.timeout_ms = e->timeout_ms;
    if (e->time_created_ns && (!p.first_entered_ns || *e->time_created_ns < *p.first_entered_ns))
      p.first_entered_ns = e->time_created_ns;
  }
}

// The ranks at the lowest last sequence, when others went further.
std::optional<FlightRecorderParting> never_entered(const Group& g) {
  if (g.last.empty()) return std::nullopt;
  const auto [lo, hi] = std::minmax_element(g.last.begin(), g.last.end(),
                                            [](const auto& a, const auto& b) { return a.second < b.second; });
  if (lo->second == hi->second) return std::nullopt;
  FlightRecorderParting p;
  p.kind = FlightRecorderParting::Kind::NeverEntered;
  for (const auto& [r, last] : g.last) (last == lo->second ? p.behind : p.waited).push_back(r);
  fill_common(g, lo->second + 1, p);
  return p;
}

// Every dumped rank entered the same last collective: one that enqueued it after the first
// rank's timeout in it had run out came late (fr_parting.h). The lowest such collective.
std::optional<FlightRecorderParting> entered_late(const Group& g) {
  if (g.last.empty() || g.last.begin()->second == 0) return std::nullopt;
  const std::int64_t last = g.last.begin()->second;
  for (std::int64_t seq = std::max<std::int64_t>(1, last - 64); seq <= last; ++seq) {
    std::optional<std::int64_t> deadline;
    for (const auto& [r, d] : g.dumps) {
      const FrEntry* e = entry_of(*d, g.name, seq);
      if (e && e->time_created_ns && e->timeout_ms) {
        const std::int64_t t = *e->time_created_ns + *e->timeout_ms * 1'000'000;
        if (!deadline || t < *deadline) deadline = t;
      }
    }
    if (!deadline) continue;
    FlightRecorderParting p;
    p.kind = FlightRecorderParting::Kind::EnteredLate;
    for (const auto& [r, d] : g.dumps) {
      const FrEntry* e = entry_of(*d, g.name, seq);
      if (e && e->time_created_ns && *e->time_created_ns > *deadline) {
        p.behind.push_back(r);
        p.late_ns[r] = *e->time_created_ns - *deadline;
      } else {
        p.waited.push_back(r);
      }
    }
    if (p.behind.empty() || p.waited.empty()) continue;
    fill_common(g, seq, p);
    return p;
  }
  return std::nullopt;
}

// No parting among the dumps, but members without one: they would settle it.
std::optional<FlightRecorderParting> undecided(const Group& g) {
  std::int64_t last_seq = 0;
  for (const auto& [r, last] : g.last) last_seq = std::max(last_seq, last);
  if (g.dumps.size() == g.members.size() || last_seq == 0) return std::nullopt;
  FlightRecorderParting p;
  p.kind = FlightRecorderParting::Kind::Undecided;
  for (const auto& [r, last] : g.last) p.waited.push_back(r);
  fill_common(g, last_seq, p);
  return p;
}

}  // namespace

std::optional<FlightRecorderParting> find_fr_parting(const FrInputs& in) {
  if (in.empty()) return std::nullopt;
  const auto groups = groups_of(in);
  std::optional<FlightRecorderParting> found;
  // A group where the ranks part says more than one where they merely may have.
  for (auto* find : {&never_entered, &entered_late, &undecided}) {
    for (const auto& [name, g] : groups)
      if ((found = (*find)(g))) break;
    if (found) break;
  }
  if (!found) return std::nullopt;
  for (const FrDump& d : in.dumps) found->files.push_back(d.path);
  found->version = in.dumps.front().version;
  return found;
}

const char* fr_kind_name(FlightRecorderParting::Kind k) {
  switch (k) {
    case FlightRecorderParting::Kind::NeverEntered: return "never_entered";
    case FlightRecorderParting::Kind::EnteredLate: return "entered_late";
    case FlightRecorderParting::Kind::Undecided: return "undecided";
  }
  return "undecided";
}

std::string fr_collective_words(const FlightRecorderParting& p) {
  return "collective " + std::to_string(p.sequence) + (p.op.empty() ? "" : " (" + p.op + ")") + " of process group " +
         p.pg_name + (p.pg_desc.empty() ? "" : " (" + p.pg_desc + ")");
}

std::string fr_parting_words(const FlightRecorderParting& p, const std::string& where) {
  const std::string coll = fr_collective_words(p) + (where.empty() ? "" : ", " + where);
  const std::string behind = (p.behind.size() == 1 ? "rank " : "ranks ") + rank_list(p.behind);
  const std::string waited = (p.waited.size() == 1 ? "rank " : "ranks ") + rank_list(p.waited);
  std::string s;
  switch (p.kind) {
    case FlightRecorderParting::Kind::NeverEntered:
      s = behind + " never entered " + coll + "; " + waited + " waited in it";
      break;
    case FlightRecorderParting::Kind::EnteredLate: {
      std::int64_t most = 0;
      for (const auto& [r, ns] : p.late_ns) most = std::max(most, ns);
      s = behind + " entered " + coll + ", only " + fmt_seconds(most / 1e9) + " after the first rank's " +
          (p.timeout_ms ? fmt_seconds(*p.timeout_ms / 1000.0) + " " : std::string()) + "timeout in it had run out; " +
          waited + " had waited in it";
      break;
    }
    case FlightRecorderParting::Kind::Undecided:
      s = waited + " entered " + coll + ", their last in the dumps";
      break;
  }
  if (!p.no_dump.empty())
    s += "; " + std::string(p.no_dump.size() == 1 ? "rank " : "ranks ") + rank_list(p.no_dump) +
         " left no dump (dead, or never dumped): whether " + (p.no_dump.size() == 1 ? "it" : "they") +
         " entered is not known";
  return s;
}

std::string fr_dumps_words(const FlightRecorderParting& p) {
  return std::to_string(p.files.size()) + " dump(s), format " + p.version;
}

std::string fr_last_sequence_words(const FlightRecorderParting& p) {
  std::string last;
  for (const auto& [r, s] : p.last_sequence) last += (last.empty() ? "" : ", ") + std::to_string(r) + ": " + std::to_string(s);
  return "last collective of process group " + p.pg_name + " by rank: " + last;
}

std::vector<int> fr_ranks(const FlightRecorderParting& p) {
  std::vector<int> out;
  for (const auto& [r, s] : p.last_sequence) out.push_back(r);
  out.insert(out.end(), p.no_dump.begin(), p.no_dump.end());
  return out;
}

std::string fr_last_sequence_of(const FlightRecorderParting& p, int rank) {
  const auto last = p.last_sequence.find(rank);
  return last == p.last_sequence.end() ? "no dump" : std::to_string(last->second);
}

bool fr_is_behind(const FlightRecorderParting& p, int rank) {
  return std::find(p.behind.begin(), p.behind.end(), rank) != p.behind.end();
}

std::string fr_rank_part_words(const FlightRecorderParting& p, int rank) {
  auto in = [rank](const std::vector<int>& v) { return std::find(v.begin(), v.end(), rank) != v.end(); };
  if (in(p.no_dump)) return "left no dump (dead, or never dumped)";
  if (fr_is_behind(p, rank) && p.kind == FlightRecorderParting::Kind::NeverEntered) return "never entered it";
  if (const auto late = p.late_ns.find(rank); late != p.late_ns.end())
    return "entered it " + fmt_seconds(late->second / 1e9) + " after the first rank's timeout in it had run out";
  const auto state = p.state.find(rank);
  const std::string entry = state == p.state.end() ? std::string() : " (its entry: " + state->second + ")";
  // Undecided: they entered it, but whether they waited there for a rank is what is not known.
  if (p.kind == FlightRecorderParting::Kind::Undecided) return "entered it, its last in its dump" + entry;
  if (in(p.waited)) return "waited in it" + entry;
  return "entered it";
}

}  // namespace rdzvscope
