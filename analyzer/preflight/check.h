// What every preflight check produces: a verdict, the figure it measured, and the fix when
// the verdict is not ok. The checks (one file each: resolve, bind_port, limits, connect,
// meeting) only find and word; report.cpp formats, preflight.cpp decides which run.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rdzvscope::preflight {

// Ordered by severity: the worst verdict of a report decides its exit status.
enum class Verdict { Ok, Warn, Fail };

const char* name_of(Verdict v);  // "ok", "warn", "fail"

struct Check {
  std::string name;  // "resolve", "bind", "somaxconn", "nofile", "connect", "clock", ...
  Verdict verdict = Verdict::Ok;
  std::string measured;                            // one sentence: what was seen, with the figure
  std::string fix;                                 // empty when ok
  nlohmann::json data = nlohmann::json::object();  // the figures, for scripts and analyze
};

Check ok_check(std::string name, std::string measured,
               nlohmann::json data = nlohmann::json::object());
Check warn_check(std::string name, std::string measured, std::string fix,
                 nlohmann::json data = nlohmann::json::object());
Check fail_check(std::string name, std::string measured, std::string fix,
                 nlohmann::json data = nlohmann::json::object());

// "ECONNREFUSED (Connection refused)": the name to search for, and what it means.
std::string errno_text(int err);

// The worst verdict among checks; Ok for none.
Verdict worst(const std::vector<Check>& checks);

nlohmann::json to_json(const Check& c);
// Reads back what to_json wrote (a peer's hello); false when the object is not a check.
bool from_json(const nlohmann::json& j, Check& out);

}  // namespace rdzvscope::preflight
