// The collective where the ranks part, from PyTorch's Flight Recorder dumps (one per rank,
// reader/flight_recorder.h). Every rank of a process group enters its collectives in the same
// order, and each enqueue is one entry with the group's collective_seq_id; the watchdog dumps
// every rank when one times out. So in a group, the ranks whose last entry is the lowest
// sequence L, while others have L+1 or later, never entered collective L+1, and those that
// entered it waited there for them. Where every rank has the same last sequence, one that
// enqueued it after the first rank's entry had timed out (time_created_ns past the other's
// time_created_ns + timeout_ms; the hosts' clocks, CLOCK_REALTIME) entered only once the
// others had given up: the same straggler, dumped later (a gloo job that dumps on its own
// failure). A member of the group with no dump is not assumed late: it died, or never dumped.
#pragma once

#include <optional>

#include "diagnosis.h"
#include "reader/flight_recorder.h"

namespace rdzvscope {

// nullopt when there are no dumps, or no group's ranks part and none lacks a dump.
std::optional<FlightRecorderParting> find_fr_parting(const FrInputs& in);

// "rank 2 never entered collective 5 (all_reduce) of process group 0; ranks 0, 1, 3 waited in
// it": the parting in words, for the verdict and the views. `where`, when given, follows the
// collective's name (", the first collective after the rendezvous").
std::string fr_parting_words(const FlightRecorderParting& p, const std::string& where = "");
// "never_entered", "entered_late", "undecided": as the JSON names the kind.
const char* fr_kind_name(FlightRecorderParting::Kind k);

}  // namespace rdzvscope
