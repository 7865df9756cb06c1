// One exact string per family (docs/c10d-notes.md, section 6), shared by the family and
// the whole-file tests.
#pragma once

#include "logs/log_scan.h"

namespace rdzv::test {

struct FamilyString {
  rdzv::logs::Family family;
  const char* line;
};

inline constexpr FamilyString kFamilyStrings[] = {
    {rdzv::logs::Family::GaiError,
     "[rank3]:[W1129 10:00:00.123456 123 socket.cpp:767] [c10d] The IPv6 network addresses of (node0, 29500) "
     "cannot be retrieved (gai error: -2 - Name or service not known)."},
    {rdzv::logs::Family::HostNotFound, "ValueError: host not found: Name or service not known"},
    // Issue 13: the families that are no store failure (kept apart by LogFacts).
    {rdzv::logs::Family::TransportError,
     "  what():  [/opt/conda/conda-bld/pytorch_1544084119927/work/third_party/gloo/gloo/transport/tcp/"
     "pair.cc:724] connect [127.0.1.1]:3210: Connection refused"},  // pytorch#15592
    {rdzv::logs::Family::NcclNoSocketInterface, "Bootstrap : no socket interface found"},  // MambaTree#14
    {rdzv::logs::Family::NoRouteToHost, "RuntimeError: No route to host"},  // PyTorch-BigGraph#99
    {rdzv::logs::Family::ErrorLine,
     "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1201, internal error, "
     "NCCL version 2.14.3"},  // MambaTree#14
    {rdzv::logs::Family::RendezvousTimeout,
     "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError"},  // 2.13, a node never joined
    {rdzv::logs::Family::LaunchSetting,  // 2.13 torchrun, LOGLEVEL=INFO
     "I1202 08:07:31.995000 28075 torch/distributed/launcher/api.py:254]   run_id                   : info1"},
    {rdzv::logs::Family::ReverseLookupFailed,
     "[W1201 10:06:20.880618784 socket.cpp:207] [c10d] The hostname of the client socket cannot be "
     "retrieved. err=-3"},
    {rdzv::logs::Family::ConnectValidate,
     "[W1129 10:00:00.123456 123 TCPStore.cpp:347] [c10d] TCP client failed to connect/validate to host "
     "node0:29500 - retrying (try=6, timeout=1800000ms, delay=5241ms): Connection reset by peer"},
    {rdzv::logs::Family::ClientConnectTimeout,
     "[E socket.cpp:793] [c10d] The client socket has timed out after 1800s while trying to connect to "
     "(127.0.0.1, 29500)."},
    {rdzv::logs::Family::ConnectFailed,
     "[W socket.cpp:558] [c10d] The client socket has failed to connect to [::ffff:0.0.0.5]:40323 (errno: "
     "110 - Connection timed out)."},
    {rdzv::logs::Family::NotListeningYet,
     "[I socket.cpp:717] [c10d] No socket on (node0, 29500) is listening yet, will retry."},
    {rdzv::logs::Family::ServerTimedOutRetry,
     "[W1129 10:00:00.123456 123 socket.cpp:933] [c10d] The server socket on [::ffff:10.0.0.2]:29500 has "
     "timed out, will retry."},
    {rdzv::logs::Family::SendRecvFailed,
     "[rank5]:[W1129 10:00:00.123456 123 TCPStore.cpp:106] [c10d] sendBytes failed on SocketImpl(fd=81, "
     "addr=[node3]:50612, remote=[node0]:29500): Broken pipe"},
    {rdzv::logs::Family::BrokenPipe, "RuntimeError: Broken pipe"},
    {rdzv::logs::Family::ConnectionReset, "torch.distributed.DistNetworkError: Connection reset by peer"},
    {rdzv::logs::Family::ConnectionTimedOutErrno, "RuntimeError: Connection timed out"},
    {rdzv::logs::Family::RecvZero,
     "[rank0]:[W1129 10:00:00.123456 123 ProcessGroupNCCL.cpp:1659] [PG ID 0 PG GUID 0(default_pg) Rank 0] "
     "Failed to check the \"should dump\" flag on TCPStore, (maybe TCPStore server has shut down too "
     "early), with error: failed to recv, got 0 bytes"},
    {rdzv::logs::Family::SocketTimeout, "RuntimeError: Socket Timeout"},
    {rdzv::logs::Family::WaitTimeout,
     "torch.distributed.DistStoreError: wait timeout after 600000ms, keys: /default_pg/0//cuda//0"},
    {rdzv::logs::Family::WaitForInputTimeout,
     "[rank4]:[W1129 10:00:00.123456 123 socket.cpp:487] [c10d] waitForInput: socket SocketImpl(fd=12, "
     "addr=[node4]:41234, remote=[node0]:29500) timed out after 600000ms"},
    {rdzv::logs::Family::ClientsJoinTimeout,
     "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. 1/3 clients "
     "joined."},
    {rdzv::logs::Family::StoreBarrierTimeout,
     "RuntimeError: Timed out initializing process group in store based barrier on rank: 1, for key: "
     "store_based_barrier_key:1 (world_size=4, worker_count=3, timeout=0:30:00)"},
    {rdzv::logs::Family::BindFailed,
     "[W socket.cpp:401] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address "
     "already in use)."},
    {rdzv::logs::Family::ListenFailed,
     "[E socket.cpp:435] [c10d] The server socket has failed to listen on any local network address."},
    {rdzv::logs::Family::RendezvousClosed, "\"message\": \"RendezvousClosedError: \""},
    {rdzv::logs::Family::ConnectTimeoutLegacy,
     "RuntimeError: connect() timed out. Original timeout was 60000 ms."},
    {rdzv::logs::Family::NcclUniqueIdStoreError,
     "[3] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by "
     "key '0', but store->get('0') got error: Socket Timeout"},
    {rdzv::logs::Family::WatchdogTimeout,
     "[E ProcessGroupNCCL.cpp:567] [Rank 3] Watchdog caught collective operation timeout: "
     "WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=60000) ran for 67438 milliseconds before timing out."},
};

}  // namespace rdzv::test
