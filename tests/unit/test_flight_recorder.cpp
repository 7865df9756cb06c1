// The pickle decoder and the Flight Recorder reader, on real dumps of PyTorch 2.13's CPU build
// (tests/unit/fixtures/flight_recorder/README.md), and on damaged or hostile bytes.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "reader/flight_recorder.h"
#include "reader/pickle.h"

using namespace rdzvscope;

namespace {

const std::string kFixtures = std::string(RDZVSCOPE_SOURCE_DIR) + "/tests/unit/fixtures/flight_recorder/";

std::string bytes_of(const std::string& name) {
  std::ifstream in(kFixtures + name, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  REQUIRE(!s.str().empty());
  return s.str();
}

}  // namespace

TEST_CASE("a real 2.13 dump: its version, groups and entries", "[flight_recorder]") {
  const auto d = read_flight_recorder_dump(kFixtures + "three_ops_rank_0");
  REQUIRE(d.ok());
  const FrDump& dump = d.value();
  CHECK(dump.rank == 0);
  CHECK(dump.version == "2.10");
  REQUIRE(dump.pg_ranks.count(""));  // 2.13's gloo keys WORLD's config by "", not "0"
  CHECK(dump.pg_ranks.at("") == std::vector<int>{0});
  CHECK(dump.last_enqueued.at("0") == 3);
  REQUIRE(dump.entries.size() == 3);
  const char* ops[] = {"all_reduce", "barrier", "broadcast"};
  for (std::size_t i = 0; i < 3; ++i) {
    const FrEntry& e = dump.entries[i];
    CHECK(e.collective_seq_id == static_cast<std::int64_t>(i + 1));
    CHECK(e.op == ops[i]);
    CHECK(e.backend == "gloo");
    CHECK(e.pg_name == "0");
    CHECK(e.pg_desc == "default_pg");
    CHECK(e.state == "scheduled");
    CHECK(e.timeout_ms == 1800000);
    CHECK_FALSE(e.is_p2p);
    // A LONG1 of 8 bytes: a wall-clock time in 2026, not a small or negative number.
    REQUIRE(e.time_created_ns);
    CHECK(*e.time_created_ns > 1'700'000'000'000'000'000);
  }
}

TEST_CASE("the same dump pickled again by Python (protocol 5) reads the same", "[flight_recorder]") {
  const auto a = read_flight_recorder_dump(kFixtures + "three_ops_rank_0");
  const auto b = read_flight_recorder_dump(kFixtures + "three_ops_protocol5_rank_0");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(a.value().entries.size() == b.value().entries.size());
  for (std::size_t i = 0; i < a.value().entries.size(); ++i) {
    CHECK(a.value().entries[i].op == b.value().entries[i].op);
    CHECK(a.value().entries[i].time_created_ns == b.value().entries[i].time_created_ns);
  }
}

TEST_CASE("every truncation of a real dump is an error naming the file, never a crash", "[flight_recorder]") {
  const std::string full = bytes_of("three_ops_rank_0");
  for (std::size_t n = 0; n < full.size(); ++n) {
    const auto d = decode_flight_recorder_dump(std::string_view(full).substr(0, n), "dumpfile", 0);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().message().rfind("dumpfile: ", 0) == 0);
  }
}

TEST_CASE("garbage, code and hostile pickles are refused", "[flight_recorder]") {
  auto refused = [](const std::string& bytes, const std::string& says) {
    const auto v = pickle::decode(bytes, "f");
    REQUIRE_FALSE(v.ok());
    CHECK_THAT(v.error().message(), Catch::Contains(says));
  };
  refused("hello", "not a pickle");
  refused(std::string("\x80\x02", 2), "truncated");
  // GLOBAL 'os system' + REDUCE: a pickle that would run code.
  refused(std::string("\x80\x02" "cos\nsystem\n", 13), "opcode 0x63");
  // A list nested 40 deep: past the depth limit.
  std::string deep = "\x80\x02";
  for (int i = 0; i < 40; ++i) deep += "]";
  for (int i = 0; i < 39; ++i) deep += "a";
  deep += ".";
  refused(deep, "nested deeper");
  // One short string fetched from the memo again and again: bounded by the text budget.
  std::string many = std::string("\x80\x02]X\x00\x00\x10\x00", 8) + std::string(1 << 20, 'x') + std::string("q\x00(", 3);
  for (int i = 0; i < 300; ++i) many += std::string("h\x00", 2);
  many += "e.";
  refused(many, "bytes of strings");
  refused(std::string("\x80\x02h\x05.", 5), "memo 5 fetched before");
  refused(std::string("\x80\x02N" "N.", 5), "2 values on the stack");
}

TEST_CASE("a pickle that is no dump, and a dump name without a rank", "[flight_recorder]") {
  const auto d = decode_flight_recorder_dump(std::string("\x80\x02]q\x00.", 6), "x", 0);
  REQUIRE_FALSE(d.ok());
  CHECK_THAT(d.error().message(), Catch::Contains("not a Flight Recorder dump"));
  CHECK(rank_of_dump_name("/tmp/nccl_trace_rank_12") == 12);
  CHECK(rank_of_dump_name("trace.pkl") == std::nullopt);
  CHECK(is_default_dump_name("dir/nccl_trace_rank_3"));
  CHECK_FALSE(is_default_dump_name("dir/my_dump_3"));
}

TEST_CASE("a directory of dumps, and the default names in a trace directory", "[flight_recorder]") {
  const FrInputs in = load_flight_recorder({kFixtures + "stall_rank2"}, {});
  CHECK(in.errors.empty());
  REQUIRE(in.dumps.size() == 4);
  CHECK(in.dumps[2].rank == 2);
  CHECK(in.dumps[2].entries.empty());  // dumped while asleep, before its all_reduce
  CHECK(in.dumps[0].entries.size() == 1);
  // The same directory given as a trace directory: the default names are picked up.
  CHECK(load_flight_recorder({}, {kFixtures + "stall_rank2"}).dumps.size() == 4);
  // Given twice: each rank once, and the second file of a rank is no error when it is the same.
  CHECK(load_flight_recorder({kFixtures + "stall_rank2"}, {kFixtures + "stall_rank2"}).errors.empty());
}
