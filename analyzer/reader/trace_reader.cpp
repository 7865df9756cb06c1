#include "trace_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

namespace rdzvscope {
namespace {

// Closes the descriptor on every return path.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// pread until `len` bytes or end of file; returns bytes read, or -1 with errno set.
// Loops because pread may return short counts (signals, network file systems).
ssize_t pread_full(int fd, void* buf, std::size_t len, std::uint64_t offset) {
  auto* p = static_cast<std::byte*>(buf);
  std::size_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(fd, p + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

Error error_at(const std::string& path, std::uint64_t offset, std::string detail) {
  return Error{path, std::move(detail), offset};
}

bool magic_is_zero(const rdzv_file_header& h) {
  return std::all_of(std::begin(h.magic), std::end(h.magic), [](char c) { return c == 0; });
}

// Every check that decides whether the header can be trusted at all; nullopt when it can.
std::optional<Error> check_header(const std::string& path, const rdzv_file_header& h) {
  // The writer stores the magic last: all zero means it died while creating the file.
  if (magic_is_zero(h)) {
    return error_at(path, 0,
                    "header never completed (magic at offset 0 is all zero: the writer died "
                    "while creating the file)");
  }
  if (std::memcmp(h.magic, RDZV_MAGIC, RDZV_MAGIC_LEN) != 0) {
    return error_at(path, 0, "not an rdzvscope trace (bad magic at offset 0)");
  }
  const auto at = [](std::size_t off) { return static_cast<std::uint64_t>(off); };
  if (h.version > RDZV_FORMAT_VERSION) {
    return error_at(path, at(offsetof(rdzv_file_header, version)),
                    "format version " + std::to_string(h.version) +
                        " is newer than this rdzvscope (supports " +
                        std::to_string(RDZV_FORMAT_VERSION) + ")");
  }
  if (h.version == 0) {
    return error_at(path, at(offsetof(rdzv_file_header, version)),
                    "format version 0 at offset " +
                        std::to_string(offsetof(rdzv_file_header, version)) + " is not valid");
  }
  if (h.header_size != RDZV_HEADER_SIZE) {
    return error_at(path, at(offsetof(rdzv_file_header, header_size)),
                    "header size " + std::to_string(h.header_size) + " at offset " +
                        std::to_string(offsetof(rdzv_file_header, header_size)) +
                        " is not " + std::to_string(RDZV_HEADER_SIZE));
  }
  if (h.record_size != RDZV_RECORD_SIZE) {
    return error_at(path, at(offsetof(rdzv_file_header, record_size)),
                    "record size " + std::to_string(h.record_size) + " at offset " +
                        std::to_string(offsetof(rdzv_file_header, record_size)) +
                        " is not " + std::to_string(RDZV_RECORD_SIZE));
  }
  if (h.capacity > kMaxPlausibleCapacity) {
    return error_at(path, at(offsetof(rdzv_file_header, capacity)),
                    "capacity " + std::to_string(h.capacity) + " at offset " +
                        std::to_string(offsetof(rdzv_file_header, capacity)) +
                        " is not plausible (at most " + std::to_string(kMaxPlausibleCapacity) +
                        " records)");
  }
  return std::nullopt;
}

bool record_is_valid(const rdzv_record& r) {
  return r.kind != 0 && r.kind <= RDZV_EV_KIND_MAX && r.op < RDZV_OP_MAX;
}

}  // namespace

std::uint64_t Trace::dropped() const {
  const std::uint64_t overflow =
      header.next_slot > header.capacity ? header.next_slot - header.capacity : 0;
  return std::max(header.dropped, overflow);
}

namespace {

// The header, read and checked: nullopt when it can be trusted.
std::optional<Error> read_header(int fd, const std::string& path, Trace& trace) {
  if (trace.file_size < RDZV_HEADER_SIZE)
    return error_at(path, 0, "too short for a trace header (" + std::to_string(trace.file_size) + " bytes)");
  const ssize_t n = pread_full(fd, &trace.header, sizeof trace.header, 0);
  if (n < 0) return error_at(path, 0, std::string("read error at offset 0: ") + std::strerror(errno));
  if (static_cast<std::size_t>(n) < sizeof trace.header) {
    // The file shrank between fstat and pread.
    return error_at(path, 0, "too short for a trace header (" + std::to_string(n) + " bytes)");
  }
  return check_header(path, trace.header);
}

// One slot's record: kept, or counted as torn (never sealed) or invalid.
void take_record(Trace& trace, std::uint64_t slot, const rdzv_record& r) {
  if (r.seal != rdzv_seal_for(slot)) ++trace.torn;
  else if (!record_is_valid(r)) ++trace.invalid;
  else trace.records.push_back(Record{SlotIndex{slot}, r});
}

// Every reserved slot (next_slot may run past capacity: events dropped), read in chunks so
// that memory stays bounded whatever the capacity claims; a read error or a cut ends it,
// noted in trace.damage.
void read_records(int fd, const std::string& path, Trace& trace) {
  const std::uint64_t slots = std::min<std::uint64_t>(trace.header.next_slot, trace.header.capacity);
  constexpr std::uint64_t kChunk = 1024;
  std::vector<rdzv_record> buf(kChunk);
  for (std::uint64_t first = 0; first < slots; first += kChunk) {
    const std::uint64_t want = std::min(kChunk, slots - first);
    const std::uint64_t offset = rdzv_record_offset(first);
    const ssize_t n = pread_full(fd, buf.data(), want * RDZV_RECORD_SIZE, offset);
    if (n < 0) {
      trace.damage = error_at(path, offset, "read error at offset " + std::to_string(offset) + ": " + std::strerror(errno));
      return;
    }
    const std::uint64_t complete = static_cast<std::uint64_t>(n) / RDZV_RECORD_SIZE;
    for (std::uint64_t i = 0; i < complete; ++i) take_record(trace, first + i, buf[i]);
    if (complete < want) {
      const std::uint64_t slot = first + complete;
      const std::uint64_t at = rdzv_record_offset(slot);
      trace.damage = error_at(path, at,
                              "truncated at offset " + std::to_string(at) + " (record slot " + std::to_string(slot) + ")");
      return;
    }
  }
}

// The in-flight area read once more, after the records: the live writer may have ended or
// begun a call since the header was read.
void read_inflight(int fd, Trace& trace) {
  rdzv_inflight again[RDZV_INFLIGHT_SLOTS];
  const ssize_t n = pread_full(fd, again, sizeof again, offsetof(rdzv_file_header, inflight));
  if (n != static_cast<ssize_t>(sizeof again)) return;
  trace.inflight = sealed_inflight(trace.header, again);
}

std::uint64_t fold_seals(const rdzv_file_header& h) {
  std::uint64_t folded = 0;
  if (!(h.features & RDZV_FEAT_INFLIGHT)) return 0;
  for (const rdzv_inflight& s : h.inflight) folded = folded * 1000003u + s.seal;
  return folded;
}

}  // namespace

std::vector<rdzv_inflight> sealed_inflight(const rdzv_file_header& h,
                                           const rdzv_inflight (&again)[RDZV_INFLIGHT_SLOTS]) {
  std::vector<rdzv_inflight> out;
  if (!(h.features & RDZV_FEAT_INFLIGHT)) return out;
  for (std::size_t i = 0; i < RDZV_INFLIGHT_SLOTS; ++i) {
    const rdzv_inflight& s = h.inflight[i];
    if (s.seal == 0 || s.seal != rdzv_inflight_seal(s.start_ns) || again[i].seal != s.seal)
      continue;
    if (s.kind == 0 || s.kind > RDZV_EV_KIND_MAX || s.op >= RDZV_OP_MAX) continue;
    out.push_back(s);
  }
  return out;
}

Result<Trace> read_trace(const std::string& path) {
  // O_NONBLOCK: a FIFO (or a device) named like a trace must be refused by the S_ISREG
  // check below, not block the analysis forever in open(); regular files ignore the flag.
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) return Error{path, std::strerror(errno), std::nullopt};

  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Error{path, std::strerror(errno), std::nullopt};
  if (S_ISDIR(st.st_mode)) return Error{path, "is a directory, not a trace file", std::nullopt};
  if (!S_ISREG(st.st_mode)) return Error{path, "not a regular file", std::nullopt};

  Trace trace;
  trace.path = path;
  trace.file_size = static_cast<std::uint64_t>(st.st_size);
  if (auto bad = read_header(fd.get(), path, trace)) return std::move(*bad);
  read_records(fd.get(), path, trace);
  read_inflight(fd.get(), trace);
  return trace;
}

std::optional<TraceProgress> read_progress(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  TraceProgress p;
  p.size = static_cast<std::uint64_t>(st.st_size);
  rdzv_file_header h{};
  const ssize_t n = pread_full(fd.get(), &h, sizeof h, 0);
  if (n < 0) return std::nullopt;
  if (static_cast<std::size_t>(n) < sizeof h) return p;  // too short: read_trace says why
  p.header_complete = !magic_is_zero(h);
  p.next_slot = h.next_slot;
  p.dropped = h.dropped;
  p.lost = h.lost;
  p.exec_generation = h.exec_generation;
  p.inflight_seals = fold_seals(h);
  return p;
}

}  // namespace rdzvscope
