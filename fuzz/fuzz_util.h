// Shared by the fuzz targets: a scratch directory per fuzzer process, whole-file writes, and
// the "reseal" step that turns mutated bytes back into a trace the reader trusts, so that the
// fuzzer reaches the record contents (and everything behind the reader) instead of stopping
// at the magic and the seals.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <rdzvscope/trace_format.h>

namespace rdzvscope::fuzz {

// mkdtemp once per process, in /dev/shm when there is one (a disk-backed /tmp makes the
// targets several times slower), else $TMPDIR or /tmp; removed at exit (libFuzzer exits
// through exit() at -max_total_time/-runs; a crash leaves it behind, which is small).
inline const std::string& scratch_dir() {
  // Never destroyed: the atexit handler below runs after static destructors would.
  static const std::string& dir = *new std::string([] {
    const char* t = std::getenv("TMPDIR");
    for (std::string base : {std::string("/dev/shm"), std::string(t && *t ? t : "/tmp")}) {
      std::string tmpl = base + "/rdzvscope-fuzz-XXXXXX";
      if (::mkdtemp(tmpl.data()) != nullptr) {
        std::atexit([] { std::filesystem::remove_all(scratch_dir()); });
        return tmpl;
      }
    }
    std::perror("rdzvscope fuzz: mkdtemp");
    std::abort();
  }());
  return dir;
}

// Replaces the file's contents; aborts on an I/O error (that is the harness failing, not the
// code under test, and must not look like a pass).
inline void write_file(const std::string& path, const void* data, std::size_t size) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::perror(path.c_str());
    std::abort();
  }
  const auto* p = static_cast<const unsigned char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n <= 0) {
      std::perror(path.c_str());
      std::abort();
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  ::close(fd);
}

// A trace-shaped copy of `bytes`: padded to a whole header, header fields that the reader
// refuses set to sane values (magic, version, sizes; capacity and next_slot from the file
// length unless they are already in range), and every record sealed for its slot. The record
// contents, the identity, the strings and the counters stay as the fuzzer made them.
inline std::vector<unsigned char> reseal(std::string_view bytes) {
  std::vector<unsigned char> out(bytes.begin(), bytes.end());
  if (out.size() < RDZV_HEADER_SIZE) out.resize(RDZV_HEADER_SIZE, 0);
  const std::size_t records = (out.size() - RDZV_HEADER_SIZE) / RDZV_RECORD_SIZE;
  rdzv_file_header h;
  std::memcpy(&h, out.data(), sizeof h);
  std::memcpy(h.magic, RDZV_MAGIC, RDZV_MAGIC_LEN);
  h.version = RDZV_FORMAT_VERSION;
  h.header_size = RDZV_HEADER_SIZE;
  h.record_size = RDZV_RECORD_SIZE;
  // Keep a capacity/next_slot that says "fewer slots than the file holds" or "more events
  // than fit" (both real states); otherwise make them match the file.
  if (h.capacity > records) h.capacity = static_cast<rdzv_u32>(records);
  if (h.next_slot > std::uint64_t{records} * 4 + 16) h.next_slot = records;
  std::memcpy(out.data(), &h, sizeof h);
  for (std::size_t slot = 0; slot < records; ++slot) {
    const rdzv_u32 seal = rdzv_seal_for(slot);
    std::memcpy(out.data() + rdzv_record_offset(slot) + offsetof(rdzv_record, seal), &seal,
                sizeof seal);
  }
  return out;
}

}  // namespace rdzvscope::fuzz
