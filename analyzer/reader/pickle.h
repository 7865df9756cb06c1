// A bounded decoder of the Python pickle subset that PyTorch's Flight Recorder dumps use
// (flight_recorder.h): dicts, lists, tuples, str, bytes, int, float, bool, None and the memo.
// Debian has no maintained C++ pickle library (nothing in its archive reads pickle outside
// Python), and a dump is untrusted input, so this reads only data opcodes: no GLOBAL, REDUCE,
// BUILD or anything else that would name a class or call code is accepted, and nesting, item
// counts and string sizes are bounded so that a hostile file costs little memory and time.
// Protocols 2 to 5 (torch's C++ pickler writes 2; Python re-pickling a dump writes 4 or 5,
// with FRAME and MEMOIZE).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "error.h"

namespace rdzvscope::pickle {

struct Value;
using List = std::vector<Value>;  // a list or a tuple (the dumps use tuples as fixed lists)
// Keys as the dumps have them: str or int; an int key is kept as its decimal text. A key set
// twice keeps its last value, as Python's dict does.
using Dict = std::map<std::string, Value, std::less<>>;

struct None {};

struct Value {
  // None, bool, int, float, str/bytes, list/tuple, dict. A container fetched again from the
  // memo (BINGET) or duplicated (DUP) is copied, counted against Limits::max_items: then no
  // container is ever inside two others or inside itself (no cycle), and one that is inside
  // another can no longer change.
  std::variant<None, bool, std::int64_t, double, std::string, std::shared_ptr<List>, std::shared_ptr<Dict>> v;
  // Nesting below this value: 0 for a scalar or an empty container. The decoder bounds it
  // (Limits::max_depth), so that nothing that walks or frees a value recurses deeply.
  int depth = 0;

  bool is_none() const { return std::holds_alternative<None>(v); }
  const std::int64_t* as_int() const { return std::get_if<std::int64_t>(&v); }
  const bool* as_bool() const { return std::get_if<bool>(&v); }
  const double* as_float() const { return std::get_if<double>(&v); }
  const std::string* as_str() const { return std::get_if<std::string>(&v); }
  const List* as_list() const;
  const Dict* as_dict() const;
  // The value under `key` of a dict; nullptr when this is no dict or the key is not there.
  const Value* get(std::string_view key) const;
};

struct Limits {
  int max_depth = 32;                      // nesting of containers
  std::size_t max_items = 4'000'000;       // every value made, in all
  std::size_t max_string = 16u << 20;      // one str or bytes
  std::size_t max_text = 256u << 20;       // every str and bytes made, in all
};

// The object the pickle in `bytes` stands for, or what is wrong with it (its offset, with
// `file` named in the error).
Result<Value> decode(std::string_view bytes, const std::string& file, const Limits& limits = {});

}  // namespace rdzvscope::pickle
