#include "preflight/hello.h"

#include <time.h>

#include <nlohmann/json.hpp>

namespace rdzvscope::preflight {

namespace {

using nlohmann::json;

std::string line_of(json j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

Error bad(const std::string& detail) { return Error{"", detail, std::nullopt}; }

// The line as our JSON object, or why not.
Result<json> parse_ours(const std::string& line) {
  if (line.size() > kMaxLine) return bad("line longer than " + std::to_string(kMaxLine) + " bytes");
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  const auto p = j.find("preflight");
  if (p == j.end() || !p->is_string() || p->get<std::string>() != kProtocol)
    return bad(std::string("not a preflight message (no \"preflight\":\"") + kProtocol + "\")");
  const auto t = j.find("type");
  if (t == j.end() || !t->is_string()) return bad("no \"type\"");
  return j;
}

bool get_i64(const json& j, const char* key, std::int64_t& out) {
  const auto v = j.find(key);
  if (v == j.end() || !v->is_number_integer()) return false;
  out = v->get<std::int64_t>();
  return true;
}

Result<json> parse_typed(const std::string& line, const std::string& type) {
  auto j = parse_ours(line);
  if (!j) return j;
  const std::string got = j.value()["type"].get<std::string>();
  if (got != type) return bad("expected a " + type + ", got a " + sanitized_host(got));
  return j;
}

}  // namespace

std::string sanitized_host(const std::string& host) {
  std::string out;
  for (char c : host.substr(0, 255)) out += (c > ' ' && c < 0x7f) ? c : '?';
  return out.empty() ? "?" : out;
}

std::string sanitized_text(const std::string& text) {
  std::string out = text.substr(0, 2000);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < ' ' || c == 0x7f) c = '?';
  }
  return out;
}

std::string sanitized_job(const std::string& job) {
  std::string out;
  for (char c : job.substr(0, kMaxJobKey)) out += (c > ' ' && c < 0x7f) ? c : '?';
  return out;
}

bool same_job(const std::string& store_job, const std::string& hello_job) {
  return store_job.empty() || store_job == hello_job;
}

std::string hello_line(const Hello& h) {
  json checks = json::array();
  for (const Check& c : h.checks) checks.push_back(to_json(c));
  json j = {{"preflight", kProtocol},
            {"type", "hello"},
            {"host", h.host},
            {"world_size", h.world_size},
            {"t1_ns", h.t1_ns},
            {"checks", checks}};
  if (h.node_rank) j["node_rank"] = *h.node_rank;
  if (!h.job.empty()) j["job"] = h.job;
  return line_of(std::move(j));
}

std::string refused_line(const Refused& r) {
  return line_of(
      {{"preflight", kProtocol}, {"type", "refused"}, {"host", r.host}, {"job", r.job}});
}

std::string welcome_line(const Welcome& w) {
  return line_of({{"preflight", kProtocol},
                  {"type", "welcome"},
                  {"host", w.host},
                  {"t2_ns", w.t2_ns},
                  {"t3_ns", w.t3_ns}});
}

std::string clock_line(const ClockLine& c) {
  return line_of({{"preflight", kProtocol}, {"type", "clock"}, {"t4_ns", c.t4_ns}});
}

Result<std::string> message_type(const std::string& line) {
  auto j = parse_ours(line);
  if (!j) return j.error();
  return j.value()["type"].get<std::string>();
}

Result<Hello> parse_hello(const std::string& line) {
  auto r = parse_typed(line, "hello");
  if (!r) return r.error();
  const json& j = r.value();
  Hello h;
  const auto host = j.find("host");
  if (host == j.end() || !host->is_string()) return bad("hello without \"host\"");
  h.host = sanitized_host(host->get<std::string>());
  if (!get_i64(j, "t1_ns", h.t1_ns)) return bad("hello without an integer \"t1_ns\"");
  const auto ws = j.find("world_size");
  if (ws != j.end() && ws->is_number_unsigned() && ws->get<std::uint64_t>() < 1u << 30)
    h.world_size = ws->get<unsigned>();
  const auto nr = j.find("node_rank");
  if (nr != j.end() && nr->is_number_unsigned() && nr->get<std::uint64_t>() < 1u << 30)
    h.node_rank = nr->get<unsigned>();
  if (const auto job = j.find("job"); job != j.end()) {
    if (!job->is_string()) return bad("hello with a \"job\" that is not a string");
    h.job = sanitized_job(job->get<std::string>());
  }
  const auto checks = j.find("checks");
  if (checks != j.end() && checks->is_array()) {
    for (const json& c : *checks) {
      Check check;
      if (!from_json(c, check)) return bad("hello with a malformed check");
      check.name = sanitized_host(check.name).substr(0, 40);
      check.measured = sanitized_text(check.measured);
      check.fix = sanitized_text(check.fix);
      h.checks.push_back(std::move(check));
    }
  }
  return h;
}

Result<Welcome> parse_welcome(const std::string& line) {
  auto r = parse_typed(line, "welcome");
  if (!r) return r.error();
  const json& j = r.value();
  Welcome w;
  const auto host = j.find("host");
  if (host == j.end() || !host->is_string()) return bad("welcome without \"host\"");
  w.host = sanitized_host(host->get<std::string>());
  if (!get_i64(j, "t2_ns", w.t2_ns) || !get_i64(j, "t3_ns", w.t3_ns))
    return bad("welcome without t2_ns/t3_ns");
  return w;
}

Result<ClockLine> parse_clock(const std::string& line) {
  auto r = parse_typed(line, "clock");
  if (!r) return r.error();
  ClockLine c;
  if (!get_i64(r.value(), "t4_ns", c.t4_ns)) return bad("clock without an integer \"t4_ns\"");
  return c;
}

Result<Refused> parse_refused(const std::string& line) {
  auto r = parse_typed(line, "refused");
  if (!r) return r.error();
  const json& j = r.value();
  const auto host = j.find("host");
  const auto job = j.find("job");
  if (host == j.end() || !host->is_string() || job == j.end() || !job->is_string())
    return bad("refused without \"host\" and \"job\"");
  return Refused{sanitized_host(host->get<std::string>()), sanitized_job(job->get<std::string>())};
}

double ClockSample::offset_ms() const {
  return (static_cast<double>(t2_ns - t1_ns) + static_cast<double>(t3_ns - t4_ns)) / 2e6;
}

double ClockSample::uncertainty_ms() const {
  return (static_cast<double>(t4_ns - t1_ns) - static_cast<double>(t3_ns - t2_ns)) / 2e6;
}

std::int64_t wall_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace rdzvscope::preflight
