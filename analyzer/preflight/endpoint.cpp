#include "preflight/endpoint.h"

#include <charconv>
#include <cstdlib>

namespace rdzvscope::preflight {

std::string Endpoint::text() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

namespace {

Error bad(const std::string& source, const std::string& detail) {
  return Error{source, detail, std::nullopt};
}

std::optional<std::uint16_t> parse_port(const std::string& s) {
  unsigned value = 0;
  const char* end = s.data() + s.size();
  const auto [p, ec] = std::from_chars(s.data(), end, value);
  if (s.empty() || ec != std::errc() || p != end || value == 0 || value > 65535)
    return std::nullopt;
  return static_cast<std::uint16_t>(value);
}

// Host names and addresses: letters, digits, '-', '.', '_' (some clusters use it), and for an
// IPv6 literal ':' and '%' (scope). Anything else (spaces, '/', '@', a URL) is a typo.
bool plausible_host(const std::string& h) {
  if (h.empty() || h.size() > 253) return false;
  for (char c : h) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == '_' || c == ':' || c == '%';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

Result<Endpoint> parse_endpoint(const std::string& text, const std::string& source) {
  const std::string what = "'" + text + "'";
  if (text.empty()) return bad(source, "empty endpoint (want HOST:PORT)");
  std::string host, port;
  if (text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos)
      return bad(source, what + ": '[' without ']' (want [IPV6]:PORT)");
    host = text.substr(1, close - 1);
    const std::string rest = text.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return bad(source, what + ": want [IPV6]:PORT");
    port = rest.empty() ? "" : rest.substr(1);
    if (host.find(':') == std::string::npos)
      return bad(source, what + ": brackets are for IPv6 addresses");
  } else {
    const auto colon = text.rfind(':');
    if (colon != std::string::npos && text.find(':') != colon)
      return bad(source, what + ": an IPv6 address needs brackets ([ADDR]:PORT)");
    host = colon == std::string::npos ? text : text.substr(0, colon);
    port = colon == std::string::npos ? "" : text.substr(colon + 1);
    if (colon != std::string::npos && port.empty())
      return bad(source, what + ": no port after ':'");
  }
  if (!plausible_host(host))
    return bad(source, what + ": '" + host + "' is not a host name or address");
  Endpoint e{host, kDefaultRdzvPort, source};
  if (!port.empty()) {
    const auto p = parse_port(port);
    if (!p) return bad(source, what + ": port '" + port + "' is not a number from 1 to 65535");
    e.port = *p;
  }
  return e;
}

EndpointEnv endpoint_env_from_process() {
  auto get = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v && *v ? std::optional<std::string>(v) : std::nullopt;
  };
  return EndpointEnv{get("PET_RDZV_ENDPOINT"), get("MASTER_ADDR"), get("MASTER_PORT")};
}

Result<Endpoint> choose_endpoint(const std::optional<std::string>& option, const EndpointEnv& env) {
  if (option) return parse_endpoint(*option, "--endpoint");
  if (env.pet_rdzv_endpoint) return parse_endpoint(*env.pet_rdzv_endpoint, "PET_RDZV_ENDPOINT");
  if (env.master_addr || env.master_port) {
    const std::string source = "MASTER_ADDR/MASTER_PORT";
    if (!env.master_addr) return bad(source, "MASTER_PORT is set but MASTER_ADDR is not");
    // init_process_group's env:// has no default port: both must be there.
    if (!env.master_port) return bad(source, "MASTER_ADDR is set but MASTER_PORT is not");
    if (env.master_addr->find(':') != std::string::npos && env.master_addr->front() != '[')
      return parse_endpoint("[" + *env.master_addr + "]:" + *env.master_port, source);
    return parse_endpoint(*env.master_addr + ":" + *env.master_port, source);
  }
  return bad("",
             "no endpoint: give --endpoint HOST:PORT, or set PET_RDZV_ENDPOINT, or MASTER_ADDR and "
             "MASTER_PORT");
}

}  // namespace rdzvscope::preflight
