// Minimal string building for the shim. It runs in forked children and signal-adjacent
// contexts where stdio and malloc are off limits, so it formats into caller-owned buffers.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace rdzv {

// Appends to a fixed buffer, always NUL-terminated, remembers whether anything was cut.
class TextBuf {
 public:
  TextBuf(char* buf, size_t cap) : buf_(buf), cap_(cap) {
    if (cap_ > 0) buf_[0] = '\0';
  }
  TextBuf& str(const char* s);
  TextBuf& str(const char* s, size_t n);
  TextBuf& ch(char c);
  TextBuf& u64(uint64_t v);
  TextBuf& i64(int64_t v);
  const char* c_str() const { return buf_; }
  size_t size() const { return len_; }
  bool truncated() const { return truncated_; }

 private:
  char* buf_;
  size_t cap_;
  size_t len_ = 0;
  bool truncated_ = false;
};

// Copies at most cap-1 bytes and terminates; returns true when the source did not fit.
bool copy_cut(char* dst, size_t cap, const char* src);

// Strict decimal parse of a whole string; false on anything else (empty, sign junk, overflow).
bool parse_i64(const char* s, int64_t* out);

// Environment lookup that never allocates (getenv does not either, but this is explicit about
// returning null for a present-but-empty value when asked to).
const char* env_nonempty(const char* name);

}  // namespace rdzv
