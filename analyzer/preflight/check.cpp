#include "preflight/check.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace rdzvscope::preflight {

const char* name_of(Verdict v) {
  switch (v) {
    case Verdict::Ok: return "ok";
    case Verdict::Warn: return "warn";
    case Verdict::Fail: return "fail";
  }
  return "fail";
}

namespace {

Check make(std::string name, Verdict v, std::string measured, std::string fix,
           nlohmann::json data) {
  return Check{std::move(name), v, std::move(measured), std::move(fix), std::move(data)};
}

}  // namespace

Check ok_check(std::string name, std::string measured, nlohmann::json data) {
  return make(std::move(name), Verdict::Ok, std::move(measured), "", std::move(data));
}

Check warn_check(std::string name, std::string measured, std::string fix, nlohmann::json data) {
  return make(std::move(name), Verdict::Warn, std::move(measured), std::move(fix), std::move(data));
}

Check fail_check(std::string name, std::string measured, std::string fix, nlohmann::json data) {
  return make(std::move(name), Verdict::Fail, std::move(measured), std::move(fix), std::move(data));
}

std::string errno_text(int err) {
  const char* name = strerrorname_np(err);
  return std::string(name ? name : "errno " + std::to_string(err)) + " (" + std::strerror(err) +
         ")";
}

Verdict worst(const std::vector<Check>& checks) {
  Verdict w = Verdict::Ok;
  for (const Check& c : checks) w = std::max(w, c.verdict);
  return w;
}

nlohmann::json to_json(const Check& c) {
  return {{"name", c.name},
          {"verdict", name_of(c.verdict)},
          {"measured", c.measured},
          {"fix", c.fix.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.fix)},
          {"data", c.data}};
}

bool from_json(const nlohmann::json& j, Check& out) {
  if (!j.is_object()) return false;
  const auto name = j.find("name");
  const auto verdict = j.find("verdict");
  const auto measured = j.find("measured");
  if (name == j.end() || !name->is_string() || verdict == j.end() || !verdict->is_string() ||
      measured == j.end() || !measured->is_string())
    return false;
  const std::string v = verdict->get<std::string>();
  if (v == "ok") {
    out.verdict = Verdict::Ok;
  } else if (v == "warn") {
    out.verdict = Verdict::Warn;
  } else if (v == "fail") {
    out.verdict = Verdict::Fail;
  } else {
    return false;
  }
  out.name = name->get<std::string>();
  out.measured = measured->get<std::string>();
  const auto fix = j.find("fix");
  out.fix = fix != j.end() && fix->is_string() ? fix->get<std::string>() : "";
  const auto data = j.find("data");
  out.data = data != j.end() && data->is_object() ? *data : nlohmann::json::object();
  return true;
}

}  // namespace rdzvscope::preflight
