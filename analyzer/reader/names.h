// Human names for the numbers in a trace: kinds, ops, flags, errno and resolver codes,
// addresses and times. The JSON dump and every report use these, so they are spelled once.
// Unknown values get a fallback name that keeps the number ("kind_42", "E200") instead of
// failing: a newer writer or a damaged file must still be printable.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <rdzvscope/trace_format.h>

namespace rdzvscope {

std::string kind_name(unsigned kind);                 // "connect"; "kind_<n>" when unknown
std::string op_name(unsigned op);                     // "getaddrinfo"; "op_<n>" when unknown
std::vector<std::string> flag_names(unsigned flags);  // record.flags; unknown bits "bit<n>"
std::vector<std::string> feature_names(unsigned features); // header.features
std::string source_name(unsigned source);             // "shim" | "bpf" | "source_<n>"
std::string snapshot_reason_name(unsigned reason);    // "first_store_connect" | ...

std::string errno_name(int err);  // "ECONNREFUSED"; "E<n>" when not in the table
std::string eai_name(int code);   // glibc getaddrinfo codes: "EAI_NONAME"; "EAI_<n>"
std::string h_errno_name(int code); // gethostbyname*: "HOST_NOT_FOUND"; "h_errno_<n>"
// The name of a resolve record's return code, which depends on the call that made it.
std::string resolver_error_name(unsigned op, std::int64_t ret);

// "127.0.0.1:29500", "[::1]:29500", "[fe80::1%2]:29500"; nullopt for family 0 (none).
std::optional<std::string> format_sockaddr(const rdzv_sockaddr& sa);

// Fixed-size string field of the file, which may lack its NUL: never read past `size`.
std::string bounded_string(const char* field, std::size_t size);
template <std::size_t N>
std::string bounded_string(const char (&field)[N]) {
  return bounded_string(field, N);
}

// CLOCK_REALTIME nanoseconds -> "2026-11-29T23:19:18.123Z".
std::string iso8601_utc(std::int64_t realtime_ns);

// A record's CLOCK_MONOTONIC timestamp on the wall clock, through the header's clock pair.
// Modular arithmetic: ts may be before the pair was taken, and garbage must not be UB.
std::int64_t wall_ns(const rdzv_file_header& h, std::uint64_t ts_ns);

}  // namespace rdzvscope
