// Where the bytes of a log come from, and what a `--log` argument stands for (issue 13):
//  - LogSource: one log's text, read in order from a file or from standard input ("-"),
//    plain or gzip-compressed (told by its first two bytes, whatever the name). A truncated
//    or corrupt gzip stream ends the reading with a problem; what came before it is kept.
//  - expand_log_args: `--log` arguments to the log files they name: a file or "-" stands
//    for itself, a directory for every log file below it (sorted, at most kMaxLogDirDepth
//    levels down, binary files such as *.rzt traces skipped and counted).
//
// Errors are values: nothing here throws.
#pragma once

#include <cstddef>
#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace rdzv::logs {

inline constexpr std::string_view kStdinArg = "-";          // `--log -`
inline constexpr std::string_view kStdinName = "<stdin>";   // how messages and events call it
inline constexpr int kMaxLogDirDepth = 6;                   // levels below a `--log DIR`

// "<stdin>" for "-", else the path as given.
std::string log_display_name(const std::string& path);

class LogSource {
 public:
  struct Read {
    size_t bytes = 0;      // decoded bytes written; 0 with no problem: the end
    std::string problem;   // non-empty: the reading stopped here (e.g. "truncated gzip data ...")
  };

  // Opens path ("-": standard input, not closed here). On failure: nullptr and `error`
  // ("cannot open: No such file or directory", "is a directory, not a log file").
  static std::unique_ptr<LogSource> open(const std::string& path, std::string& error);
  ~LogSource();
  LogSource(const LogSource&) = delete;
  LogSource& operator=(const LogSource&) = delete;

  // Up to n decoded bytes into dst. After a problem or the end, every call returns 0.
  Read read(char* dst, size_t n);

  const std::string& name() const { return name_; }
  bool gzip() const { return gunzip_ != nullptr; }
  // When the text was written, for the year of glog stamps: the file's mtime, now for a pipe.
  std::time_t written() const { return written_; }

 private:
  class Gunzip;
  LogSource(int fd, bool owns_fd, std::string name, std::time_t written);
  Read read_raw(char* dst, size_t n);   // the sniffed head first, then the descriptor

  int fd_;
  bool owns_fd_;
  std::string name_;
  std::time_t written_;
  std::string head_;       // bytes read to tell gzip from text, not consumed yet
  size_t head_used_ = 0;
  bool done_ = false;
  std::unique_ptr<Gunzip> gunzip_;
};

// What `--log` arguments stand for.
struct LogInputs {
  std::vector<std::string> files;    // each argument's files in order ("-" kept as is)
  std::vector<std::string> notes;    // one line each: what a directory held besides logs
  std::vector<std::string> errors;   // one line each, naming the argument and the problem
};

LogInputs expand_log_args(const std::vector<std::string>& args, int max_depth = kMaxLogDirDepth);

// A file a directory holds that is no log: a trace (*.rzt), or text with a NUL byte in its
// first 4 KiB (after gzip decoding: a .tar.gz is binary, a .log.gz is not).
bool is_binary_file(const std::string& path);

}  // namespace rdzv::logs
