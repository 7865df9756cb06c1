// The pickle virtual machine, reduced to the data opcodes (pickle.h). Each opcode is one small
// function of the Machine; anything else is an error that names the opcode and its offset.
#include "pickle.h"

#include <bit>
#include <cstring>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

namespace rdzvscope::pickle {

const List* Value::as_list() const {
  const auto* p = std::get_if<std::shared_ptr<List>>(&v);
  return p ? p->get() : nullptr;
}

const Dict* Value::as_dict() const {
  const auto* p = std::get_if<std::shared_ptr<Dict>>(&v);
  return p ? p->get() : nullptr;
}

const Value* Value::get(std::string_view key) const {
  const Dict* d = as_dict();
  if (!d) return nullptr;
  const auto it = d->find(key);
  return it == d->end() ? nullptr : &it->second;
}

namespace {

struct Failure {
  std::string detail;
};

class Machine {
 public:
  Machine(std::string_view b, const Limits& l) : bytes_(b), limits_(l) {}

  // Runs to STOP; the value left on the stack.
  Value run() {
    while (true) {
      op_at_ = pos_;
      const auto op = static_cast<unsigned char>(take(1)[0]);
      if (op == '.') return finish();
      step(op);
    }
  }
  std::size_t op_offset() const { return op_at_; }

 private:
  std::string_view bytes_;
  const Limits& limits_;
  std::size_t pos_ = 0, op_at_ = 0, made_ = 0, text_made_ = 0;
  std::vector<Value> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint64_t, Value> memo_;

  [[noreturn]] static void fail(std::string what) { throw Failure{std::move(what)}; }

  std::string_view take(std::size_t n) {
    if (n > bytes_.size() - pos_) fail("truncated: the pickle ends inside an opcode");
    const std::string_view s = bytes_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::uint64_t uint_le(std::size_t n) {
    const std::string_view s = take(n);
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t{static_cast<unsigned char>(s[i])} << (8 * i);
    return v;
  }
  void count(std::size_t n = 1) {
    made_ += n;
    if (made_ > limits_.max_items) fail(fmt::format("more than {} values", limits_.max_items));
  }
  // Every str and bytes made, copies from the memo included: a short file that fetches one
  // long string many times must not fill memory.
  void count_text(std::size_t n) {
    text_made_ += n;
    if (text_made_ > limits_.max_text) fail(fmt::format("more than {} bytes of strings", limits_.max_text));
  }
  void push(Value v) {
    count();
    stack_.push_back(std::move(v));
  }
  Value pop() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) fail("stack underflow");
    Value v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  Value& top() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) fail("stack underflow");
    return stack_.back();
  }
  // The values since the last MARK, which is dropped.
  std::vector<Value> pop_to_mark() {
    if (marks_.empty()) fail("no MARK before a mark-terminated opcode");
    const std::size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Value> out(std::make_move_iterator(stack_.begin() + static_cast<std::ptrdiff_t>(m)),
                           std::make_move_iterator(stack_.end()));
    stack_.resize(m);
    return out;
  }

  Value finish() {
    if (!marks_.empty()) fail("a MARK is still open at STOP");
    if (stack_.size() != 1) fail(fmt::format("{} values on the stack at STOP, not 1", stack_.size()));
    return std::move(stack_.back());
  }

  // A copy of v that shares no container with it (pickle.h: why).
  Value deep_copy(const Value& v) {
    count();
    if (const List* l = v.as_list()) {
      auto out = std::make_shared<List>();
      out->reserve(l->size());
      for (const Value& e : *l) out->push_back(deep_copy(e));
      return Value{out, v.depth};
    }
    if (const Dict* d = v.as_dict()) {
      auto out = std::make_shared<Dict>();
      for (const auto& [k, e] : *d) {
        count_text(k.size());
        out->emplace(k, deep_copy(e));
      }
      return Value{out, v.depth};
    }
    if (const std::string* s = v.as_str()) count_text(s->size());
    return v;
  }

  void grow_depth(Value& container, const Value& item) {
    container.depth = std::max(container.depth, item.depth + 1);
    if (container.depth > limits_.max_depth) fail(fmt::format("nested deeper than {}", limits_.max_depth));
  }
  List& list_of(Value& v) {
    auto* p = std::get_if<std::shared_ptr<List>>(&v.v);
    if (!p) fail("APPEND to a value that is no list");
    return **p;
  }
  void append(Value& to, Value item) {
    grow_depth(to, item);
    list_of(to).push_back(std::move(item));
  }
  static std::string key_text(const Value& k) {
    if (const std::string* s = k.as_str()) return *s;
    if (const std::int64_t* i = k.as_int()) return std::to_string(*i);
    fail("a dict key that is neither str nor int");
  }
  void set_item(Value& to, const Value& key, Value item) {
    auto* p = std::get_if<std::shared_ptr<Dict>>(&to.v);
    if (!p) fail("SETITEM on a value that is no dict");
    grow_depth(to, item);
    (**p).insert_or_assign(key_text(key), std::move(item));
  }
  static Value new_list(std::vector<Value> items = {}) {
    Value out{std::make_shared<List>()};
    for (const Value& i : items) out.depth = std::max(out.depth, i.depth + 1);
    *std::get<std::shared_ptr<List>>(out.v) = std::move(items);
    return out;
  }
  void push_container(Value v) {
    if (v.depth > limits_.max_depth) fail(fmt::format("nested deeper than {}", limits_.max_depth));
    push(std::move(v));
  }
  void push_string(std::uint64_t n) {
    if (n > limits_.max_string) fail(fmt::format("a string of {} bytes (at most {})", n, limits_.max_string));
    count_text(static_cast<std::size_t>(n));
    push(Value{std::string(take(static_cast<std::size_t>(n)))});
  }
  // LONG1/LONG4: little-endian two's complement, as long as it fits 64 bits.
  void push_long(std::uint64_t n) {
    if (n > 8) fail(fmt::format("an int of {} bytes (at most 8 are read)", n));
    std::uint64_t v = n ? uint_le(static_cast<std::size_t>(n)) : 0;
    if (n && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~std::uint64_t{0} << (8 * n);
    push(Value{static_cast<std::int64_t>(v)});
  }
  void push_float() {
    const std::string_view s = take(8);
    std::uint64_t bits = 0;
    for (char c : s) bits = (bits << 8) | static_cast<unsigned char>(c);  // big-endian
    push(Value{std::bit_cast<double>(bits)});
  }
  void memo_put(std::uint64_t id) {
    if (memo_.size() >= limits_.max_items) fail("memo too large");
    memo_.insert_or_assign(id, top());
  }
  void memo_get(std::uint64_t id) {
    const auto it = memo_.find(id);
    if (it == memo_.end()) fail(fmt::format("memo {} fetched before it was stored", id));
    push(deep_copy(it->second));
  }
  void tuple_of(std::size_t n) {
    if (stack_.size() < n + (marks_.empty() ? 0 : marks_.back())) fail("stack underflow");
    std::vector<Value> items(std::make_move_iterator(stack_.end() - static_cast<std::ptrdiff_t>(n)),
                             std::make_move_iterator(stack_.end()));
    stack_.resize(stack_.size() - n);
    push_container(new_list(std::move(items)));
  }
  void set_items() {
    std::vector<Value> kv = pop_to_mark();
    if (kv.size() % 2) fail("SETITEMS with an odd number of values");
    Value& d = top();
    for (std::size_t i = 0; i < kv.size(); i += 2) set_item(d, kv[i], std::move(kv[i + 1]));
  }
  void appends() {
    std::vector<Value> items = pop_to_mark();
    Value& l = top();
    for (Value& i : items) append(l, std::move(i));
  }
  void dict_from_mark() {
    std::vector<Value> kv = pop_to_mark();
    if (kv.size() % 2) fail("DICT with an odd number of values");
    Value d{std::make_shared<Dict>()};
    for (std::size_t i = 0; i < kv.size(); i += 2) set_item(d, kv[i], std::move(kv[i + 1]));
    push(std::move(d));
  }

  void step(unsigned char op) {
    switch (op) {
      case 0x80: take(1); return;                       // PROTO
      case 0x95: take(8); return;                       // FRAME: a length hint
      case '(': marks_.push_back(stack_.size()); return;  // MARK
      case '1': pop_to_mark(); return;                  // POP_MARK
      case '0': pop(); return;                          // POP
      case '2': push(deep_copy(top())); return;         // DUP
      case 'N': push(Value{None{}}); return;
      case 0x88: push(Value{true}); return;             // NEWTRUE
      case 0x89: push(Value{false}); return;            // NEWFALSE
      case 'K': push(Value{static_cast<std::int64_t>(uint_le(1))}); return;  // BININT1
      case 'M': push(Value{static_cast<std::int64_t>(uint_le(2))}); return;  // BININT2
      case 'J': push(Value{static_cast<std::int64_t>(static_cast<std::int32_t>(uint_le(4)))}); return;  // BININT
      case 0x8a: push_long(uint_le(1)); return;         // LONG1
      case 0x8b: push_long(uint_le(4)); return;         // LONG4
      case 'G': push_float(); return;                   // BINFLOAT
      case 'X': push_string(uint_le(4)); return;        // BINUNICODE
      case 0x8c: push_string(uint_le(1)); return;       // SHORT_BINUNICODE
      case 0x8d: push_string(uint_le(8)); return;       // BINUNICODE8
      case 'B': push_string(uint_le(4)); return;        // BINBYTES
      case 'C': push_string(uint_le(1)); return;        // SHORT_BINBYTES
      case 0x8e: push_string(uint_le(8)); return;       // BINBYTES8
      case ']': push(new_list()); return;               // EMPTY_LIST
      case ')': push(new_list()); return;               // EMPTY_TUPLE
      case '}': push(Value{std::make_shared<Dict>()}); return;  // EMPTY_DICT
      case 'l': push_container(new_list(pop_to_mark())); return;  // LIST
      case 't': push_container(new_list(pop_to_mark())); return;  // TUPLE
      case 0x85: tuple_of(1); return;                   // TUPLE1
      case 0x86: tuple_of(2); return;                   // TUPLE2
      case 0x87: tuple_of(3); return;                   // TUPLE3
      case 'd': dict_from_mark(); return;               // DICT
      case 'a': { Value i = pop(); append(top(), std::move(i)); return; }  // APPEND
      case 'e': appends(); return;                      // APPENDS
      case 's': { Value i = pop(); Value k = pop(); set_item(top(), k, std::move(i)); return; }  // SETITEM
      case 'u': set_items(); return;                    // SETITEMS
      case 'q': memo_put(uint_le(1)); return;           // BINPUT
      case 'r': memo_put(uint_le(4)); return;           // LONG_BINPUT
      case 0x94: memo_put(memo_.size()); return;        // MEMOIZE
      case 'h': memo_get(uint_le(1)); return;           // BINGET
      case 'j': memo_get(uint_le(4)); return;           // LONG_BINGET
      default:
        fail(fmt::format("opcode 0x{:02x} is not one a Flight Recorder dump uses (only data is read, never "
                         "classes or calls)", op));
    }
  }
};

}  // namespace

Result<Value> decode(std::string_view bytes, const std::string& file, const Limits& limits) {
  if (bytes.empty() || static_cast<unsigned char>(bytes[0]) != 0x80)
    return Error{file, "not a pickle (protocol 2 or later begins with byte 0x80)", 0};
  Machine m(bytes, limits);
  try {
    return m.run();
  } catch (const Failure& f) {
    return Error{file, "pickle: " + f.detail, m.op_offset()};
  }
}

}  // namespace rdzvscope::pickle
