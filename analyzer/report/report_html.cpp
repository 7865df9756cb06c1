// --html: one self-contained page to attach to a ticket or open from a cluster's shared disk.
// Inline CSS and an SVG drawn here; no script and no URL of any kind, so it renders the same
// offline, behind a proxy, or in a mail client that blocks remote content. Tooltips are SVG
// <title> elements and the per-rank table a <details>: both work without JavaScript.
// Every string that came from the inputs (host names, log text, commands) goes through esc().
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "model/context.h"
#include "model/fr_parting.h"
#include "report.h"

namespace rdzvscope {

namespace {

// Above this many ranks one row per rank is a wall of lines: rows become hosts.
constexpr std::size_t kMaxRankRows = 64;

std::string esc(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += (ch < 0x20 && ch != '\n' && ch != '\t') ? '?' : static_cast<char>(ch);
    }
  }
  return out;
}

std::string num(double v) { return fmt::format("{:.1f}", v); }

std::string secs(double s) { return fmt::format("{:+.2f} s", s); }

// One row of the arrival chart: a rank, or a host's ranks folded (min / median / max).
struct ChartRow {
  std::string label, css, tip;
  std::string ended;  // RankRow::ended ("exit 1", "stopped (SIGTERM from its agent)"), drawn at its end
  std::optional<double> launch, resolved, connect, connected, error, end;
  bool vanished = false;
  std::optional<double> last_seen;  // vanished ranks: their last traced event
  std::string error_text;
  int ranks = 1;
  std::optional<double> arrive_min, arrive_max;  // aggregated rows: spread of first store connects
  // Its part in the first collective after the rendezvous (RankRow::collective), s after t0.
  struct Collective {
    CollectiveSpan::Part part = CollectiveSpan::Part::Waited;
    double begin = 0, end = 0;
    std::optional<double> entered, deadline, gone;
    std::string tip;
  };
  std::optional<Collective> collective;
};

struct Chart {
  std::vector<ChartRow> rows;
  bool aggregated = false;
  std::size_t hosts = 0;
  std::optional<double> deadline;  // the fast ranks' timeout deadline, s after t0
  std::string deadline_note;
  std::optional<double> completed;  // the rendezvous completed (Diagnosis::collective)
};

std::optional<double> rel_s(const Diagnosis& d, const std::optional<std::int64_t>& ns) {
  if (!ns || !d.t0_ns) return std::nullopt;
  return (*ns - *d.t0_ns) / 1e9;
}

// "rank 2 never entered the first collective after the rendezvous: it left the store's
// rendezvous at +6.34 s, made its pairs by +6.84 s, ..."
std::string collective_tip(const Diagnosis& d, const std::string& who, const CollectiveSpan& c) {
  auto t = [&](std::int64_t ns) { return secs(*rel_s(d, ns)); };
  std::string s = who + " in the first collective after the rendezvous: " + part_words(c.part) + "; it left the store's "
                  "rendezvous at " + t(c.begin_ns) + (c.pairs_done_ns ? ", made its pairs by " + t(*c.pairs_done_ns) : "");
  s += c.entered_ns ? ", sent its first collective message at " + t(*c.entered_ns) : std::string(", sent nothing on its pairs");
  if (c.part == CollectiveSpan::Part::Dead)
    return s + ", was last alive at " + t(c.end_ns) + " and died: " + c.ended + (c.gone_ns ? ", gone by " + t(*c.gone_ns) : "");
  s += ", its part ended at " + t(c.end_ns);
  if (c.entered_ns) s += " after waiting " + fmt_seconds(seconds(*c.entered_ns, c.end_ns));
  if (c.deadline_ns) s += "; its own timeout deadline " + t(*c.deadline_ns);
  return s;
}

std::optional<ChartRow::Collective> collective_of(const Diagnosis& d, const RankRow& r, const std::string& who) {
  if (!r.collective || !d.t0_ns) return std::nullopt;
  const CollectiveSpan& c = *r.collective;
  ChartRow::Collective out;
  out.part = c.part;
  out.begin = *rel_s(d, c.begin_ns);
  out.end = *rel_s(d, c.end_ns);
  out.entered = rel_s(d, c.entered_ns);
  out.deadline = rel_s(d, c.deadline_ns);
  out.gone = rel_s(d, c.gone_ns);
  out.tip = collective_tip(d, who, c);
  return out;
}

ChartRow row_of(const Diagnosis& d, const RankRow& r) {
  ChartRow c;
  c.label = "rank " + (r.rank ? std::to_string(*r.rank) : std::string("?")) + "  " + r.host;
  c.launch = rel_s(d, r.launched_ns);
  c.resolved = rel_s(d, r.resolved_ns);
  c.connect = rel_s(d, r.first_store_connect_ns);
  c.connected = rel_s(d, r.connected_ns);
  c.error = rel_s(d, r.first_error_ns);
  c.end = rel_s(d, r.exit_ns);
  if (r.vanished) c.last_seen = rel_s(d, r.last_seen_ns);
  c.vanished = r.vanished;
  c.collective = collective_of(d, r, "rank " + (r.rank ? std::to_string(*r.rank) : std::string("?")));
  c.error_text = r.first_error;
  if (r.late || r.absent) c.css += " late";
  if (r.stalled) c.css += " late stalled";
  if (r.dead) c.css += " dead";
  c.ended = r.ended;
  if (r.absent) c.css += " absent";
  if (r.rank && r.rank == d.verdict.initiating_rank) c.css += " initiating";
  if (r.absent) {
    c.label = "rank " + std::to_string(r.rank.value_or(-1)) + "  (absent)";
    c.tip = c.label + ": no trace of it; WORLD_SIZE expects it";
    return c;
  }
  auto t = [](const std::optional<double>& v) { return v ? secs(*v) : std::string("-"); };
  c.tip = c.label + " (pid " + std::to_string(r.pid) + ", " + r.role + "): launched " + t(c.launch) + ", resolved " +
          t(c.resolved) + ", first store connect " + t(c.connect) + ", connected " + t(c.connected) +
          (r.first_error.empty() ? "" : ", first error " + t(c.error) + " " + r.first_error) + ", " +
          (r.dead ? (r.ended == "exit 0" ? "ended before joining: " : "died on its own: ") + r.ended
           : r.vanished ? std::string("vanished") : "exit " + (r.exit_status ? std::to_string(*r.exit_status) : std::string("?")));
  return c;
}

std::optional<double> median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// "+6.84 s" or "+6.84 s to +6.90 s": the spread of one time over a host's ranks.
std::string spread_words(const std::vector<double>& v) {
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return secs(*lo) == secs(*hi) ? secs(*lo) : secs(*lo) + " to " + secs(*hi);
}

// A host's folded ranks in the first collective (all of one part: build_chart folds by host
// and part): the medians of their spans draw it, the tooltip gives the spreads. nullopt when
// none of them has a span.
std::optional<ChartRow::Collective> host_collective(const Diagnosis& d, const std::string& who,
                                                    const std::vector<const RankRow*>& rs) {
  std::vector<double> begin, end, entered, deadline, gone;
  auto add = [&](std::vector<double>& v, const std::optional<std::int64_t>& ns) {
    if (auto s = rel_s(d, ns)) v.push_back(*s);
  };
  std::optional<CollectiveSpan::Part> part;
  for (const RankRow* r : rs) {
    if (!r->collective) continue;
    const CollectiveSpan& c = *r->collective;
    part = c.part;
    add(begin, c.begin_ns), add(end, c.end_ns), add(entered, c.entered_ns), add(deadline, c.deadline_ns), add(gone, c.gone_ns);
  }
  if (!part || begin.empty() || end.empty()) return std::nullopt;
  ChartRow::Collective out;
  out.part = *part;
  out.begin = *median(begin), out.end = *median(end);
  out.entered = median(entered), out.deadline = median(deadline), out.gone = median(gone);
  out.tip = who + " in the first collective after the rendezvous: " + part_words(*part) + " (" +
            std::to_string(begin.size()) + " ranks); they left the store's rendezvous " + spread_words(begin) +
            (entered.empty() ? std::string(", sent nothing on their pairs")
                             : ", sent their first collective message " + spread_words(entered)) +
            ", their part ended " + spread_words(end) +
            (deadline.empty() ? std::string() : "; their own timeout deadlines " + spread_words(deadline));
  return out;
}

// The ranks of one host as a single row: medians draw the phases, the whisker the spread.
ChartRow host_row(const Diagnosis& d, const std::string& host, const std::vector<const RankRow*>& rs) {
  std::vector<double> launch, resolved, connect, connected, error, end;
  auto add = [&](std::vector<double>& v, const std::optional<std::int64_t>& ns) {
    if (auto s = rel_s(d, ns)) v.push_back(*s);
  };
  std::vector<int> ranks;
  for (const RankRow* r : rs) {
    add(launch, r->launched_ns), add(resolved, r->resolved_ns), add(connect, r->first_store_connect_ns);
    add(connected, r->connected_ns), add(error, r->first_error_ns), add(end, r->exit_ns);
    if (r->rank) ranks.push_back(*r->rank);
  }
  ChartRow c;
  c.css = " host";
  c.ranks = static_cast<int>(rs.size());
  c.label = host + "  (" + std::to_string(rs.size()) + " ranks)";
  c.launch = median(launch), c.resolved = median(resolved), c.connect = median(connect);
  c.connected = median(connected), c.error = median(error), c.end = median(end);
  if (!connect.empty()) {
    c.arrive_min = *std::min_element(connect.begin(), connect.end());
    c.arrive_max = *std::max_element(connect.begin(), connect.end());
  }
  c.tip = "host " + host + ", ranks " + rank_list(ranks) + ": first store connect min " +
          (c.arrive_min ? secs(*c.arrive_min) : "-") + ", median " + (c.connect ? secs(*c.connect) : "-") + ", max " +
          (c.arrive_max ? secs(*c.arrive_max) : "-") + "; " + std::to_string(error.size()) + " with an error";
  c.collective = host_collective(d, "host " + host + ", ranks " + rank_list(ranks), rs);
  // A host's ranks that did not wait in the first collective fold apart, their part named.
  if (c.collective && c.collective->part != CollectiveSpan::Part::Waited)
    c.label += std::string(", ") + part_words(c.collective->part);
  return c;
}

// node2 before node10: host names usually carry a number, and people read it as one.
struct HostOrder {
  bool operator()(const std::string& a, const std::string& b) const {
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
      if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
        std::size_t i2 = i, j2 = j;
        while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
        while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
        std::string_view na(a.data() + i, i2 - i), nb(b.data() + j, j2 - j);
        while (na.size() > 1 && na[0] == '0') na.remove_prefix(1);
        while (nb.size() > 1 && nb[0] == '0') nb.remove_prefix(1);
        if (na.size() != nb.size()) return na.size() < nb.size();
        if (na != nb) return na < nb;
        i = i2, j = j2;
      } else {
        if (a[i] != b[j]) return a[i] < b[j];
        ++i, ++j;
      }
    }
    if ((a.size() - i) != (b.size() - j)) return a.size() - i < b.size() - j;
    return a < b;  // equal as numbers ("n01" / "n1"): still a strict order
  }
};

Chart build_chart(const Diagnosis& d) {
  Chart ch;
  std::set<std::string> hosts;
  for (const RankRow& r : d.ranks)
    if (!r.absent) hosts.insert(r.host);
  ch.hosts = hosts.size();
  ch.aggregated = d.ranks.size() > kMaxRankRows;
  if (!ch.aggregated) {
    for (const RankRow& r : d.ranks) ch.rows.push_back(row_of(d, r));
  } else {
    // The ranks the verdict is about keep their own rows, on top; the rest fold by host, and
    // within a host by their part in the first collective (-1: none).
    std::map<std::string, std::map<int, std::vector<const RankRow*>>, HostOrder> by_host;
    for (const RankRow& r : d.ranks) {
      if (r.late || r.stalled || r.dead || r.absent || (r.rank && r.rank == d.verdict.initiating_rank)) ch.rows.push_back(row_of(d, r));
      else by_host[r.host][r.collective ? static_cast<int>(r.collective->part) : -1].push_back(&r);
    }
    for (const auto& [host, parts] : by_host)
      for (const auto& [part, rs] : parts) ch.rows.push_back(host_row(d, host, rs));
  }
  if (d.collective) ch.completed = rel_s(d, d.collective->completed_ns);
  // After the rendezvous the deadline that counts is the one in the first collective: the
  // waiting ranks' entry plus the timeout on their pairs.
  std::vector<double> in_collective;
  for (const RankRow& r : d.ranks)
    if (r.collective && r.collective->part == CollectiveSpan::Part::Waited)
      if (auto s = rel_s(d, r.collective->deadline_ns)) in_collective.push_back(*s);
  if (auto m = median(in_collective); m && d.collective && d.collective->timeout_ms) {
    ch.deadline = *m;
    ch.deadline_note = "collective timeout deadline " + secs(*m) + " (" + std::to_string(*d.collective->timeout_ms) +
                       " ms after the waiting ranks entered the first collective)";
  } else if (const auto& t = d.evidence.timeout) {
    // The deadline of the ranks that were on time: their usual connect plus the timeout.
    const double timeout_s = static_cast<double>(t->ms) / 1000.0;
    std::vector<double> connected;
    for (const RankRow& r : d.ranks)
      if (!r.late)
        if (auto s = rel_s(d, r.connected_ns)) connected.push_back(*s);
    if (auto m = median(connected)) {
      ch.deadline = *m + timeout_s;
      ch.deadline_note = "timeout deadline " + secs(*ch.deadline) + " (" + std::to_string(static_cast<long long>(t->ms)) +
                         " ms after the on-time ranks connected)";
    }
  }
  return ch;
}

// "Nice" axis steps: 1, 2 or 5 times a power of ten, about `ticks` of them over `span`.
double tick_step(double span, int ticks) {
  const double raw = span / ticks;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

// Where things go on the chart: the rows' height, the time axis' span, seconds to x.
struct ChartGeometry {
  static constexpr double W = 1100, L = 230, R = 24, top = 54;
  double rh = 26, H = 0, tmax = 1;
  double x(double s) const { return L + (W - L - R) * std::max(0.0, s) / tmax; }
};

ChartGeometry geometry_of(const Chart& ch) {
  ChartGeometry g;
  g.rh = ch.aggregated ? 20 : 26;
  g.H = g.top + g.rh * ch.rows.size() + 8;
  double tmax = 0;
  for (const ChartRow& r : ch.rows)
  {
    for (const auto& v : {r.launch, r.resolved, r.connect, r.connected, r.error, r.end, r.arrive_max, r.last_seen})
      if (v) tmax = std::max(tmax, *v);
    if (const auto& c = r.collective)
      for (const auto& v : {std::optional<double>(c->end), c->deadline, c->gone})
        if (v) tmax = std::max(tmax, *v);
  }
  if (ch.deadline) tmax = std::max(tmax, *ch.deadline);
  if (tmax <= 0) tmax = 1;
  g.tmax = tmax * 1.03;
  return g;
}

// The time axis and its grid.
std::string svg_axis(const ChartGeometry& g) {
  const double step = tick_step(g.tmax, 8);
  std::string s = "<g class=\"axis\">\n";
  for (double t = 0; t <= g.tmax + 1e-9; t += step) {
    const std::string label = step < 1 ? fmt::format("{:.1f} s", t) : fmt::format("{:.0f} s", t);
    s += "<line class=\"grid\" x1=\"" + num(g.x(t)) + "\" y1=\"" + num(g.top - 6) + "\" x2=\"" + num(g.x(t)) + "\" y2=\"" +
         num(g.H - 4) + "\"/><text x=\"" + num(g.x(t)) + "\" y=\"" + num(g.top - 12) + "\" text-anchor=\"" +
         (t == 0 ? "start" : "middle") + "\">" + label + "</text>\n";
  }
  return s + "<text x=\"" + num(g.L - 10) + "\" y=\"" + num(g.top - 12) +
         "\" text-anchor=\"end\" class=\"axis-title\">since first launch</text>\n</g>\n";
}

// A row's band, label and LATE/FIRST badge.
std::string svg_row_label(const ChartGeometry& g, const ChartRow& r, double y, double mid) {
  std::string s = "<rect class=\"band\" x=\"0\" y=\"" + num(y) + "\" width=\"" + num(g.W) + "\" height=\"" + num(g.rh) + "\"/>\n";
  // A dead rank is DEAD, never LATE: it did not come because it had ended (issue 32).
  std::string badge = r.css.find(" dead") != std::string::npos     ? (r.ended == "exit 0" ? "ENDED" : "DEAD")
                      : r.css.find("stalled") != std::string::npos    ? "STALL"
                      : r.css.find("late") != std::string::npos       ? "LATE"
                      : r.css.find("initiating") != std::string::npos ? "FIRST"
                                                                      : "";
  s += "<text class=\"label\" x=\"" + num(badge.empty() ? g.L - 10 : g.L - 52) + "\" y=\"" + num(mid + 4) + "\" text-anchor=\"end\">" +
       esc(r.label.size() > 34 ? r.label.substr(0, 33) + "~" : r.label) + "</text>\n";
  if (!badge.empty())
    s += "<rect class=\"badge\" x=\"" + num(g.L - 46) + "\" y=\"" + num(mid - 8) + "\" width=\"38\" height=\"16\" rx=\"3\"/><text class=\"badge-text\" x=\"" +
         num(g.L - 27) + "\" y=\"" + num(mid + 4) + "\" text-anchor=\"middle\">" + badge + "</text>\n";
  return s;
}

// A row's phases as bars: start, connecting, connected and waiting, failed.
std::string svg_row_bars(const ChartGeometry& g, const ChartRow& r, double mid) {
  std::string s;
  auto bar = [&](const char* cls, std::optional<double> a, std::optional<double> b, double h) {
    if (!a || !b || *b < *a) return;
    s += "<rect class=\"" + std::string(cls) + "\" x=\"" + num(g.x(*a)) + "\" y=\"" + num(mid - h / 2) + "\" width=\"" +
         num(std::max(1.5, g.x(*b) - g.x(*a))) + "\" height=\"" + num(h) + "\"/>\n";
  };
  const std::optional<double> arrive = r.connect ? r.connect : r.resolved;
  const std::optional<double> last = r.end ? r.end : r.error ? r.error : r.last_seen;
  bar("ph-start", r.launch, arrive ? arrive : last, g.rh * 0.36);
  bar("ph-connect", r.connect, r.connected ? r.connected : r.error, g.rh * 0.5);
  if (const auto& c = r.collective) {
    // Its wait on the store ended where it left the rendezvous; an error before that it survived.
    bar("ph-wait", r.connected, c->begin, g.rh * 0.5);
    if (r.error && *r.error >= c->end) bar("ph-fail", r.error, r.end, g.rh * 0.36);
    return s;
  }
  bar("ph-wait", r.connected, r.error ? r.error : r.end ? r.end : r.last_seen, g.rh * 0.5);
  bar("ph-fail", r.error, r.end, g.rh * 0.36);
  return s;
}

// A row's part in the first collective (issue 28), its own group with its tooltip: before its
// first collective message, its wait in it and its own timeout deadline; a rank that never
// entered (or only after the first failure) drawn as missing it, a dead rank as dead.
std::string svg_row_collective(const ChartGeometry& g, const ChartRow& r, double mid) {
  if (!r.collective) return "";
  const ChartRow::Collective& c = *r.collective;
  using Part = CollectiveSpan::Part;
  static const char* const kPartCss[] = {"coll-waited", "coll-never", "coll-late", "coll-dead"};
  std::string s = std::string("<g class=\"coll ") + kPartCss[static_cast<int>(c.part)] + "\"><title>" + esc(c.tip) + "</title>\n";
  auto bar = [&](const char* cls, double a, double b, double h) {
    s += "<rect class=\"" + std::string(cls) + "\" x=\"" + num(g.x(a)) + "\" y=\"" + num(mid - h / 2) + "\" width=\"" +
         num(std::max(1.5, g.x(b) - g.x(a))) + "\" height=\"" + num(h) + "\"/>\n";
  };
  const double entered_or_end = c.entered ? std::min(*c.entered, c.end) : c.end;
  if (c.part == Part::Dead) {
    bar("ph-coll-pre", c.begin, entered_or_end, g.rh * 0.5);
    if (c.entered) bar("ph-coll-wait", entered_or_end, c.end, g.rh * 0.5);
    if (c.gone) bar("ph-coll-dead", c.end, std::max(c.end, *c.gone), g.rh * 0.5);
    s += "<path class=\"mk-coll-dead\" d=\"M" + num(g.x(c.gone ? *c.gone : c.end) - 5) + " " + num(mid - 5) + "l10 10M" +
         num(g.x(c.gone ? *c.gone : c.end) - 5) + " " + num(mid + 5) + "l10 -10\"/>\n";
  } else if (c.part == Part::Waited) {
    bar("ph-coll-pre", c.begin, entered_or_end, g.rh * 0.5);
    bar("ph-coll-wait", entered_or_end, c.end, g.rh * 0.5);
  } else {
    bar("ph-coll-never", c.begin, entered_or_end, g.rh * 0.5);
    if (c.entered) bar("ph-coll-wait", entered_or_end, c.end, g.rh * 0.5);
  }
  if (c.deadline && c.part != Part::Dead)
    s += "<path class=\"mk-coll-deadline\" d=\"M" + num(g.x(*c.deadline)) + " " + num(mid - 9) + "v18\"/>\n";
  return s + "</g>\n";
}

// A row's marks: the arrival whisker, resolved, connected, the error, the exit or vanishing.
std::string svg_row_marks(const ChartGeometry& g, const ChartRow& r, double mid) {
  std::string s;
  const std::optional<double> last = r.end ? r.end : r.error ? r.error : r.last_seen;
  if (r.arrive_min && r.arrive_max && *r.arrive_max > *r.arrive_min)
    s += "<path class=\"whisker\" d=\"M" + num(g.x(*r.arrive_min)) + " " + num(mid - 5) + "v10M" + num(g.x(*r.arrive_min)) + " " +
         num(mid) + "H" + num(g.x(*r.arrive_max)) + "M" + num(g.x(*r.arrive_max)) + " " + num(mid - 5) + "v10\"/>\n";
  if (r.resolved) s += "<circle class=\"mk-resolved\" cx=\"" + num(g.x(*r.resolved)) + "\" cy=\"" + num(mid) + "\" r=\"3.5\"/>\n";
  if (r.connected) s += "<circle class=\"mk-connected\" cx=\"" + num(g.x(*r.connected)) + "\" cy=\"" + num(mid) + "\" r=\"4\"/>\n";
  if (r.error)
    s += "<path class=\"mk-error\" d=\"M" + num(g.x(*r.error) - 5) + " " + num(mid - 5) + "l10 10M" + num(g.x(*r.error) - 5) + " " +
         num(mid + 5) + "l10 -10\"/>\n";
  if (r.css.find(" absent") != std::string::npos)
    s += "<text class=\"mk-vanished\" x=\"" + num(g.x(0) + 6) + "\" y=\"" + num(mid + 4) + "\">absent: no trace of this rank</text>\n";
  if (r.end) s += "<rect class=\"mk-exit\" x=\"" + num(g.x(*r.end) - 1.5) + "\" y=\"" + num(mid - 7) + "\" width=\"3\" height=\"14\"/>\n";
  if (!r.ended.empty() && (r.end || last)) {  // a dead or stopped rank: how it ended, beside its end
    if (!r.end) s += "<path class=\"mk-gone\" d=\"M" + num(g.x(*last)) + " " + num(mid - 7) + "v14\"/>";
    // Past the mark of its death in the first collective, when that came after its last record.
    const double at = std::max(r.end ? *r.end : *last, r.collective && r.collective->gone ? *r.collective->gone : 0.0);
    s += "<text class=\"mk-vanished\" x=\"" + num(g.x(at) + 8) + "\" y=\"" + num(mid + 4) + "\">" +
         (r.css.find(" dead") == std::string::npos ? "" : r.ended == "exit 0" ? "ended: " : "died: ") + esc(r.ended) +
         "</text>\n";
  } else if (!r.end && r.vanished && last)
    s += "<path class=\"mk-gone\" d=\"M" + num(g.x(*last)) + " " + num(mid - 7) + "v14\"/><text class=\"mk-vanished\" x=\"" +
         num(g.x(*last) + 6) + "\" y=\"" + num(mid + 4) + "\">vanished (no exit)</text>\n";
  return s;
}

std::string svg_deadline(const ChartGeometry& g, const Chart& ch) {
  if (!ch.deadline) return "";
  const double dx = g.x(*ch.deadline);
  return "<g class=\"timeout-marker\" id=\"timeout-marker\"><title>" + esc(ch.deadline_note) + "</title><line x1=\"" + num(dx) +
         "\" y1=\"" + num(g.top - 26) + "\" x2=\"" + num(dx) + "\" y2=\"" + num(g.H - 4) + "\"/><text x=\"" +
         num(dx > g.W / 2 ? dx - 6 : dx + 6) + "\" y=\"" + num(g.top - 30) + "\" text-anchor=\"" + (dx > g.W / 2 ? "end" : "start") +
         "\">" + esc(ch.deadline_note) + "</text></g>\n";
}

// Where the rendezvous completed: the first collective after it is drawn to its right.
std::string svg_completed(const ChartGeometry& g, const Chart& ch) {
  if (!ch.completed) return "";
  const double x = g.x(*ch.completed);
  return "<g class=\"completed-marker\" id=\"rendezvous-completed\"><title>the rendezvous completed at " + secs(*ch.completed) +
         ": every rank had reached the store and its peers</title><line x1=\"" + num(x) + "\" y1=\"" + num(g.top - 6) +
         "\" x2=\"" + num(x) + "\" y2=\"" + num(g.H - 4) + "\"/></g>\n";
}

std::string svg_chart(const Chart& ch) {
  const ChartGeometry g = geometry_of(ch);
  std::string s = "<svg class=\"chart\" role=\"img\" aria-label=\"arrival of each rank at the store\" width=\"" + num(g.W) +
                  "\" height=\"" + num(g.H) + "\" viewBox=\"0 0 " + num(g.W) + " " + num(g.H) + "\">\n";
  s += svg_axis(g);
  for (std::size_t i = 0; i < ch.rows.size(); ++i) {
    const ChartRow& r = ch.rows[i];
    const double y = g.top + g.rh * i, mid = y + g.rh / 2;
    s += "<g class=\"row" + r.css + "\"><title>" + esc(r.tip) + "</title>\n";
    s += svg_row_label(g, r, y, mid) + svg_row_bars(g, r, mid) + svg_row_collective(g, r, mid) + svg_row_marks(g, r, mid) +
         "</g>\n";
  }
  return s + svg_completed(g, ch) + svg_deadline(g, ch) + "</svg>\n";
}

const char* kCss = R"(
:root{--ink:#1f2933;--muted:#5f6b7a;--line:#d9dee5;--bg:#f5f7fa;--bad:#c0392b;--ok:#1e8449;--warn:#b9770e}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1160px;margin:0 auto;padding:20px 24px 40px}
header.verdict{background:#fff;border:1px solid var(--line);border-left:6px solid var(--bad);border-radius:6px;padding:16px 20px;margin-bottom:18px}
header.verdict.healthy{border-left-color:var(--ok)}
.kicker{font-size:12px;letter-spacing:.06em;text-transform:uppercase;color:var(--muted)}
h1{font-size:22px;margin:4px 0 6px}
h1 .cls{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#fdecea;color:var(--bad);padding:1px 8px;border-radius:4px}
header.healthy h1 .cls{background:#e8f6ee;color:var(--ok)}
.summary{font-size:15px;margin:6px 0 10px}
dl.facts{display:flex;flex-wrap:wrap;gap:4px 28px;margin:0 0 10px;font-size:13px}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0 0 0 6px;font-weight:600}
dl.facts div{display:flex}
.next{background:#eef4fc;border:1px solid #c9dbf3;border-radius:5px;padding:8px 12px}
.next b{color:#1a4f8b}
section{background:#fff;border:1px solid var(--line);border-radius:6px;padding:14px 18px;margin-bottom:18px}
h2{font-size:16px;margin:0 0 8px}
.note{color:var(--muted);font-size:13px;margin:0 0 8px}
.note.agg{color:#7a4d00;background:#fff6e5;border:1px solid #f3d9a4;border-radius:4px;padding:4px 8px;display:inline-block}
svg.chart{display:block;font-size:12px;max-width:100%;height:auto}
svg .grid{stroke:#edf0f4;stroke-width:1}svg .axis text{fill:var(--muted);font-size:11px}
svg .band{fill:transparent}svg .row:nth-of-type(even) .band{fill:#fafbfc}
svg .row.initiating .band{fill:#fde7e4}svg .row.late .band{fill:#fff1d6}svg .row.dead .band{fill:#fde7e4}
svg .label{fill:var(--ink);font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
svg .row.late .label,svg .row.initiating .label{font-weight:700}
svg .badge{fill:var(--warn)}svg .row.initiating:not(.late) .badge{fill:var(--bad)}
svg .badge-text{fill:#fff;font-size:10px;font-weight:700}
svg .ph-start{fill:#cfd6e0}svg .ph-connect{fill:#f0a35e}svg .ph-wait{fill:#4a7fd4}svg .ph-fail{fill:#efb3ab}
svg .whisker{stroke:#1f2933;stroke-width:1.5;fill:none}
svg .mk-resolved{fill:#fff;stroke:#5f6b7a;stroke-width:1.5}svg .mk-connected{fill:#1a4f8b;stroke:#fff;stroke-width:1}
svg .mk-error{stroke:var(--bad);stroke-width:2.5;fill:none}svg .mk-exit{fill:#1f2933}svg .mk-gone{stroke:var(--bad);stroke-width:2;stroke-dasharray:2 2}svg .mk-vanished{fill:var(--bad);font-size:11px;font-style:italic}
svg .ph-coll-pre{fill:#a3d9cf}svg .ph-coll-wait{fill:#138d75}svg .ph-coll-never{fill:#fff1d6;stroke:var(--warn);stroke-width:1.5;stroke-dasharray:4 2}
svg .ph-coll-dead{fill:#7b241c}svg .mk-coll-dead{stroke:#7b241c;stroke-width:3;fill:none}svg .mk-coll-deadline{stroke:var(--bad);stroke-width:2}
svg .completed-marker line{stroke:#138d75;stroke-width:1.5;stroke-dasharray:2 3}
svg .timeout-marker line{stroke:var(--bad);stroke-width:2;stroke-dasharray:6 4}svg .timeout-marker text{fill:var(--bad);font-size:12px;font-weight:600}
.legend{display:flex;flex-wrap:wrap;gap:6px 18px;font-size:12px;color:var(--muted);margin-top:8px}
.legend span{display:inline-flex;align-items:center;gap:6px}.sw{display:inline-block;width:18px;height:9px;border-radius:2px}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #eef1f5;vertical-align:top}
th{color:var(--muted);font-weight:600;background:#fafbfc}
td.k{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:nowrap;width:1%}
tr.late td{background:#fff1d6}tr.initiating td,tr.bad td{background:#fde7e4}tr.no-dump td{color:var(--muted);font-style:italic}
ul.evidence{margin:0;padding-left:20px}ul.evidence li{margin:3px 0}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
.stats{display:flex;flex-wrap:wrap;gap:10px}
.stat{border:1px solid var(--line);border-radius:5px;padding:6px 12px;min-width:120px}
.stat b{display:block;font-size:18px}.stat span{color:var(--muted);font-size:12px}
.stat.warn{border-color:#f3d9a4;background:#fff6e5}
footer{color:var(--muted);font-size:12px;text-align:center}
)";

std::string legend_item(const char* color, const char* text) {
  return std::string("<span><i class=\"sw\" style=\"background:") + color + "\"></i>" + text + "</span>";
}

// The first collective's entries, when the chart draws it (class coll-legend).
std::string collective_legend() {
  auto item = [](const char* swatch, const char* text) {
    return std::string("<span class=\"coll-legend\"><i class=\"sw\" style=\"") + swatch + "\"></i>" + text + "</span>";
  };
  return item("background:#a3d9cf", "after the rendezvous, before its first collective message") +
         item("background:#138d75", "waiting in the first collective") +
         item("background:#fff1d6;border:1.5px dashed #b9770e", "never entered it (or only after the first failure)") +
         item("background:#7b241c", "dead: alive until its last record, then gone") +
         "<span class=\"coll-legend\" style=\"color:#c0392b\">| its collective timeout deadline</span>"
         "<span class=\"coll-legend\" style=\"color:#138d75\">&middot;&middot;&middot; rendezvous completed</span>";
}

std::string legend(bool collective) {
  return "<div class=\"legend\">" + legend_item("#cfd6e0", "launch to first store connect") +
         legend_item("#f0a35e", "connecting") + legend_item("#4a7fd4", "connected, waiting on the store") +
         legend_item("#efb3ab", "first error to exit") +
         "<span>&#9675; resolved</span><span style=\"color:#c0392b\">&#10005; first error</span><span>&#9646; exit</span>"
         "<span style=\"color:#c0392b\">- - - timeout deadline</span>" + (collective ? collective_legend() : "") + "</div>\n";
}

// The rank's part in the first collective, for the table: "waited in it from +6.84 s".
std::string collective_cell(const Diagnosis& d, const RankRow& r) {
  if (!r.collective) return "-";
  const CollectiveSpan& c = *r.collective;
  std::string s = part_words(c.part);
  if (c.part == CollectiveSpan::Part::Dead) return s + ": " + esc(c.ended);
  if (c.entered_ns) s += (c.part == CollectiveSpan::Part::Waited ? " from " : ": at ") + secs(*rel_s(d, c.entered_ns));
  return s;
}

std::string rank_table(const Diagnosis& d) {
  auto t = [&](const std::optional<std::int64_t>& ns) { return rel_s(d, ns) ? secs(*rel_s(d, ns)) : std::string("-"); };
  std::string s = "<details><summary>Per-rank table (" + std::to_string(d.ranks.size()) + " ranks)</summary>\n<table>\n"
                  "<tr><th>rank</th><th>host</th><th>pid</th><th>role</th><th>launched</th><th>resolved</th><th>store connect</th>"
                  "<th>connected</th><th>first error</th>" +
                  std::string(d.collective ? "<th>first collective</th>" : "") + "<th>exit</th></tr>\n";
  for (const RankRow& r : d.ranks) {
    std::string cls = std::string(r.late || r.absent ? " late" : "") + (r.dead ? " bad" : "") +
                      (r.rank && r.rank == d.verdict.initiating_rank ? " initiating" : "");
    s += "<tr class=\"" + (cls.empty() ? std::string() : cls.substr(1)) + "\"><td>" + (r.rank ? std::to_string(*r.rank) : "-") +
         "</td><td>" + (r.absent ? std::string("-") : esc(r.host)) + "</td><td>" + (r.absent ? std::string("-") : std::to_string(r.pid)) +
         "</td><td>" + esc(r.role) + "</td><td>" +
         t(r.launched_ns) + "</td><td>" + t(r.resolved_ns) + "</td><td>" + t(r.first_store_connect_ns) + "</td><td>" +
         t(r.connected_ns) + "</td><td>" + (r.first_error.empty() ? "-" : t(r.first_error_ns) + " " + esc(r.first_error)) +
         "</td><td>" + (d.collective ? collective_cell(d, r) + "</td><td>" : std::string()) + (r.absent ? std::string("absent (no trace)") : r.dead ? (r.ended == "exit 0" ? "ended before joining: " : "died on its own: ") + esc(r.ended)
                        : !r.ended.empty() ? esc(r.ended) : r.vanished ? std::string("vanished")
                        : r.exit_status ? std::to_string(*r.exit_status) : "?") + "</td></tr>\n";
  }
  return s + "</table>\n</details>\n";
}

std::string stat(const std::string& value, const char* what, bool warn = false) {
  return std::string("<div class=\"stat") + (warn ? " warn" : "") + "\"><b>" + esc(value) + "</b><span>" + what + "</span></div>";
}

std::string section_html(const HtmlSection& m) {
  std::string s = "<section id=\"" + esc(m.id) + "\">\n<h2>" + esc(m.title) + "</h2>\n";
  if (!m.summary.empty()) s += "<p class=\"note\">" + esc(m.summary) + "</p>\n";
  if (!m.rows.empty()) {
    s += "<table>\n<tr>";
    for (const std::string& c : m.columns) s += "<th>" + esc(c) + "</th>";
    s += "</tr>\n";
    for (const HtmlSection::Row& r : m.rows) {
      s += r.bad ? "<tr class=\"bad\">" : "<tr>";
      for (const std::string& c : r.cells) s += "<td>" + esc(c) + "</td>";
      s += "</tr>\n";
    }
    s += "</table>\n";
  }
  if (!m.notes.empty()) {
    s += "<ul class=\"evidence\">\n";
    for (const std::string& n : m.notes) s += "<li class=\"mono\">" + esc(n) + "</li>\n";
    s += "</ul>\n";
  }
  return s + "</section>\n";
}

std::string page_head(const Verdict& v) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>rdzvscope: " +
         esc(std::string(name_of(v.cls))) + "</title>\n<style>" + kCss + "</style>\n</head>\n<body>\n<main>\n";
}

// The verdict, its facts and the next step.
std::string verdict_header(const Diagnosis& d) {
  const Verdict& v = d.verdict;
  std::string s = std::string("<header class=\"verdict") + (v.cls == FailureClass::Healthy ? " healthy" : "") +
                  "\" id=\"verdict\">\n<div class=\"kicker\">rdzvscope &middot; rendezvous diagnosis</div>\n";
  s += "<h1><span class=\"cls\">" + esc(std::string(name_of(v.cls))) + "</span>" + (v.cause ? " <small>(" + esc(*v.cause) + ")</small>" : "") + "</h1>\n";
  s += "<p class=\"summary\">" + esc(v.summary) + "</p>\n<dl class=\"facts\">";
  auto fact = [&](const char* k, const std::string& val) { s += "<div><dt>" + std::string(k) + "</dt><dd>" + esc(val) + "</dd></div>"; };
  fact("initiating rank", v.initiating_rank ? std::to_string(*v.initiating_rank) + (v.initiating_host ? " (" + *v.initiating_host + ")" : "")
                                            : std::string("-"));
  fact("confidence", v.confidence);
  if (!d.store_endpoint.empty()) fact("store", d.store_endpoint);
  s += "</dl>\n";
  if (!d.alternatives.empty()) {
    s += "<div class=\"alternatives\" id=\"alternatives\"><b>Or</b> (the evidence cannot tell these apart)<ul>";
    for (const Alternative& a : d.alternatives) s += "<li>" + esc(alternative_words(a)) + "</li>";
    s += "</ul></div>\n";
  }
  s += "<div class=\"next\" id=\"next-step\"><b>Next step</b> &nbsp;" + esc(v.next_step) + "</div>\n</header>\n";
  return s;
}

// The chart of arrivals, or why there is none.
std::string arrival_section(const Diagnosis& d) {
  std::string s = "<section id=\"arrival\">\n<h2>Arrival at the store</h2>\n";
  if (d.ranks.empty() && d.inputs[Stat::TraceFiles] > 0) {
    s += "<p class=\"note\" id=\"no-workers\">The traces hold no worker (rank): none started, as when a "
         "launcher's rendezvous never completed, so there is no per-rank time line; the verdict above comes "
         "from the other processes' traces.</p>\n";
  } else if (d.ranks.empty()) {
    s += "<p class=\"note\">No traces were given, so there is no per-rank time line: rerun the job under "
         "<code>rdzvscope run --out DIR</code> and pass DIR to <code>rdzvscope analyze</code>.</p>\n";
  } else {
    Chart ch = build_chart(d);
    s += "<p class=\"note\">One row per " + std::string(ch.aggregated ? "host" : "rank") +
         ": launch, name resolution, first store connect, connected, first error, exit" +
         (d.collective ? std::string(", then its part in the first collective after the rendezvous") : "") +
         ". Hover a row for its times.</p>\n";
    if (ch.aggregated)
      s += "<p class=\"note agg\" id=\"aggregated-note\">Rows are aggregated by host: " + std::to_string(d.ranks.size()) +
           " ranks on " + std::to_string(ch.hosts) +
           " hosts. Each host row draws the median of its ranks, and the whisker spans the earliest to the latest "
           "first store connect (min / median / max). The late and initiating ranks keep their own rows, on top.</p>\n";
    s += svg_chart(ch) + legend(ch.completed.has_value());
  }
  return s + "</section>\n";
}

// Where the Flight Recorder dumps say the ranks parted (Diagnosis::flight_recorder): the
// parting, a row per rank of the group (the ranks the others waited for marked late, a rank
// with no dump only greyed: it is not known to be late), and the dumps read.
std::string flight_recorder_section(const Diagnosis& d) {
  if (!d.flight_recorder) return "";
  const FlightRecorderParting& p = *d.flight_recorder;
  std::string s = "<section id=\"flight-recorder\">\n<h2>Flight Recorder</h2>\n<p class=\"note\">From PyTorch's Flight "
                  "Recorder: " + esc(fr_dumps_words(p)) + ", one file per rank.</p>\n"
                  "<p class=\"summary\" id=\"fr-parting\">" + esc(fr_parting_words(p)) + "</p>\n<table>\n<tr><th>rank</th>"
                  "<th>last collective of process group " + esc(p.pg_name) + "</th><th>in " + esc(fr_collective_words(p)) +
                  "</th></tr>\n";
  for (int r : fr_ranks(p)) {
    const char* cls = !p.last_sequence.count(r) ? " class=\"no-dump\"" : fr_is_behind(p, r) ? " class=\"late behind\"" : "";
    s += std::string("<tr") + cls + "><td>" + std::to_string(r) + "</td><td>" + fr_last_sequence_of(p, r) + "</td><td>" +
         esc(fr_rank_part_words(p, r)) + "</td></tr>\n";
  }
  s += "</table>\n<details><summary>Dumps read (" + std::to_string(p.files.size()) + ")</summary>\n<ul class=\"evidence\">\n";
  for (const std::string& f : p.files) s += "<li class=\"mono\">" + esc(f) + "</li>\n";
  return s + "</ul>\n</details>\n</section>\n";
}

std::string clocks_section(const Diagnosis& d) {
  if (d.clocks.empty()) return "";
  std::string s = "<section id=\"clocks\">\n<h2>Host clocks</h2>\n<p class=\"note\">Estimated from matched connect/accept "
                  "pairs and the first reply on each; the chart shows every host on the store host's clock.</p>\n<ul>\n";
  for (const ClockEstimate& c : d.clocks) s += "<li>" + esc(describe_clock(c, d.clocks[0].host)) + "</li>\n";
  return s + "</ul>\n</section>\n";
}

std::string discriminators_section(const Diagnosis& d) {
  if (d.discriminators.empty()) return "";
  std::string s = "<section id=\"discriminators\">\n<h2>Discriminators</h2>\n<table>\n";
  for (const Discriminator& disc : d.discriminators)
    s += "<tr><td class=\"k\">" + esc(disc.name) + "</td><td>" + esc(discriminator_words(disc.value)) + "</td></tr>\n";
  return s + "</table>\n</section>\n";
}

std::string evidence_section(const Diagnosis& d) {
  if (d.findings.empty()) return "";
  std::string s = "<section id=\"evidence\">\n<h2>Evidence</h2>\n<ul class=\"evidence\">\n";
  for (const Finding& f : d.findings)
    for (const std::string& e : f.evidence) s += "<li>" + esc(e) + "</li>\n";
  return s + "</ul>\n</section>\n";
}

// A tile per counter of input_stats.h that the reports list, marked when data was lost.
std::string inputs_section(const InputStats& in) {
  std::string s = "<section id=\"inputs\">\n<h2>Inputs</h2>\n<div class=\"stats\">";
  for (const StatRow& row : stat_table())
    if (row.in_inputs)
      s += stat(std::to_string(in[row.stat]), row.label, row.severity == StatSeverity::DataLoss && in[row.stat] > 0);
  s += "</div>\n";
  if (!in.problems.empty()) {
    s += "<ul class=\"evidence\">\n";
    for (const auto& p : in.problems) s += "<li class=\"mono\">" + esc(p) + "</li>\n";
    s += "</ul>\n";
  }
  return s + "</section>\n";
}

}  // namespace

std::string diagnosis_html(const Diagnosis& d, const std::vector<HtmlSection>& more) {
  std::string s = page_head(d.verdict) + verdict_header(d) + arrival_section(d) + flight_recorder_section(d) +
                  clocks_section(d) +
                  discriminators_section(d) + evidence_section(d);
  if (!d.ranks.empty() && d.ranks.size() <= kMaxRankRows) s += "<section id=\"ranks\">\n" + rank_table(d) + "</section>\n";
  for (const HtmlSection& m : more) s += section_html(m);
  s += inputs_section(d.inputs);
  return s + "<footer>rdzvscope analyze --html &middot; self-contained: no scripts, no external resources</footer>\n"
             "</main>\n</body>\n</html>\n";
}

}  // namespace rdzvscope
