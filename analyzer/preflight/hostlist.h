// Slurm's hostlist syntax (SLURM_JOB_NODELIST), expanded to host names, for preflight's node
// list when --nodes is not given:
//   "node[0-3,7],gpu[01-02]"  -> node0 node1 node2 node3 node7 gpu01 gpu02
//   "rack[1-2]-n[1-2]"         -> rack1-n1 rack1-n2 rack2-n1 rack2-n2 (each group in turn)
//   "a,b.example.com"          -> a b.example.com
// A range keeps the width of its lower bound when that has a leading zero ("[08-10]" -> 08 09
// 10; "[8-10]" -> 8 9 10), as Slurm does. Malformed lists (an unclosed or nested bracket, an
// empty item or range, a bound that is not a number, a range that runs backwards, more than
// kMaxHosts names) are an Error that says what and where.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "reader/error.h"

namespace rdzvscope::preflight {

inline constexpr std::size_t kMaxHosts = 1u << 20;

Result<std::vector<std::string>> expand_hostlist(std::string_view text);

}  // namespace rdzvscope::preflight
