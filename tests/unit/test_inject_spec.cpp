// The fault-injection spec (shim/inject_spec.h): what `rdzvscope run --inject` checks and
// the shim parses at load. A spec the parser refuses must never half-apply: out stays empty.
#include <catch2/catch.hpp>

#include <string>

#include "run_env.h"
#include "shim/inject_spec.h"

using namespace rdzv;

namespace {

InjectSpec parse_ok(const char* text) {
  InjectSpec s;
  char err[256] = "unset";
  INFO("spec: " << text);
  REQUIRE(inject_parse(text, &s, err, sizeof err));
  CHECK(std::string(err).empty());
  return s;
}

std::string parse_bad(const char* text) {
  InjectSpec s;
  s.count = 5;
  char err[256] = "";
  INFO("spec: " << (text ? text : "(null)"));
  REQUIRE_FALSE(inject_parse(text, &s, err, sizeof err));
  CHECK(s.count == 0);
  CHECK_FALSE(std::string(err).empty());
  return err;
}

}  // namespace

TEST_CASE("shim inject spec: every fault, with its defaults", "[shim][inject]") {
  InjectSpec s = parse_ok("resolve-fail:rank=3");
  REQUIRE(s.count == 1);
  CHECK(s.faults[0].kind == kInjectResolveFail);
  CHECK(s.faults[0].rank == 3);
  CHECK(std::string(inject_kind_name(s.faults[0].kind)) == "resolve-fail");

  s = parse_ok("connect-refused");
  REQUIRE(s.count == 1);
  CHECK(s.faults[0].kind == kInjectConnectRefused);
  CHECK(s.faults[0].rank == -1);

  s = parse_ok("connect-timeout");
  CHECK(s.faults[0].kind == kInjectConnectTimeout);
  CHECK(s.faults[0].delay_ns == 3000000000ull);

  s = parse_ok("late:rank=2:12s");
  CHECK(s.faults[0].kind == kInjectLate);
  CHECK(s.faults[0].rank == 2);
  CHECK(s.faults[0].delay_ns == 12000000000ull);

  s = parse_ok("late");
  CHECK(s.faults[0].delay_ns == 10000000000ull);

  s = parse_ok("port-taken:rank=0");
  CHECK(s.faults[0].kind == kInjectPortTaken);
  CHECK(s.faults[0].rank == 0);

  s = parse_ok("store-reset");
  CHECK(s.faults[0].kind == kInjectStoreReset);
  CHECK(s.faults[0].delay_ns == 0);
  CHECK(s.faults[0].bytes == 0);
  CHECK(std::string(inject_kind_name(s.faults[0].kind)) == "store-reset");
  s = parse_ok("store-reset:rank=2:after=5s:bytes=4096");
  CHECK(s.faults[0].rank == 2);
  CHECK(s.faults[0].delay_ns == 5000000000ull);
  CHECK(s.faults[0].bytes == 4096);
  CHECK(parse_ok("store-reset:bytes=0:500ms").faults[0].delay_ns == 500000000ull);
}

TEST_CASE("shim inject spec: durations, option order, several faults", "[shim][inject]") {
  CHECK(parse_ok("late:500ms").faults[0].delay_ns == 500000000ull);
  CHECK(parse_ok("late:2m").faults[0].delay_ns == 120000000000ull);
  CHECK(parse_ok("late:7").faults[0].delay_ns == 7000000000ull);
  CHECK(parse_ok("late:after=4s").faults[0].delay_ns == 4000000000ull);
  InjectSpec s = parse_ok("late:12s:rank=2");
  CHECK(s.faults[0].rank == 2);
  CHECK(s.faults[0].delay_ns == 12000000000ull);
  CHECK(parse_ok("connect-timeout:rank=1:1500ms").faults[0].delay_ns == 1500000000ull);

  s = parse_ok("resolve-fail:rank=3,late:rank=2:12s,port-taken");
  REQUIRE(s.count == 3);
  CHECK(s.faults[0].kind == kInjectResolveFail);
  CHECK(s.faults[1].kind == kInjectLate);
  CHECK(s.faults[2].kind == kInjectPortTaken);
  CHECK(s.faults[2].rank == -1);
}

TEST_CASE("shim inject spec: who a fault applies to", "[shim][inject]") {
  InjectFault all;
  all.kind = kInjectConnectRefused;
  CHECK(inject_applies(all, -1));
  CHECK(inject_applies(all, 7));
  InjectFault one = all;
  one.rank = 3;
  CHECK(inject_applies(one, 3));
  CHECK_FALSE(inject_applies(one, 2));
  CHECK_FALSE(inject_applies(one, -1));  // no RANK: a launcher, not rank 3
}

TEST_CASE("shim inject spec: garbage is refused whole", "[shim][inject]") {
  CHECK(parse_bad(nullptr) == "no spec");
  CHECK(parse_bad("") == "empty spec");
  CHECK(parse_bad("explode").find("unknown fault") != std::string::npos);
  CHECK(parse_bad("Resolve-Fail").find("unknown fault") != std::string::npos);
  CHECK(parse_bad("late:bytes=5").find("no bytes=") != std::string::npos);
  parse_bad("store-reset:bytes=");
  parse_bad("store-reset:bytes=-1");
  parse_bad("store-reset:bytes=1k");
  parse_bad("store-reset:bytes=1:bytes=2");
  parse_bad("store-reset:bytes=99999999999999");
  parse_bad("resolve-fail:");
  parse_bad("resolve-fail::rank=1");
  parse_bad(":rank=1");
  parse_bad("resolve-fail:rank=");
  parse_bad("resolve-fail:rank=-1");
  parse_bad("resolve-fail:rank=x");
  parse_bad("resolve-fail:rank=1:rank=2");
  parse_bad("resolve-fail:rank=99999999999");
  CHECK(parse_bad("resolve-fail:5s").find("no duration") != std::string::npos);
  parse_bad("connect-refused:after=1s");
  parse_bad("port-taken:12s");
  parse_bad("late:12h");
  parse_bad("late:s");
  parse_bad("late:12s:3s");
  parse_bad("late:99999999999s");
  parse_bad("late:1.5s");
  parse_bad("late:rank=2:12s,");
  parse_bad(",late");
  parse_bad("late,,late");
  parse_bad("late rank=2");
  parse_bad("late:rank=2\n");
  parse_bad("late:rank=\xc3\xa9");
  parse_bad("late,late,late,late,late,late,late,late,late");  // 9 > kInjectMaxFaults
  std::string huge(600, 'a');
  parse_bad(huge.c_str());
  std::string long_ok = "late";
  while (long_ok.size() < 400) long_ok += "x";
  parse_bad(long_ok.c_str());
}

TEST_CASE("shim inject spec: a small error buffer is cut, not overrun", "[shim][inject]") {
  InjectSpec s;
  char err[8];
  err[7] = 'Z';
  REQUIRE_FALSE(inject_parse("nonsense-fault-name", &s, err, 6));
  CHECK(std::string(err).size() == 5);
  CHECK(err[7] == 'Z');
  REQUIRE_FALSE(inject_parse("nonsense", &s, nullptr, 0));  // no buffer at all
}

TEST_CASE("shim inject spec: run --inject joins and checks with the same parser",
          "[shim][inject]") {
  using rdzvscope::cli::inject_env;
  auto none = inject_env({});
  REQUIRE(none.ok());
  CHECK(none.value().empty());
  auto two = inject_env({"resolve-fail:rank=3", "late:rank=2:12s"});
  REQUIRE(two.ok());
  CHECK(two.value() == "resolve-fail:rank=3,late:rank=2:12s");
  auto bad = inject_env({"late:rank=2", "explode"});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message().find("--inject 'explode'") != std::string::npos);
  CHECK_FALSE(inject_env({""}).ok());
  // Each one fine, together more than the shim keeps.
  CHECK_FALSE(
      inject_env({"late", "late", "late", "late", "late", "late", "late", "late", "late"}).ok());
}
