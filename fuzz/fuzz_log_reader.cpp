// libFuzzer target: the c10d log reader on random lines and mutated real c10d lines.
// The first two bytes choose the chunk size (1..64 bytes) and the longest searched line
// (1..1024 bytes), so that anchors, lines and '\r' segments straddle every buffer edge; the
// rest is the log file. Every line is also classified alone, with and without a glog year.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "logs/log_scan.h"

namespace {

void check_event(const rdzv::logs::LogEvent& e) {
  if (e.text.size() > 4096) __builtin_trap();  // documented: cut to 500 bytes
  if (rdzv::logs::family_name(e.family) == nullptr) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  rdzv::logs::ScanOptions opt;
  opt.buffer_size = 1 + data[0] % 64;
  opt.max_line = 1 + (std::size_t{data[1]} * 4) % 1024;
  const std::string_view body(reinterpret_cast<const char*>(data + 2), size - 2);

  static const std::string path = rdzvscope::fuzz::scratch_dir() + "/rank3.log";
  rdzvscope::fuzz::write_file(path, body.data(), body.size());
  for (int default_rank : {-1, 7}) {
    auto scan = rdzv::logs::scan_log(path, default_rank, opt);
    if (!scan) {
      if (scan.error().message.empty()) __builtin_trap();
      continue;
    }
    if (scan->matched > scan->lines + 1) __builtin_trap();
    for (const auto& e : scan->events) check_event(e);
    (void)rdzv::logs::version_hint(scan.value());
  }

  // Each line alone, as classify_line sees it (no newline).
  std::size_t start = 0;
  while (start <= body.size()) {
    std::size_t end = body.find('\n', start);
    if (end == std::string_view::npos) end = body.size();
    const std::string_view line = body.substr(start, end - start);
    for (int year : {0, 2026}) {
      if (auto e = rdzv::logs::classify_line(line, -1, year)) check_event(*e);
    }
    (void)rdzv::logs::version_in_line(line);
    (void)rdzv::logs::rank_from_filename(line);
    start = end + 1;
  }
  return 0;
}
