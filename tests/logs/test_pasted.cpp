// Issue 13: logs as users bring them (pasted into a ticket, through a log collector), and the
// families that are no store failure. Every string comes from a public thread of the corpus
// (tests/corpus/manifest.tsv) or is one of its lines after the damage named in the test.
#include <catch2/catch.hpp>

#include <cerrno>
#include <string>

#include "logs/log_scan.h"

using rdzv::logs::classify_line;
using rdzv::logs::Family;
using rdzv::logs::family_name;
using rdzv::logs::is_other_error;
using rdzv::logs::LogEvent;

namespace {

LogEvent must(const std::string& line, Family f) {
  INFO("line: " << line);
  auto ev = classify_line(line);
  REQUIRE(ev.has_value());
  INFO("got " << family_name(ev->family) << ", want " << family_name(f));
  REQUIRE(ev->family == f);
  return *ev;
}

const char* kTimeout =
    "[E socket.cpp:793] [c10d] The client socket has timed out after 1800s while trying to connect "
    "to "
    "(127.0.0.1, 48391).";  // ControlNet#382

}  // namespace

TEST_CASE("transport: gloo and NCCL connections are not the store's", "[pasted]") {
  auto e = must(
      "RuntimeError: "
      "[/opt/conda/conda-bld/pytorch_1682343967769/work/third_party/gloo/gloo/transport/"
      "tcp/pair.cc:799] connect [172.31.71.170]:13195: Connection refused",
      Family::TransportError);  // pytorch#108732
  CHECK(e.also == 0);           // not ConnectFailed, not an error line of its own
  must("terminate called after throwing an instance of 'gloo::IoException'",
       Family::TransportError);
  e = must(
      "ubuntu:39964:40075 [0] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to "
      "10.0.0.2<45763> "
      "failed : Software caused connection abort",
      Family::TransportError);  // nccl-tests#166
  e = must(
      "tj1-asr-train-v100-13:941227:943077 [0] include/socket.h:390 NCCL WARN Connect to "
      "10.38.10.112<21724> "
      "failed : Connection refused",
      Family::TransportError);  // espnet#1940
  e = must(
      "ubuntu:39964:40044 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by "
      "remote peer "
      "node1<57557>",
      Family::TransportError);
  e = must("node1:1:2 [0] misc/socket.cc:60 NCCL WARN socketProgress: Connection reset by peer",
           Family::TransportError);
  CHECK_FALSE(e.has(Family::ConnectionReset));  // the broken-pipe rule must not read it
  must("(LLMEngine pid=2347640, ip=10.58.226.15) Proxy Call to rank 7 failed (Connect)",
       Family::TransportError);  // vllm#798
  must("Bootstrap : no socket interface found", Family::NcclNoSocketInterface);
  must("[trainer0|0]:misc/socket.cc:1 NCCL WARN Bootstrap : no NCCL_SOCKET_IFNAME interface found",
       Family::NcclNoSocketInterface);
  // gloo of 2.x: a pair's connect given up (tests/corpus/logs/own/torch2.13-gloo-loopback-peer)
  e = must("[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/debug_logger.cc:9] ERROR failed to connect, "
           "willRetry=0, retry=4, retryLimit=3, rank=0, size=2, local=[127.0.0.1]:42143, remote=[127.0.1.1]:9107$0, "
           "error=SO_ERROR: Connection refused, remote=[127.0.1.1]:9107$0",
           Family::TransportError);
  CHECK(e.host == "127.0.1.1");
  CHECK(e.err == ECONNREFUSED);
  must("[E1203 06:19:14.608706481 ProcessGroupGloo.cpp:67] Gloo connectFullMesh failed with [/__w/pytorch/pytorch/"
       "third_party/gloo/gloo/transport/tcp/pair.cc:152] timed out connecting: SO_ERROR: Connection refused, "
       "remote=[127.0.1.1]:9107$0",
       Family::TransportError);
  // NCCL's own connect without a route is NCCL's, not the store's
  must("node1:1234:1240 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<43521> failed : "
       "No route to host",
       Family::TransportError);
  for (Family f : {Family::TransportError, Family::NcclNoSocketInterface, Family::ErrorLine})
    CHECK(is_other_error(f));
  // Issue 29: a bare "No route to host" is a connect's failure (connect_timeout reads it).
  CHECK_FALSE(is_other_error(Family::NoRouteToHost));
  CHECK_FALSE(is_other_error(Family::ConnectionReset));
}

TEST_CASE("no route to host: bare, and inside a c10d connect line", "[pasted]") {
  auto e = must("RuntimeError: No route to host", Family::NoRouteToHost);  // PyTorch-BigGraph#99
  CHECK(e.err == EHOSTUNREACH);
  // The c10d wording stays a connect failure.
  e = must(
      "[W socket.cpp:558] [c10d] The client socket has failed to connect to [fake-host]:1234 "
      "(errno: 113 - "
      "No route to host).",
      Family::ConnectFailed);
  CHECK(e.err == 113);
}

TEST_CASE("error lines: exceptions and tracebacks that no family matches", "[pasted]") {
  must("Traceback (most recent call last):", Family::ErrorLine);
  must("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:", Family::ErrorLine);
  must("ncclInternalError: Internal check failed.", Family::ErrorLine);
  must("  E       RuntimeError: something else", Family::ErrorLine);  // pytest's E column
  must("(LLMEngine pid=1, ip=10.0.0.1) ncclInternalError: Internal check failed.",
       Family::ErrorLine);
  must("2022-05-10 05:38:33,261 torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
       Family::ErrorLine);  // after an ISO stamp
  must("node:1:2 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]",
       Family::ErrorLine);
  // A known family wins; the error line is only noted.
  auto e = must("RuntimeError: Socket Timeout", Family::SocketTimeout);
  CHECK(e.has(Family::ErrorLine));
  // Not errors.
  for (const char* line :
       {"Exception raised from recvBytes at ../torch/csrc/distributed/c10d/Utils.hpp:604 (most",
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f in libc10.so)",
        "ERROR:torch.distributed.elastic.multiprocessing.errors.error_handler:{",
        "  warnings.warn(f\"Failed to load image Python extension: {e}\")"}) {
    INFO(line);
    CHECK_FALSE(classify_line(line).has_value());
  }
}

TEST_CASE("pasted: ANSI colours, their remnants, CRLF", "[pasted]") {
  auto e = must(std::string("\x1b[31m") + kTimeout + "\x1b[0m", Family::ClientConnectTimeout);
  CHECK(e.text.find('\x1b') == std::string::npos);
  CHECK(e.host == "127.0.0.1");
  CHECK(e.port == 48391);
  e = must(std::string("[0m ") + kTimeout, Family::ClientConnectTimeout);  // ESC lost in the paste
  CHECK(e.text.find("[0m") == std::string::npos);
  e = must(std::string(kTimeout) + "\r", Family::ClientConnectTimeout);
  CHECK(e.text.back() == '.');
  e = must("\x1b[1;31m[rank3]:RuntimeError: Socket Timeout\x1b[0m", Family::SocketTimeout);
  CHECK(e.rank == 3);  // the prefix is found once the colour is gone
}

TEST_CASE("pasted: hard wraps with runs of spaces, inside a word and between words", "[pasted]") {
  auto e = must(
      "[E socket.cpp:793] [c10d] The client socket has timed out after 1800s while trying to con"
      "                    nect to (127.0.0.1, 48391).",
      Family::ClientConnectTimeout);
  CHECK(e.port == 48391);
  e = must(
      "RuntimeError: The server socket has failed to listen on any local network address. The "
      "server "
      "socket has failed to                   bind to [::]:29500 (errno: 98 - Address already in "
      "use).",
      Family::ListenFailed);  // Tune-A-Video#90, wrapped between words: read as the listen failure
  CHECK(e.err == EADDRINUSE);
  e = must(
      "RuntimeError: Timed out initializing process group in store based barr        ier on rank: "
      "2, for "
      "key: store_based_barrier_key:1 (world_size=2, worker_count=4, timeout=0:30:00)",
      Family::StoreBarrierTimeout);
  CHECK(e.joined == 4);
  CHECK(e.expected == 2);
}

TEST_CASE("pasted: stamps and merged-output prefixes", "[pasted]") {
  auto e = must(std::string("[node007:5] ") + kTimeout, Family::ClientConnectTimeout);
  CHECK(e.rank == 5);
  e = must(std::string("[node007:5]: RuntimeError: Socket Timeout"), Family::SocketTimeout);
  CHECK(e.rank == 5);
  e = must(
      "trainer/0 [1]:[W socket.cpp:558] [c10d] The client socket has failed to connect to "
      "[::ffff:0.0.0.5]:40323 "
      "(errno: 110 - Connection timed out).",
      Family::ConnectFailed);  // GRL-Image-Restoration#27 (torchx)
  CHECK(e.rank == 1);
  CHECK(e.err == ETIMEDOUT);
  e = must("[pod/train-worker-1/pytorch] [rank2]:RuntimeError: Socket Timeout",
           Family::SocketTimeout);
  e = must(
      "2022-05-10 05:38:33 | INFO | torch.distributed.distributed_c10d | Waiting in store based "
      "barrier to "
      "initialize process group for rank: 2, key: store_based_barrier_key:1 (world_size=2, "
      "worker_count=3, "
      "timeout=0:30:00)",
      Family::StoreBarrierTimeout);  // metaseq#52
  CHECK(e.rank == 2);
}

TEST_CASE("pasted: JSON lines of a log collector", "[pasted]") {
  auto e = must(
      "{\"log\":\"[E socket.cpp:793] [c10d] The client socket has timed out after 1800s while "
      "trying to "
      "connect to (127.0.0.1, "
      "48391).\\n\",\"stream\":\"stderr\",\"time\":\"2024-01-01T00:00:00Z\"}",
      Family::ClientConnectTimeout);  // docker json-file / fluent-bit
  CHECK(e.host == "127.0.0.1");
  CHECK(e.port == 48391);
  CHECK(e.text.find("\\n") == std::string::npos);
  e = must(
      "{\"time\": \"2024-01-01T00:00:00Z\", \"message\": \"[rank1]:RuntimeError: \\\"Socket "
      "Timeout\\\"\"}",
      Family::SocketTimeout);
  CHECK(e.rank == 1);
  e = must(
      "{\"msg\":\"torch.distributed.DistNetworkError: Connection reset by "
      "peer\",\"level\":\"error\"}",
      Family::ConnectionReset);  // openvla#61 through a collector
  CHECK(e.err == ECONNRESET);
}

TEST_CASE("clients joined: the DistStoreError cut short in a title", "[pasted]") {
  // Ascend/sglang#708: read as healthy before issue 13 (no "Timed out after ... waiting for").
  auto e = must("error: \"torch.distributed.DistStoreError: 16/32 clients joined",
                Family::ClientsJoinTimeout);
  CHECK(e.joined == 16);
  CHECK(e.expected == 32);
  e = must(
      "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/3 "
      "clients joined.",
      Family::ClientsJoinTimeout);  // Visual-RFT#123
  CHECK(e.joined == 1);
  CHECK(e.expected == 3);
  CHECK(e.timeout_ms == 901000);
}
