// Hosts' CLOCK_REALTIME can be seconds apart; every trace header carries only its own host's
// clock. Connections between traced processes on two hosts bound the difference, NTP-style:
//
//   client (host X)  connect starts C ──SYN──►  server (host Y)  accept ends A
//                    first recv with data ends R ◄──  first send on that socket starts S
//
// Something the client did cannot have been seen by the server before it began, and the
// reverse: with theta = clock_Y - clock_X,  S - R <= theta <= A - C  (also <= the server's
// first recv of data minus the client's first send). Note that the accept bounds one side
// only: it returns after the handshake's last ACK, i.e. after the client's connect returned,
// and later still when the server was busy; the other side comes from the server's reply.
// Connections are matched by their 4-tuple (the client's local address is the peer of the
// server's accept); a tuple seen more than once, or with a loopback address (every host has
// its own 127.0.0.1), is not used. Bounds from all pairs of two hosts are intersected; the
// midpoint is the estimate, half the window the uncertainty. Hosts are placed against the
// store server's host (the reference), through other hosts when not connected to it directly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "clock_estimate.h"
#include "process_model.h"

namespace rdzvscope {

// Estimates every host's offset and moves its processes' times (events, launch, exit) onto
// the reference host's clock. Returns the reference and the hosts with at least one matched
// pair; empty when the processes ran on one host, or no host could be placed.
std::vector<ClockEstimate> align_clocks(std::vector<Process>& processes);

}  // namespace rdzvscope
