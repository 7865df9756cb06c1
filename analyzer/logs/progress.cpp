// Issue 29: lines of a job that went on past its rendezvous (progress.h).
#include "progress.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "prefilter.h"

namespace rdzv::logs {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }

// A counter word and its number: the word not inside a longer word on its left ("gloss"; after
// '_' it counts: "valid_loss"), then, after at most 12 characters that are no letters (" ", ": ",
// "=", " [", "  "), a digit. "epoch" alone (a warning about an argument called epoch) says no
// progress, nor does a plural: "epochs=100", "max_iterations: 1000" are settings, printed at the
// start.
bool counter_with_number(std::string_view s, std::string_view word, std::string_view tail_letters = {}) {
  for (size_t p = s.find(word); p != std::string_view::npos; p = s.find(word, p + 1)) {
    if (p > 0 && is_alpha(s[p - 1])) continue;
    size_t q = p + word.size();
    if (!tail_letters.empty() && s.substr(q, tail_letters.size()) == tail_letters) q += tail_letters.size();
    const size_t end = std::min(s.size(), q + 12);
    while (q < end && !is_alpha(s[q]) && !is_digit(s[q])) ++q;
    if (q < s.size() && is_digit(s[q])) return true;
  }
  return false;
}

bool training_counter(std::string_view s) {
  for (std::string_view w : {"epoch", "Epoch", "EPOCH", "loss", "Loss"})
    if (counter_with_number(s, w)) return true;
  return counter_with_number(s, "iter", "ation") || counter_with_number(s, "Iter", "ation");
}

// pytest's summary ("=== 5 passed in 3.2s ===", "1 passed, 2 warnings") and verbose form
// ("test_a.py::test_x PASSED"), unittest's verbose "test_x (mod.Case) ... ok" at the line's end.
bool test_passed(std::string_view s) {
  if (s.find(" PASSED") != std::string_view::npos) return true;
  for (size_t p = s.find(" passed"); p != std::string_view::npos; p = s.find(" passed", p + 1))
    if (p > 0 && is_digit(s[p - 1])) return true;
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.remove_suffix(1);
  return s.size() >= 6 && s.substr(s.size() - 6) == "... ok";
}

bool run_finished(std::string_view s) {
  for (std::string_view w : {"raining complete", "raining finished", "raining done", "inished training"})
    if (s.find(w) != std::string_view::npos) return true;
  return false;
}

// A collective named with a word of success after it on the line ("all_reduce ok (10)",
// "barrier done"): the process group it ran in was up.
bool collective_completed(std::string_view s) {
  for (std::string_view op : {"all_reduce", "allreduce", "all_gather", "broadcast", "barrier"})
    for (size_t p = s.find(op); p != std::string_view::npos; p = s.find(op, p + 1)) {
      const std::string_view rest = s.substr(p + op.size());
      for (std::string_view ok : {" ok", " done", " passed", " succeeded", " completed", " finished"})
        if (rest.substr(0, ok.size()) == ok && (rest.size() == ok.size() || !is_alpha(rest[ok.size()]))) return true;
    }
  return false;
}

}  // namespace

bool says_job_progressed(std::string_view line) {
  return training_counter(line) || test_passed(line) || run_finished(line) || collective_completed(line);
}

}  // namespace rdzv::logs

namespace rdzv::logs::detail {

const Prefilter& progress_prefilter() {
  static const Prefilter p({"epoch", "Epoch", "EPOCH", "loss", "Loss", "iter", "Iter", " PASSED", " passed",
                            "... ok", "raining complete", "raining finished", "raining done", "inished training",
                            "all_reduce", "allreduce", "all_gather", "broadcast", "barrier"});
  return p;
}

}  // namespace rdzv::logs::detail
