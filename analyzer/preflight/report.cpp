#include "preflight/report.h"

#include <time.h>

#include <cmath>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace rdzvscope::preflight {

namespace {

constexpr std::size_t kWidth = 100;

// One decimal, and no "-0.0" for a figure that rounds to zero.
double tenths(double v) { return std::round(v * 10) / 10 + 0.0; }

const char* role_name(Role r) { return r == Role::StoreHost ? "store_host" : "node"; }

std::string iso_utc(std::int64_t ns) {
  const time_t s = static_cast<time_t>(ns / 1000000000);
  tm t{};
  ::gmtime_r(&s, &t);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", t.tm_year + 1900, t.tm_mon + 1,
                     t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, (ns / 1000000) % 1000);
}

std::string verdict_label(Verdict v) {
  switch (v) {
    case Verdict::Ok: return "ok";
    case Verdict::Warn: return "WARN";
    case Verdict::Fail: return "FAIL";
  }
  return "FAIL";
}

// The failed checks' names, for the last line.
std::vector<std::string> failed_names(const Report& r) {
  std::vector<std::string> out;
  for (const Check& c : r.checks) {
    if (c.verdict == Verdict::Fail) out.push_back(c.name);
  }
  return out;
}

void append_check(std::string& out, const Check& c) {
  out += wrap(fmt::format("  {:<5} {:<13} ", verdict_label(c.verdict), c.name), c.measured,
              kWidth) +
         "\n";
  if (!c.fix.empty()) out += wrap(fmt::format("{:22}fix: ", ""), c.fix, kWidth) + "\n";
}

// The store host's table of the nodes that said hello (from the "nodes" check's data).
void append_nodes(std::string& out, const Report& r) {
  for (const Check& c : r.checks) {
    if (c.name != "nodes" || !c.data.contains("peers")) continue;
    if (c.data["peers"].empty()) return;
    out += "NODES\n";
    for (const auto& p : c.data["peers"]) {
      const std::string clock = p["node_ahead_ms"].is_number()
                                    ? fmt::format("clock {:+.1f} ms (+-{:.1f})",
                                                  tenths(p["node_ahead_ms"].get<double>()),
                                                  tenths(p["uncertainty_ms"].get<double>()))
                                    : std::string("clock -");
      const std::string not_ok = p["not_ok"].empty()
                                     ? "ok"
                                     : fmt::format("not ok: {}", fmt::join(p["not_ok"], ", "));
      const std::string host =
          p.contains("node_rank") && p["node_rank"].is_number_unsigned()
              ? fmt::format("{} (node {})", p["host"].get<std::string>(), p["node_rank"].get<unsigned>())
              : p["host"].get<std::string>();
      out += fmt::format("  {:<16} {:<24} {:<28} {}\n", host,
                         p["address"].get<std::string>(), clock, not_ok);
    }
    return;
  }
}

// The meeting's job, for the first line: ", job 'K' (from SOURCE)", or "" with no job key.
std::string job_text(const Report& r) {
  return r.job.empty() ? std::string() : fmt::format(" as job '{}' (from {})", r.job, r.job_source);
}

}  // namespace

std::string wrap(const std::string& prefix, const std::string& text, std::size_t width) {
  std::string out, line = prefix;
  std::istringstream words(text);
  std::string word;
  bool line_empty = true;
  while (words >> word) {
    if (!line_empty && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line = std::string(prefix.size(), ' ');
      line_empty = true;
    }
    line += (line_empty ? "" : " ") + word;
    line_empty = false;
  }
  return out + line;
}

std::string report_file_name(const std::string& host) {
  std::string safe;
  for (char c : host) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == '_';
    safe += ok ? c : '_';
  }
  if (safe.empty() || safe.front() == '.') safe = "_" + safe;
  return "preflight." + safe + ".json";
}

nlohmann::json report_json(const Report& r) {
  nlohmann::json checks = nlohmann::json::array();
  for (const Check& c : r.checks) checks.push_back(to_json(c));
  return {{"schema", "rdzvscope.preflight/1"},
          {"host", r.host},
          {"node",
           {{"rank", r.node_rank ? nlohmann::json(*r.node_rank) : nlohmann::json(nullptr)},
            {"source", r.node_rank ? nlohmann::json(r.node_rank_source) : nlohmann::json(nullptr)}}},
          {"time", iso_utc(r.started_ns)},
          {"took_s", r.took_s},
          {"endpoint",
           {{"host", r.endpoint.host}, {"port", r.endpoint.port}, {"source", r.endpoint.source}}},
          {"role", role_name(r.role)},
          {"role_reason", r.role_reason},
          {"world_size", r.world_size ? nlohmann::json(r.world_size) : nlohmann::json(nullptr)},
          {"ranks", {{"count", r.ranks}, {"source", r.ranks_source}}},
          {"timeout_s", r.timeout_s},
          {"job",
           {{"id", r.job.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.job)},
            {"source", r.job.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.job_source)}}},
          {"verdict", name_of(r.verdict())},
          {"can_rendezvous", r.can_rendezvous()},
          {"checks", checks}};
}

std::string report_text(const Report& r) {
  std::string out = wrap("PREFLIGHT ",
                         fmt::format("{}{} -> {} (from {}), {}", r.host,
                                     r.node_rank ? fmt::format(" (node {}, from {})", *r.node_rank,
                                                               r.node_rank_source)
                                                 : std::string(),
                                     r.endpoint.text(),
                                     r.endpoint.source,
                                     r.world_size > 1
                                         ? fmt::format("{} nodes meeting{}", r.world_size,
                                                       job_text(r))
                                         : std::string("this node only")),
                         kWidth) +
                    "\n";
  out += wrap("ROLE      ",
              fmt::format("{}: {}",
                          r.role == Role::StoreHost
                              ? "store host (the job's store will listen here)"
                              : "node (connects to the store)",
                          r.role_reason),
              kWidth) +
         "\n";
  for (const Check& c : r.checks) append_check(out, c);
  append_nodes(out, r);
  const auto failed = failed_names(r);
  if (failed.empty()) {
    out += fmt::format("VERDICT   can rendezvous{} ({:.2f} s)\n",
                       r.verdict() == Verdict::Warn ? ", with warnings" : "", r.took_s);
  } else {
    out += wrap("VERDICT   ",
                fmt::format("CANNOT rendezvous: {} ({:.2f} s)", fmt::join(failed, ", "), r.took_s),
                kWidth) +
           "\n";
  }
  return out;
}

}  // namespace rdzvscope::preflight
