// The streaming loop: fixed-size reads, the prefilter over every complete line of a chunk,
// the classifier on the lines around its hits, newline counting for line numbers.
#include "logs/log_scan.h"

#include <algorithm>
#include <cstring>
#include <ctime>
#include <memory>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "classify.h"
#include "families.h"
#include "logs/log_source.h"
#include "prefilter.h"
#include "progress.h"

namespace rdzv::logs {
namespace {

inline bool is_eol(char c) { return c == '\n' || c == '\r'; }

uint64_t count_newlines(const char* p, const char* e) {
  uint64_t n = 0;
#if defined(__SSE2__)
  const __m128i nl = _mm_set1_epi8('\n');
  while (e - p >= 64) {
    const auto* q = reinterpret_cast<const __m128i*>(p);
    const unsigned m0 = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(q), nl));
    const unsigned m1 = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(q + 1), nl));
    const unsigned m2 = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(q + 2), nl));
    const unsigned m3 = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(q + 3), nl));
    n += __builtin_popcountll(m0 | (uint64_t{m1} << 16) | (uint64_t{m2} << 32) | (uint64_t{m3} << 48));
    p += 64;
  }
#endif
  for (; p < e; ++p) n += *p == '\n';
  return n;
}

// After the last '\n' or '\r' in [b, e), or b when there is none.
const char* after_last_eol(const char* b, const char* e) {
  const void* n = memrchr(b, '\n', static_cast<size_t>(e - b));
  const char* from = n ? static_cast<const char*>(n) + 1 : b;
  const void* r = memrchr(from, '\r', static_cast<size_t>(e - from));
  return r ? static_cast<const char*>(r) + 1 : from;
}

class Scanner {
 public:
  Scanner(const std::string& name, int default_rank, TimeContext tc)
      : path_(name), default_rank_(default_rank), tc_(tc),
        pf_(detail::default_prefilter()) {}

  // [b, e): whole segments, b at the start of one; e after an end of line, or the cut/end
  // of the last (unterminated) line.
  void region(const char* b, const char* e) {
    const char* counted = b;
    const char* cur = b;
    for (;;) {
      const char* p = pf_.find(cur, e);
      find_progress(b, e, counted, cur, p);
      if (p == e) break;
      line_ += count_newlines(counted, p);
      counted = p;
      const char* ls = p;  // line start (after '\n') and segment start (after '\n' or '\r')
      while (ls > b && ls[-1] != '\n') --ls;
      const char* ss = p;
      while (ss > ls && ss[-1] != '\r') --ss;
      const char* te = p;
      while (te < e && !is_eol(*te)) ++te;
      handle(ls, ss, te);
      cur = te;
    }
    line_ += count_newlines(counted, e);
  }

  void handle(const char* ls, const char* ss, const char* te) {
    const std::string_view seg(ss, static_cast<size_t>(te - ss));
    if (seg.find('\0') != std::string_view::npos) {
      ++scan_.binary_lines;
      return;
    }
    if (scan_.torch_version.empty()) scan_.torch_version = version_in_line(seg);
    int rank = default_rank_;
    if (ss != ls) {  // a '\r'-separated segment (tqdm redraws): the prefix is at the line start
      if (int pre = line_prefix_rank(std::string_view(ls, static_cast<size_t>(ss - ls))); pre >= 0)
        rank = pre;
    }
    auto ev = classify_body(seg, rank, tc_);
    if (!ev) {
      const std::string_view line(ls, static_cast<size_t>(te - ls));
      const int pre = line_prefix_rank(line);
      if (says_job_progressed(line)) take_if_progress(line, pre >= 0 ? pre : rank);
      else note_unread(line, pre >= 0 ? pre : rank);
      return;
    }
    await_progress(ev->rank);
    ev->file = path_;
    ev->line = line_ + 1;
    // `matched` counts lines of the c10d families: several '\r'-separated segments of one line
    // are one line; the lines that are no rendezvous message (is_rendezvous_message) are not
    // counted.
    const bool counted = is_rendezvous_message(ev->family);
    scan_.events.push_back(std::move(*ev));
    if (counted && last_matched_line_ != line_ + 1) {
      ++scan_.matched;
      last_matched_line_ = line_ + 1;
    }
  }

  LogScan& scan() { return scan_; }
  uint64_t& line() { return line_; }

  // Issue 29 (progress.h): the first progress line of each process after each of its lines that
  // a family matched, and the first of the file, are all that "did it go on after this line?"
  // needs; so the progress anchors are searched only while a process awaits one, not through the
  // whole log. awaiting_ holds those processes' ranks (-1: the file's unranked lines, or from the
  // start of the file).
  void await_progress(int rank) {
    if (std::find(awaiting_.begin(), awaiting_.end(), rank) == awaiting_.end()) awaiting_.push_back(rank);
  }
  bool awaits(int rank) const {
    return !awaiting_.empty() && (rank < 0 || std::find(awaiting_.begin(), awaiting_.end(), rank) != awaiting_.end() ||
                                  std::find(awaiting_.begin(), awaiting_.end(), -1) != awaiting_.end());
  }
  // A line that holds an anchor ("Exception", "Error", "orch") and that neither a family nor the
  // progress test took: c10d's "Exception raised from ..." and the C++ frames below it, an error
  // in words no family knows. The last one of each process is kept (LogScan::unread); a process
  // that went on after it got past whatever it was.
  void note_unread(std::string_view line, int rank) {
    await_progress(rank);
    for (auto& u : scan_.unread)
      if (u.rank == rank) {
        u.line = line_ + 1;
        u.text = std::string(line.substr(0, 200));
        return;
      }
    scan_.unread.push_back(ProgressLine{path_, line_ + 1, rank, std::string(line.substr(0, 200))});
  }
  // A progress line (says_job_progressed), kept when a process awaits one.
  void take_if_progress(std::string_view line, int rank) {
    if (!awaits(rank)) return;
    scan_.progress.push_back(ProgressLine{path_, line_ + 1, rank, std::string(line.substr(0, 200))});
    if (rank < 0) awaiting_.clear();  // an unranked line may be any process's
    std::erase(awaiting_, rank);
    std::erase(awaiting_, -1);
  }
  // The progress lines in [from, to): whole lines before the line of the next anchor hit `to`
  // (that line is handle()'s), while some process awaits one. `counted` as in region().
  void find_progress(const char* b, const char* e, const char*& counted, const char* from, const char* to) {
    while (!awaiting_.empty()) {
      const char* q = progress_pf_.find(from, to);
      if (q == to) return;
      const char* ls = q;
      while (ls > b && ls[-1] != '\n') --ls;
      const char* te = q;
      while (te < e && !is_eol(*te)) ++te;
      if (to != e && te >= to) return;
      line_ += count_newlines(counted, q);
      counted = q;
      const std::string_view line(ls, static_cast<size_t>(te - ls));
      if (line.find('\0') == std::string_view::npos) {
        const int pre = line_prefix_rank(line);
        const int rank = pre >= 0 ? pre : default_rank_;
        // Most lines of a training log hold a progress anchor: the rank is checked first.
        if (awaits(rank) && says_job_progressed(line)) take_if_progress(line, rank);
      }
      from = te;
    }
  }

 private:
  const std::string& path_;
  int default_rank_;
  TimeContext tc_;
  const detail::Prefilter& pf_;
  const detail::Prefilter& progress_pf_ = detail::progress_prefilter();
  std::vector<int> awaiting_{-1};
  LogScan scan_;
  uint64_t line_ = 0;  // '\n' seen so far
  uint64_t last_matched_line_ = 0;  // 1-based line of the last match (0: none yet)
};

TimeContext time_context(std::time_t written) {
  TimeContext tc;
  std::tm mt{};
  if (::localtime_r(&written, &mt)) {
    tc.year = mt.tm_year + 1900;
    tc.month = mt.tm_mon + 1;
  }
  return tc;
}

// The lower-cased last element of a path, without a trailing ".gz".
std::string file_name_of(std::string_view path) {
  if (auto s = path.rfind('/'); s != std::string_view::npos) path.remove_prefix(s + 1);
  std::string b(path);
  for (auto& c : b) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  if (b.size() > 3 && b.ends_with(".gz")) b.resize(b.size() - 3);
  return b;
}

bool is_digit_char(char c) { return c >= '0' && c <= '9'; }
bool is_name_separator(char c) { return c == '.' || c == '_' || c == '-'; }

// The number of at most 7 digits at b[p], with *after past it; -1 when there is none.
int digits_at(const std::string& b, size_t p, size_t* after) {
  size_t q = p;
  long v = 0;
  while (q < b.size() && is_digit_char(b[q]) && q - p < 7) v = v * 10 + (b[q++] - '0');
  if (q == p || (q < b.size() && is_digit_char(b[q]))) return -1;
  *after = q;
  return static_cast<int>(v);
}

// "rank3", "rank_3", "rank-03", "rank.3", "worker-3": the word, an optional separator, the
// number, then the end of the name or a separator.
int rank_after_word(const std::string& b, std::string_view word) {
  for (size_t p = b.find(word); p != std::string::npos; p = b.find(word, p + 1)) {
    if (p > 0 && !is_name_separator(b[p - 1])) continue;
    size_t q = p + word.size(), after = 0;
    if (q < b.size() && is_name_separator(b[q])) ++q;
    if (int v = digits_at(b, q, &after); v >= 0 && (after == b.size() || is_name_separator(b[after]))) return v;
  }
  return -1;
}

// "r3.out", "job_r7.log": r and the number as a word of the name.
int rank_after_r(const std::string& b) {
  for (size_t p = b.find('r'); p != std::string::npos; p = b.find('r', p + 1)) {
    if (p > 0 && !is_name_separator(b[p - 1])) continue;
    size_t after = 0;
    if (int v = digits_at(b, p + 1, &after); v >= 0 && (after == b.size() || is_name_separator(b[after]))) return v;
  }
  return -1;
}

// Slurm --output=...%j-%t: "job-123-3.out", "123-3.out": the name before its extension ends
// in JOBID-TASK, the job id at the start or after a separator.
int slurm_task_of(const std::string& b) {
  const std::string stem = b.substr(0, b.rfind('.'));
  size_t p = stem.size();
  while (p > 0 && is_digit_char(stem[p - 1])) --p;
  if (p == stem.size() || stem.size() - p > 5 || p == 0 || stem[p - 1] != '-') return -1;
  size_t j = p - 1;
  while (j > 0 && is_digit_char(stem[j - 1])) --j;
  if (j == p - 1 || (j > 0 && !is_name_separator(stem[j - 1]))) return -1;
  return std::stoi(stem.substr(p));
}

// torchrun --log-dir: ".../attempt_N/LOCAL_RANK/stdout.log" or "stderr.log".
int torchrun_local_rank_of(std::string_view path, const std::string& name) {
  if (name != "stdout.log" && name != "stderr.log") return -1;
  auto parent = [](std::string_view p) {
    const size_t s = p.rfind('/');
    return s == std::string_view::npos ? std::string_view() : p.substr(0, s);
  };
  auto last = [](std::string_view p) {
    const size_t s = p.rfind('/');
    return s == std::string_view::npos ? p : p.substr(s + 1);
  };
  const std::string_view rank_dir = parent(path);
  const std::string rank_name(last(rank_dir));
  if (!last(parent(rank_dir)).starts_with("attempt_")) return -1;
  size_t after = 0;
  const int v = digits_at(rank_name, 0, &after);
  return after == rank_name.size() ? v : -1;
}

}  // namespace

int rank_from_filename(std::string_view path) {
  const std::string b = file_name_of(path);
  if (int v = rank_after_word(b, "rank"); v >= 0) return v;
  if (int v = rank_after_r(b); v >= 0) return v;
  if (int v = rank_after_word(b, "worker"); v >= 0) return v;
  if (int v = slurm_task_of(b); v >= 0) return v;
  return torchrun_local_rank_of(path, b);
}

ScanResult scan_log(const std::string& path, int default_rank) {
  return scan_log(path, default_rank, ScanOptions{});
}

ScanResult scan_log(const std::string& path, int default_rank, const ScanOptions& options) {
  ScanOptions opt = options;
  opt.buffer_size = std::max<size_t>(opt.buffer_size, 1);
  opt.max_line = std::max<size_t>(opt.max_line, 64);

  std::string open_error;
  const std::unique_ptr<LogSource> src = LogSource::open(path, open_error);
  if (!src) return LogError{"log " + log_display_name(path) + ": " + open_error};
  if (default_rank < 0 && path != kStdinArg) default_rank = rank_from_filename(path);

  Scanner sc(src->name(), default_rank, time_context(src->written()));
  // The carried (unfinished) line is at most max_line bytes, then one read.
  std::unique_ptr<char[]> buf(new char[opt.max_line + opt.buffer_size]);
  size_t have = 0;        // carried bytes at buf[0..have)
  bool skipping = false;  // inside a line longer than max_line: drop bytes to its end
  std::string problem;    // why the reading stopped early ("" at the end of the data)
  LogScan& scan = sc.scan();
  for (;;) {
    const LogSource::Read r = src->read(buf.get() + have, opt.buffer_size);
    problem = r.problem;
    const size_t n = r.bytes;
    if (n == 0) break;
    scan.bytes += static_cast<uint64_t>(n);
    const char* b = buf.get();
    const char* e = b + have + n;
    if (skipping) {
      while (b < e && !is_eol(*b)) ++b;  // have == 0 while skipping
      if (b == e) {
        if (!problem.empty()) break;
        continue;
      }
      skipping = false;
    }
    const char* ce = after_last_eol(b, e);
    sc.region(b, ce);
    const size_t tail = static_cast<size_t>(e - ce);
    if (tail >= opt.max_line) {
      sc.region(ce, ce + opt.max_line);  // search the first max_line bytes, skip the rest
      ++scan.cut_lines;
      skipping = true;
      have = 0;
    } else {
      std::memmove(buf.get(), ce, tail);
      have = tail;
    }
    if (!problem.empty()) break;
  }
  if (have > 0 && !skipping) sc.region(buf.get(), buf.get() + have);
  scan.lines = sc.line() + ((have > 0 || skipping) ? 1 : 0);
  if (!problem.empty()) {
    return ScanResult(LogError{"log " + src->name() + ": " + problem + " (at line " + std::to_string(scan.lines) + ")"},
                      std::move(scan));
  }
  return std::move(scan);
}

namespace {

// "after 600000ms" / "timeout=600000ms": the >=2.5 millisecond printing.
bool prints_timeout_in_ms(std::string_view t) {
  for (std::string_view key : {std::string_view("after "), std::string_view("timeout=")}) {
    for (size_t p = t.find(key); p != std::string_view::npos; p = t.find(key, p + 1)) {
      size_t q = p + key.size();
      const size_t d = q;
      while (q < t.size() && t[q] >= '0' && t[q] <= '9') ++q;
      if (q > d && t.substr(q, 2) == "ms") return true;
    }
  }
  return false;
}

}  // namespace

std::string version_hint(const LogScan& scan) {
  if (!scan.torch_version.empty()) return {};
  int newer = 0, older = 0;
  for (const auto& ev : scan.events) {
    const std::string_view t = ev.text;
    switch (detail::family_row(ev.family).era) {
      case detail::Era::Since2_5:
        ++newer;
        break;
      case detail::Era::UpTo2_4:
        ++older;
        break;
      case detail::Era::ByTimeoutUnit:
        prints_timeout_in_ms(t) ? ++newer : ++older;
        break;
      case detail::Era::Any:
        // The capitalised "Failed to recv" of newer releases, on whichever family's line it is.
        if (t.find("Failed to recv, got 0 bytes") != std::string_view::npos) ++newer;
        else if (ev.has(Family::SocketTimeout)) ++older;
        break;
    }
  }
  if (newer > 0 && older == 0) return ">=2.5";
  if (older > 0 && newer == 0) return "<=2.4";
  return {};
}

}  // namespace rdzv::logs
