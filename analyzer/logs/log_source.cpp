// LogSource (plain or gzip text from a file or standard input) and expand_log_args (what a
// `--log` argument stands for). zlib inflates; concatenated gzip members are read as one.
#include "logs/log_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace rdzv::logs {
namespace fs = std::filesystem;

namespace {

constexpr unsigned char kGzipMagic0 = 0x1f, kGzipMagic1 = 0x8b;
constexpr size_t kCompressedChunk = size_t{256} << 10;
constexpr size_t kSniffBytes = 4096;

std::string errno_text(int e) { return std::strerror(e); }

bool starts_gzip(std::string_view head) {
  return head.size() >= 2 && static_cast<unsigned char>(head[0]) == kGzipMagic0 &&
         static_cast<unsigned char>(head[1]) == kGzipMagic1;
}

// Reads until `want` bytes are in `out` or the end (a pipe may hand them over one by one).
// Returns an errno, 0 on success.
int read_head(int fd, std::string& out, size_t want) {
  char buf[8];
  while (out.size() < want) {
    const ssize_t n = ::read(fd, buf, std::min(sizeof buf, want - out.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return 0;
}

}  // namespace

std::string log_display_name(const std::string& path) {
  return path == kStdinArg ? std::string(kStdinName) : path;
}

// ------------------------------------------------------------------------------ gzip

class LogSource::Gunzip {
 public:
  Gunzip() : in_(kCompressedChunk) {
    ok_ = inflateInit2(&z_, 16 + MAX_WBITS) == Z_OK;  // gzip wrapper only
  }
  ~Gunzip() {
    if (ok_) inflateEnd(&z_);
  }
  Gunzip(const Gunzip&) = delete;
  Gunzip& operator=(const Gunzip&) = delete;

  // Inflates into [dst, dst + n), pulling compressed bytes from `src`. Returns at least one
  // byte, or 0 at the end of the last member, or a problem.
  Read read(LogSource& src, char* dst, size_t n) {
    if (!ok_) return {0, "cannot start the gzip decoder (out of memory)"};
    z_.next_out = reinterpret_cast<Bytef*>(dst);
    z_.avail_out = static_cast<uInt>(std::min<size_t>(n, UINT32_MAX));
    const uInt room = z_.avail_out;
    while (z_.avail_out == room) {
      if (z_.avail_in == 0) {
        Read raw = src.read_raw(reinterpret_cast<char*>(in_.data()), in_.size());
        if (!raw.problem.empty()) return {room - z_.avail_out, raw.problem};
        if (raw.bytes == 0) return {0, in_member_ ? truncated() : std::string()};
        compressed_ += raw.bytes;
        z_.next_in = in_.data();
        z_.avail_in = static_cast<uInt>(raw.bytes);
      }
      if (!in_member_) {  // data after a complete member must be another member
        if (z_.next_in[0] != kGzipMagic0) return {0, trailing_garbage()};
        inflateReset(&z_);
        in_member_ = true;
      }
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        in_member_ = false;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return {room - z_.avail_out, corrupt(rc)};
      }
    }
    return {room - z_.avail_out, {}};
  }

 private:
  uint64_t consumed() const { return compressed_ - z_.avail_in; }
  std::string truncated() const {
    return fmt::format("truncated gzip data: the compressed stream ends unfinished after {} bytes", compressed_);
  }
  std::string trailing_garbage() const {
    return fmt::format("corrupt gzip data: bytes that are no gzip member after byte {}", consumed());
  }
  std::string corrupt(int rc) const {
    if (rc == Z_MEM_ERROR) return "gzip decoder out of memory";
    return fmt::format("corrupt gzip data near compressed byte {}: {}", consumed(),
                       z_.msg ? z_.msg : "invalid data");
  }

  z_stream z_{};
  bool ok_ = false;
  bool in_member_ = true;
  uint64_t compressed_ = 0;
  std::vector<Bytef> in_;
};

// ------------------------------------------------------------------------------ LogSource

LogSource::LogSource(int fd, bool owns_fd, std::string name, std::time_t written)
    : fd_(fd), owns_fd_(owns_fd), name_(std::move(name)), written_(written) {}

LogSource::~LogSource() {
  if (owns_fd_) ::close(fd_);
}

std::unique_ptr<LogSource> LogSource::open(const std::string& path, std::string& error) {
  const bool from_stdin = path == kStdinArg;
  const int fd = from_stdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot open: " + errno_text(errno);
    return nullptr;
  }
  std::unique_ptr<LogSource> src(
      new LogSource(fd, !from_stdin, log_display_name(path), std::time(nullptr)));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    error = "cannot stat: " + errno_text(errno);
    return nullptr;
  }
  if (S_ISDIR(st.st_mode)) {
    error = "is a directory, not a log file";
    return nullptr;
  }
  if (S_ISREG(st.st_mode)) {
    src->written_ = st.st_mtime;
#ifdef POSIX_FADV_SEQUENTIAL
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  }
  if (int e = read_head(fd, src->head_, 2); e != 0) {
    error = "read failed: " + errno_text(e);
    return nullptr;
  }
  if (starts_gzip(src->head_)) src->gunzip_ = std::make_unique<Gunzip>();
  return src;
}

LogSource::Read LogSource::read_raw(char* dst, size_t n) {
  if (head_used_ < head_.size()) {
    const size_t k = std::min(n, head_.size() - head_used_);
    std::memcpy(dst, head_.data() + head_used_, k);
    head_used_ += k;
    return {k, {}};
  }
  for (;;) {
    const ssize_t r = ::read(fd_, dst, n);
    if (r >= 0) return {static_cast<size_t>(r), {}};
    if (errno != EINTR) return {0, "read failed: " + errno_text(errno)};
  }
}

LogSource::Read LogSource::read(char* dst, size_t n) {
  if (done_ || n == 0) return {};
  Read r = gunzip_ ? gunzip_->read(*this, dst, n) : read_raw(dst, n);
  done_ = r.bytes == 0 || !r.problem.empty();
  return r;
}

// ------------------------------------------------------------------------------ --log DIR

bool is_binary_file(const std::string& path) {
  if (fs::path(path).extension() == ".rzt") return true;
  std::string error;
  auto src = LogSource::open(path, error);
  if (!src) return false;  // unreadable: kept, so that scanning it names the problem
  std::string head(kSniffBytes, '\0');
  size_t have = 0;
  while (have < head.size()) {
    const LogSource::Read r = src->read(head.data() + have, head.size() - have);
    have += r.bytes;
    if (r.bytes == 0) break;
  }
  return std::string_view(head.data(), have).find('\0') != std::string_view::npos;
}

namespace {

struct DirListing {
  std::vector<std::string> logs;
  std::vector<std::string> binary;
  size_t too_deep = 0;      // directories at the depth limit, not entered
  std::string error;        // the walk could not go on
};

DirListing list_log_dir(const std::string& dir, int max_depth) {
  DirListing out;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::directory_entry& entry = *it;
    std::error_code type_ec;
    if (entry.is_directory(type_ec)) {
      if (it.depth() + 1 >= max_depth) {
        it.disable_recursion_pending();
        ++out.too_deep;
      }
      continue;
    }
    if (!entry.is_regular_file(type_ec)) continue;  // sockets, fifos, dangling links
    const std::string path = entry.path().string();
    (is_binary_file(path) ? out.binary : out.logs).push_back(path);
  }
  if (ec) out.error = ec.message();
  std::sort(out.logs.begin(), out.logs.end());
  std::sort(out.binary.begin(), out.binary.end());
  return out;
}

std::string count_of(size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string skipped_note(const std::string& dir, const DirListing& l, int max_depth) {
  std::vector<std::string> parts;
  if (!l.binary.empty()) {
    const auto traces = std::count_if(l.binary.begin(), l.binary.end(),
                                      [](const std::string& p) { return fs::path(p).extension() == ".rzt"; });
    parts.push_back(fmt::format("skipped {} ({} of them *.rzt traces; e.g. {})",
                                count_of(l.binary.size(), "binary file", "binary files"), traces, l.binary.front()));
  }
  if (l.too_deep > 0)
    parts.push_back(fmt::format("did not enter {} more than {} levels down",
                                count_of(l.too_deep, "directory", "directories"), max_depth));
  if (parts.empty()) return {};
  return fmt::format("log directory {}: {} read; {}", dir, count_of(l.logs.size(), "log file", "log files"),
                     fmt::join(parts, "; "));
}

}  // namespace

LogInputs expand_log_args(const std::vector<std::string>& args, int max_depth) {
  LogInputs in;
  bool stdin_seen = false;
  for (const std::string& arg : args) {
    if (arg == kStdinArg) {
      if (stdin_seen) in.errors.push_back("log -: standard input is given more than once");
      stdin_seen = true;
      in.files.push_back(arg);
      continue;
    }
    std::error_code ec;
    const fs::file_status st = fs::status(arg, ec);
    if (ec || !fs::exists(st)) {
      in.errors.push_back(fmt::format("log {}: {}", arg, ec ? ec.message() : "No such file or directory"));
      continue;
    }
    if (!fs::is_directory(st)) {
      in.files.push_back(arg);
      continue;
    }
    DirListing listing = list_log_dir(arg, max_depth);
    if (!listing.error.empty()) {
      in.errors.push_back(fmt::format("log directory {}: cannot list it: {}", arg, listing.error));
    } else if (listing.logs.empty()) {
      in.errors.push_back(fmt::format("log directory {}: no log file in it{}", arg,
                                      listing.binary.empty()
                                          ? std::string()
                                          : fmt::format(" ({} skipped)", count_of(listing.binary.size(),
                                                                                   "binary file", "binary files"))));
    } else {
      if (std::string note = skipped_note(arg, listing, max_depth); !note.empty()) in.notes.push_back(note);
      in.files.insert(in.files.end(), listing.logs.begin(), listing.logs.end());
    }
  }
  return in;
}

}  // namespace rdzv::logs
