// The multi-literal prefilter of the log reader: finds where any of a small set of anchor
// strings (anchors()) starts in a buffer. Only the lines around its hits are parsed.
//
// Method: every anchor is at least 4 bytes long. Each text position's 4-byte word is hashed
// (one multiply and shift) into a 64 Ki-bit table (8 KiB, stays in L1) that has the bits of
// the anchors' first 4 bytes set; a set bit is checked against the anchors' prefixes, then
// the anchor in full. With ~25 anchors the table is 0.04 % full, so false candidates are
// rare and the loop is a load, a multiply and a test per byte, with no branch taken on
// ordinary text.
//
// Why not a library: libhyperscan-dev (Debian: amd64 only, needs SSSE3; vectorscan on
// other arches) would find these literals faster still, but it is a second native
// dependency with its own compile step at start-up, for a loop that is already faster than
// the disk and than `grep -F` on the same anchors (bench/logscan/compare.py). No other
// Debian C/C++ library offers multi-literal search (Aho-Corasick) as a plain API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace rdzv::logs::detail {

class Prefilter {
 public:
  explicit Prefilter(std::vector<std::string_view> anchors);  // each >= 4 bytes, kept by view

  // The first position p in [begin, end) where an anchor starts (the anchor lies wholly in
  // [p, end)), or end. `which` receives the anchor's index when not null.
  const char* find(const char* begin, const char* end, size_t* which = nullptr) const;

  const std::vector<std::string_view>& anchors() const { return anchors_; }

 private:
  bool check(const char* p, const char* end, size_t* which) const;

  bool bit(const char* p) const;

  std::vector<std::string_view> anchors_;
  // (the first 4 bytes of an anchor, its index), sorted by both: a candidate's word is looked up
  // rather than compared with every anchor's, which cost each candidate one compare an anchor
  std::vector<std::pair<uint32_t, uint32_t>> by_prefix_;
  uint8_t bits_[(1u << 16) / 8] = {};     // hash(prefix) bits
};

// The anchors of the families (each row of families.cpp names its own) and of torch version
// lines (shared with bench/logscan/patterns.txt, which a test checks).
const std::vector<std::string_view>& anchors();
const Prefilter& default_prefilter();

}  // namespace rdzv::logs::detail
