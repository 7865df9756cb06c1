// The preflight meeting's protocol (--world-size): every node but the store host connects to
// the endpoint, where the store host's preflight listens, and the two exchange three lines of
// JSON, each at most kMaxLine bytes, '\n'-terminated:
//   node  -> store  {"preflight":"rdzvscope/1","type":"hello","host":H,"world_size":N,
//                    "t1_ns":T1,"checks":[...]}            the node's own check results
//                   (and "node_rank":R when the node knows it: PET_NODE_RANK, SLURM_NODEID, ...;
//                   and "job":J, the job key, when the node has one: job_size.h, job_key)
//   store -> node   {"preflight":"rdzvscope/1","type":"welcome","host":H,"t2_ns":T2,"t3_ns":T3}
//   node  -> store  {"preflight":"rdzvscope/1","type":"clock","t4_ns":T4}
// A meeting belongs to one job: a store host with a job key answers a hello whose "job" is
// another (or absent) with
//   store -> node   {"preflight":"rdzvscope/1","type":"refused","host":H,"job":J}
// (J: the store host's job) and closes; both sides report two jobs on one endpoint. A store
// host without a job key cannot tell jobs apart and welcomes every hello.
// T1..T4 are CLOCK_REALTIME nanoseconds: T1 hello sent, T2 hello received, T3 welcome sent,
// T4 welcome received. From them, as NTP does: offset = ((T2 - T1) + (T3 - T4)) / 2 (the
// store host's clock minus the node's), within +-(round trip - store's hold time) / 2.
// A line that is not one of these (garbage, another program's bytes, a line too long) is an
// Error with a one-line reason; it never throws.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "preflight/check.h"
#include "reader/error.h"

namespace rdzvscope::preflight {

inline constexpr const char* kProtocol = "rdzvscope/1";
inline constexpr std::size_t kMaxLine = 64 * 1024;

struct Hello {
  std::string host;
  unsigned world_size = 0;
  std::int64_t t1_ns = 0;
  std::vector<Check> checks;
  std::optional<unsigned> node_rank = std::nullopt;  // "node_rank", when the node knows it (job_size.h)
  std::string job = {};                               // "job", the job key; "" when none
};

struct Welcome {
  std::string host;
  std::int64_t t2_ns = 0, t3_ns = 0;
};

struct ClockLine {
  std::int64_t t4_ns = 0;
};

struct Refused {
  std::string host;
  std::string job;  // the store host's job key
};

// Whether the store host of job `store_job` welcomes a hello of job `hello_job` ("" for none).
bool same_job(const std::string& store_job, const std::string& hello_job);

std::string hello_line(const Hello& h);  // each with its '\n'
std::string welcome_line(const Welcome& w);
std::string clock_line(const ClockLine& c);
std::string refused_line(const Refused& r);

// The message's type ("hello", "welcome", "clock") after checking it is ours.
Result<std::string> message_type(const std::string& line);
Result<Hello> parse_hello(const std::string& line);
Result<Welcome> parse_welcome(const std::string& line);
Result<ClockLine> parse_clock(const std::string& line);
Result<Refused> parse_refused(const std::string& line);

struct ClockSample {
  std::int64_t t1_ns = 0, t2_ns = 0, t3_ns = 0, t4_ns = 0;
  double offset_ms() const;       // store host minus this node
  double uncertainty_ms() const;  // half the network round trip
};

std::int64_t wall_ns();  // CLOCK_REALTIME now

// Host names travel in the protocol and end up in reports: printable ASCII only, bounded.
std::string sanitized_host(const std::string& host);
// A peer's check texts likewise: no control characters (a terminal's escapes, newlines that
// would break the report's lines), at most 2000 bytes.
std::string sanitized_text(const std::string& text);
// A job key as it travels and is shown: printable ASCII, at most kMaxJobKey bytes ("" stays "").
inline constexpr std::size_t kMaxJobKey = 128;
std::string sanitized_job(const std::string& job);

}  // namespace rdzvscope::preflight
