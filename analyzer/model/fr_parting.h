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
#include <string>
#include <vector>

#include "diagnosis.h"
#include "reader/flight_recorder.h"

namespace rdzvscope {

// nullopt when there are no dumps, or no group's ranks part and none lacks a dump.
std::optional<FlightRecorderParting> find_fr_parting(const FrInputs& in);

// "rank 2 never entered collective 5 (all_reduce) of process group 0; ranks 0, 1, 3 waited in
// it": the parting in words, for the verdict and the views. `where`, when given, follows the
// collective's name (", the first collective after the rendezvous").
std::string fr_parting_words(const FlightRecorderParting& p, const std::string& where = "");
// "collective 5 (all_reduce) of process group 0 (default_pg)": the collective where they part.
std::string fr_collective_words(const FlightRecorderParting& p);
// "4 dump(s), format 2.10": what the views' Flight Recorder sections were read from.
std::string fr_dumps_words(const FlightRecorderParting& p);
// "last collective of process group 0 by rank: 0: 1, 1: 1, 2: 0, 3: 1" (dumped ranks only).
std::string fr_last_sequence_words(const FlightRecorderParting& p);
// The ranks the views list one per row: each dumped member, then each member with no dump.
std::vector<int> fr_ranks(const FlightRecorderParting& p);
// One rank's last collective in the group, "1", or "no dump"; whether it is one the others
// waited for (FlightRecorderParting::behind), the rank a view marks.
std::string fr_last_sequence_of(const FlightRecorderParting& p, int rank);
bool fr_is_behind(const FlightRecorderParting& p, int rank);
// One rank's part in the collective where the ranks part: "never entered it", "waited in it
// (its entry: started)", "entered it 3.20 s after the first rank's timeout in it had run out",
// "entered it, its last in its dump" (undecided), "left no dump (dead, or never dumped)".
std::string fr_rank_part_words(const FlightRecorderParting& p, int rank);
// "never_entered", "entered_late", "undecided": as the JSON names the kind.
const char* fr_kind_name(FlightRecorderParting::Kind k);

}  // namespace rdzvscope
