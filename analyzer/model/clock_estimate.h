// One host's clock against the reference host's (clock_alignment.h), as the reports show it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace rdzvscope {

struct ClockEstimate {
  std::string host;
  std::int64_t offset_ns = 0;       // this host's clock minus the reference host's
  std::int64_t uncertainty_ns = 0;  // the true offset is within offset_ns +- this
  std::size_t pairs = 0;            // matched connections behind the estimate
  bool reference = false;
  bool applied = false;  // its events were moved by -offset_ns (only when |offset| > uncertainty)
};

// Above this, the text report says a host's clock was off (50 ms).
inline constexpr std::int64_t kClockOffsetWorthSaying = 50'000'000;

// "node1's clock is +5000.12 ms (+- 0.31 ms) off node0's (3 connections); its times were
// moved onto node0's clock".
std::string describe_clock(const ClockEstimate& e, const std::string& reference_host);

}  // namespace rdzvscope
