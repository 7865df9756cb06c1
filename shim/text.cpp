#include "text.h"

#include <stdlib.h>
#include <string.h>

namespace rdzv {

TextBuf& TextBuf::str(const char* s) { return s ? str(s, strlen(s)) : *this; }

TextBuf& TextBuf::str(const char* s, size_t n) {
  if (cap_ == 0) return *this;
  size_t room = cap_ - 1 - len_;
  if (n > room) {
    n = room;
    truncated_ = true;
  }
  memcpy(buf_ + len_, s, n);
  len_ += n;
  buf_[len_] = '\0';
  return *this;
}

TextBuf& TextBuf::ch(char c) { return str(&c, 1); }

TextBuf& TextBuf::u64(uint64_t v) {
  char digits[24];
  size_t n = 0;
  do {
    digits[sizeof digits - 1 - n] = static_cast<char>('0' + v % 10);
    v /= 10;
    ++n;
  } while (v != 0);
  return str(digits + sizeof digits - n, n);
}

TextBuf& TextBuf::i64(int64_t v) {
  if (v < 0) {
    ch('-');
    return u64(0 - static_cast<uint64_t>(v));
  }
  return u64(static_cast<uint64_t>(v));
}

bool copy_cut(char* dst, size_t cap, const char* src) {
  if (cap == 0) return src && *src;
  if (!src) {
    dst[0] = '\0';
    return false;
  }
  size_t n = strnlen(src, cap);
  bool cut = n == cap;
  if (cut) n = cap - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
  return cut;
}

bool parse_i64(const char* s, int64_t* out) {
  if (!s || !*s) return false;
  bool neg = false;
  if (*s == '-') {
    neg = true;
    ++s;
  }
  if (!*s) return false;
  uint64_t v = 0;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9') return false;
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + static_cast<uint64_t>(*s - '0');
    if (v > static_cast<uint64_t>(INT64_MAX)) return false;
  }
  *out = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return true;
}

const char* env_nonempty(const char* name) {
  const char* v = getenv(name);
  return (v && *v) ? v : nullptr;
}

}  // namespace rdzv
