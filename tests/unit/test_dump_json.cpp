// Every kind of record written by the builder, read back by the reader and printed as JSON:
// the field names and values of `rdzvscope dump` are a contract others parse.
#include <catch2/catch.hpp>

#include <netdb.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "reader/dump_json.h"
#include "reader/names.h"
#include "reader/trace_reader.h"
#include "temp_dir.h"
#include "trace_builder.h"

using namespace rdzvscope;
using namespace rdzvscope::test;
using json = nlohmann::ordered_json;

namespace {

// Writes the builder's file, reads it back and returns the JSON of each part.
struct Dumped {
  json header;
  std::vector<json> events;
  json summary;
};

Dumped dump(const TraceBuilder& b) {
  TempDir dir;
  const std::string path = dir.file("t.rzt");
  b.write(path);
  auto t = read_trace(path);
  REQUIRE(t.ok());
  Dumped d;
  // Through the text form, as a consumer sees it.
  d.header = json::parse(json_line(header_json(t.value())));
  for (const auto& r : t.value().records) {
    d.events.push_back(json::parse(json_line(event_json(t.value().header, r))));
  }
  d.summary = json::parse(json_line(summary_json(t.value())));
  return d;
}

json one_event(const rdzv_record& r) {
  TraceBuilder b;
  b.add(r);
  auto d = dump(b);
  REQUIRE(d.events.size() == 1);
  return d.events[0];
}

}  // namespace

TEST_CASE("header line: the origin, when the recorder placed the process", "[json]") {
  TraceBuilder b(16);
  b.header().features = RDZV_FEAT_PROC_START | RDZV_FEAT_ORIGIN;
  for (int i = 0; i < 16; ++i) b.header().origin.boot_id[i] = static_cast<std::uint8_t>(i);
  b.header().origin.pidns_inode = 4026532301ull;
  b.header().origin.netns_inode = 4026531840ull;
  b.header().origin.ns_pid = 1;
  b.header().origin.host_pid = 4242;
  b.header().origin.start_ticks = 123456;
  std::strcpy(b.header().origin.container_id, "abc");
  b.add(make_record(RDZV_EV_PROC_START, RDZV_OP_INIT));
  const auto d = dump(b);
  const json& o = d.header["origin"];
  CHECK(o["boot_id"] == "000102030405060708090a0b0c0d0e0f");
  CHECK(o["pid_namespace"] == 4026532301ull);
  CHECK(o["net_namespace"] == 4026531840ull);
  CHECK(o["ns_pid"] == 1);
  CHECK(o["host_pid"] == 4242);
  CHECK(o["start_ticks"] == 123456);
  CHECK(o["container_id"] == "abc");
  CHECK(d.header["features"] == json::array({"proc_start", "origin"}));
}

TEST_CASE("header line: the PyTorch version the shim recorded", "[json]") {
  TraceBuilder b(16);
  b.header().features = RDZV_FEAT_TORCH_VERSION;
  std::strcpy(b.header().torch_version, "2.13.0+cpu");
  b.add(make_record(RDZV_EV_PROC_START, RDZV_OP_INIT));
  auto d = dump(b);
  CHECK(d.header["torch_version"] == "2.13.0+cpu");
  CHECK(d.header["features"] == json::array({"torch_version"}));
}

TEST_CASE("header line: the latest store receive the shim recorded", "[json]") {
  TraceBuilder b(16);
  b.header().features = RDZV_FEAT_STORE_RECV;
  b.header().last_store_recv_ns = b.header().clock_monotonic_ns + 2'500'000'000ull;
  b.add(make_record(RDZV_EV_PROC_START, RDZV_OP_INIT));
  auto d = dump(b);
  CHECK(d.header["last_store_recv_ns"] == b.header().last_store_recv_ns);
  CHECK(d.header["last_store_recv_time"] ==
        iso8601_utc(static_cast<std::int64_t>(b.header().clock_realtime_ns) + 2'500'000'000ll));
  CHECK(d.header["features"] == json::array({"store_recv"}));
}

TEST_CASE("header line: every field of the contract", "[json]") {
  TraceBuilder b(16);
  b.header().features = RDZV_FEAT_PROC_START | RDZV_FEAT_STORE_IO;
  b.header().exec_generation = 2;
  b.header().dropped = 0;
  b.header().lost = 3;
  std::strcpy(b.header().ident.run_id, "job42");
  b.header().ident.slurm_procid = 7;
  b.add(make_record(RDZV_EV_PROC_START, RDZV_OP_INIT));
  auto d = dump(b);
  const json& h = d.header;
  CHECK(h["type"] == "header");
  CHECK(h["file"].get<std::string>().size() > 6);
  CHECK_THAT(h["file"].get<std::string>(), Catch::EndsWith("/t.rzt"));
  CHECK(h["version"] == 1);
  CHECK(h["source"] == "shim");
  CHECK(h["pid"] == 4242);
  CHECK(h["ppid"] == 4241);
  CHECK(h["host"] == "node1");
  CHECK(h["exe"] == "/usr/bin/python3.11");
  CHECK(h["cmdline"] == "python3 train.py --epochs 1");
  CHECK(h["start_realtime_ns"] == kStartRealtimeNs);
  CHECK(h["start_time"] == "2026-11-30T23:19:18.000Z");
  CHECK(h["clock_realtime_ns"] == kClockRealtimeNs);
  CHECK(h["clock_monotonic_ns"] == kClockMonotonicNs);
  CHECK(h["capacity"] == 16);
  CHECK(h["next_slot"] == 1);
  CHECK(h["dropped"] == 0);
  CHECK(h["lost"] == 3);
  CHECK(h["store_ports"] == json::array({29500, 29400}));
  CHECK(h["exec_generation"] == 2);
  CHECK(h["features"] == json::array({"proc_start", "store_io"}));
  const json& id = h["identity"];
  CHECK(id["rank"] == 1);
  CHECK(id["local_rank"] == 1);
  CHECK(id["world_size"] == 4);
  CHECK(id["group_rank"] == 0);
  CHECK(id["master_port"] == 29500);
  CHECK(id["restart_count"].is_null());
  CHECK(id["slurm_procid"] == 7);
  CHECK(id["slurm_nodeid"].is_null());
  CHECK(id["master_addr"] == "node0");
  CHECK(id["run_id"] == "job42");
  CHECK(id["slurm_job_id"].is_null());
  CHECK(id.size() == 11);
  CHECK(h["origin"].is_null());  // no RDZV_FEAT_ORIGIN
  CHECK(h["torch_version"].is_null());  // no RDZV_FEAT_TORCH_VERSION
  CHECK(h["last_store_recv_ns"].is_null());  // no RDZV_FEAT_STORE_RECV
  CHECK(h["last_store_recv_time"].is_null());
  CHECK(h.size() == 25);
  // "type" comes first on the line, for people reading dumps.
  CHECK(json_line(header_json(Trace{})).rfind("{\"type\":\"header\"", 0) == 0);
}

TEST_CASE("event line: the fields every kind has", "[json]") {
  auto r = make_record(RDZV_EV_CONNECT, RDZV_OP_CONNECT, 1.0);
  r.flags = RDZV_F_STORE | RDZV_F_NONBLOCK;
  r.tid = 99;
  r.dur_ns = 12345;
  r.ret = -1;
  r.fd = 5;
  r.err = ECONNREFUSED;
  json e = one_event(r);
  CHECK(e["type"] == "event");
  CHECK(e["slot"] == 0);
  CHECK(e["kind"] == "connect");
  CHECK(e["op"] == "connect");
  CHECK(e["flags"] == json::array({"store", "nonblock"}));
  CHECK(e["tid"] == 99);
  CHECK(e["ts_ns"] == kClockMonotonicNs + 1'000'000'000);
  CHECK(e["time"] == "2026-11-30T23:19:19.123Z");
  CHECK(e["since_start_s"].get<double>() == Approx(1.123));
  CHECK(e["dur_ns"] == 12345);
  CHECK(e["ret"] == -1);
  CHECK(e["fd"] == 5);
  CHECK(e["errno"] == ECONNREFUSED);
  CHECK(e["errno_name"] == "ECONNREFUSED");

  r.err = 0;
  r.ret = 0;
  json ok = one_event(r);
  CHECK(ok["errno"] == 0);
  CHECK(ok["errno_name"].is_null());
}

TEST_CASE("event line: net kinds carry addresses, size, timeout, nfds, tcp_state", "[json]") {
  const unsigned kinds[] = {RDZV_EV_CONNECT, RDZV_EV_CONNECT_DONE, RDZV_EV_BIND,
                            RDZV_EV_LISTEN,  RDZV_EV_ACCEPT,       RDZV_EV_SEND,
                            RDZV_EV_RECV,    RDZV_EV_POLL,         RDZV_EV_SOCKOPT,
                            RDZV_EV_TCP_STATE};
  for (unsigned kind : kinds) {
    INFO("kind " << kind);
    auto r = make_record(kind, RDZV_OP_KERNEL);
    r.u.net.peer = ipv4(10, 0, 0, 2, 29500);
    r.u.net.local = ipv6("::1", 40000);
    r.u.net.size = 4096;
    r.u.net.timeout_ms = -1;
    r.u.net.nfds = 3;
    r.u.net.tcp_state = 1;
    json e = one_event(r);
    CHECK(e["kind"] == kind_name(kind));
    CHECK(e["op"] == "kernel");
    CHECK(e["peer"] == "10.0.0.2:29500");
    CHECK(e["local"] == "[::1]:40000");
    CHECK(e["size"] == 4096);
    CHECK(e["timeout_ms"] == -1);
    CHECK(e["nfds"] == 3);
    CHECK(e["tcp_state"] == 1);
    CHECK(e.size() == 14 + 6);
  }
  auto bind = make_record(RDZV_EV_BIND, RDZV_OP_BIND);
  bind.u.net.local = ipv4(0, 0, 0, 0, 29500);
  json e = one_event(bind);
  CHECK(e["peer"].is_null());
  CHECK(e["local"] == "0.0.0.0:29500");
}

TEST_CASE("event line: tcp_state names its probe by flag; old bpf files' net.nfds read alike",
          "[json]") {
  const std::pair<unsigned, const char*> probes[] = {
      {RDZV_F_SOCK_ERROR, "sock_error"},
      {RDZV_F_RESET_RECEIVED, "reset_received"},
      {RDZV_F_RESET_SENT, "reset_sent"}};
  unsigned legacy_nfds = 1;
  for (const auto& [flag, name] : probes) {
    INFO(name);
    auto r = make_record(RDZV_EV_TCP_STATE, RDZV_OP_KERNEL);
    r.flags = static_cast<std::uint16_t>(RDZV_F_STORE | flag);
    CHECK(one_event(r)["flags"] == json::array({"store", name}));
    // Written by attach before the flags existed: the probe was in net.nfds.
    TraceBuilder b;
    b.header().source = RDZV_SOURCE_BPF;
    auto old = make_record(RDZV_EV_TCP_STATE, RDZV_OP_KERNEL);
    old.flags = RDZV_F_STORE;
    old.u.net.nfds = legacy_nfds++;
    b.add(old);
    auto d = dump(b);
    REQUIRE(d.events.size() == 1);
    CHECK(d.events[0]["flags"] == json::array({"store", name}));
    CHECK(d.events[0]["nfds"] == old.u.net.nfds);
  }
  // A state change has none; nfds of a shim file (or of another kind) means what it says.
  auto change = make_record(RDZV_EV_TCP_STATE, RDZV_OP_KERNEL);
  CHECK(one_event(change)["flags"] == json::array());
  auto poll = make_record(RDZV_EV_POLL, RDZV_OP_POLL);
  poll.u.net.nfds = 2;
  TraceBuilder b;
  b.header().source = RDZV_SOURCE_BPF;
  b.add(poll);
  CHECK(dump(b).events.at(0)["flags"] == json::array());
}

TEST_CASE("event line: resolve", "[json]") {
  auto r = make_record(RDZV_EV_RESOLVE, RDZV_OP_GETADDRINFO);
  std::strcpy(r.u.resolve.host, "node0.cluster");
  std::strcpy(r.u.resolve.service, "29500");
  r.u.resolve.family = AF_UNSPEC;
  r.u.resolve.socktype = SOCK_STREAM;
  r.u.resolve.ai_flags = AI_PASSIVE;
  r.u.resolve.naddrs = 2;
  r.u.resolve.first = ipv4(10, 0, 0, 1, 0);
  json ok = one_event(r);
  CHECK(ok["kind"] == "resolve");
  CHECK(ok["op"] == "getaddrinfo");
  CHECK(ok["host"] == "node0.cluster");
  CHECK(ok["service"] == "29500");
  CHECK(ok["family"] == AF_UNSPEC);
  CHECK(ok["socktype"] == SOCK_STREAM);
  CHECK(ok["ai_flags"] == AI_PASSIVE);
  CHECK(ok["naddrs"] == 2);
  CHECK(ok["first"] == "10.0.0.1:0");
  CHECK(ok["gai_error"].is_null());
  CHECK(ok.size() == 14 + 8);

  r.ret = EAI_NONAME;
  r.u.resolve.naddrs = 0;
  r.u.resolve.first = rdzv_sockaddr{};
  json bad = one_event(r);
  CHECK(bad["ret"] == -2);
  CHECK(bad["gai_error"] == "EAI_NONAME");
  CHECK(bad["first"].is_null());

  auto h = make_record(RDZV_EV_RESOLVE, RDZV_OP_GETHOSTBYNAME);
  h.ret = HOST_NOT_FOUND;
  CHECK(one_event(h)["gai_error"] == "HOST_NOT_FOUND");
}

TEST_CASE("event line: close", "[json]") {
  auto r = make_record(RDZV_EV_CLOSE, RDZV_OP_CLOSE);
  r.flags = RDZV_F_STORE;
  r.u.close.peer = ipv6("::ffff:127.0.0.1", 29500);
  r.u.close.local = ipv6("::ffff:127.0.0.1", 51000);
  r.u.close.bytes_sent = 100;
  r.u.close.bytes_recv = 200;
  r.u.close.calls_send = 3;
  r.u.close.calls_recv = 4;
  r.u.close.open_ns = 5'000'000'000;
  r.u.close.tcp_state = 8;
  json e = one_event(r);
  CHECK(e["kind"] == "close");
  CHECK(e["peer"] == "[::ffff:127.0.0.1]:29500");
  CHECK(e["local"] == "[::ffff:127.0.0.1]:51000");
  CHECK(e["bytes_sent"] == 100);
  CHECK(e["bytes_recv"] == 200);
  CHECK(e["calls_send"] == 3);
  CHECK(e["calls_recv"] == 4);
  CHECK(e["open_ns"] == 5'000'000'000ull);
  CHECK(e["tcp_state"] == 8);
  CHECK(e.size() == 14 + 8);
}

TEST_CASE("event line: snapshot", "[json]") {
  auto r = make_record(RDZV_EV_SNAPSHOT, RDZV_SNAP_FAILURE);
  auto& s = r.u.snap;
  s.utime_us = 1;
  s.stime_us = 2;
  s.rchar = 3;
  s.wchar = 4;
  s.read_bytes = 5;
  s.write_bytes = 6;
  s.vol_ctxsw = 7;
  s.invol_ctxsw = 8;
  s.maxrss_kb = 9;
  s.since_start_ns = 10;
  json e = one_event(r);
  CHECK(e["kind"] == "snapshot");
  CHECK(e["op"] == "none");  // the op field holds the reason, not a call
  CHECK(e["reason"] == "failure");
  CHECK(e["utime_us"] == 1);
  CHECK(e["stime_us"] == 2);
  CHECK(e["rchar"] == 3);
  CHECK(e["wchar"] == 4);
  CHECK(e["read_bytes"] == 5);
  CHECK(e["write_bytes"] == 6);
  CHECK(e["vol_ctxsw"] == 7);
  CHECK(e["invol_ctxsw"] == 8);
  CHECK(e["maxrss_kb"] == 9);
  CHECK(e["since_start_ns"] == 10);
  CHECK(e.size() == 14 + 11);
  CHECK(one_event(make_record(RDZV_EV_SNAPSHOT, RDZV_SNAP_FIRST_STORE_CONNECT))["reason"] ==
        "first_store_connect");
  CHECK(one_event(make_record(RDZV_EV_SNAPSHOT, RDZV_SNAP_EXIT))["reason"] == "exit");
}

TEST_CASE("event line: process kinds", "[json]") {
  const unsigned kinds[] = {RDZV_EV_PROC_START, RDZV_EV_PROC_EXIT, RDZV_EV_FORK, RDZV_EV_EXEC,
                            RDZV_EV_SPAWN};
  for (unsigned kind : kinds) {
    INFO("kind " << kind);
    auto r = make_record(kind, RDZV_OP_POSIX_SPAWNP);
    r.u.proc.status = 137;
    r.u.proc.child_pid = 5000;
    std::strcpy(r.u.proc.path, "/usr/bin/python3");
    json e = one_event(r);
    CHECK(e["kind"] == kind_name(kind));
    CHECK(e["op"] == "posix_spawnp");
    CHECK(e["status"] == 137);
    CHECK(e["child_pid"] == 5000);
    CHECK(e["path"] == "/usr/bin/python3");
    CHECK(e.size() == 14 + 3);
  }
}

TEST_CASE("summary line counts records, damage and losses", "[json]") {
  TraceBuilder b(3);
  b.add(make_record(RDZV_EV_PROC_START, RDZV_OP_INIT));
  b.add_torn(make_record(RDZV_EV_CONNECT, RDZV_OP_CONNECT));
  b.add(make_record(0, RDZV_OP_CONNECT));
  b.set_next_slot(10);
  b.header().dropped = 6;
  b.header().lost = 4;
  auto d = dump(b);
  CHECK(d.summary["type"] == "summary");
  CHECK_THAT(d.summary["file"].get<std::string>(), Catch::EndsWith("/t.rzt"));
  CHECK(d.summary["records"] == 1);
  CHECK(d.summary["torn"] == 1);
  CHECK(d.summary["invalid"] == 1);
  CHECK(d.summary["dropped"] == 7);  // next_slot - capacity, more than the header's 6
  CHECK(d.summary["lost"] == 4);
  CHECK(d.header["dropped"] == 6);   // the header line shows the raw counter
  CHECK(d.header["next_slot"] == 10);
}

TEST_CASE("strings without a NUL stop at their field's end", "[json]") {
  TraceBuilder b;
  std::memset(b.header().host, 'h', sizeof b.header().host);
  std::memset(b.header().exe, 'e', sizeof b.header().exe);
  std::memset(b.header().cmdline, 'c', sizeof b.header().cmdline);
  std::memset(b.header().ident.slurm_job_id, '9', sizeof b.header().ident.slurm_job_id);
  auto r = make_record(RDZV_EV_RESOLVE, RDZV_OP_GETADDRINFO);
  r.flags = RDZV_F_TRUNCATED;
  std::memset(r.u.resolve.host, 'x', RDZV_HOST_MAX);
  std::memset(r.u.resolve.service, 's', RDZV_SERVICE_MAX);
  b.add(r);
  auto p = make_record(RDZV_EV_EXEC, RDZV_OP_EXEC);
  std::memset(p.u.proc.path, 'p', RDZV_PATH_MAX);
  b.add(p);
  auto d = dump(b);
  CHECK(d.header["host"] == std::string(64, 'h'));
  CHECK(d.header["exe"] == std::string(256, 'e'));
  CHECK(d.header["cmdline"] == std::string(RDZV_CMDLINE_MAX, 'c'));
  CHECK(d.header["identity"]["slurm_job_id"] == std::string(32, '9'));
  REQUIRE(d.events.size() == 2);
  CHECK(d.events[0]["host"] == std::string(RDZV_HOST_MAX, 'x'));
  CHECK(d.events[0]["service"] == std::string(RDZV_SERVICE_MAX, 's'));
  CHECK(d.events[0]["flags"] == json::array({"truncated"}));
  CHECK(d.events[1]["path"] == std::string(RDZV_PATH_MAX, 'p'));
}

TEST_CASE("invalid UTF-8 from the file is replaced, never thrown", "[json]") {
  TraceBuilder b;
  std::strcpy(b.header().host, "node\xff\xfe");
  auto r = make_record(RDZV_EV_RESOLVE, RDZV_OP_GETADDRINFO);
  std::strcpy(r.u.resolve.host, "bad\xc3(");
  b.add(r);
  TempDir dir;
  b.write(dir.file("t.rzt"));
  auto t = read_trace(dir.file("t.rzt"));
  REQUIRE(t.ok());
  std::string header_line, event_line;
  REQUIRE_NOTHROW(header_line = json_line(header_json(t.value())));
  REQUIRE_NOTHROW(event_line = json_line(event_json(t.value().header, t.value().records[0])));
  // U+FFFD replaces each bad byte, and the result is valid JSON again.
  CHECK(json::parse(header_line)["host"] == "node\xef\xbf\xbd\xef\xbf\xbd");
  CHECK(json::parse(event_line)["host"] == "bad\xef\xbf\xbd(");
  // Control characters are escaped rather than breaking the line.
  std::strcpy(b.header().host, "a\nb");
  b.write(dir.file("t.rzt"));
  auto t2 = read_trace(dir.file("t.rzt"));
  REQUIRE(t2.ok());
  const std::string line = json_line(header_json(t2.value()));
  CHECK(line.find('\n') == std::string::npos);
  CHECK(json::parse(line)["host"] == "a\nb");
}
