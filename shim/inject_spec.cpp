#include "inject_spec.h"

#include <string.h>

namespace rdzv {
namespace {

constexpr uint64_t kMs = 1000000ull;
constexpr uint64_t kMaxDelayNs = 24ull * 3600 * 1000 * kMs;  // a day: anything longer is a typo

struct KindInfo {
  const char* name;
  uint8_t kind;
  bool takes_delay;
  uint64_t default_delay_ns;
  bool takes_bytes;
};

constexpr KindInfo kKinds[] = {
    {"resolve-fail", kInjectResolveFail, false, 0, false},
    {"connect-refused", kInjectConnectRefused, false, 0, false},
    {"connect-timeout", kInjectConnectTimeout, true, 3000 * kMs, false},
    {"late", kInjectLate, true, 10000 * kMs, false},
    {"port-taken", kInjectPortTaken, false, 0, false},
    {"store-reset", kInjectStoreReset, true, 0, true},
};
constexpr uint64_t kMaxBytes = 1ull << 40;  // a TiB: anything larger is a typo

// Appends to a fixed buffer, always terminated (err may be null).
struct Msg {
  char* buf;
  size_t cap;
  size_t len = 0;
  Msg(char* b, size_t c) : buf(b), cap(c) {
    if (buf && cap) buf[0] = '\0';
  }
  Msg& add(const char* s, size_t n) {
    if (!buf || !cap) return *this;
    for (size_t i = 0; i < n && s[i] && len + 1 < cap; ++i) buf[len++] = s[i];
    buf[len] = '\0';
    return *this;
  }
  Msg& add(const char* s) { return add(s, strlen(s)); }
};

bool fail(char* err, size_t errlen, const char* what, const char* token, size_t n) {
  Msg m(err, errlen);
  m.add(what);
  if (token) m.add(" '").add(token, n).add("'");
  return false;
}

bool equals(const char* s, size_t n, const char* lit) {
  return strlen(lit) == n && strncmp(s, lit, n) == 0;
}

// Decimal digits only, at least one, no sign; false when empty, not a number or too big.
bool parse_u64(const char* s, size_t n, uint64_t limit, uint64_t* out) {
  if (n == 0 || n > 12) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + static_cast<uint64_t>(s[i] - '0');
  }
  if (v > limit) return false;
  *out = v;
  return true;
}

// "12s", "500ms", "2m", "12" (seconds).
bool parse_duration(const char* s, size_t n, uint64_t* ns) {
  size_t digits = 0;
  while (digits < n && s[digits] >= '0' && s[digits] <= '9') ++digits;
  uint64_t v;
  if (!parse_u64(s, digits, 1000000000ull, &v)) return false;
  const char* unit = s + digits;
  const size_t un = n - digits;
  uint64_t scale;
  if (un == 0 || equals(unit, un, "s"))
    scale = 1000 * kMs;
  else if (equals(unit, un, "ms"))
    scale = kMs;
  else if (equals(unit, un, "m"))
    scale = 60000 * kMs;
  else
    return false;
  if (v > kMaxDelayNs / scale) return false;
  *ns = v * scale;
  return true;
}

const KindInfo* find_kind(const char* s, size_t n) {
  for (const KindInfo& k : kKinds)
    if (equals(s, n, k.name)) return &k;
  return nullptr;
}

// One FAULT (s, n: without the commas around it).
bool parse_fault(const char* s, size_t n, InjectFault* f, char* err, size_t errlen) {
  const char* end = s + n;
  const char* colon = static_cast<const char*>(memchr(s, ':', n));
  const char* name_end = colon ? colon : end;
  const KindInfo* k = find_kind(s, static_cast<size_t>(name_end - s));
  if (!k) {
    return fail(err, errlen,
                "unknown fault (resolve-fail, connect-refused, connect-timeout, late, port-taken, "
                "store-reset)",
                s, static_cast<size_t>(name_end - s));
  }
  *f = InjectFault{};
  f->kind = k->kind;
  f->delay_ns = k->default_delay_ns;
  bool have_rank = false, have_delay = false, have_bytes = false;
  for (const char* p = name_end; p < end;) {
    ++p;  // the colon
    const char* q = static_cast<const char*>(memchr(p, ':', static_cast<size_t>(end - p)));
    if (!q) q = end;
    const size_t on = static_cast<size_t>(q - p);
    uint64_t v;
    if (on > 5 && strncmp(p, "rank=", 5) == 0) {
      if (have_rank) return fail(err, errlen, "rank given twice in", s, n);
      if (!parse_u64(p + 5, on - 5, 0x7fffffffull, &v))
        return fail(err, errlen, "bad rank (a number from 0)", p, on);
      f->rank = static_cast<int32_t>(v);
      have_rank = true;
    } else if (on > 6 && strncmp(p, "bytes=", 6) == 0) {
      if (!k->takes_bytes) return fail(err, errlen, "this fault takes no bytes=:", s, n);
      if (have_bytes) return fail(err, errlen, "bytes given twice in", s, n);
      if (!parse_u64(p + 6, on - 6, kMaxBytes, &v))
        return fail(err, errlen, "bad bytes (a number from 0)", p, on);
      f->bytes = v;
      have_bytes = true;
    } else {
      const bool after = on > 6 && strncmp(p, "after=", 6) == 0;
      const char* d = after ? p + 6 : p;
      const size_t dn = after ? on - 6 : on;
      if (!parse_duration(d, dn, &v))
        return fail(err, errlen,
                    k->takes_bytes ? "bad option (rank=N, bytes=N, or a duration such as 12s or 500ms)"
                                   : "bad option (rank=N, or a duration such as 12s or 500ms)",
                    p, on);
      if (!k->takes_delay) return fail(err, errlen, "this fault takes no duration:", s, n);
      if (have_delay) return fail(err, errlen, "duration given twice in", s, n);
      f->delay_ns = v;
      have_delay = true;
    }
    p = q;
  }
  return true;
}

}  // namespace

bool inject_parse(const char* text, InjectSpec* out, char* err, size_t errlen) {
  *out = InjectSpec{};
  if (err && errlen) err[0] = '\0';
  if (!text) return fail(err, errlen, "no spec", nullptr, 0);
  const size_t n = strnlen(text, kInjectSpecMax + 1);
  if (n == 0) return fail(err, errlen, "empty spec", nullptr, 0);
  if (n > kInjectSpecMax) return fail(err, errlen, "spec longer than 512 characters", nullptr, 0);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c <= ' ' || c >= 0x7f)
      return fail(err, errlen, "blank or non-ASCII character in spec", nullptr, 0);
  }
  InjectSpec spec;
  for (const char* p = text; p <= text + n;) {
    const char* q = static_cast<const char*>(memchr(p, ',', static_cast<size_t>(text + n - p)));
    if (!q) q = text + n;
    if (q == p) return fail(err, errlen, "empty fault in spec", text, n);
    if (spec.count == kInjectMaxFaults) return fail(err, errlen, "more than 8 faults in", text, n);
    if (!parse_fault(p, static_cast<size_t>(q - p), &spec.faults[spec.count], err, errlen))
      return false;
    ++spec.count;
    p = q + 1;
  }
  *out = spec;
  return true;
}

const char* inject_kind_name(uint8_t kind) {
  for (const KindInfo& k : kKinds)
    if (k.kind == kind) return k.name;
  return "";
}

}  // namespace rdzv
