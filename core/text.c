/* The recorder core (include/rdzvscope/recorder_core.h), text and numbers: bounded string
 * building into caller-owned buffers (rdzv_text_*), rdzv_copy_cut, strict decimal parsing.
 * libc only, like the rest of the core: no allocation, no locks, no stdio (the shim runs
 * this inside its hooks, in forked and vforked children too). */
#define _GNU_SOURCE

#include "rdzvscope/recorder_core.h"

#include <stdint.h>
#include <string.h>

/* ---------------------------------------------------------------- text */

void rdzv_text_init(struct rdzv_text *t, char *buf, size_t cap) {
  t->buf = buf;
  t->cap = cap;
  t->len = 0;
  t->truncated = 0;
  if (cap > 0) buf[0] = '\0';
}

void rdzv_text_strn(struct rdzv_text *t, const char *s, size_t n) {
  if (t->cap == 0) {
    t->truncated |= n > 0;
    return;
  }
  const size_t room = t->cap - 1 - t->len;
  if (n > room) {
    n = room;
    t->truncated = 1;
  }
  memcpy(t->buf + t->len, s, n);
  t->len += n;
  t->buf[t->len] = '\0';
}

void rdzv_text_str(struct rdzv_text *t, const char *s) {
  if (s) rdzv_text_strn(t, s, strlen(s));
}

void rdzv_text_ch(struct rdzv_text *t, char c) { rdzv_text_strn(t, &c, 1); }

void rdzv_text_u64(struct rdzv_text *t, rdzv_u64 v) {
  char digits[24];
  size_t n = 0;
  do {
    digits[sizeof digits - 1 - n] = (char)('0' + v % 10);
    v /= 10;
    ++n;
  } while (v != 0);
  rdzv_text_strn(t, digits + sizeof digits - n, n);
}

void rdzv_text_i64(struct rdzv_text *t, rdzv_s64 v) {
  if (v < 0) {
    rdzv_text_ch(t, '-');
    rdzv_text_u64(t, 0 - (rdzv_u64)v);
    return;
  }
  rdzv_text_u64(t, (rdzv_u64)v);
}

int rdzv_copy_cut(char *dst, size_t cap, const char *src) {
  if (cap == 0) return src && *src;
  if (!src) {
    dst[0] = '\0';
    return 0;
  }
  size_t n = strnlen(src, cap);
  const int cut = n == cap;
  if (cut) n = cap - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
  return cut;
}

int rdzv_parse_i64(const char *s, rdzv_s64 *out) {
  if (!s || !*s) return 0;
  int neg = 0;
  if (*s == '-') {
    neg = 1;
    ++s;
  }
  if (!*s) return 0;
  rdzv_u64 v = 0;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9') return 0;
    const rdzv_u64 digit = (rdzv_u64)(*s - '0');
    /* INT64_MIN itself is refused too: nothing we parse gets near it. */
    if (v > ((rdzv_u64)INT64_MAX - digit) / 10) return 0;
    v = v * 10 + digit;
  }
  *out = neg ? -(rdzv_s64)v : (rdzv_s64)v;
  return 1;
}
