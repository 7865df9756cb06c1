#include "prefilter.h"

#include <algorithm>
#include <cstring>

#include "families.h"

namespace rdzv::logs::detail {
namespace {

inline uint32_t load32(const char* p) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  return w;
}

inline uint32_t hash16(uint32_t w) { return (w * 0x9E3779B1u) >> 16; }

}  // namespace

Prefilter::Prefilter(std::vector<std::string_view> anchors) : anchors_(std::move(anchors)) {
  for (uint32_t i = 0; i < anchors_.size(); ++i) {
    const auto a = anchors_[i];
    const uint32_t w = a.size() >= 4 ? load32(a.data()) : 0;  // shorter anchors are not allowed
    by_prefix_.emplace_back(w, i);
    const uint32_t h = hash16(w);
    bits_[h >> 3] |= static_cast<uint8_t>(1u << (h & 7));
  }
  std::sort(by_prefix_.begin(), by_prefix_.end());  // within one prefix, the first listed anchor first
}

bool Prefilter::bit(const char* p) const {
  const uint32_t h = hash16(load32(p));
  return bits_[h >> 3] >> (h & 7) & 1u;
}

bool Prefilter::check(const char* p, const char* end, size_t* which) const {
  const uint32_t w = load32(p);
  auto it = std::lower_bound(by_prefix_.begin(), by_prefix_.end(), std::pair<uint32_t, uint32_t>{w, 0});
  for (; it != by_prefix_.end() && it->first == w; ++it) {
    const auto& a = anchors_[it->second];
    if (static_cast<size_t>(end - p) >= a.size() && std::memcmp(p + 4, a.data() + 4, a.size() - 4) == 0) {
      if (which) *which = it->second;
      return true;
    }
  }
  return false;
}

const char* Prefilter::find(const char* p, const char* end, size_t* which) const {
  if (end - p < 4) return end;
  const char* last = end - 4;  // the last position a 4-byte word can be read from
  // Four positions per round: the hashes are independent, so they overlap in the pipeline.
  while (last - p >= 3) {
    const uint32_t h0 = hash16(load32(p)), h1 = hash16(load32(p + 1));
    const uint32_t h2 = hash16(load32(p + 2)), h3 = hash16(load32(p + 3));
    const unsigned any = (bits_[h0 >> 3] >> (h0 & 7) & 1u) | (bits_[h1 >> 3] >> (h1 & 7) & 1u) |
                         (bits_[h2 >> 3] >> (h2 & 7) & 1u) | (bits_[h3 >> 3] >> (h3 & 7) & 1u);
    if (__builtin_expect(any != 0, 0)) {
      for (int k = 0; k < 4; ++k)  // only the positions whose bit is set
        if (bit(p + k) && check(p + k, end, which)) return p + k;
    }
    p += 4;
  }
  for (; p <= last; ++p)
    if (bit(p) && check(p, end, which)) return p;
  return end;
}

const std::vector<std::string_view>& anchors() {
  // Every family's row names the anchors its lines hold (families.cpp); "orch" finds
  // torch/Torch/PyTorch version lines. Keep in step with bench/logscan/patterns.txt (tests/logs
  // checks it).
  static const std::vector<std::string_view> a = [] {
    std::vector<std::string_view> v;
    for (const FamilyRow& row : family_table()) {
      for (std::string_view anchor : row.anchors) {
        const bool listed = std::find(v.begin(), v.end(), anchor) != v.end();
        if (!anchor.empty() && !listed) v.push_back(anchor);
      }
    }
    v.push_back("orch");
    return v;
  }();
  return a;
}

const Prefilter& default_prefilter() {
  static const Prefilter p(anchors());
  return p;
}

}  // namespace rdzv::logs::detail
