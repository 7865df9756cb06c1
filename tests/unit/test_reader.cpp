// The reader against good and damaged files: what is delivered, what is counted, and what
// each error says (file, offset) so that a user can find the damage.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cstring>
#include <string>

#include "reader/trace_reader.h"
#include "temp_dir.h"
#include "trace_builder.h"

using namespace rdzvscope;
using namespace rdzvscope::test;

namespace {

TraceBuilder three_connects() {
  TraceBuilder b(8);
  for (int i = 0; i < 3; ++i) {
    auto r = make_record(RDZV_EV_CONNECT, RDZV_OP_CONNECT, i);
    r.fd = 10 + i;
    b.add(r);
  }
  return b;
}

}  // namespace

TEST_CASE("a good file delivers every record in slot order", "[reader]") {
  TempDir dir;
  three_connects().write(dir.file("good.rzt"));
  auto t = read_trace(dir.file("good.rzt"));
  REQUIRE(t.ok());
  const Trace& trace = t.value();
  CHECK(trace.path == dir.file("good.rzt"));
  CHECK(trace.file_size == RDZV_HEADER_SIZE + 8 * RDZV_RECORD_SIZE);
  REQUIRE(trace.records.size() == 3);
  for (std::uint64_t i = 0; i < 3; ++i) {
    CHECK(trace.records[i].slot.value == i);
    CHECK(trace.records[i].raw.fd == static_cast<int>(10 + i));
  }
  CHECK(trace.torn == 0);
  CHECK(trace.invalid == 0);
  CHECK(trace.dropped() == 0);
  CHECK_FALSE(trace.damage.has_value());
  CHECK(trace.header.pid == 4242);
}

TEST_CASE("slots past next_slot are not read even when they hold bytes", "[reader]") {
  TempDir dir;
  auto b = three_connects();
  b.set_next_slot(2);
  b.write(dir.file("t.rzt"));
  auto t = read_trace(dir.file("t.rzt"));
  REQUIRE(t.ok());
  CHECK(t.value().records.size() == 2);
  CHECK(t.value().torn == 0);
}

TEST_CASE("a torn record is counted, not delivered, and not an error", "[reader]") {
  TempDir dir;
  TraceBuilder b(8);
  b.add(make_record(RDZV_EV_PROC_START, RDZV_OP_INIT));
  b.add_torn(make_record(RDZV_EV_CONNECT, RDZV_OP_CONNECT));
  b.add(make_record(RDZV_EV_PROC_EXIT, RDZV_OP_EXIT));
  b.write(dir.file("t.rzt"));
  auto t = read_trace(dir.file("t.rzt"));
  REQUIRE(t.ok());
  CHECK(t.value().torn == 1);
  REQUIRE(t.value().records.size() == 2);
  CHECK(t.value().records[0].slot.value == 0);
  CHECK(t.value().records[1].slot.value == 2);
  CHECK_FALSE(t.value().damage.has_value());
}

TEST_CASE("a record sealed for another slot is torn", "[reader]") {
  TempDir dir;
  TraceBuilder b(4);
  b.add(make_record(RDZV_EV_CONNECT, RDZV_OP_CONNECT));
  std::string bytes = b.bytes();
  const std::uint32_t wrong = rdzv_seal_for(1);
  std::memcpy(bytes.data() + rdzv_record_offset(0) + offsetof(rdzv_record, seal), &wrong, 4);
  write_file(dir.file("t.rzt"), bytes);
  auto t = read_trace(dir.file("t.rzt"));
  REQUIRE(t.ok());
  CHECK(t.value().torn == 1);
  CHECK(t.value().records.empty());
}

TEST_CASE("sealed records with an impossible kind or op are counted as invalid", "[reader]") {
  TempDir dir;
  TraceBuilder b(8);
  b.add(make_record(0, RDZV_OP_CONNECT));                      // kind 0
  b.add(make_record(RDZV_EV_KIND_MAX + 1, RDZV_OP_CONNECT));   // kind too large
  b.add(make_record(RDZV_EV_CONNECT, RDZV_OP_MAX));            // op too large
  b.add(make_record(RDZV_EV_CONNECT, RDZV_OP_MAX - 1));        // the largest op is fine
  b.add(make_record(RDZV_EV_KIND_MAX, RDZV_OP_KERNEL));        // the largest kind is fine
  b.write(dir.file("t.rzt"));
  auto t = read_trace(dir.file("t.rzt"));
  REQUIRE(t.ok());
  CHECK(t.value().invalid == 3);
  REQUIRE(t.value().records.size() == 2);
  CHECK(t.value().records[0].slot.value == 3);
  CHECK(t.value().records[1].slot.value == 4);
}

TEST_CASE("header errors name the file and say what is wrong", "[reader]") {
  TempDir dir;
  const std::string path = dir.file("bad.rzt");

  SECTION("zero-length file") {
    write_file(path, "");
    auto t = read_trace(path);
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().message() == path + ": too short for a trace header (0 bytes)");
  }
  SECTION("short file") {
    write_file(path, std::string(100, 'x'));
    auto t = read_trace(path);
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().message() == path + ": too short for a trace header (100 bytes)");
  }
  SECTION("one byte short of a header") {
    std::string bytes = TraceBuilder(0).bytes();
    bytes.pop_back();
    write_file(path, bytes);
    auto t = read_trace(path);
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().message() == path + ": too short for a trace header (4095 bytes)");
  }
  SECTION("wrong magic") {
    TraceBuilder b;
    std::memcpy(b.header().magic, "ELF\x7f\0\0\0\0", 8);
    b.write(path);
    auto t = read_trace(path);
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().message() == path + ": not an rdzvscope trace (bad magic at offset 0)");
    CHECK(t.error().offset == 0u);
  }
  SECTION("all-zero header: the writer died before storing the magic") {
    write_file(path, std::string(RDZV_HEADER_SIZE + 4 * RDZV_RECORD_SIZE, '\0'));
    auto t = read_trace(path);
    REQUIRE_FALSE(t.ok());
    CHECK_THAT(t.error().message(), Catch::StartsWith(path + ": header never completed"));
    CHECK(t.error().offset == 0u);
  }
  SECTION("future version") {
    TraceBuilder b;
    b.header().version = 2;
    b.write(path);
    auto t = read_trace(path);
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().message() ==
          path + ": format version 2 is newer than this rdzvscope (supports 1)");
    CHECK(t.error().offset == offsetof(rdzv_file_header, version));
  }
  SECTION("version 0") {
    TraceBuilder b;
    b.header().version = 0;
    b.write(path);
    auto t = read_trace(path);
    REQUIRE_FALSE(t.ok());
    CHECK_THAT(t.error().message(), Catch::Contains("format version 0"));
  }
  SECTION("wrong record size") {
    TraceBuilder b;
    b.header().record_size = 128;
    b.write(path);
    auto t = read_trace(path);
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().message() == path + ": record size 128 at offset 16 is not 192");
    CHECK(t.error().offset == offsetof(rdzv_file_header, record_size));
  }
  SECTION("wrong header size") {
    TraceBuilder b;
    b.header().header_size = 1024;
    b.write(path);
    auto t = read_trace(path);
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().message() == path + ": header size 1024 at offset 12 is not 4096");
  }
  SECTION("implausible capacity") {
    // Patched into the bytes: the builder would try to allocate the slots it claims.
    std::string bytes = TraceBuilder(0).bytes();
    const std::uint32_t capacity = 0xffffffffu;
    std::memcpy(bytes.data() + offsetof(rdzv_file_header, capacity), &capacity, 4);
    write_file(path, bytes);
    auto t = read_trace(path);
    REQUIRE_FALSE(t.ok());
    CHECK_THAT(t.error().message(), Catch::Contains("capacity 4294967295"));
    CHECK(t.error().offset == offsetof(rdzv_file_header, capacity));
  }
}

TEST_CASE("a missing file or a directory is an error with the system's words", "[reader]") {
  TempDir dir;
  auto missing = read_trace(dir.file("nope.rzt"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message() == dir.file("nope.rzt") + ": No such file or directory");
  auto d = read_trace(dir.path());
  REQUIRE_FALSE(d.ok());
  CHECK_THAT(d.error().message(), Catch::Contains("directory"));
}

// A FIFO named like a trace used to block open() forever, hanging the whole analysis: with
// nobody at the other end this test hung before the fix.
TEST_CASE("a FIFO named like a trace is refused at once, not waited on", "[reader]") {
  TempDir dir;
  const std::string fifo = dir.file("fifo.rzt");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto t = read_trace(fifo);
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().message() == fifo + ": not a regular file");
}

TEST_CASE("a file cut inside a record keeps the records before the cut", "[reader]") {
  TempDir dir;
  const std::string path = dir.file("cut.rzt");
  auto b = three_connects();
  const std::uint64_t cut_slot_offset = rdzv_record_offset(2);  // 4096 + 2*192 = 4480
  REQUIRE(cut_slot_offset == 4480);
  b.write_truncated(path, cut_slot_offset + 50);
  auto t = read_trace(path);
  REQUIRE(t.ok());
  const Trace& trace = t.value();
  REQUIRE(trace.records.size() == 2);
  CHECK(trace.records[1].slot.value == 1);
  REQUIRE(trace.damage.has_value());
  CHECK(trace.damage->message() == path + ": truncated at offset 4480 (record slot 2)");
  CHECK(trace.damage->offset == 4480u);
}

TEST_CASE("a file cut at a record boundary before next_slot is truncated too", "[reader]") {
  TempDir dir;
  const std::string path = dir.file("cut.rzt");
  auto b = three_connects();
  b.write_truncated(path, rdzv_record_offset(1));
  auto t = read_trace(path);
  REQUIRE(t.ok());
  CHECK(t.value().records.size() == 1);
  REQUIRE(t.value().damage.has_value());
  CHECK(t.value().damage->offset == rdzv_record_offset(1));
  CHECK_THAT(t.value().damage->message(), Catch::EndsWith("(record slot 1)"));
}

TEST_CASE("next_slot past capacity: records up to capacity, the rest dropped", "[reader]") {
  TempDir dir;
  TraceBuilder b(2);
  b.add(make_record(RDZV_EV_CONNECT, RDZV_OP_CONNECT));
  b.add(make_record(RDZV_EV_CONNECT, RDZV_OP_CONNECT));
  b.set_next_slot(7);

  SECTION("the writer counted the drops") {
    b.header().dropped = 5;
    b.write(dir.file("t.rzt"));
    auto t = read_trace(dir.file("t.rzt"));
    REQUIRE(t.ok());
    CHECK(t.value().records.size() == 2);
    CHECK(t.value().dropped() == 5);
    CHECK_FALSE(t.value().damage.has_value());
  }
  SECTION("the writer died before counting the last drops") {
    b.header().dropped = 1;
    b.write(dir.file("t.rzt"));
    auto t = read_trace(dir.file("t.rzt"));
    REQUIRE(t.ok());
    CHECK(t.value().dropped() == 5);
  }
}

TEST_CASE("a large capacity with a small next_slot reads only what was reserved", "[reader]") {
  TempDir dir;
  TraceBuilder b(3000);  // more than one read chunk of slots
  for (int i = 0; i < 2500; ++i) b.add(make_record(RDZV_EV_SEND, RDZV_OP_SEND));
  b.write(dir.file("t.rzt"));
  auto t = read_trace(dir.file("t.rzt"));
  REQUIRE(t.ok());
  CHECK(t.value().records.size() == 2500);
  CHECK(t.value().records.back().slot.value == 2499);
}

TEST_CASE("random damage to records is counted, never a crash", "[reader]") {
  TempDir dir;
  const std::string path = dir.file("fuzz.rzt");
  TraceBuilder b(64);
  for (int i = 0; i < 64; ++i) b.add(make_record(1 + i % RDZV_EV_KIND_MAX, i % RDZV_OP_MAX));
  const std::string clean = b.bytes();
  std::uint32_t state = 12345;  // fixed seed: a failure reproduces
  auto next = [&state] { return state = state * 1664525u + 1013904223u; };
  for (int round = 0; round < 200; ++round) {
    std::string bytes = clean;
    for (int k = 0; k < 20; ++k) {
      const std::size_t at = RDZV_HEADER_SIZE + next() % (bytes.size() - RDZV_HEADER_SIZE);
      bytes[at] = static_cast<char>(next());
    }
    bytes.resize(bytes.size() - next() % (64 * RDZV_RECORD_SIZE));
    write_file(path, bytes);
    auto t = read_trace(path);
    REQUIRE(t.ok());
    const Trace& trace = t.value();
    const std::uint64_t complete = (trace.file_size - RDZV_HEADER_SIZE) / RDZV_RECORD_SIZE;
    // Every complete reserved slot is accounted for exactly once.
    CHECK(trace.records.size() + trace.torn + trace.invalid == std::min<std::uint64_t>(64, complete));
    CHECK(trace.damage.has_value() == (complete < 64));
  }
}

TEST_CASE("random headers give an error or a trace, never a crash", "[reader]") {
  TempDir dir;
  const std::string path = dir.file("fuzz.rzt");
  TraceBuilder b(4);
  b.add(make_record(RDZV_EV_CONNECT, RDZV_OP_CONNECT));
  const std::string clean = b.bytes();
  std::uint32_t state = 777;
  auto next = [&state] { return state = state * 1664525u + 1013904223u; };
  int errors = 0;
  for (int round = 0; round < 300; ++round) {
    std::string bytes = clean;
    for (int k = 0; k < 4; ++k) bytes[next() % 160] = static_cast<char>(next());
    write_file(path, bytes);
    auto t = read_trace(path);
    if (!t.ok()) {
      ++errors;
      CHECK_THAT(t.error().message(), Catch::StartsWith(path + ": "));
    } else {
      CHECK(t.value().records.size() <= 4);
    }
  }
  CHECK(errors > 0);  // the damage did reach the checked fields
}

TEST_CASE("calls in flight: sealed slots are delivered, empty and torn ones are not", "[reader]") {
  TempDir dir;
  auto b = three_connects();
  b.add_inflight(2, RDZV_EV_RECV, RDZV_OP_RECV, 11, 3.0);
  b.add_inflight(5, RDZV_EV_CONNECT, RDZV_OP_CONNECT, 12, 4.0).seal = 0;        // returned
  b.add_inflight(7, RDZV_EV_POLL, RDZV_OP_POLL, 13, 5.0).seal ^= 0x100;          // torn
  b.add_inflight(9, 99, RDZV_OP_POLL, 13, 5.0);                                  // impossible kind
  b.write(dir.file("t.rzt"));
  auto t = read_trace(dir.file("t.rzt"));
  REQUIRE(t.ok());
  REQUIRE(t.value().inflight.size() == 1);
  CHECK(t.value().inflight[0].kind == RDZV_EV_RECV);
  CHECK(t.value().inflight[0].fd == 11);
}

TEST_CASE("calls in flight: a file without the feature has none, whatever its bytes", "[reader]") {
  TempDir dir;
  auto b = three_connects();
  b.add_inflight(0, RDZV_EV_RECV, RDZV_OP_RECV, 11, 3.0);
  b.header().features &= ~RDZV_FEAT_INFLIGHT;  // an older writer's reserved bytes
  b.write(dir.file("t.rzt"));
  auto t = read_trace(dir.file("t.rzt"));
  REQUIRE(t.ok());
  CHECK(t.value().inflight.empty());
}

TEST_CASE("calls in flight: a slot whose seal changed between two reads is left out", "[reader]") {
  TraceBuilder b(4);
  b.add_inflight(1, RDZV_EV_RECV, RDZV_OP_RECV, 11, 3.0);
  b.add_inflight(2, RDZV_EV_SEND, RDZV_OP_SEND, 12, 3.0);
  rdzv_inflight again[RDZV_INFLIGHT_SLOTS];
  std::memcpy(again, b.header().inflight, sizeof again);
  again[2].seal = 0;  // the send returned while the reader copied
  const auto calls = sealed_inflight(b.header(), again);
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].fd == 11);
}
