// Errors are values: a damaged trace is data to report, so nothing here throws past the
// reader. Result<T> is a small stand-in for std::expected (C++23; we build as C++20).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace rdzvscope {

struct Error {
  std::string file;                    // the file the problem is in ("" when none)
  std::string detail;                  // what is wrong, without the file name
  std::optional<std::uint64_t> offset; // byte offset in the file, when one applies

  // "FILE: detail": the form every command prints after its own "rdzvscope CMD: " prefix.
  std::string message() const { return file.empty() ? detail : file + ": " + detail; }
};

template <class T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}   // NOLINT: implicit on purpose, like expected
  Result(Error error) : v_(std::move(error)) {} // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const Error& error() const { return std::get<Error>(v_); }

 private:
  std::variant<T, Error> v_;
};

}  // namespace rdzvscope
