// Where the job's rendezvous store will be: HOST:PORT, and where that came from. The same
// order torchrun and init_process_group read it in: --endpoint, else torchrun's
// --rdzv-endpoint as its agent sees it (PET_RDZV_ENDPOINT), else env:// (MASTER_ADDR and
// MASTER_PORT).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "reader/error.h"

namespace rdzvscope::preflight {

// torchrun's c10d backend listens on this port when --rdzv-endpoint names none
// (DEFAULT_PORT in c10d_rendezvous_backend.py).
inline constexpr std::uint16_t kDefaultRdzvPort = 29400;

struct Endpoint {
  std::string host;  // a name or an address, brackets removed from an IPv6 literal
  std::uint16_t port = 0;
  std::string source;  // "--endpoint", "PET_RDZV_ENDPOINT", "MASTER_ADDR/MASTER_PORT"

  std::string text() const;  // "host:port", "[::1]:port"
};

// "HOST:PORT", "HOST" (port kDefaultRdzvPort, as torchrun), "[V6]:PORT", "[V6]". A bare IPv6
// literal without brackets is refused: its last group cannot be told from a port.
Result<Endpoint> parse_endpoint(const std::string& text, const std::string& source);

// The environment variables that matter, read by the caller (tests pass their own).
struct EndpointEnv {
  std::optional<std::string> pet_rdzv_endpoint;
  std::optional<std::string> master_addr;
  std::optional<std::string> master_port;
};

EndpointEnv endpoint_env_from_process();

// The endpoint of the job: the option, else the environment; an Error says which is
// missing or malformed.
Result<Endpoint> choose_endpoint(const std::optional<std::string>& option, const EndpointEnv& env);

}  // namespace rdzvscope::preflight
