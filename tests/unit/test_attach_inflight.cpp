// Calls in flight under attach (bpf/inflight.h): which calls the kernel side holds become
// slots, by the recorder core's rule (rdzv_inflight_publishes), and how the loader keeps a
// file's slots equal to them across passes, returns, deaths in a call and attach's end.
#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "inflight.h"
#include "rdzvscope/recorder_core.h"

using rdzvscope::bpf::CallContext;
using rdzvscope::bpf::InflightSlots;
using rdzvscope::bpf::SlotCall;
using rdzvscope::bpf::slot_of;

namespace {

constexpr int kPid = 100;
constexpr std::uint64_t kPoll = 7, kEpollWait = 232;

// The kernel's tables as the tests set them: store sockets by fd, pollfd arrays by address.
struct Kernel {
  std::map<int, store_sock> socks;
  std::map<std::uint64_t, std::string> memory;
  bool pending_connect = false;
  CallContext ctx() {
    CallContext c;
    c.store_sock_of = [this](int, int fd, store_sock* out) {
      auto it = socks.find(fd);
      if (it == socks.end()) return false;
      *out = it->second;
      return true;
    };
    c.connect_pending = [this](int) { return pending_connect; };
    c.found_call = [](int, std::uint32_t) { return std::optional<SlotCall>(); };
    c.read_memory = [this](int, std::uint64_t addr, std::size_t len) {
      auto it = memory.find(addr);
      return it == memory.end() ? std::string() : it->second.substr(0, len);
    };
    return c;
  }
};

rdzv_bpf_inflight entered(std::uint8_t kind, std::uint8_t op, int fd, std::uint32_t tid = 7) {
  rdzv_bpf_inflight in{};
  in.tgid = kPid;
  in.tid = tid;
  in.from = RDZV_BPF_FROM_ENTER;
  in.c.rec.kind = kind;
  in.c.rec.op = op;
  in.c.rec.fd = fd;
  in.c.rec.ts_ns = 5000;
  in.c.rec.u.net.timeout_ms = -1;
  return in;
}

store_sock sock_to(std::uint16_t port, bool pending = false) {
  store_sock ss{};
  ss.peer.family = 2;
  ss.peer.port = port;
  ss.pending = pending;
  return ss;
}

std::string pollfds(std::initializer_list<int> fds) {
  std::string raw;
  for (int fd : fds) {
    char entry[8] = {};
    std::memcpy(entry, &fd, sizeof fd);
    raw.append(entry, sizeof entry);
  }
  return raw;
}

int published(const rdzv_file_header& h) {
  int n = 0;
  for (const rdzv_inflight& s : h.inflight) n += s.seal != 0;
  return n;
}

const rdzv_inflight* slot_of_tid(const rdzv_file_header& h, std::uint32_t tid) {
  for (const rdzv_inflight& s : h.inflight)
    if (s.seal && s.owner == tid) return &s;
  return nullptr;
}

SlotCall recv_call(std::uint32_t tid, std::uint64_t start) {
  SlotCall c;
  c.tid = tid;
  c.kind = RDZV_EV_RECV;
  c.op = RDZV_OP_RECV;
  c.flags = RDZV_F_STORE;
  c.fd = 4;
  c.start_ns = start;
  return c;
}

}  // namespace

TEST_CASE("the recorder core's rule: what is published in flight", "[core][inflight]") {
  CHECK(rdzv_inflight_publishes(RDZV_EV_RECV, RDZV_F_STORE, -1));
  CHECK_FALSE(rdzv_inflight_publishes(RDZV_EV_RECV, RDZV_F_STORE | RDZV_F_NONBLOCK, -1));
  CHECK_FALSE(rdzv_inflight_publishes(RDZV_EV_RECV, 0, -1));
  CHECK_FALSE(rdzv_inflight_publishes(RDZV_EV_SEND, RDZV_F_STORE, -1));
  CHECK(rdzv_inflight_publishes(RDZV_EV_CONNECT, RDZV_F_STORE, -1));
  CHECK_FALSE(rdzv_inflight_publishes(RDZV_EV_CONNECT, RDZV_F_STORE | RDZV_F_NONBLOCK, -1));
  CHECK(rdzv_inflight_publishes(RDZV_EV_ACCEPT, RDZV_F_STORE, -1));
  CHECK(rdzv_inflight_publishes(RDZV_EV_POLL, RDZV_F_STORE, 1800000));
  CHECK(rdzv_inflight_publishes(RDZV_EV_POLL, RDZV_F_NONBLOCK, -1));
  CHECK_FALSE(rdzv_inflight_publishes(RDZV_EV_POLL, RDZV_F_STORE, 0));
  CHECK(rdzv_inflight_publishes(RDZV_EV_RESOLVE, 0, -1));
  CHECK_FALSE(rdzv_inflight_publishes(RDZV_EV_CLOSE, RDZV_F_STORE, -1));
}

TEST_CASE("the recorder core publishes a socket call and a lookup, sealed", "[core][inflight]") {
  auto h = std::make_unique<rdzv_file_header>();
  rdzv_sockaddr peer{};
  peer.family = 2;
  peer.port = 29500;
  rdzv_inflight* s = rdzv_inflight_begin_socket(h.get(), 42, RDZV_EV_POLL, RDZV_OP_POLL, RDZV_F_STORE, 5, 1234, 9000, &peer);
  REQUIRE(s);
  CHECK(s->owner == 42);
  CHECK(s->seal == rdzv_inflight_seal(1234));
  CHECK(s->has == (RDZV_INFLIGHT_HAS_TIMEOUT | RDZV_INFLIGHT_HAS_PEER));
  CHECK(s->timeout_ms == 9000);
  CHECK(s->u.peer.port == 29500);
  rdzv_inflight* l = rdzv_inflight_begin_lookup(h.get(), 43, RDZV_OP_GETADDRINFO, 0,
                                                "a-name-longer-than-thirty-one-bytes.example", 99);
  REQUIRE(l);
  CHECK(l->fd == -1);
  CHECK((l->flags & RDZV_F_TRUNCATED));
  CHECK(std::strlen(l->u.host) == RDZV_INFLIGHT_HOST_MAX - 1);
  rdzv_inflight_release(s);
  CHECK(s->seal == 0);
  CHECK(s->owner == 0);
}

TEST_CASE("attach: the calls the kernel holds, as slots", "[bpf][inflight]") {
  Kernel k;
  k.socks[4] = sock_to(29500);
  k.socks[6] = sock_to(29500, true);
  SECTION("a store receive, with its peer; not one with MSG_DONTWAIT; never a send") {
    auto s = slot_of(entered(RDZV_EV_RECV, RDZV_OP_RECV, 4), k.ctx());
    REQUIRE(s);
    CHECK(s->flags == RDZV_F_STORE);
    CHECK(s->peer.port == 29500);
    auto dontwait = entered(RDZV_EV_RECV, RDZV_OP_RECV, 4);
    dontwait.c.dontwait = 1;
    CHECK_FALSE(slot_of(dontwait, k.ctx()));
    CHECK_FALSE(slot_of(entered(RDZV_EV_SEND, RDZV_OP_SEND, 4), k.ctx()));
    CHECK_FALSE(slot_of(entered(RDZV_EV_SOCKOPT, RDZV_OP_SETSOCKOPT, 4), k.ctx()));
  }
  SECTION("a poll: the first store socket among its descriptors, nonblock while it connects") {
    auto in = entered(RDZV_EV_POLL, RDZV_OP_POLL, -1);
    in.c.id = kPoll;
    in.c.user_ptr = 0x1000;
    in.c.rec.u.net.nfds = 3;
    in.c.rec.u.net.timeout_ms = 1800000;
    k.memory[0x1000] = pollfds({9, 4, 6});
    auto s = slot_of(in, k.ctx());
    REQUIRE(s);
    CHECK(s->fd == 4);
    CHECK(s->timeout_ms == 1800000);
    CHECK(s->flags == RDZV_F_STORE);
    k.memory[0x1000] = pollfds({6, 4});
    s = slot_of(in, k.ctx());
    REQUIRE(s);
    CHECK(s->fd == 6);
    CHECK(s->flags == (RDZV_F_STORE | RDZV_F_NONBLOCK));
    k.memory[0x1000] = pollfds({9, 10, 11});
    CHECK_FALSE(slot_of(in, k.ctx()));
    k.memory.clear();  // the memory cannot be read: no slot rather than a guess
    CHECK_FALSE(slot_of(in, k.ctx()));
  }
  SECTION("an epoll wait only while a store connect is in progress, named by its epoll fd") {
    auto in = entered(RDZV_EV_POLL, RDZV_OP_EPOLL_WAIT, 12);
    in.c.id = kEpollWait;
    in.c.rec.u.net.timeout_ms = 500;
    CHECK_FALSE(slot_of(in, k.ctx()));
    k.pending_connect = true;
    auto s = slot_of(in, k.ctx());
    REQUIRE(s);
    CHECK(s->fd == 12);
  }
  SECTION("a blocking store connect and a lookup") {
    auto c = entered(RDZV_EV_CONNECT, RDZV_OP_CONNECT, 8);
    c.c.rec.flags = RDZV_F_STORE;
    c.c.rec.u.net.peer.port = 29500;
    auto s = slot_of(c, k.ctx());
    REQUIRE(s);
    CHECK(s->peer.port == 29500);
    c.c.rec.flags = RDZV_F_STORE | RDZV_F_NONBLOCK;  // it waits in poll instead
    CHECK_FALSE(slot_of(c, k.ctx()));
    rdzv_bpf_inflight g{};
    g.tgid = kPid;
    g.tid = 9;
    g.from = RDZV_BPF_FROM_LOOKUP;
    g.c.rec.op = RDZV_OP_GETADDRINFO;
    std::strcpy(g.c.rec.u.resolve.host, "master-0");
    s = slot_of(g, k.ctx());
    REQUIRE(s);
    CHECK(s->kind == RDZV_EV_RESOLVE);
    CHECK(s->host == "master-0");
  }
}

TEST_CASE("attach: a file's slots follow the passes, returns and deaths", "[bpf][inflight]") {
  auto h = std::make_unique<rdzv_file_header>();
  InflightSlots slots;
  slots.sync(h.get(), {recv_call(7, 100), recv_call(8, 200)}, {7, 8});
  REQUIRE(published(*h) == 2);
  REQUIRE(slot_of_tid(*h, 7));
  CHECK(slot_of_tid(*h, 7)->start_ns == 100);

  SECTION("the same call at the next pass keeps its slot; another call replaces it") {
    const rdzv_inflight* before = slot_of_tid(*h, 7);
    slots.sync(h.get(), {recv_call(7, 100), recv_call(8, 300)}, {7, 8});
    CHECK(slot_of_tid(*h, 7) == before);
    REQUIRE(slot_of_tid(*h, 8));
    CHECK(slot_of_tid(*h, 8)->start_ns == 300);
    CHECK(published(*h) == 2);
  }
  SECTION("a thread alive in no call: its slot is emptied") {
    slots.sync(h.get(), {recv_call(8, 200)}, {7, 8});
    CHECK_FALSE(slot_of_tid(*h, 7));
    CHECK(published(*h) == 1);
  }
  SECTION("its call's record reaching attach empties it at once") {
    rdzv_record r{};
    r.tid = 7;
    r.ts_ns = 100;
    slots.returned(h.get(), r);
    CHECK_FALSE(slot_of_tid(*h, 7));
  }
  SECTION("a thread gone without a notice: emptied at the second pass") {
    slots.sync(h.get(), {recv_call(8, 200)}, {8});
    CHECK(slot_of_tid(*h, 7));
    slots.sync(h.get(), {recv_call(8, 200)}, {8});
    CHECK_FALSE(slot_of_tid(*h, 7));
  }
  SECTION("a thread killed in its call keeps it for good") {
    slots.sync(h.get(), {recv_call(8, 200)}, {8});
    slots.died(h.get(), 7, std::nullopt);
    slots.sync(h.get(), {}, {});
    slots.sync(h.get(), {}, {});
    slots.finish(h.get());
    CHECK(slot_of_tid(*h, 7));
    CHECK_FALSE(slot_of_tid(*h, 8));  // gone twice, no notice
  }
  SECTION("killed in a call no pass saw: published from the notice") {
    slots.died(h.get(), 9, recv_call(9, 400));
    REQUIRE(slot_of_tid(*h, 9));
    CHECK(slot_of_tid(*h, 9)->start_ns == 400);
  }
  SECTION("attach stops: a thread gone at the last pass, no notice, loses its slot") {
    slots.sync(h.get(), {recv_call(8, 200)}, {8});
    slots.finish(h.get());
    CHECK_FALSE(slot_of_tid(*h, 7));
    CHECK(slot_of_tid(*h, 8));
  }
}
