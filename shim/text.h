// Minimal string building for the shim. It runs in forked children and signal-adjacent
// contexts where stdio and malloc are off limits, so it formats into caller-owned buffers.
// The work is the recorder core's (rdzvscope/recorder_core.h: rdzv_text_*), which names the
// trace files the same way; TextBuf is its C++ face.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "rdzvscope/recorder_core.h"

namespace rdzv {

// Appends to a fixed buffer, always NUL-terminated, remembers whether anything was cut.
class TextBuf {
 public:
  TextBuf(char* buf, size_t cap) { rdzv_text_init(&t_, buf, cap); }
  TextBuf& str(const char* s) { return rdzv_text_str(&t_, s), *this; }
  TextBuf& str(const char* s, size_t n) { return rdzv_text_strn(&t_, s, n), *this; }
  TextBuf& ch(char c) { return rdzv_text_ch(&t_, c), *this; }
  TextBuf& u64(uint64_t v) { return rdzv_text_u64(&t_, v), *this; }
  TextBuf& i64(int64_t v) { return rdzv_text_i64(&t_, v), *this; }
  const char* c_str() const { return t_.buf; }
  size_t size() const { return t_.len; }
  bool truncated() const { return t_.truncated != 0; }

 private:
  rdzv_text t_;
};

// Copies at most cap-1 bytes and terminates; returns true when the source did not fit.
inline bool copy_cut(char* dst, size_t cap, const char* src) {
  return rdzv_copy_cut(dst, cap, src);
}

// This process's environment: null for an absent or empty variable.
inline const char* env_nonempty(const char* name) { return rdzv_env_self(nullptr, name); }

}  // namespace rdzv
