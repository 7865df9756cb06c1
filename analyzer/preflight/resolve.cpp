#include "preflight/resolve.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <strings.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace rdzvscope::preflight {

std::vector<SockAddr> Lookup::addresses() const {
  std::vector<SockAddr> out;
  for (const FamilyLookup& f : families)
    out.insert(out.end(), f.addresses.begin(), f.addresses.end());
  return out;
}

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

FamilyLookup lookup_family(const std::string& host, const std::string& port, int family) {
  addrinfo hints{};
  hints.ai_flags = AI_V4MAPPED | AI_ALL | AI_NUMERICSERV;  // 0x418, as c10d
  hints.ai_family = family;
  hints.ai_socktype = SOCK_STREAM;
  FamilyLookup out;
  out.family = family;
  addrinfo* res = nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  out.rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  out.err = errno;
  out.ms = ms_since(t0);
  if (out.rc != 0) return out;
  for (const addrinfo* a = res; a; a = a->ai_next)
    out.addresses.push_back(from_sockaddr(a->ai_addr, a->ai_addrlen));
  ::freeaddrinfo(res);
  return out;
}

std::string family_name(int family) { return family == AF_INET6 ? "AF_INET6" : "AF_INET"; }

std::vector<std::string> texts(const std::vector<SockAddr>& addrs) {
  std::vector<std::string> out;
  for (const SockAddr& a : addrs) {
    std::string t = address_text(a);
    bool seen = false;
    for (const auto& o : out) seen |= o == t;
    if (!seen) out.push_back(t);
  }
  return out;
}

std::string gai_text(const FamilyLookup& f) {
  if (f.rc == EAI_SYSTEM) return fmt::format("{} ({})", eai_name(f.rc), std::strerror(f.err));
  return fmt::format("{} ({}: {})", eai_name(f.rc), f.rc, ::gai_strerror(f.rc));
}

nlohmann::json lookup_json(const Lookup& l) {
  nlohmann::json fams = nlohmann::json::array();
  for (const FamilyLookup& f : l.families) {
    fams.push_back({{"family", family_name(f.family)},
                    {"rc", f.rc},
                    {"error", f.rc == 0 ? nlohmann::json(nullptr) : nlohmann::json(eai_name(f.rc))},
                    {"ms", f.ms},
                    {"addresses", texts(f.addresses)}});
  }
  return {{"host", l.host}, {"ms", l.ms}, {"addresses", texts(l.addresses())}, {"lookups", fams}};
}

// A failed lookup: EAI_AGAIN waits on a DNS server, the others are answers ("no such name").
Check failed_resolve(const Lookup& l, const std::string& source, nlohmann::json data) {
  const bool from_etc_hosts = source == "/etc/hosts";
  const FamilyLookup& first = l.families.front();
  const bool temporary = first.rc == EAI_AGAIN;
  std::string fix =
      temporary
          ? fmt::format(
                "the resolver could not reach a name server: check /etc/resolv.conf and the DNS "
                "server from this node (getent hosts {}); c10d retries the lookup until its "
                "timeout",
                l.host)
          : fmt::format(
                "add '{}' to this node's /etc/hosts or to DNS, or use the store host's address as "
                "the endpoint (check with: getent ahosts {})",
                l.host, l.host);
  return fail_check("resolve",
                    fmt::format("{} does not resolve on this node: {} after {:.1f} ms{}", l.host,
                                gai_text(first), l.ms,
                                from_etc_hosts
                                    ? " (it is in /etc/hosts: is nsswitch.conf's hosts line "
                                      "missing 'files'?)"
                                    : ""),
                    std::move(fix), std::move(data));
}

}  // namespace

Lookup lookup_like_c10d(const std::string& host, unsigned port) {
  Lookup l;
  l.host = host;
  const std::string p = std::to_string(port);
  const auto t0 = std::chrono::steady_clock::now();
  l.families.push_back(lookup_family(host, p, AF_INET6));
  l.families.push_back(lookup_family(host, p, AF_INET));
  l.ms = ms_since(t0);
  return l;
}

std::string eai_name(int rc) {
  switch (rc) {
    case EAI_BADFLAGS: return "EAI_BADFLAGS";
    case EAI_NONAME: return "EAI_NONAME";
    case EAI_AGAIN: return "EAI_AGAIN";
    case EAI_FAIL: return "EAI_FAIL";
    case EAI_FAMILY: return "EAI_FAMILY";
    case EAI_SOCKTYPE: return "EAI_SOCKTYPE";
    case EAI_SERVICE: return "EAI_SERVICE";
    case EAI_MEMORY: return "EAI_MEMORY";
    case EAI_SYSTEM: return "EAI_SYSTEM";
    case EAI_OVERFLOW: return "EAI_OVERFLOW";
#ifdef EAI_NODATA
    case EAI_NODATA: return "EAI_NODATA";
#endif
#ifdef EAI_ADDRFAMILY
    case EAI_ADDRFAMILY: return "EAI_ADDRFAMILY";
#endif
    default: return "EAI_" + std::to_string(rc);
  }
}

std::vector<std::string> hosts_file_names(const std::string& text) {
  std::vector<std::string> names;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string address, name;
    if (!(words >> address)) continue;
    while (words >> name) names.push_back(name);
  }
  return names;
}

bool in_etc_hosts(const std::string& name) {
  std::ifstream f("/etc/hosts");
  std::stringstream text;
  text << f.rdbuf();
  for (const auto& n : hosts_file_names(text.str())) {
    if (strcasecmp(n.c_str(), name.c_str()) == 0) return true;
  }
  return false;
}

std::string digits_read_as_address(const std::string& host) {
  in_addr loose{}, strict{};
  if (::inet_aton(host.c_str(), &loose) == 0) return "";
  if (::inet_pton(AF_INET, host.c_str(), &strict) == 1) return "";
  char buf[INET_ADDRSTRLEN] = {};
  return ::inet_ntop(AF_INET, &loose, buf, sizeof buf) ? buf : "";
}

std::string answer_source(const std::string& host) {
  in6_addr a6{};
  in_addr a4{};
  if (::inet_pton(AF_INET, host.c_str(), &a4) == 1 || ::inet_pton(AF_INET6, host.c_str(), &a6) == 1)
    return "address";
  return in_etc_hosts(host) ? "/etc/hosts" : "resolver";
}

std::vector<Check> resolve_checks(const Lookup& l, const std::string& source) {
  std::vector<Check> out;
  nlohmann::json data = lookup_json(l);
  data["source"] = source;
  if (!l.resolved()) {
    out.push_back(failed_resolve(l, source, std::move(data)));
    return out;
  }
  const auto addrs = texts(l.addresses());
  const std::string seen = fmt::format("{} -> {} in {:.1f} ms ({})", l.host, fmt::join(addrs, ", "),
                                       l.ms,
                                       source == "address" ? "an address: no lookup"
                                       : source == "/etc/hosts"
                                           ? "/etc/hosts"
                                           : "resolver: DNS or another nsswitch source");
  // c10d looks the name up again at every connect retry: a slow resolver eats its timeout.
  if (l.ms > 1000) {
    out.push_back(warn_check(
        "resolve", seen + ": slow",
        "c10d resolves again at every retry; put the store host in /etc/hosts or use its "
        "address as the endpoint",
        data));
  } else {
    out.push_back(ok_check("resolve", seen, data));
  }
  if (const std::string as = digits_read_as_address(l.host); !as.empty()) {
    out.push_back(fail_check(
        "numeric-name",
        fmt::format(
            "'{}' is all digits: getaddrinfo reads it as the IPv4 address {}, never as a host name",
            l.host, as),
        "use the store host's full name (with its domain) or its dotted address as the endpoint",
        {{"read_as", as}}));
  }
  bool any_v4 = false;
  for (const SockAddr& a : l.addresses()) any_v4 |= is_v4_or_mapped(a);
  if (!any_v4) {
    out.push_back(warn_check(
        "ipv6-only",
        fmt::format(
            "{} has IPv6 addresses only ({}): every node needs an IPv6 route to the store host",
            l.host, fmt::join(addrs, ", ")),
        "give the name an IPv4 address too (A record or /etc/hosts), or check that every node "
        "reaches that "
        "address (ip -6 route get ADDR)",
        {{"addresses", addrs}}));
  }
  return out;
}

Check own_name_check(const std::string& hostname, const Lookup& l) {
  nlohmann::json data = lookup_json(l);
  if (!l.resolved()) {
    return warn_check(
        "own-name",
        fmt::format("this node's own name {} does not resolve here ({})", hostname,
                    gai_text(l.families.front())),
        "torchrun publishes this name to the workers (MASTER_ADDR) and gloo binds to it: add it "
        "to /etc/hosts with the node's network address",
        std::move(data));
  }
  bool all_loopback = true;
  for (const SockAddr& a : l.addresses()) all_loopback &= is_loopback(a);
  const auto addrs = texts(l.addresses());
  if (all_loopback) {
    return warn_check(
        "own-name",
        fmt::format(
            "this node's own name {} resolves to loopback only ({}): gloo binds there, and what "
            "torchrun publishes as MASTER_ADDR is unreachable from other nodes if they resolve it "
            "the same "
            "way",
            hostname, fmt::join(addrs, ", ")),
        fmt::format("map {} to the node's network address in /etc/hosts (Debian writes 127.0.1.1 "
                    "there), or set "
                    "GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME",
                    hostname),
        std::move(data));
  }
  return ok_check("own-name",
                  fmt::format("this node's own name {} -> {}", hostname, fmt::join(addrs, ", ")),
                  std::move(data));
}

}  // namespace rdzvscope::preflight
