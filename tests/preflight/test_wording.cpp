// The checks' verdicts and words for given figures, and the hello protocol's lines.
#include <catch2/catch.hpp>

#include <cerrno>

#include "preflight/connect.h"
#include "preflight/hello.h"
#include "preflight/limits.h"
#include "preflight/meeting.h"
#include "preflight/preflight.h"
#include "preflight/report.h"

using namespace rdzvscope::preflight;

TEST_CASE("somaxconn against the ranks connecting at once", "[preflight]") {
  CHECK(somaxconn_check(4096, 4096).verdict == Verdict::Ok);
  const Check small = somaxconn_check(64, 1000);
  CHECK(small.verdict == Verdict::Warn);
  CHECK_THAT(small.measured, Catch::Contains("net.core.somaxconn 64 < 1000"));
  CHECK_THAT(small.fix, Catch::Contains("sysctl -w net.core.somaxconn=4096"));
}

TEST_CASE("the open-file limit against the store's descriptors", "[preflight]") {
  CHECK(nofile_check(FileLimit{1024, 4096}, 100).verdict == Verdict::Ok);
  const Check few = nofile_check(FileLimit{1024, 524288}, 2000);
  CHECK(few.verdict == Verdict::Fail);
  CHECK_THAT(few.fix, Catch::Contains("ulimit -n 4064"));
  CHECK(nofile_check(FileLimit{1024, 1024}, 600).verdict == Verdict::Warn);  // enough for 2.x only
}

TEST_CASE("connect errnos are told apart", "[preflight]") {
  CHECK(outcome_of_errno(ECONNREFUSED) == Outcome::Refused);
  CHECK(outcome_of_errno(ETIMEDOUT) == Outcome::Timeout);
  CHECK(outcome_of_errno(EHOSTUNREACH) == Outcome::Unreachable);
  CHECK(outcome_of_errno(ENETUNREACH) == Outcome::Unreachable);
  CHECK(outcome_of_errno(ECONNRESET) == Outcome::Reset);

  ConnectResult dropped;
  dropped.attempts = {Attempt{Outcome::Timeout, ETIMEDOUT, 5000, "10.0.0.1:29500"}};
  dropped.counts[Outcome::Timeout] = 1;
  dropped.ms = 5000;
  const Check c = connect_check("node0:29500", dropped, true);
  CHECK(c.verdict == Verdict::Fail);
  CHECK_THAT(c.measured, Catch::Contains("no answer to the SYN within 5.0 s"));
  CHECK_THAT(c.fix, Catch::Contains("firewall"));

  ConnectResult refused;
  refused.attempts = {Attempt{Outcome::Refused, ECONNREFUSED, 0.2, "10.0.0.1:29500"}};
  refused.counts[Outcome::Refused] = 1;
  CHECK(connect_check("node0:29500", refused, false).verdict ==
        Verdict::Ok);  // nothing listens yet: fine
  CHECK(connect_check("node0:29500", refused, true).verdict == Verdict::Fail);
}

TEST_CASE("the store host is the node the endpoint names or resolves to", "[preflight]") {
  std::string why;
  CHECK(role_of("node0", "node0", {}, {}, why) == Role::StoreHost);
  CHECK(role_of("node0.cluster", "node0", {}, {}, why) == Role::StoreHost);
  CHECK(role_of("store", "node0", {"10.0.0.1"}, {"127.0.0.1", "10.0.0.1"}, why) == Role::StoreHost);
  CHECK_THAT(why, Catch::Contains("10.0.0.1"));
  CHECK(role_of("store", "node1", {"10.0.0.1"}, {"127.0.0.1", "10.0.0.2"}, why) == Role::Node);
  CHECK(role_of("store", "node1", {}, {"10.0.0.2"}, why) == Role::Node);
}

TEST_CASE("hello, welcome and clock lines round-trip", "[preflight]") {
  Hello h{"node1", 3, 1000, {fail_check("connect", "x", "y", {{"a", 1}})}};
  const std::string line = hello_line(h);
  CHECK(line.back() == '\n');
  auto back = parse_hello(line.substr(0, line.size() - 1));
  REQUIRE(back.ok());
  CHECK(back.value().host == "node1");
  CHECK(back.value().world_size == 3);
  REQUIRE(back.value().checks.size() == 1);
  CHECK(back.value().checks[0].verdict == Verdict::Fail);
  CHECK(back.value().checks[0].data["a"] == 1);
  CHECK_FALSE(back.value().node_rank);
  h.node_rank = 2;  // a node that knows its node rank (PET_NODE_RANK, SLURM_NODEID) says it
  auto ranked = parse_hello(hello_line(h));
  REQUIRE(ranked.ok());
  CHECK(ranked.value().node_rank == 2u);

  CHECK(ranked.value().job.empty());
  h.job = "slurm-4242";  // a node with a job key says it
  auto keyed = parse_hello(hello_line(h));
  REQUIRE(keyed.ok());
  CHECK(keyed.value().job == "slurm-4242");

  auto w = parse_welcome(welcome_line(Welcome{"node0", 5, 6}));
  REQUIRE(w.ok());
  CHECK(w.value().t3_ns == 6);
  CHECK(parse_clock(clock_line(ClockLine{9})).value().t4_ns == 9);
}

TEST_CASE("a meeting belongs to one job", "[preflight]") {
  CHECK(same_job("A", "A"));
  CHECK_FALSE(same_job("A", "B"));
  CHECK_FALSE(same_job("A", ""));  // a hello without a key is not this job's
  CHECK(same_job("", "B"));        // a store host without a key cannot tell jobs apart
  auto r = parse_refused(refused_line(Refused{"node0", "A"}));
  REQUIRE(r.ok());
  CHECK((r.value().host == "node0" && r.value().job == "A"));
  CHECK_FALSE(parse_refused(welcome_line(Welcome{"node0", 5, 6})).ok());
  auto no_job = parse_refused("{\"preflight\":\"rdzvscope/1\",\"type\":\"refused\",\"host\":\"n\"}");
  REQUIRE_FALSE(no_job.ok());
  CHECK(no_job.error().message().find('\n') == std::string::npos);
  // A job key cannot carry a terminal's escapes or a newline into a report, nor grow it.
  auto h = parse_hello("{\"preflight\":\"rdzvscope/1\",\"type\":\"hello\",\"host\":\"a\",\"t1_ns\":1,"
                       "\"job\":\"j\\u001b[31m\\n" + std::string(300, 'x') + "\"}");
  REQUIRE(h.ok());
  CHECK(h.value().job.size() == kMaxJobKey);
  CHECK(h.value().job.rfind("j?[31m?x", 0) == 0);
  auto not_string = parse_hello(
      "{\"preflight\":\"rdzvscope/1\",\"type\":\"hello\",\"host\":\"a\",\"t1_ns\":1,\"job\":7}");
  REQUIRE_FALSE(not_string.ok());
  CHECK_THAT(not_string.error().message(), Catch::Contains("\"job\" that is not a string"));

  // The node's side: a refusal is two jobs on one endpoint, said as such.
  Exchange e;
  e.refused = Refused{"node0", "A"};
  e.job = "B";
  e.problem = "the store host's preflight (node0) is job 'A', this node is job 'B'";
  const Check c = exchange_check("store:29500", e);
  CHECK(c.verdict == Verdict::Fail);
  CHECK_THAT(c.measured, Catch::StartsWith("two jobs share the rendezvous endpoint store:29500"));
  CHECK_THAT(c.fix, Catch::Contains("--job-id"));
  // The store host's side: one fail check naming who came from which job, whatever their number.
  Meeting m;
  m.other_jobs.assign(7, OtherJob{"node9", "10.0.0.9", ""});
  m.other_jobs[0] = OtherJob{"node2", "10.0.0.3", "B"};
  const auto checks = meeting_checks(m, 1, "node0", {}, 10, "A");
  REQUIRE(checks.size() == 2);
  CHECK((checks[1].name == "job" && checks[1].verdict == Verdict::Fail));
  CHECK_THAT(checks[1].measured, Catch::Contains("this meeting is job 'A', turned away 7 hello(s)"));
  CHECK_THAT(checks[1].measured, Catch::Contains("node2 (10.0.0.3, job 'B')"));
  CHECK_THAT(checks[1].measured, Catch::Contains("node9 (10.0.0.9, job (none))"));
  CHECK_THAT(checks[1].measured, Catch::EndsWith("; 2 more"));
  CHECK(checks[1].measured.find('\n') == std::string::npos);
  CHECK(meeting_checks(Meeting{}, 1, "node0", {}, 10, "A").size() == 1);  // no other job: no check
}

TEST_CASE("garbage is an error of one line, never a crash", "[preflight]") {
  const std::string huge(kMaxLine + 1, 'x');
  for (const std::string& bad :
       {std::string(""), std::string("GET / HTTP/1.1"), std::string("{"), std::string("[1,2]"),
        std::string("{\"preflight\":\"other/1\",\"type\":\"hello\"}"),
        std::string("{\"preflight\":\"rdzvscope/"
                    "1\",\"type\":\"welcome\",\"host\":\"a\",\"t2_ns\":1,\"t3_ns\":2}"),
        std::string("{\"preflight\":\"rdzvscope/1\",\"type\":\"hello\",\"host\":7,\"t1_ns\":1}"),
        std::string(
            "{\"preflight\":\"rdzvscope/1\",\"type\":\"hello\",\"host\":\"a\",\"t1_ns\":1.5}"),
        std::string("{\"preflight\":\"rdzvscope/"
                    "1\",\"type\":\"hello\",\"host\":\"a\",\"t1_ns\":1,\"checks\":[1]}"),
        std::string("\x00\xff\xfe", 3), huge}) {
    auto r = parse_hello(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message().find('\n') == std::string::npos);
  }
  auto h = parse_hello(
      "{\"preflight\":\"rdzvscope/1\",\"type\":\"hello\",\"host\":\"a\\nb\\u0001\",\"t1_ns\":1}");
  REQUIRE(h.ok());
  CHECK(h.value().host == "a?b?");  // a host name cannot break a report's lines
  auto escapes = parse_hello(
      "{\"preflight\":\"rdzvscope/1\",\"type\":\"hello\",\"host\":\"a\",\"t1_ns\":1,\"checks\":"
      "[{\"name\":\"x "
      "y\",\"verdict\":\"fail\",\"measured\":\"m\\u001b[31m\\nz\",\"fix\":\"f\\r\"}]}");
  REQUIRE(escapes.ok());
  CHECK(escapes.value().checks[0].name == "x?y");
  CHECK(escapes.value().checks[0].measured == "m?[31m?z");
  CHECK(escapes.value().checks[0].fix == "f?");
}

TEST_CASE("clock offsets as NTP computes them", "[preflight]") {
  // The store host is 100 ms ahead; 2 ms each way; 1 ms inside the store host.
  const ClockSample s{0, 102'000'000, 103'000'000, 5'000'000};
  CHECK(s.offset_ms() == Approx(100.0));
  CHECK(s.uncertainty_ms() == Approx(2.0));
  const Check c = clock_check("node0", s, false);
  CHECK(c.verdict == Verdict::Ok);
  CHECK_THAT(c.measured, Catch::Contains("this node is behind node0 (the store host) by 100.0 ms"));
  const ClockSample far{0, 5'000'000'000, 5'000'000'000, 0};
  CHECK(clock_check("node1", far, true).verdict == Verdict::Warn);
}

TEST_CASE("the store host's summary names the missing nodes and the others' failures",
          "[preflight]") {
  Meeting m;
  m.peers.push_back(
      Peer{"node1", "10.0.0.2", 3, {fail_check("resolve", "slow", "fix")}, std::nullopt});
  const auto checks = meeting_checks(m, 3, "node0", {"node0", "node1", "node2"}, 10);
  REQUIRE(checks.size() == 2);
  CHECK(checks[0].verdict == Verdict::Fail);
  CHECK_THAT(checks[0].measured, Catch::Contains("2 of 3 node(s)"));
  CHECK_THAT(checks[0].measured, Catch::EndsWith("never showed up: node2"));
  CHECK(checks[1].name == "node1:resolve");

  Meeting flood;
  flood.problems.assign(25, "10.0.0.9: not a preflight hello: not a JSON object");
  const auto flooded = meeting_checks(flood, 1, "node0", {}, 10);
  REQUIRE(flooded.size() == 1 + 10 + 1);  // nodes, ten problems, "and 15 more"
  CHECK(flooded.back().measured == "and 15 more such connection(s)");

  const auto unnamed = meeting_checks(Meeting{}, 2, "node0", {}, 10);
  CHECK_THAT(unnamed[0].measured, Catch::Contains("1 node(s) (give --nodes"));
}

TEST_CASE("report pieces: file names and wrapping", "[preflight]") {
  CHECK(report_file_name("node0") == "preflight.node0.json");
  CHECK(report_file_name("../x") == "preflight._.._x.json");
  CHECK(report_file_name("") == "preflight._.json");
  CHECK(wrap("  ok    x  ", "aaa bbb ccc", 15) == "  ok    x  aaa\n           bbb\n           ccc");
  CHECK(wrap("AB ", "a b c", 100) == "AB a b c");
}
