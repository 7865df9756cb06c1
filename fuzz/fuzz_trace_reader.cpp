// libFuzzer target: the trace reader and `dump`'s JSON on random and mutated trace files.
// Each input is read twice: as is (the header checks, truncation, torn slots), and resealed
// (fuzz_util.h) so that mutated record contents reach the names, the clock arithmetic and
// the JSON of every record kind. Any crash, sanitizer report or exception is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "reader/dump_json.h"
#include "reader/trace_reader.h"

namespace {

void read_and_dump(const std::string& path, const void* data, std::size_t size) {
  rdzvscope::fuzz::write_file(path, data, size);
  auto result = rdzvscope::read_trace(path);
  if (!result) {
    // The message is printed by every command: it must be buildable.
    std::string m = result.error().message();
    if (m.empty()) __builtin_trap();
    return;
  }
  const rdzvscope::Trace& t = result.value();
  if (t.records.size() + t.torn + t.invalid > t.header.capacity) __builtin_trap();
  std::size_t out = rdzvscope::json_line(rdzvscope::header_json(t)).size();
  for (const auto& r : t.records) {
    out += rdzvscope::json_line(rdzvscope::event_json(t.header, r)).size();
  }
  out += rdzvscope::json_line(rdzvscope::summary_json(t)).size();
  if (out == 0) __builtin_trap();
  (void)t.dropped();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = rdzvscope::fuzz::scratch_dir() + "/trace.rzt";
  read_and_dump(path, data, size);
  const auto sealed =
      rdzvscope::fuzz::reseal(std::string_view(reinterpret_cast<const char*>(data), size));
  read_and_dump(path, sealed.data(), sealed.size());
  return 0;
}
