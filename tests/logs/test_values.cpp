// Values pulled out of matched lines: timeouts, errno, gai code, host/port, time stamps,
// prefixes, torch versions, file-name ranks, family names, the version hint.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cmath>
#include <ctime>
#include <set>
#include <string>

#include "logs/log_scan.h"

using namespace rdzv::logs;

namespace {
LogEvent ev_of(const std::string& line, int default_rank = -1, int year = 0) {
  INFO(line);
  auto ev = classify_line(line, default_rank, year);
  REQUIRE(ev.has_value());
  return *ev;
}

double local_epoch(int y, int mo, int d, int h, int mi, int s) {
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  tm.tm_isdst = -1;
  return static_cast<double>(std::mktime(&tm));
}
}  // namespace

TEST_CASE("timeouts in ms from every unit style", "[values]") {
  CHECK(ev_of("TimeoutError: The client socket has timed out after 1800s while trying to connect to (h, 1).")
            .timeout_ms == 1800000);
  CHECK(ev_of("The client socket has timed out after 600000ms while trying to connect to (h, 1).")
            .timeout_ms == 600000);
  CHECK(ev_of("The client socket has timed out after 60s while trying to connect to (h, 1).").timeout_ms ==
        60000);
  CHECK(ev_of("TCP client failed to connect/validate to host h:1 - timed out (try=1, timeout=60000ms): x")
            .timeout_ms == 60000);
  CHECK(ev_of("DistStoreError: Timed out after 1801 seconds waiting for clients. 2/4 clients joined.")
            .timeout_ms == 1801000);
  CHECK(ev_of("Waiting in store based barrier to initialize process group for rank: 0, key: k (world_size=2, "
              "worker_count=1, timeout=1 day, 2:00:00)")
            .timeout_ms == (24 + 2) * 3600000LL);
  CHECK(ev_of("Waiting in store based barrier to initialize process group for rank: 0, key: k (world_size=2, "
              "worker_count=1, timeout=0:00:30.5)")
            .timeout_ms == 30500);
  CHECK(ev_of("RuntimeError: connect() timed out. Original timeout was 60000 ms.").timeout_ms == 60000);
  CHECK(ev_of("Watchdog caught collective operation timeout: WorkNCCL(OpType=BROADCAST, Timeout(ms)=1800000) "
              "ran for 1800095 milliseconds before timing out.")
            .timeout_ms == 1800000);
  // "1800sec" style is accepted, "1800x" is not a duration
  CHECK(ev_of("The client socket has timed out after 1800sec while trying to connect to (h, 1).").timeout_ms ==
        1800000);
  CHECK_FALSE(ev_of("The client socket has timed out after 1800x while trying to connect to (h, 1).")
                  .timeout_ms.has_value());
}

TEST_CASE("errno from the errno field, libuv code, Windows codes and reason text", "[values]") {
  CHECK(ev_of("The client socket has failed to connect to [h]:1 (errno: 111 - Connection refused).").err == 111);
  CHECK(ev_of("The server socket has failed to listen on any local network address. port: 1, useIpv6: 0, "
              "code: -98, name: EADDRINUSE, message: address already in use")
            .err == 98);
  CHECK(ev_of("sendBytes failed on SocketImpl(fd=1, addr=[a]:2, remote=[b]:3): Broken pipe").err == EPIPE);
  CHECK(ev_of("recvValue failed on SocketImpl(fd=1, addr=[a]:2, remote=[b]:3): Connection timed out").err ==
        ETIMEDOUT);
  CHECK(ev_of("RuntimeError: Address already in use").err == EADDRINUSE);
  CHECK(ev_of("The client socket has failed to connect to [h]:1 (system error: 10061 - refused).").err ==
        ECONNREFUSED);
  CHECK_FALSE(ev_of("RuntimeError: Socket Timeout").err.has_value());
}

TEST_CASE("gai code and host/port shapes", "[values]") {
  auto e = ev_of("The IPv6 network addresses of (master-0.svc.cluster.local, 29400) cannot be retrieved "
                 "(gai error: -3 - Temporary failure in name resolution).");
  CHECK(e.gai_code == -3);
  CHECK(e.host == "master-0.svc.cluster.local");
  CHECK(e.port == 29400);
  e = ev_of("TCP client failed to connect/validate to host [fe80::1]:29500 - retrying (try=0, "
            "timeout=1000ms, delay=500ms): Connection reset by peer");
  CHECK(e.host == "fe80::1");
  CHECK(e.port == 29500);
  e = ev_of("The client socket has failed to connect to 10.0.0.7:29501 (errno: 110 - Connection timed out).");
  CHECK(e.host == "10.0.0.7");
  CHECK(e.port == 29501);
  e = ev_of("RuntimeError: Broken pipe");
  CHECK(e.host.empty());
  CHECK_FALSE(e.port.has_value());
  // a port that is not a port is not taken
  e = ev_of("The client socket has failed to connect to [h]:99999 (errno: 110 - Connection timed out).");
  CHECK_FALSE(e.port.has_value());
}

TEST_CASE("wall time from glog (year given) and ISO stamps", "[values]") {
  auto e = ev_of("[rank3]:[W1129 10:00:00.250000 123 socket.cpp:204] [c10d] The hostname of the client "
                 "socket cannot be retrieved. err=-3",
                 -1, 2026);
  REQUIRE(e.wall_time.has_value());
  CHECK(*e.wall_time == Approx(local_epoch(2026, 11, 29, 10, 0, 0) + 0.25));
  // without a year, a glog stamp gives no time
  CHECK_FALSE(ev_of("[W1129 10:00:00.250000 123 socket.cpp:204] [c10d] The hostname of the client socket "
                    "cannot be retrieved. err=-3")
                  .wall_time.has_value());
  e = ev_of("2026-11-29 23:19:18,123 - ERROR - RuntimeError: Socket Timeout");
  REQUIRE(e.wall_time.has_value());
  CHECK(*e.wall_time == Approx(local_epoch(2026, 11, 29, 23, 19, 18) + 0.123));
  e = ev_of("[2026-11-29 23:19:18,500] torch.distributed.elastic: RendezvousClosedError");
  REQUIRE(e.wall_time.has_value());
  CHECK(*e.wall_time == Approx(local_epoch(2026, 11, 29, 23, 19, 18) + 0.5));
  e = ev_of("2026-11-29T23:19:18Z RuntimeError: Broken pipe");
  REQUIRE(e.wall_time.has_value());
  CHECK(*e.wall_time == Approx(1795994358.0));  // date -u -d 2026-11-29T23:19:18Z +%s
  e = ev_of("2026-11-29T23:19:18+01:00 RuntimeError: Broken pipe");
  CHECK(*e.wall_time == Approx(1795994358.0 - 3600));
  CHECK_FALSE(ev_of("RuntimeError: Broken pipe").wall_time.has_value());
  CHECK_FALSE(ev_of("2026-13-29 23:19:18 RuntimeError: Broken pipe").wall_time.has_value());
}

TEST_CASE("rank prefixes: torchrun, torchelastic, srun -l, nested; text ranks; default", "[values]") {
  const std::string msg = "RuntimeError: Broken pipe";
  CHECK(ev_of("[rank12]:" + msg).rank == 12);
  CHECK(ev_of("[default3]:" + msg).rank == 3);
  CHECK(ev_of("[5]:" + msg).rank == 5);
  CHECK(ev_of("[Rank9]:" + msg).rank == 9);
  CHECK(ev_of("[rank2]<stderr>:" + msg).rank == 2);
  CHECK(ev_of(" 7: " + msg).rank == 7);
  CHECK(ev_of("[default1]:[rank4]:" + msg).rank == 4);
  CHECK(ev_of("[rank12]:" + msg).text == msg);
  CHECK(ev_of(msg, 6).rank == 6);             // the file's default
  CHECK(ev_of("[rank1]:" + msg, 6).rank == 1); // the prefix beats the default
  CHECK(ev_of("[rankX]:" + msg).rank == -1);   // not a prefix
  CHECK(ev_of("Waiting in store based barrier to initialize process group for rank: 11, key: k (world_size=16, "
              "worker_count=15, timeout=0:30:00)",
              2)
            .rank == 11);  // the text beats the default
}

TEST_CASE("text is cut to 500 bytes on a character boundary and cleaned", "[values]") {
  std::string line = "RuntimeError: Broken pipe ";
  while (line.size() < 498) line += 'x';
  line += "\xc3\xa9\xc3\xa9";  // two 2-byte characters across the 500 mark
  auto e = ev_of(line);
  CHECK(e.text.size() == 500);
  CHECK(e.text.substr(498) == "\xc3\xa9");
  e = ev_of("RuntimeError: Broken pipe \x1b[31mred\x1b[0m \x01\xff");
  CHECK(e.text == "RuntimeError: Broken pipe red ??");
}

TEST_CASE("torch versions in lines", "[values]") {
  CHECK(version_in_line("torch 2.3.1") == "2.3.1");
  CHECK(version_in_line("torch==2.3.1") == "2.3.1");
  CHECK(version_in_line("[pip3] torch==2.1.0+cu121") == "2.1.0+cu121");
  CHECK(version_in_line("PyTorch version: 2.3.1") == "2.3.1");
  CHECK(version_in_line("torch.__version__ = 2.3.1") == "2.3.1");
  CHECK(version_in_line("pytorch 2.7.1+cu128") == "2.7.1+cu128");
  CHECK(version_in_line("[rank0]: Torch version: 1.13.1.") == "1.13.1");
  CHECK(version_in_line("Successfully installed torch-2.4.0") == "2.4.0");
  CHECK(version_in_line("torchvision 0.18.1").empty());
  CHECK(version_in_line("pytorch-lightning 2.1.0").empty());
  CHECK(version_in_line("File \"/usr/lib/python3/dist-packages/torch/distributed/run.py\", line 12").empty());
  CHECK(version_in_line("torch 2 GPUs").empty());
  CHECK(version_in_line("scorch 2.3.1").empty());
}

TEST_CASE("rank from the file name", "[values]") {
  CHECK(rank_from_filename("/logs/rank3.log") == 3);
  CHECK(rank_from_filename("rank_3") == 3);
  CHECK(rank_from_filename("train-rank-12.txt") == 12);
  CHECK(rank_from_filename("/x/r3.out") == 3);
  CHECK(rank_from_filename("job_r7.log") == 7);
  CHECK(rank_from_filename("worker-3.log") == 3);
  CHECK(rank_from_filename("123456-5.out") == 5);
  CHECK(rank_from_filename("RANK4.LOG") == 4);
  CHECK(rank_from_filename("slurm-123456.out") == -1);
  CHECK(rank_from_filename("train.log") == -1);
  CHECK(rank_from_filename("error.log") == -1);
  CHECK(rank_from_filename("/logs/rank3/train.log") == -1);  // the directory does not count
}

TEST_CASE("family names are snake_case and distinct", "[values]") {
  std::set<std::string> names;
  for (int f = 0; f < kFamilyCount; ++f) {
    const std::string n = family_name(static_cast<Family>(f));
    INFO(n);
    CHECK(n != "unknown");
    for (char c : n) CHECK(((c >= 'a' && c <= 'z') || c == '_'));
    names.insert(n);
  }
  CHECK(names.size() == static_cast<size_t>(kFamilyCount));
  CHECK(std::string(family_name(Family::GaiError)) == "gai_error");
  CHECK(std::string(family_name(Family::SocketTimeout)) == "socket_timeout");
}

TEST_CASE("version hint from message styles", "[values]") {
  auto scan_of = [](std::initializer_list<const char*> lines) {
    LogScan s;
    for (auto l : lines) {
      auto ev = classify_line(l);
      REQUIRE(ev.has_value());
      s.events.push_back(*ev);
    }
    return s;
  };
  CHECK(version_hint(scan_of({"waitForInput: socket SocketImpl(fd=1) timed out after 600000ms"})) == ">=2.5");
  CHECK(version_hint(scan_of({"The client socket has timed out after 600000ms while trying to connect to (h, 1)."})) ==
        ">=2.5");
  CHECK(version_hint(scan_of({"The client socket has timed out after 600s while trying to connect to (h, 1)."})) ==
        "<=2.4");
  CHECK(version_hint(scan_of({"RuntimeError: Socket Timeout"})) == "<=2.4");
  CHECK(version_hint(scan_of({"DistStoreError: wait timeout after 60000ms, keys: /k"})) == ">=2.5");
  CHECK(version_hint(scan_of({"RuntimeError: Broken pipe"})).empty());  // no sign
  CHECK(version_hint(scan_of({"RuntimeError: Socket Timeout", "DistStoreError: wait timeout after 6ms, keys: /k"}))
            .empty());  // signs disagree
  auto known = scan_of({"RuntimeError: Socket Timeout"});
  known.torch_version = "2.7.1";
  CHECK(version_hint(known).empty());  // the version is known
}

TEST_CASE("2.x's wait timeout names the rank whose key was awaited", "[values]") {
  // as printed by PyTorch 2.13 under torchrun, rank 2 the straggler
  auto e = ev_of("[rank0] e2e: FAILED DistStoreError: wait timeout after 3000ms, keys: /default_pg/0//cpu//0/2");
  CHECK(e.family == Family::WaitTimeout);
  REQUIRE(e.awaited_rank.has_value());
  CHECK(*e.awaited_rank == 2);
  CHECK_FALSE(ev_of("wait timeout after 3000ms, keys: /default_pg/0//cpu//0/x").awaited_rank.has_value());
  CHECK_FALSE(ev_of("RuntimeError: wait timeout after 30000ms").awaited_rank.has_value());
}
