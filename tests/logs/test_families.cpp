// Every family, matched from exact strings as PyTorch printed them (docs/c10d-notes.md,
// section 6: the message families), for the PyTorch versions they were seen in (1.x through 2.9);
// and the family table's own example lines (analyzer/logs/families.cpp), each in its row.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <string>
#include <string_view>

#include "logs/families.h"
#include "logs/log_scan.h"

using rdzv::logs::classify_line;
using rdzv::logs::Family;
using rdzv::logs::detail::family_table;
using rdzv::logs::family_name;
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

}  // namespace

TEST_CASE("gai_error: 1.13 to 2.9 variants", "[families]") {
  auto e = must("[W socket.cpp:601] [c10d] The IPv6 network addresses of (node7, 29500) cannot be "
                "retrieved (gai error: -3 - Temporary failure in name resolution).",
                Family::GaiError);  // ~2.1-2.3
  CHECK(e.gai_code == -3);
  CHECK(e.host == "node7");
  CHECK(e.port == 29500);
  e = must("[W1129 10:00:00.123456 123 socket.cpp:752] [c10d] The IPv4 network addresses of "
           "(bogus-host, 29400) cannot be retrieved (gai error: -2 - Name or service not known).",
           Family::GaiError);  // ~2.5
  CHECK(e.gai_code == -2);
  CHECK(e.host == "bogus-host");
  CHECK(e.port == 29400);
  e = must("[rank3]:[W1129 10:00:00.123456 123 socket.cpp:767] [c10d] The IPv6 network addresses of "
           "(master.example, 29500) cannot be retrieved (gai error: -2 - Name or service not known).",
           Family::GaiError);  // ~2.8/2.9
  CHECK(e.rank == 3);
  CHECK(e.text.rfind("[W1129", 0) == 0);  // the rank prefix is not part of the text
  e = must("[W socket.cpp:558] [c10d] The network addresses of (h1, 1234) cannot be retrieved (gai "
           "error: -2 - Name or service not known).",
           Family::GaiError);  // 1.13: no IPv6/IPv4 word
  CHECK(e.gai_code == -2);
}

TEST_CASE("host_not_found: old torch; the 2.6+ reverse lookup is a family of its own", "[families]") {
  must("ValueError: host not found: Name or service not known", Family::HostNotFound);
  must("ValueError: host not found: Temporary failure in name resolution", Family::HostNotFound);  // 1.9
  auto e = must("Error: Rank -1 received an Exception. Detailed message: host not found: Name or "
                "service not known",
                Family::HostNotFound);  // torchelastic 0.1/0.2
  CHECK(e.rank == -1);
  e = must("[W1129 10:00:00.123456000 4567 socket.cpp:204] [c10d] The hostname of the client socket "
           "cannot be retrieved. err=-3",
           Family::ReverseLookupFailed);  // 2.6+, also seen on 2.13 in a network namespace without DNS
  CHECK(e.gai_code == -3);
}

TEST_CASE("connect_validate: 2.5+ retrying and timed out", "[families]") {
  auto e = must("[W1129 10:00:00.123456 123 TCPStore.cpp:347] [c10d] TCP client failed to "
                "connect/validate to host node0:29500 - retrying (try=6, timeout=1800000ms, "
                "delay=5241ms): Connection reset by peer",
                Family::ConnectValidate);
  CHECK(e.timeout_ms == 1800000);
  CHECK(e.err == ECONNRESET);
  CHECK(e.host == "node0");
  CHECK(e.port == 29500);
  CHECK(e.reason == "Connection reset by peer");
  CHECK(e.has(Family::ConnectionReset));
  e = must("[E1129 10:00:00.123456 123 TCPStore.cpp:318] [c10d] TCP client failed to "
           "connect/validate to host 10.0.0.1:29500 - timed out (try=1, timeout=600000ms): The "
           "client socket has timed out after 600000ms while trying to connect to (10.0.0.1, 29500).",
           Family::ConnectValidate);
  CHECK(e.timeout_ms == 600000);
  CHECK(e.has(Family::ClientConnectTimeout));
  CHECK(e.host == "10.0.0.1");
}

TEST_CASE("client_connect_timeout: s (<=2.4) and ms (>=2.5)", "[families]") {
  auto e = must("[E socket.cpp:793] [c10d] The client socket has timed out after 1800s while trying "
                "to connect to (127.0.0.1, 29500).",
                Family::ClientConnectTimeout);  // 1.11-1.13
  CHECK(e.timeout_ms == 1800000);
  CHECK(e.host == "127.0.0.1");
  CHECK(e.port == 29500);
  e = must("TimeoutError: The client socket has timed out after 1800s while trying to connect to "
           "(127.0.0.1, 29500)",
           Family::ClientConnectTimeout);
  CHECK(e.timeout_ms == 1800000);
  e = must("torch.distributed.DistNetworkError: The client socket has timed out after 600s while "
           "trying to connect to (10.1.2.3, 29500).",
           Family::ClientConnectTimeout);
  CHECK(e.timeout_ms == 600000);
  e = must("[E1129 10:00:00.123456 123 socket.cpp:957] [c10d] The client socket has timed out after "
           "900s while trying to connect to (10.1.2.3, 29500).",
           Family::ClientConnectTimeout);  // 2.4.0
  CHECK(e.timeout_ms == 900000);
  e = must("[E1129 10:00:00.123456 123 socket.cpp:1023] [c10d] The client socket has timed out after "
           "600000ms while trying to connect to (10.1.2.3, 29500).",
           Family::ClientConnectTimeout);  // 2.6/2.7
  CHECK(e.timeout_ms == 600000);
  e = must("[E socket.cpp:793] [c10d] The client socket has timed out after 60s while trying to "
           "connect to (IP1, 2222).",
           Family::ClientConnectTimeout);  // 1.11/1.12 elastic store
  CHECK(e.timeout_ms == 60000);
  CHECK(e.port == 2222);
}

TEST_CASE("connect_failed: errno variants and any network address", "[families]") {
  auto e = must("[W socket.cpp:558] [c10d] The client socket has failed to connect to "
                "[::ffff:0.0.0.5]:40323 (errno: 110 - Connection timed out).",
                Family::ConnectFailed);  // 1.12/1.13
  CHECK(e.err == 110);
  CHECK(e.host == "::ffff:0.0.0.5");
  CHECK(e.port == 40323);
  CHECK(e.has(Family::ConnectionTimedOutErrno));
  e = must("[E socket.cpp:610] [c10d] The client socket has failed to connect to any network address "
           "of (05, 40323).",
           Family::ConnectFailed);
  CHECK(e.host == "05");
  CHECK(e.port == 40323);
  e = must("RuntimeError: The client socket has failed to connect to any network address of "
           "(10.0.0.9, 48247). The client socket has failed to connect to xxx:48247 (errno: 110 - "
           "Connection timed out).",
           Family::ConnectFailed);  // 2.1/2.2
  CHECK(e.err == ETIMEDOUT);
  CHECK(e.port == 48247);
  e = must("[W socket.cpp:663] [c10d] The client socket has failed to connect to [::ffff:10.2.3.4]:29500 "
           "(errno: 110 - Connection timed out).",
           Family::ConnectFailed);
  CHECK(e.host == "::ffff:10.2.3.4");
  e = must("[W socket.cpp:558] [c10d] The client socket has failed to connect to [fake-host]:1234 "
           "(errno: 113 - No route to host).",
           Family::ConnectFailed);
  CHECK(e.err == 113);
  CHECK(e.host == "fake-host");
  e = must("[W socket.cpp:558] [c10d] The client socket has failed to connect to [localhost]:29500 "
           "(errno: 99 - Cannot assign requested address).",
           Family::ConnectFailed);
  CHECK(e.err == 99);
  e = must("[W1129 10:00:00.123456 123 socket.cpp:767] [c10d] The client socket has failed to connect "
           "to [badhost]:29500 (errno: 22 - Invalid argument).",
           Family::ConnectFailed);  // 2.8/2.9
  CHECK(e.err == 22);
  e = must("The client socket has failed to connect to [WIN-HOST]:29500 (system error: 10049 - The "
           "requested address is not valid in its context.).",
           Family::ConnectFailed);  // Windows
  CHECK(e.err == EADDRNOTAVAIL);
}

TEST_CASE("not_listening_yet: INFO and TRACE forms", "[families]") {
  auto e = must("[I socket.cpp:717] [c10d] No socket on (node0, 29500) is listening yet, will retry.",
                Family::NotListeningYet);
  CHECK(e.host == "node0");
  CHECK(e.port == 29500);
  e = must("[T socket.cpp:580] [c10d] The server socket on [node0]:29500 is not yet listening (errno: "
           "111 - Connection refused), will retry.",
           Family::NotListeningYet);
  CHECK(e.err == ECONNREFUSED);
  CHECK(e.port == 29500);
}

TEST_CASE("server_timed_out_retry: 2.6", "[families]") {
  auto e = must("[W1129 10:00:00.123456 123 socket.cpp:933] [c10d] The server socket on "
                "[::ffff:10.0.0.2]:29500 has timed out, will retry.",
                Family::ServerTimedOutRetry);
  CHECK(e.host == "::ffff:10.0.0.2");
  CHECK(e.port == 29500);
}

TEST_CASE("send_recv_failed: sendBytes, recvValue, recvVector, recvValueWithTimeout", "[families]") {
  auto e = must("[rank5]:[W1129 10:00:00.123456 123 TCPStore.cpp:106] [c10d] sendBytes failed on "
                "SocketImpl(fd=81, addr=[node3]:50612, remote=[node0]:29500): Broken pipe",
                Family::SendRecvFailed);  // 2.7
  CHECK(e.rank == 5);
  CHECK(e.err == EPIPE);
  CHECK(e.reason == "Broken pipe");
  CHECK(e.host == "node0");
  CHECK(e.port == 29500);
  CHECK(e.has(Family::BrokenPipe));
  e = must("[rank2]:[W1129 10:00:00.123456 123 TCPStore.cpp:125] [c10d] recvValue failed on "
           "SocketImpl(fd=76, addr=[localhost]:60950, remote=[localhost]:29500): Connection reset by peer",
           Family::SendRecvFailed);  // 2.6/2.7
  CHECK(e.err == ECONNRESET);
  CHECK(e.host == "localhost");
  e = must("[rank2]:[W1129 10:00:00.123456 123 TCPStore.cpp:125] [c10d] recvValue failed on "
           "SocketImpl(fd=76, addr=[localhost]:60950, remote=[localhost]:29500): failed to recv, got 0 bytes",
           Family::SendRecvFailed);
  CHECK(e.has(Family::RecvZero));
  CHECK_FALSE(e.err.has_value());
  must("[W1129 10:00:00.123456 1 TCPStore.cpp:130] [c10d] recvVector failed on SocketImpl(fd=7, "
       "addr=[a]:1, remote=[b]:29500): Connection reset by peer",
       Family::SendRecvFailed);
  must("[W1129 10:00:00.123456 1 TCPStore.cpp:140] [c10d] recvValueWithTimeout failed on "
       "SocketImpl(fd=7, addr=[a]:1, remote=[b]:29500): Socket Timeout",
       Family::SendRecvFailed);
}

TEST_CASE("broken_pipe: RuntimeError and the NCCL heartbeat", "[families]") {
  auto e = must("RuntimeError: Broken pipe", Family::BrokenPipe);  // 1.11/1.12 _call_store
  CHECK(e.err == EPIPE);
  e = must("[rank1]:[W1129 10:00:00.123456 123 ProcessGroupNCCL.cpp:1662] [PG ID 0 PG GUID "
           "0(default_pg) Rank 1] Failed to check the \"should dump\" flag on TCPStore, (maybe "
           "TCPStore server has shut down too early), with error: Broken pipe",
           Family::BrokenPipe);  // 2.7
  CHECK(e.rank == 1);
  CHECK(e.reason == "Broken pipe");
  e = must("[W1129 10:00:00.123456 123 ProcessGroupNCCL.cpp:1771] [PG ID 0 PG GUID 0(default_pg) Rank "
           "6] Failed to check the \"should dump\" flag on TCPStore, (maybe TCPStore server has shut "
           "down too early), with error: Broken pipe",
           Family::BrokenPipe);  // 2.8, no prefix: rank from the text
  CHECK(e.rank == 6);
}

TEST_CASE("connection_reset: RuntimeError and DistNetworkError", "[families]") {
  auto e = must("RuntimeError: Connection reset by peer", Family::ConnectionReset);  // 2.0.1
  CHECK(e.err == ECONNRESET);
  must("torch.distributed.DistNetworkError: Connection reset by peer", Family::ConnectionReset);  // 2.2
}

TEST_CASE("connection_timed_out_errno: RuntimeError", "[families]") {
  auto e = must("RuntimeError: Connection timed out", Family::ConnectionTimedOutErrno);  // 1.4-1.6
  CHECK(e.err == ETIMEDOUT);
  CHECK_FALSE(e.timeout_ms.has_value());
}

TEST_CASE("recv_zero: 2.6/2.7 and 2.9 wording", "[families]") {
  auto e = must("[rank0]:[W1129 10:00:00.123456 123 ProcessGroupNCCL.cpp:1659] [PG ID 0 PG GUID "
                "0(default_pg) Rank 0] Failed to check the \"should dump\" flag on TCPStore, (maybe "
                "TCPStore server has shut down too early), with error: failed to recv, got 0 bytes",
                Family::RecvZero);
  CHECK(e.rank == 0);
  CHECK(e.reason == "failed to recv, got 0 bytes");
  e = must("[rank3]:[W1129 10:00:00.123456 123 ProcessGroupNCCL.cpp:1826] [PG ID 0 PG GUID "
           "0(default_pg) Rank 3] Failed to check the \"should dump\" flag on TCPStore, (maybe "
           "TCPStore server has shut down too early), with error: Failed to recv, got 0 bytes. "
           "Connection was likely closed. Did the remote server shutdown or crash?",
           Family::RecvZero);  // 2.9
  CHECK(e.rank == 3);
}

TEST_CASE("socket_timeout: 1.x RuntimeError and 2.1-2.4 DistStoreError", "[families]") {
  must("RuntimeError: Socket Timeout", Family::SocketTimeout);
  must("torch.distributed.DistStoreError: Socket Timeout", Family::SocketTimeout);
}

TEST_CASE("wait_timeout: 2.5+", "[families]") {
  auto e = must("torch.distributed.DistStoreError: wait timeout after 600000ms, keys: "
                "/default_pg/0//cuda//0",
                Family::WaitTimeout);
  CHECK(e.timeout_ms == 600000);
}

TEST_CASE("wait_for_input_timeout: 2.5-2.7", "[families]") {
  auto e = must("[rank4]:[W1129 10:00:00.123456 123 socket.cpp:462] [c10d] waitForInput: poll for "
                "socket SocketImpl(fd=12, addr=[node4]:41234, remote=[node0]:29500) returned 0, "
                "likely a timeout",
                Family::WaitForInputTimeout);
  CHECK(e.rank == 4);
  CHECK(e.host == "node0");
  CHECK_FALSE(e.timeout_ms.has_value());
  e = must("[rank4]:[W1129 10:00:00.123456 123 socket.cpp:487] [c10d] waitForInput: socket "
           "SocketImpl(fd=12, addr=[node4]:41234, remote=[node0]:29500) timed out after 600000ms",
           Family::WaitForInputTimeout);
  CHECK(e.timeout_ms == 600000);
  e = must("[rank4]:[W1129 10:00:00.123456 123 socket.cpp:489] [c10d] waitForInput: socket "
           "SocketImpl(fd=12, addr=[node4]:41234, remote=[node0]:29500) timed out after 1800000ms",
           Family::WaitForInputTimeout);
  CHECK(e.timeout_ms == 1800000);
}

TEST_CASE("clients_join_timeout: 2.2+", "[families]") {
  auto e = must("torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. "
                "1/3 clients joined.",
                Family::ClientsJoinTimeout);
  CHECK(e.timeout_ms == 1801000);
  CHECK(e.joined == 1);
  CHECK(e.expected == 3);
}

TEST_CASE("store_barrier_timeout: 1.8-1.13", "[families]") {
  auto e = must("Waiting in store based barrier to initialize process group for rank: 2, key: "
                "store_based_barrier_key:1 (world_size=4, worker_count=3, timeout=0:30:00)",
                Family::StoreBarrierTimeout);
  CHECK(e.rank == 2);
  CHECK(e.timeout_ms == 1800000);
  CHECK(e.joined == 3);
  CHECK(e.expected == 4);
  e = must("RuntimeError: Timed out initializing process group in store based barrier on rank: 1, for "
           "key: store_based_barrier_key:1 (world_size=4, worker_count=8, timeout=0:30:00)",
           Family::StoreBarrierTimeout);
  CHECK(e.rank == 1);
  CHECK(e.joined == 8);
}

TEST_CASE("bind_failed: legacy socket, old RuntimeError, Windows", "[families]") {
  auto e = must("[W socket.cpp:401] [c10d] The server socket has failed to bind to [::]:29500 (errno: "
                "98 - Address already in use).",
                Family::BindFailed);  // 1.12/1.13
  CHECK(e.host == "::");
  CHECK(e.port == 29500);
  CHECK(e.err == 98);
  e = must("[W socket.cpp:426] [c10d] The server socket has failed to bind to 0.0.0.0:29500 (errno: 98 "
           "- Address already in use).",
           Family::BindFailed);  // 2.0-2.1
  CHECK(e.host == "0.0.0.0");
  CHECK(e.port == 29500);
  e = must("RuntimeError: Address already in use", Family::BindFailed);  // 1.4-1.10
  CHECK(e.err == EADDRINUSE);
  must("RuntimeError: Address already in use at /pytorch/torch/lib/THD/process_group/General.cpp:20",
       Family::BindFailed);  // 0.4
  e = must("torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
           "network address. The server socket has failed to bind to [::]:29500 (errno: 98 - Address "
           "already in use). The server socket has failed to bind to ?UNKNOWN? (errno: 98 - Address "
           "already in use).",
           Family::BindFailed);  // 2.x
  CHECK(e.has(Family::ListenFailed));
  CHECK(e.port == 29500);
  e = must("The server socket has failed to bind to [WIN]:29500 (system error: 10048 - Only one usage "
           "of each socket address is normally permitted.).",
           Family::BindFailed);
  CHECK(e.err == EADDRINUSE);
}

TEST_CASE("listen_failed: legacy and libuv", "[families]") {
  must("[E socket.cpp:435] [c10d] The server socket has failed to listen on any local network address.",
       Family::ListenFailed);
  auto e = must("[W socket.cpp:401] [c10d] The server socket has failed to listen on [::]:29500 "
                "(errno: 98 - Address already in use).",
                Family::ListenFailed);  // pytorch#85604
  CHECK(e.err == 98);
  CHECK(e.port == 29500);
  e = must("torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
           "network address. port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address "
           "already in use",
           Family::ListenFailed);  // >=2.4 libuv
  CHECK(e.err == 98);
  CHECK(e.port == 29500);
}

TEST_CASE("rendezvous_closed: etcd, c10d and the shutdown warning", "[families]") {
  must("\"message\": \"RendezvousClosedError: \"", Family::RendezvousClosed);  // 1.10
  must("WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node 'node1_1234_0' has "
       "failed to shutdown the rendezvous '5c6a0ec7' due to an error of type RendezvousConnectionError.",
       Family::RendezvousClosed);  // 1.12.1
  must("\"message\": \"RendezvousConnectionError: The connection to the C10d store has failed. See inner "
       "exception for details.\"",
       Family::RendezvousClosed);
}

TEST_CASE("connect_timeout_legacy: 1.5/1.6 and 1.10", "[families]") {
  auto e = must("RuntimeError: connect() timed out.", Family::ConnectTimeoutLegacy);
  CHECK_FALSE(e.timeout_ms.has_value());
  e = must("RuntimeError: connect() timed out. Original timeout was 60000 ms.",
           Family::ConnectTimeoutLegacy);
  CHECK(e.timeout_ms == 60000);
}

TEST_CASE("nccl_unique_id_store_error: 1.12 and 2.0/2.1", "[families]") {
  auto e = must("[3] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d "
                "key-value store by key '0', but store->get('0') got error: Socket Timeout",
                Family::NcclUniqueIdStoreError);
  CHECK(e.rank == 3);
  CHECK(e.reason == "Socket Timeout");
  CHECK(e.has(Family::SocketTimeout));
  e = must("RuntimeError: [1] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via "
           "c10d key-value store by key '0', but store->get('0') got error: Timeout waiting for key: "
           "default_pg/0/0 after 1800000 ms",
           Family::NcclUniqueIdStoreError);
  CHECK(e.rank == 1);
  CHECK(e.timeout_ms == 1800000);
}

TEST_CASE("watchdog_timeout: 1.10 and 2.x", "[families]") {
  auto e = must("[E ProcessGroupNCCL.cpp:567] [Rank 3] Watchdog caught collective operation timeout: "
                "WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=60000) ran for 67438 milliseconds before timing out.",
                Family::WatchdogTimeout);
  CHECK(e.rank == 3);
  CHECK(e.timeout_ms == 60000);
  e = must("[rank7]:[E1129 10:00:00.123456 123 ProcessGroupNCCL.cpp:616] [Rank 7] Watchdog caught "
           "collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
           "Timeout(ms)=600000) ran for 600023 milliseconds before timing out.",
           Family::WatchdogTimeout);
  CHECK(e.rank == 7);
  CHECK(e.timeout_ms == 600000);
}

TEST_CASE("ordinary lines match no family", "[families]") {
  for (const char* line : {
           "[rank0]:[2026-11-29 23:19:18,123] INFO train.py:12 step 10 loss=2.3",
           "[default0]:INFO:torch.distributed.elastic.agent.server.api:[default] Rendezvous "
           "complete for workers.",
           "Exception raised from recvBytes at ../torch/csrc/distributed/c10d/Utils.hpp:604 (most "
           "recent call first):",
           "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f735df914d7 "
           "in libc10.so)",
           "/usr/lib/python3/dist-packages/torch/cuda/__init__.py:83: UserWarning: CUDA "
           "initialization: no GPU",
           "  File \"/usr/lib/python3/dist-packages/torch/distributed/rendezvous.py\", line 113, "
           "in _call_store",
           "node1:123:123 [0] NCCL INFO Channel 00/32 : 0 1 2 3",
           "",
       }) {
    INFO(line);
    CHECK_FALSE(classify_line(line).has_value());
  }
}

TEST_CASE("launch_setting: torchrun's launch configs block, 2.13 (glog) and 1.x (bare)", "[families]") {
  auto e = must("I1202 08:07:31.995000 28075 torch/distributed/launcher/api.py:254]   rdzv_endpoint            : "
                "127.0.0.1:29633",
                Family::LaunchSetting);  // 2.13, as run here with LOGLEVEL=INFO
  CHECK(e.setting == "rdzv_endpoint");
  CHECK(e.setting_value == "127.0.0.1:29633");
  e = must("I1202 08:07:31.995000 28075 torch/distributed/launcher/api.py:254]   min_nodes                : 2",
           Family::LaunchSetting);
  CHECK(e.setting == "min_nodes");
  CHECK(e.setting_value == "2");
  e = must("  run_id           : 4f5a1c", Family::LaunchSetting);  // 1.x: the block's lines carry no prefix
  CHECK(e.setting == "run_id");
  CHECK(e.setting_value == "4f5a1c");
  e = must("[node1:0]:  rdzv_backend     : c10d", Family::LaunchSetting);
  CHECK(e.setting_value == "c10d");
  // torchelastic's log directory names the run id (issue 29: `none`, the default every job shares)
  e = must("INFO:torch.distributed.elastic.agent.server.local_elastic_agent:log directory set to: "
           "/tmp/torchelastic_7k2nfb3h/none_ukbz8b4e",
           Family::LaunchSetting);
  CHECK(e.setting == "log_dir_run_id");
  CHECK(e.setting_value == "none");
  e = must("I1203 06:13:28.300000 32112 torch/distributed/elastic/agent/server/local_elastic_agent.py:296] log "
           "directory set to: /tmp/torchelastic_gp9rzq0_/job_7_a1b2c3d4",
           Family::LaunchSetting);
  CHECK(e.setting_value == "job_7");
  for (const char* line : {
           "run_id = os.environ['RUN_ID']",                 // source code, not the block
           "  run_id: job7",                                // no padding before the colon
           "  max_nodes                : 2 nodes at most",  // a value of several words
           "  log_dir                  : /tmp/torchelastic_q_epx24x",  // a setting not compared
       }) {
    INFO(line);
    auto ev = classify_line(line);
    CHECK((!ev || ev->family != Family::LaunchSetting));
  }
}

TEST_CASE("the family table: every row's example lands in its row", "[families][table]") {
  for (const auto& row : family_table()) {
    INFO(row.name << ": " << row.example);
    auto ev = classify_line(row.example);
    REQUIRE(ev.has_value());
    INFO("got " << family_name(ev->family));
    CHECK(ev->family == row.family);
  }
}

TEST_CASE("the family table: every row's example holds one of its anchors", "[families][table]") {
  // The prefilter reads only the lines around an anchor: a row whose lines hold none of its
  // anchors would never be matched in a file.
  for (const auto& row : family_table()) {
    INFO(row.name << ": " << row.example);
    const bool held = std::any_of(row.anchors.begin(), row.anchors.end(), [&](std::string_view a) {
      return !a.empty() && row.example.find(a) != std::string_view::npos;
    });
    CHECK(held);
  }
}

TEST_CASE("worker_failure: torchrun's ChildFailedError summary, field by field (2.13; 1.x the same block)",
          "[families]") {
  // As torchrun 2.13 printed it in a real run (e2e torchrun worker_crashed).
  auto e = must("Root Cause (first observed failure):", Family::WorkerFailure);
  CHECK(e.setting == "root_cause");
  e = must("  rank      : 2 (local_rank: 2)", Family::WorkerFailure);
  CHECK(e.setting == "rank");
  CHECK(e.setting_value == "2 (local_rank: 2)");
  e = must("  exitcode  : -15 (pid: 23294)  (SIGTERM)", Family::WorkerFailure);
  CHECK(e.setting == "exitcode");
  CHECK(e.setting_value == "-15 (pid: 23294)  (SIGTERM)");
  e = must("  exitcode  : 1 (pid: 23296) ", Family::WorkerFailure);
  CHECK(e.setting_value == "1 (pid: 23296)");
  e = must("  error_file: <N/A>", Family::WorkerFailure);
  CHECK(e.setting == "error_file");
  e = must("  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
           Family::WorkerFailure);
  CHECK(e.setting == "traceback");
  e = must("  traceback : Signal 15 (SIGTERM) received by PID 23294", Family::WorkerFailure);
  CHECK(e.setting_value == "Signal 15 (SIGTERM) received by PID 23294");
  e = must("E1203 02:59:03.985000 23271 torch/distributed/elastic/multiprocessing/api.py:1002] failed "
           "(exitcode: 1) local_rank: 2 (pid: 23296) of binary: /usr/bin/python3",
           Family::WorkerFailure);
  CHECK(e.setting == "first_failure");
  CHECK(e.setting_value == "exitcode: 1) local_rank: 2 (pid: 23296) of binary: /usr/bin/python3");
  e = must("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 4242) "
           "of binary: /usr/bin/python3", Family::WorkerFailure);  // 1.x
  CHECK(e.setting == "first_failure");
  // Look-alikes: a rank or an exit code in other words is no field of the summary.
  for (const char* line : {"rank: 2 joined", "  rank      : two", "exitcode 1", "traceback: see above",
                           "the traceback follows"}) {
    INFO(line);
    const auto ev = classify_line(line);
    CHECK((!ev || ev->family != Family::WorkerFailure));
  }
}

TEST_CASE("transport_error: gloo's pair found its connection reset or closed by the rank at its other end",
          "[families]") {
  // 1.13 and 2.13 when a peer rank was SIGKILLed after init_process_group (e2e rank_killed).
  must("RuntimeError: [./gloo/transport/tcp/pair.cc:589] Read error [127.0.0.1]:17630: Connection reset by peer",
       Family::TransportError);
  must("RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:3493",
       Family::TransportError);
  must("RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed "
       "by peer [127.0.0.1]:57256. This is typically caused by a remote worker crashing.",
       Family::TransportError);
  // The store's own reset stays a store error.
  must("torch.distributed.DistNetworkError: Connection reset by peer", Family::ConnectionReset);
}

TEST_CASE("process_died: the shell, the OOM killer, torch.multiprocessing, the old launcher (issue 29)", "[families]") {
  auto e = must("./plain.sh: line 8: 11641 Killed                  RANK=1 python3 rank.py", Family::ProcessDied);
  CHECK(e.setting == "signal");
  CHECK(e.setting_value == "SIGKILL");
  CHECK(must("Killed", Family::ProcessDied).setting_value == "SIGKILL");
  must("[1]+  Killed                  python train.py", Family::ProcessDied);
  must("[12345.678] Out of memory: Killed process 4242 (python) total-vm:1000kB", Family::ProcessDied);
  e = must("torch.multiprocessing.spawn.ProcessExitedException: process 3 terminated with signal SIGSEGV",
           Family::ProcessDied);
  CHECK(e.setting_value == "SIGSEGV");
  CHECK(e.died_process == 3);
  e = must("torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with exit code 1",
           Family::ProcessDied);
  CHECK(e.setting == "exit");
  CHECK(e.setting_value == "1");
  e = must("-- Process 2 terminated with the following error:", Family::ProcessDied);
  CHECK(e.setting_value == "exception");
  CHECK(e.died_process == 2);
  e = must("subprocess.CalledProcessError: Command '['/usr/bin/python', '-u', 'train.py', '--local_rank=1']' died "
           "with <Signals.SIGKILL: 9>.",
           Family::ProcessDied);
  CHECK(e.setting_value == "SIGKILL");
  CHECK(e.died_process == 1);
  e = must("subprocess.CalledProcessError: Command '['/usr/bin/python', '-u', 'train.py', '--local_rank=3']' returned "
           "non-zero exit status 1.",
           Family::ProcessDied);
  CHECK(e.setting_value == "1");
  CHECK(e.died_process == 3);
  e = must("[2023-11-13 16:59:55,650] [ERROR] [launch.py:320:sigkill_handler] ['/opt/conda/bin/python', '-u', "
           "'train.py', '--local_rank=1'] exits with return code = -9",
           Family::ProcessDied);
  CHECK(e.setting == "exit");
  CHECK(e.setting_value == "-9");  // the model names the signal
  CHECK(e.died_process == 1);
  e = must("ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
           Family::ProcessDied);
  CHECK(e.setting_value == "SIGKILL");
  CHECK(e.reason.find("memory") != std::string::npos);
  for (const char* line : {"the job was Killed by the user at step 10", "Killed: 3 of 10 tasks skipped",
                           "[launch.py:320:sigkill_handler] cmd exits with return code = 0",
                           "the process terminated with success", "returned non-zero exit status 1."}) {
    INFO(line);
    auto ev = classify_line(line);
    CHECK((!ev || ev->family != Family::ProcessDied));
  }
}

TEST_CASE("foreign_store_peer: TCPStore's ping and VALIDATE checks (issue 29)", "[families]") {
  auto e = must("[W1203 10:09:27.955431535 TCPStore.cpp:340] [c10d] TCP client failed to connect/validate to host "
                "127.0.0.1:29661 - retrying (try=0, timeout=8000ms, delay=253ms): Ping failed, invalid value "
                "returned from server. Expected: 1769, Got: 1347703880",
                Family::ForeignStorePeer);
  CHECK(e.setting_value == "text");  // "HTTP"
  CHECK(e.has(Family::ConnectValidate));
  CHECK(must("DistNetworkError: Ping failed, invalid value returned from server. Expected: 17, Got: 0",
             Family::ForeignStorePeer)
            .setting_value == "binary");
  must("Miscellaneous client without VALIDATE query is detected", Family::ForeignStorePeer);
  must("Miscellaneous client with incorrect VALIDATE query is detected", Family::ForeignStorePeer);
}

TEST_CASE("launcher_env_missing and rank_out_of_range (issue 29)", "[families]") {
  auto e = must("ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable "
                "WORLD_SIZE expected, but not set",
                Family::LauncherEnvMissing);
  CHECK(e.setting_value == "WORLD_SIZE");
  CHECK(must("ValueError: Environment variable TORCHELASTIC_RUN_ID expected, but not set",
             Family::LauncherEnvMissing)
            .setting_value == "TORCHELASTIC_RUN_ID");
  CHECK(must("KeyError: 'RANK'", Family::LauncherEnvMissing).setting_value == "RANK");
  CHECK(must("[rank3]: KeyError: \"MASTER_PORT\"", Family::LauncherEnvMissing).setting_value == "MASTER_PORT");
  auto other = classify_line("KeyError: 'RANKS'");
  CHECK((!other || other->family != Family::LauncherEnvMissing));
  must("RuntimeError: [enforce fail at ../third_party/gloo/gloo/context.cc:23] rank < size. 2 vs 2",
       Family::RankOutOfRange);
  must("node1:77:77 [0] init.cc:1580 NCCL WARN Invalid rank requested : 4/4", Family::RankOutOfRange);
}

TEST_CASE("monitored_barrier_timeout and gloo_store_wait_timeout (issue 29)", "[families]") {
  auto zero = must("RuntimeError: [Rank 0]: Rank 2 failed to pass monitoredBarrier in 2000 ms",
                   Family::MonitoredBarrierTimeout);
  CHECK(zero.rank == 0);
  CHECK(zero.awaited_rank == 2);
  // waitAllRanks names several: no single one
  CHECK_FALSE(must("[Rank 0]: Ranks 1, 2 failed to pass monitoredBarrier in 120000 ms",
                   Family::MonitoredBarrierTimeout).awaited_rank.has_value());
  auto came = must("[E ProcessGroupGloo.cpp:138] Rank 3 successfully reached monitoredBarrier, but received errors "
                   "while waiting for send/recv from rank 0.",
                   Family::MonitoredBarrierTimeout);
  CHECK(came.rank == 3);
  CHECK(came.awaited_rank == 0);
  CHECK(came.setting == "reached");
  // sglang's TP rank is no global rank
  CHECK(must("ValueError: TP rank 2 could finish the model loading, but there are other ranks that didn't finish "
             "loading.",
             Family::MonitoredBarrierTimeout)
            .rank == -1);
  CHECK(must("  what():  [horovod/common/gloo/http_store.cc:57] Wait timeout after 30 seconds for key(s): 0. You "
             "may want to increase the timeout",
             Family::GlooStoreWaitTimeout)
            .awaited_rank == 0);
  CHECK(must("[gloo/rendezvous/file_store.cc:130] Wait timeout for key(s): [3]", Family::GlooStoreWaitTimeout)
            .awaited_rank == 3);
  CHECK_FALSE(must("Wait timeout for key(s): [rank_3_addr]", Family::GlooStoreWaitTimeout).awaited_rank.has_value());
  auto workers = must("torch.distributed.DistStoreError: Timed out after 6 seconds waiting for workers. 1/2 workers "
                      "joined.",
                      Family::ClientsJoinTimeout);
  CHECK(std::pair(workers.joined, workers.expected) == std::pair(std::optional(1), std::optional(2)));
}

TEST_CASE("monitored_barrier: the line's own rank outranks a rank in the file's name", "[families]") {
  auto e = classify_line("[E ProcessGroupGloo.cpp:138] Rank 3 successfully reached monitoredBarrier, but received "
                         "errors while waiting for send/recv from rank 0.",
                         0);
  REQUIRE(e.has_value());
  CHECK(e->rank == 3);
}

TEST_CASE("stack_frame: distributed_c10d.py calls and TCPStore's constructor (issues 28, 29)", "[families]") {
  auto py = must("  File \"/x/site-packages/torch/distributed/distributed_c10d.py\", line 3252, in all_reduce",
                 Family::StackFrame);
  CHECK(py.setting == "c10d_call");
  CHECK(py.setting_value == "all_reduce");
  auto cpp = must("frame #4: c10d::TCPStore::ping() + 0xf9 (0x7fd510142bc9 in /x/torch/lib/libtorch_cpu.so)",
                  Family::StackFrame);
  CHECK(cpp.setting == "store_ctor");
  CHECK(cpp.setting_value == "TCPStore::ping");
  CHECK(must("[trainer85612|12]:#10 c10d::TCPStore::waitForWorkers() from /x/libtorch_cpu.so:84812868",
             Family::StackFrame)
            .setting_value == "TCPStore::waitForWorkers");
  // another file's frame, and a frame of the store's use after its constructor, are no such frame
  CHECK_FALSE(classify_line("  File \"/x/torch/distributed/c10d_logger.py\", line 81, in wrapper").has_value());
  CHECK_FALSE(classify_line("frame #9: c10d::TCPStore::doWait(c10::ArrayRef<std::string>) + 0x1d2").has_value());
}

TEST_CASE("stack_frame: a frame of torchrun's own code is the agent's (issue 29)", "[families]") {
  for (const char* line : {"  File \"/opt/conda/bin/torchrun\", line 8, in <module>",
                           "  File \"/x/site-packages/torch/distributed/run.py\", line 1019, in run",
                           "  File \"/x/site-packages/torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py\", "
                           "line 156, in _create_tcp_store"})
    CHECK(must(line, Family::StackFrame).setting == "launcher");
  // the env:// handler of a worker's init_process_group is no agent's frame
  CHECK_FALSE(classify_line("  File \"/x/site-packages/torch/distributed/rendezvous.py\", line 232, in "
                            "_env_rendezvous_handler")
                  .has_value());
}

TEST_CASE("init_announced: Lightning's line of a process entering init_process_group, and rank 0's after it (issue 29)",
          "[families]") {
  auto old = must("initializing ddp: GLOBAL_RANK: 2, MEMBER: 3/8", Family::InitAnnounced);
  CHECK(old.setting == "entering");
  CHECK(old.rank == 2);
  CHECK(old.expected == 8);
  // the line's own rank outranks the file name's
  auto now = classify_line("[rank: 1] Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2", 0);
  REQUIRE(now.has_value());
  CHECK(now->family == Family::InitAnnounced);
  CHECK(now->rank == 1);
  CHECK(now->expected == 2);
  auto done = must("All distributed processes registered. Starting with 8 processes", Family::InitAnnounced);
  CHECK(done.setting == "registered");
  CHECK(done.expected == 8);
  CHECK(must("All DDP processes registered. Starting ddp with 4 processes", Family::InitAnnounced).expected == 4);
  CHECK_FALSE(classify_line("GLOBAL_RANK is 3").has_value());
}

TEST_CASE("watchdog_timeout: the backtrace of the watchdog's exception, frame #1 in checkTimeout (issue 29)",
          "[families]") {
  must("frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
       "std::ratio<1l, 1000l> > >) + 0x1d2 (0x1554e9e0f8f2 in /x/libtorch_cuda.so)",
       Family::WatchdogTimeout);
  CHECK_FALSE(classify_line("frame #3: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<long>) + 0x1d2")
                  .has_value());
}

TEST_CASE("stack_frame: main_process_first's caller line and contextlib's __enter__ (issue 29)", "[families]") {
  CHECK(must("    with training_args.main_process_first(desc=\"dataset map tokenization\"):", Family::StackFrame)
            .setting == "main_process_first");
  CHECK(must("  File \"/usr/lib/python3.8/contextlib.py\", line 113, in __enter__", Family::StackFrame).setting ==
        "context_enter");
  CHECK_FALSE(classify_line("  File \"/usr/lib/python3.8/contextlib.py\", line 120, in __exit__").has_value());
}

TEST_CASE("group_left_at_exit: ProcessGroupNCCL's destructor warning, no failure (issue 29)", "[families]") {
  auto e = must("[W1203 09:00:01.000000000 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been "
                "destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should call "
                "destroy_process_group to ensure that any pending NCCL operations have finished in this process.",
                Family::GroupLeftAtExit);
  CHECK_FALSE(is_rendezvous_message(e.family));
  // a user's own words about destroying a group are not the destructor's line
  CHECK_FALSE(classify_line("the process group has NOT been destroyed yet, calling destroy_process_group").has_value());
}

TEST_CASE("transport_error: gloo's full mesh given up, pair.cc and pair.h (issue 29)", "[families]") {
  must("[E1207 23:12:23.840069266 ProcessGroupGloo.cpp:67] Gloo connectFullMesh failed with "
       "[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.h:311] Connect timeout [none]",
       Family::TransportError);
  must("RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
       Family::TransportError);
  // a quote that elided the path (hiascend ptacase_0041)
  must("[E ProcessGroupGloo.cpp:138] Gloo connectFullMesh failed with [...] no error", Family::TransportError);
  auto w = must("[W1207 23:08:57.442164623 ProcessGroupGloo.cpp:524] Warning: Unable to resolve hostname to a (local) "
                "address. Using the loopback address as fallback. Manually set the network interface to bind to with "
                "GLOO_SOCKET_IFNAME. (function operator())",
                Family::GlooLoopbackFallback);
  CHECK_FALSE(is_rendezvous_message(w.family));
}

TEST_CASE("address_family_unsupported: c10d's IPv6 socket warnings, no failure (issue 29)", "[families]") {
  auto e = must("[W socket.cpp:558] [c10d] The client socket cannot be initialized to connect to [localhost]:29500 "
                "(errno: 97 - Address family not supported by protocol).",
                Family::AddressFamilyUnsupported);
  CHECK_FALSE(is_rendezvous_message(e.family));
  // raised, it is an exception's line
  CHECK(must("RuntimeError: The server socket cannot be initialized on [::]:29500 (errno: 97 - Address family not "
             "supported by protocol).",
             Family::ErrorLine)
            .family == Family::ErrorLine);
}

TEST_CASE("rank prefixes: a script's own '[rank1] ' as well as torchrun's '[rank1]:' (stop 38)", "[families]") {
  auto e = must("[rank1] e2e: FAILED DistStoreError: wait timeout after 5000ms, keys: /default_pg/0//cpu//0/4",
                Family::WaitTimeout);
  CHECK(e.rank == 1);
  CHECK(e.awaited_rank == 4);
  CHECK(must("[Rank2] RuntimeError: Socket Timeout", Family::SocketTimeout).rank == 2);
  // a bare "[3] " or "[default3] " is no rank prefix: a count, a device index
  CHECK(must("[3] RuntimeError: Socket Timeout", Family::SocketTimeout).rank == -1);
  CHECK(must("[default3] RuntimeError: Socket Timeout", Family::SocketTimeout).rank == -1);
}
