// libFuzzer target: the pickle decoder and the Flight Recorder reader on random and mutated
// dumps (seeds: real dumps of PyTorch 2.13, fuzz/corpus/fuzz_flight_recorder), then the
// parting found from the decoded dump beside a copy of itself under another rank, and its
// words. Any crash, sanitizer report or exception is a finding; an error must name its file.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "model/fr_parting.h"
#include "reader/flight_recorder.h"
#include "reader/pickle.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // Small limits, so that the fuzzer reaches them in few bytes.
  rdzvscope::pickle::Limits small;
  small.max_depth = 8;
  small.max_items = 10'000;
  small.max_text = 1 << 20;
  (void)rdzvscope::pickle::decode(bytes, "fuzz", small);
  auto d = rdzvscope::decode_flight_recorder_dump(bytes, "fuzz", 0);
  if (!d) {
    if (d.error().message().rfind("fuzz: ", 0) != 0) __builtin_trap();
    return 0;
  }
  rdzvscope::FrInputs in;
  in.dumps.push_back(d.value());
  in.dumps.push_back(d.value());
  in.dumps.back().rank = 1;
  in.dumps.back().entries.clear();
  if (const auto p = rdzvscope::find_fr_parting(in)) {
    if (rdzvscope::fr_parting_words(*p).empty()) __builtin_trap();
  }
  return 0;
}
