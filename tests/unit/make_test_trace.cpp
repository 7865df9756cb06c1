// make_test_trace good|truncated|torn PATH: writes a small trace for the end-to-end tests
// of the rdzvscope executable (cli_test.py), with the same builder the unit tests use.
#include <cstdio>
#include <cstring>
#include <string>

#include "trace_builder.h"

using namespace rdzvscope::test;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_test_trace good|truncated|torn PATH\n");
    return 2;
  }
  const std::string what = argv[1];
  TraceBuilder b(8);
  b.add(make_record(RDZV_EV_PROC_START, RDZV_OP_INIT, 0.0));
  auto resolve = make_record(RDZV_EV_RESOLVE, RDZV_OP_GETADDRINFO, 0.1);
  std::strcpy(resolve.u.resolve.host, "node0");
  resolve.u.resolve.first = ipv4(10, 0, 0, 1, 29500);
  b.add(resolve);
  auto connect = make_record(RDZV_EV_CONNECT, RDZV_OP_CONNECT, 0.2);
  connect.flags = RDZV_F_STORE;
  connect.ret = -1;
  connect.err = 111;  // ECONNREFUSED
  connect.u.net.peer = ipv4(10, 0, 0, 1, 29500);
  if (what == "torn") {
    b.add_torn(connect);
  } else {
    b.add(connect);
  }
  b.add(make_record(RDZV_EV_PROC_EXIT, RDZV_OP_EXIT, 0.3));
  if (what == "truncated") {
    b.write_truncated(argv[2], rdzv_record_offset(3) + 10);  // cut inside slot 3
  } else if (what == "good" || what == "torn") {
    b.write(argv[2]);
  } else {
    std::fprintf(stderr, "make_test_trace: unknown kind %s\n", what.c_str());
    return 2;
  }
  return 0;
}
