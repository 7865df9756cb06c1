// Check 1, on every node: does the endpoint's host resolve here the way c10d resolves it?
// c10d's client (socket.cpp SocketConnectOp) calls getaddrinfo(host, port, {AI_V4MAPPED |
// AI_ALL | AI_NUMERICSERV, SOCK_STREAM}) first with AF_INET6, then with AF_INET, and tries
// every address in that order (docs/c10d-notes.md, section 1). The same two lookups here,
// timed, through this node's own resolver path (nsswitch, /etc/hosts, DNS).
#pragma once

#include <string>
#include <vector>

#include "preflight/addresses.h"
#include "preflight/check.h"

namespace rdzvscope::preflight {

struct FamilyLookup {
  int family = 0;  // AF_INET6, AF_INET
  int rc = 0;      // getaddrinfo's return value: 0 or EAI_*
  int err = 0;     // errno, for EAI_SYSTEM
  double ms = 0;
  std::vector<SockAddr> addresses;
};

struct Lookup {
  std::string host;
  std::vector<FamilyLookup> families;  // AF_INET6 first, then AF_INET, as c10d
  double ms = 0;                       // both together

  // Every address, in the order c10d tries them, duplicates kept (c10d keeps them too).
  std::vector<SockAddr> addresses() const;
  bool resolved() const { return !addresses().empty(); }
};

Lookup lookup_like_c10d(const std::string& host, unsigned port);

// "EAI_NONAME", "EAI_AGAIN", ... (the name a user can search for); "EAI_<n>" when unknown.
std::string eai_name(int rc);

// The names of /etc/hosts-format text (every name and alias after the address).
std::vector<std::string> hosts_file_names(const std::string& text);
bool in_etc_hosts(const std::string& name);

// A name that inet_aton takes for an IPv4 address although it is no dotted quad ("1234",
// "10.1"): getaddrinfo never looks it up as a host name. The address it becomes, else "".
std::string digits_read_as_address(const std::string& host);

// Where the answer came from, as far as can be told from outside the resolver:
// "address" (a literal, no lookup), "/etc/hosts", or "resolver" (DNS or another nsswitch
// source).
std::string answer_source(const std::string& host);

// The resolve check and the traps of the answer (numeric name, IPv6 only).
std::vector<Check> resolve_checks(const Lookup& lookup, const std::string& source);

// On the store host: this node's own host name, which torchrun publishes and gloo binds to;
// Debian maps it to 127.0.1.1 in /etc/hosts, which other nodes cannot reach.
Check own_name_check(const std::string& hostname, const Lookup& lookup);

}  // namespace rdzvscope::preflight
