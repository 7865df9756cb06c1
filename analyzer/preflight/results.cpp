#include "preflight/results.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "preflight/hello.h"
#include "reader/file_tree.h"
#include "preflight/report.h"

namespace rdzvscope::preflight {

namespace {

constexpr std::size_t kMaxFileBytes = 4 << 20;  // a report is a few KiB
constexpr std::size_t kWidth = 100;

bool is_report_name(const std::string& name) {
  return name.size() > 15 && name.rfind("preflight.", 0) == 0 &&
         name.compare(name.size() - 5, 5, ".json") == 0;
}


std::string str(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? sanitized_text(it->get<std::string>()) : std::string();
}

// Markdown inline text: no table or emphasis characters, no line breaks.
std::string md(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n' || c == '\r') out += ' ';
    else if (c == '|' || c == '*' || c == '_' || c == '`' || c == '[' || c == ']' || c == '<' ||
             c == '>' || c == '\\')
      out += std::string("\\") + c;
    else out += c;
  }
  return out;
}

}  // namespace

std::string role_text(const std::string& role) {
  return role == "store_host" ? "store host" : role == "node" ? "node" : role;
}

std::string node_label(const NodeResult& n) {
  return n.node_rank ? fmt::format("{} (node {})", n.host, *n.node_rank) : n.host;
}

bool every_node_could_rendezvous(const Results& r) {
  return std::all_of(r.nodes.begin(), r.nodes.end(),
                     [](const NodeResult& n) { return n.can_rendezvous; });
}

std::string results_summary(const Results& r) {
  if (r.empty()) return "";
  if (r.nodes.empty())
    return fmt::format("no readable preflight report ({} file(s))", r.problems.size());
  std::vector<std::string> cannot;
  for (const NodeResult& n : r.nodes) {
    if (n.can_rendezvous) continue;
    std::vector<std::string> names;
    for (const auto& f : n.failed) names.push_back(f.name);
    cannot.push_back(names.empty() ? node_label(n)
                                   : fmt::format("{} ({})", node_label(n), fmt::join(names, ", ")));
  }
  if (cannot.empty())
    return fmt::format("{} node(s), every one could rendezvous", r.nodes.size());
  return fmt::format("{} node(s); could not rendezvous: {}", r.nodes.size(), fmt::join(cannot, "; "));
}

std::optional<NodeResult> parse_result(const std::string& file, const std::string& text,
                                       std::string& problem) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    problem = file + ": not JSON";
    return std::nullopt;
  }
  if (str(j, "schema") != "rdzvscope.preflight/1") {
    problem = file + ": not a preflight report (schema rdzvscope.preflight/1)";
    return std::nullopt;
  }
  NodeResult n;
  n.file = file;
  n.host = sanitized_host(str(j, "host"));
  if (n.host.empty()) n.host = "?";
  if (const auto node = j.find("node"); node != j.end() && node->is_object()) {
    if (const auto r = node->find("rank"); r != node->end() && r->is_number_unsigned())
      n.node_rank = r->get<unsigned>();
  }
  n.role = str(j, "role");
  n.time = str(j, "time");
  if (const auto e = j.find("endpoint"); e != j.end() && e->is_object()) {
    const std::string host = str(*e, "host");
    const auto port = e->find("port");
    if (!host.empty() && port != e->end() && port->is_number_unsigned())
      n.endpoint = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
                   std::to_string(port->get<unsigned>());
  }
  n.verdict = str(j, "verdict");
  if (const auto c = j.find("can_rendezvous"); c != j.end() && c->is_boolean())
    n.can_rendezvous = c->get<bool>();
  else
    n.can_rendezvous = n.verdict != "fail";
  if (const auto checks = j.find("checks"); checks != j.end() && checks->is_array()) {
    for (const auto& c : *checks) {
      if (!c.is_object()) continue;
      const std::string v = str(c, "verdict");
      if (v == "fail") n.failed.push_back({str(c, "name"), str(c, "measured"), str(c, "fix")});
      else if (v == "warn") n.warnings.push_back(str(c, "name"));
    }
  }
  return n;
}

Results load_results(const std::vector<std::string>& paths) {
  Results r;
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) files_below(p, [](const std::string& name, unsigned char type) {
      return is_report_name(name) && (type == DT_REG || type == DT_UNKNOWN);
    }, files);
  }
  for (const std::string& f : files) {
    if (std::find_if(r.nodes.begin(), r.nodes.end(), [&](const NodeResult& n) { return n.file == f; }) !=
        r.nodes.end())
      continue;  // a directory given twice, or inside another one given
    std::ifstream in(f, std::ios::binary);
    std::string text;
    if (in) {
      text.resize(kMaxFileBytes + 1);
      in.read(text.data(), static_cast<std::streamsize>(text.size()));
      text.resize(static_cast<std::size_t>(in.gcount()));
    }
    if (!in && !in.eof()) {
      r.problems.push_back(f + ": cannot be read");
      continue;
    }
    if (text.size() > kMaxFileBytes) {
      r.problems.push_back(f + ": larger than 4 MiB, not a preflight report");
      continue;
    }
    std::string problem;
    if (auto n = parse_result(f, text, problem)) r.nodes.push_back(std::move(*n));
    else r.problems.push_back(problem);
  }
  std::stable_sort(r.nodes.begin(), r.nodes.end(), [](const NodeResult& a, const NodeResult& b) {
    if (a.node_rank.has_value() != b.node_rank.has_value()) return a.node_rank.has_value();
    if (a.node_rank && *a.node_rank != *b.node_rank) return *a.node_rank < *b.node_rank;
    return a.host < b.host;
  });
  return r;
}

nlohmann::ordered_json results_json(const Results& r) {
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (const NodeResult& n : r.nodes) {
    nlohmann::ordered_json failed = nlohmann::ordered_json::array();
    for (const auto& f : n.failed)
      failed.push_back({{"name", f.name}, {"measured", f.measured}, {"fix", f.fix}});
    nodes.push_back({{"host", n.host},
                     {"node_rank", n.node_rank ? nlohmann::ordered_json(*n.node_rank)
                                               : nlohmann::ordered_json(nullptr)},
                     {"role", n.role},
                     {"time", n.time},
                     {"endpoint", n.endpoint},
                     {"verdict", n.verdict},
                     {"can_rendezvous", n.can_rendezvous},
                     {"failed", failed},
                     {"warnings", n.warnings},
                     {"file", n.file}});
  }
  return {{"files", r.nodes.size() + r.problems.size()},
          {"can_rendezvous", every_node_could_rendezvous(r)},
          {"nodes", nodes},
          {"problems", r.problems}};
}

std::string results_text(const Results& r) {
  if (r.empty()) return "";
  const auto cannot = std::count_if(r.nodes.begin(), r.nodes.end(),
                                    [](const NodeResult& n) { return !n.can_rendezvous; });
  std::string s = "\n" + wrap("PREFLIGHT ",
                              fmt::format("{} node report(s) from rdzvscope preflight in the trace "
                                          "directory: {}",
                                          r.nodes.size(),
                                          cannot ? fmt::format("{} node(s) could not rendezvous "
                                                               "before the job started",
                                                               cannot)
                                                 : std::string("every node could rendezvous")),
                              kWidth) +
                  "\n";
  for (const NodeResult& n : r.nodes) {
    std::string line = fmt::format("  {:<24} {:<10} {:<24} {}", node_label(n), role_text(n.role),
                                   n.time, n.can_rendezvous ? "can rendezvous" : "CANNOT rendezvous");
    if (!n.warnings.empty()) line += fmt::format(" (warnings: {})", fmt::join(n.warnings, ", "));
    s += line + "\n";
    for (const auto& f : n.failed) {
      s += wrap(fmt::format("    FAIL  {:<13} ", f.name), f.measured, kWidth) + "\n";
      if (!f.fix.empty()) s += wrap(fmt::format("{:24}fix: ", ""), f.fix, kWidth) + "\n";
    }
  }
  for (const std::string& p : r.problems) s += wrap("  unreadable: ", p, kWidth) + "\n";
  return s;
}

std::string results_markdown(const Results& r) {
  if (r.empty()) return "";
  std::string s = "\n### Preflight (before the job started)\n\n";
  if (!r.nodes.empty()) {
    s += "| node | role | time | result | failed checks |\n|---|---|---|---|---|\n";
    for (const NodeResult& n : r.nodes) {
      std::vector<std::string> failed;
      for (const auto& f : n.failed) failed.push_back("**" + md(f.name) + "**: " + md(f.measured));
      s += fmt::format("| {} | {} | {} | {} | {} |\n", md(node_label(n)), md(role_text(n.role)),
                       md(n.time), n.can_rendezvous ? "can rendezvous" : "**cannot rendezvous**",
                       failed.empty() ? std::string("-") : fmt::format("{}", fmt::join(failed, "; ")));
    }
  }
  for (const std::string& p : r.problems) s += "\n- unreadable: " + md(p) + "\n";
  return s;
}

}  // namespace rdzvscope::preflight
