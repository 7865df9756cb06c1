// Decoding a record into a typed event (event.h): each kind gets its own body, strings come out
// of their fixed-size fields without reading past them, and asking an event for the body of
// another kind gives an empty one, never the union's bytes read as something else.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>

#include "model/event.h"
#include "trace_builder.h"

using namespace rdzvscope;
using namespace rdzvscope::test;

TEST_CASE("a lookup decodes into its host, service and first address") {
  rdzv_record r = make_record(RDZV_EV_RESOLVE, RDZV_OP_GETADDRINFO);
  std::strcpy(r.u.resolve.host, "node-a");
  std::strcpy(r.u.resolve.service, "29500");
  r.u.resolve.naddrs = 2;
  r.u.resolve.first = ipv4(10, 0, 0, 7, 29500);
  r.ret = -2;  // EAI_NONAME
  r.flags = RDZV_F_PASSIVE;
  const Event e = decode_event(1234, r);
  CHECK(e.wall_ns == 1234);
  CHECK(e.kind == RDZV_EV_RESOLVE);
  CHECK(e.op == RDZV_OP_GETADDRINFO);
  CHECK(e.ret == -2);
  CHECK(e.has(RDZV_F_PASSIVE));
  CHECK(e.resolve().host == "node-a");
  CHECK(e.resolve().service == "29500");
  CHECK(e.resolve().addresses == 2);
  CHECK(e.resolve().first.port == 29500);
  // A lookup has no socket: its addresses are empty, not its host name's bytes.
  CHECK(e.peer().family == 0);
  CHECK(e.socket().timeout_ms == -1);
}

TEST_CASE("a host name that fills its field without a NUL is read to the field's end only") {
  rdzv_record r = make_record(RDZV_EV_RESOLVE, RDZV_OP_GETADDRINFO);
  std::memset(r.u.resolve.host, 'x', sizeof r.u.resolve.host);
  std::memset(r.u.resolve.service, '9', sizeof r.u.resolve.service);
  const Event e = decode_event(0, r);
  CHECK(e.resolve().host == std::string(RDZV_HOST_MAX, 'x'));
  CHECK(e.resolve().service == std::string(RDZV_SERVICE_MAX, '9'));
}

TEST_CASE("socket calls decode their addresses, size and timeout") {
  rdzv_record r = make_record(RDZV_EV_CONNECT, RDZV_OP_CONNECT, 2.5);
  r.u.net.peer = ipv4(10, 0, 0, 1, 29500);
  r.u.net.local = ipv4(10, 0, 0, 2, 40000);
  r.ret = -1;
  r.err = ECONNREFUSED;
  r.flags = RDZV_F_STORE;
  r.fd = 7;
  r.dur_ns = 5000;
  const Event e = decode_event(99, r);
  CHECK(e.is_connect());
  CHECK(e.on_store_socket());
  CHECK_FALSE(e.succeeded());
  CHECK(e.err == ECONNREFUSED);
  CHECK(e.fd == 7);
  CHECK(e.dur_ns == 5000);
  CHECK(e.peer().port == 29500);
  CHECK(e.local().port == 40000);
  CHECK(e.resolve().host.empty());

  rdzv_record w = make_record(RDZV_EV_POLL, RDZV_OP_POLL);
  w.u.net.timeout_ms = 1800000;
  w.u.net.nfds = 1;
  const Event wait = decode_event(0, w);
  CHECK(wait.socket().timeout_ms == 1800000);
  CHECK(wait.socket().waited_fds == 1);
}

TEST_CASE("a close names where its socket led and its totals") {
  rdzv_record r = make_record(RDZV_EV_CLOSE, RDZV_OP_CLOSE);
  r.u.close.peer = ipv4(10, 0, 0, 1, 29500);
  r.u.close.bytes_sent = 10;
  r.u.close.bytes_recv = 20;
  r.flags = RDZV_F_STORE | RDZV_F_ABANDONED;
  const Event e = decode_event(0, r);
  CHECK(e.close().bytes_sent == 10);
  CHECK(e.close().bytes_received == 20);
  // An abandoned connect is closed: its close still says where it was going.
  CHECK(e.peer().port == 29500);
  CHECK(e.socket().size == 0);
}

TEST_CASE("process and snapshot records decode into their own bodies") {
  rdzv_record x = make_record(RDZV_EV_PROC_EXIT, RDZV_OP_EXIT);
  x.u.proc.status = 3;
  std::strcpy(x.u.proc.path, "/usr/bin/python3");
  const Event exit = decode_event(0, x);
  CHECK(exit.process().status == 3);
  CHECK(exit.process().path == "/usr/bin/python3");
  CHECK(exit.peer().family == 0);

  rdzv_record s = make_record(RDZV_EV_SNAPSHOT, RDZV_SNAP_FIRST_STORE_CONNECT);
  s.u.snap.utime_us = 42;
  const Event snap = decode_event(0, s);
  CHECK(snap.snapshot().utime_us == 42);
  CHECK(snap.op == RDZV_SNAP_FIRST_STORE_CONNECT);
}

TEST_CASE("a kind this reader does not know keeps its outcome and has no body") {
  rdzv_record r = make_record(RDZV_EV_CONNECT, RDZV_OP_CONNECT);
  r.kind = 200;
  r.u.net.peer = ipv4(10, 0, 0, 1, 29500);
  r.err = ETIMEDOUT;
  const Event e = decode_event(0, r);
  CHECK(e.kind == 200);
  CHECK(e.err == ETIMEDOUT);
  CHECK(e.peer().family == 0);
  CHECK(e.process().path.empty());
  CHECK(e.snapshot().utime_us == 0);
}
