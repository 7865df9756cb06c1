// Typed ids: a slot number, a pid and a rank are all integers, and mixing them up compiles
// silently. Wrapping each in its own type makes such a mix-up a compile error.
#pragma once

#include <compare>
#include <cstdint>

namespace rdzvscope {

template <class Tag, class T>
struct StrongId {
  T value{};
  constexpr StrongId() = default;
  constexpr explicit StrongId(T v) : value(v) {}
  constexpr auto operator<=>(const StrongId&) const = default;
};

using SlotIndex = StrongId<struct SlotIndexTag, std::uint64_t>; // record slot in a file
using Pid = StrongId<struct PidTag, std::int32_t>;
using Rank = StrongId<struct RankTag, std::int32_t>;

}  // namespace rdzvscope
