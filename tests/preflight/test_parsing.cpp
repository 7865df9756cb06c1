// The pure pieces of preflight: the endpoint and the job's size from options and
// environment, /proc/net/tcp lines, /etc/hosts names, names read as addresses.
#include <catch2/catch.hpp>

#include "preflight/bind_port.h"
#include "preflight/endpoint.h"
#include "preflight/hello.h"
#include "preflight/job_size.h"
#include "preflight/resolve.h"

using namespace rdzvscope::preflight;

TEST_CASE("endpoints parse as torchrun writes them", "[preflight]") {
  auto e = parse_endpoint("store.rdzv:29500", "--endpoint");
  REQUIRE(e.ok());
  CHECK(e.value().host == "store.rdzv");
  CHECK(e.value().port == 29500);
  CHECK(e.value().text() == "store.rdzv:29500");

  auto no_port = parse_endpoint("node0", "PET_RDZV_ENDPOINT");
  REQUIRE(no_port.ok());
  CHECK(no_port.value().port == kDefaultRdzvPort);

  auto v6 = parse_endpoint("[fe80::1%eth0]:1234", "--endpoint");
  REQUIRE(v6.ok());
  CHECK(v6.value().host == "fe80::1%eth0");
  CHECK(v6.value().text() == "[fe80::1%eth0]:1234");
  CHECK(parse_endpoint("[::1]", "x").value().port == kDefaultRdzvPort);
}

TEST_CASE("a malformed endpoint is one line naming its source", "[preflight]") {
  for (const char* bad :
       {"", ":29500", "host:", "host:0", "host:65536", "host:29x", "::1:29500", "[::1:29500",
        "[::1]x", "[node]:1", "ho st:1", "http://node:1", "host:-1"}) {
    INFO("'" << bad << "'");
    auto r = parse_endpoint(bad, "--endpoint");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message().rfind("--endpoint: ", 0) == 0);
    CHECK(r.error().message().find('\n') == std::string::npos);
  }
}

TEST_CASE("the endpoint comes from the option, else PET_RDZV_ENDPOINT, else MASTER_ADDR/PORT",
          "[preflight]") {
  const EndpointEnv all{"agent:29400", "master", "29500"};
  CHECK(choose_endpoint(std::string("opt:1"), all).value().source == "--endpoint");
  CHECK(choose_endpoint(std::nullopt, all).value().host == "agent");
  const EndpointEnv master{std::nullopt, "master", "29500"};
  auto m = choose_endpoint(std::nullopt, master);
  REQUIRE(m.ok());
  CHECK(m.value().text() == "master:29500");
  CHECK(m.value().source == "MASTER_ADDR/MASTER_PORT");
  CHECK(choose_endpoint(std::nullopt, EndpointEnv{std::nullopt, "::1", "5"}).value().text() ==
        "[::1]:5");

  auto no_port = choose_endpoint(std::nullopt, EndpointEnv{std::nullopt, "master", std::nullopt});
  REQUIRE_FALSE(no_port.ok());
  CHECK_THAT(no_port.error().message(), Catch::Contains("MASTER_PORT is not"));
  auto nothing = choose_endpoint(std::nullopt, EndpointEnv{});
  REQUIRE_FALSE(nothing.ok());
  CHECK_THAT(nothing.error().message(), Catch::StartsWith("no endpoint"));
}

TEST_CASE("the number of ranks comes from the job's environment", "[preflight]") {
  CHECK(rank_count(7ul, JobSizeEnv{"64", "2", "8"}, 2).source == "--ranks");
  CHECK(rank_count(std::nullopt, JobSizeEnv{"64", "2", "8"}, 2).count == 64);
  const RankCount torchrun = rank_count(std::nullopt, JobSizeEnv{std::nullopt, "2:4", "8"}, 2);
  CHECK(torchrun.count == 4 * 9);  // 4 nodes at most, 8 workers and an agent each
  CHECK(rank_count(std::nullopt, JobSizeEnv{"x", "2", "gpu"}, 3).count == 3);
  CHECK(rank_count(std::nullopt, JobSizeEnv{}, 0).count == 1);
}

TEST_CASE("the job key comes from --job-id, else torchrun's, else Slurm's", "[preflight]") {
  const JobKeyEnv all{"rdzv-7", "run-7", "4242"};
  CHECK(job_key(std::string("mine"), all).value().key == "mine");
  CHECK(job_key(std::string("mine"), all).value().source == "--job-id");
  CHECK(job_key(std::nullopt, all).value().source == "PET_RDZV_ID");
  CHECK(job_key(std::nullopt, JobKeyEnv{std::nullopt, "run-7", "4242"}).value().key == "run-7");
  const JobKey slurm = job_key(std::nullopt, JobKeyEnv{std::nullopt, std::nullopt, "4242"}).value();
  CHECK((slurm.key == "4242" && slurm.source == "SLURM_JOB_ID"));
  // torchrun's default --rdzv-id is "none": every job has it, it tells none apart.
  CHECK(job_key(std::nullopt, JobKeyEnv{"none", std::nullopt, "4242"}).value().key == "4242");
  CHECK(job_key(std::nullopt, JobKeyEnv{}).value().key.empty());
  CHECK(job_key(std::nullopt, JobKeyEnv{"a b\x1b", std::nullopt, std::nullopt}).value().key == "a?b?");
  for (const std::string& bad : {std::string(""), std::string("a b"), std::string("x\n"),
                                 std::string(kMaxJobKey + 1, 'j')}) {
    auto r = job_key(bad, all);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message(), Catch::StartsWith("--job-id '"));
    CHECK(r.error().message().find('\n') == std::string::npos);
  }
}

TEST_CASE("/proc/net/tcp lines give port, state and inode", "[preflight]") {
  const auto v4 = parse_proc_net_tcp_line(
      "   0: 00000000:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
      "123456 1 "
      "0000000000000000 100 0 0 10 0");
  REQUIRE(v4);
  CHECK(v4->local_port == 30000);
  CHECK(v4->state == kTcpListen);
  CHECK(v4->inode == 123456);
  const auto v6 = parse_proc_net_tcp_line(
      "   1: 00000000000000000000000000000000:7331 00000000000000000000000000000000:0000 0A "
      "00000000:00000000 "
      "00:00000000 00000000     0        0 42 1 0000000000000000 100 0 0 10 0");
  REQUIRE(v6);
  CHECK(v6->local_port == 0x7331);
  CHECK_FALSE(parse_proc_net_tcp_line(
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   "
      "uid  timeout inode"));
  CHECK_FALSE(parse_proc_net_tcp_line(""));
  CHECK_FALSE(parse_proc_net_tcp_line("0: 0:ZZZZ 0:0 0A 0:0 0:0 0 0 0 1"));
}

TEST_CASE("/etc/hosts names, comments left out", "[preflight]") {
  const auto names = hosts_file_names(
      "127.0.0.1 localhost\n# 10.0.0.9 gone\n10.0.0.1 node0 node0.cluster # x\n\n");
  CHECK(names == std::vector<std::string>{"localhost", "node0", "node0.cluster"});
}

TEST_CASE("all-digit names are read as IPv4 addresses", "[preflight]") {
  CHECK(digits_read_as_address("1234") == "0.0.4.210");
  CHECK(digits_read_as_address("10.1") == "10.0.0.1");
  CHECK(digits_read_as_address("10.0.0.1").empty());  // a real dotted quad is fine
  CHECK(digits_read_as_address("node0").empty());
  CHECK(eai_name(-2) == "EAI_NONAME");
}
