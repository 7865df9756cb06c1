// The JSON form of a trace, as printed by `rdzvscope dump`: one object per line, a header,
// one event per valid record, then a summary. Other tools and tests parse these lines, so
// the field names are a contract: add fields, never rename or remove one. ordered_json keeps
// the fields in the order written here ("type" first), which is easier on a human reader.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "trace_reader.h"

namespace rdzvscope {

nlohmann::ordered_json header_json(const Trace& trace);
nlohmann::ordered_json event_json(const rdzv_file_header& header, const Record& record);
nlohmann::ordered_json summary_json(const Trace& trace);
// A call in flight when the file was read (trace.inflight), aged against the file's last clock.
nlohmann::ordered_json inflight_json(const Trace& trace, const rdzv_inflight& call);

// The latest monotonic time the file knows of: its last record's end, or the clock pair read
// when it was made. A call still in flight had waited at least this long when it was read.
std::uint64_t last_clock_ns(const Trace& trace);

// One line of output. Strings from the file are untrusted bytes: invalid UTF-8 is replaced
// (U+FFFD) instead of making nlohmann throw.
std::string json_line(const nlohmann::ordered_json& j);

}  // namespace rdzvscope
