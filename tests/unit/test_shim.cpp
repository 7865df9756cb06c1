// The shim's own pieces that work without preloading it (shim/CMakeLists.txt:
// rdzvscope_shim_parts): the fd table, the text helpers, the hooks' RecordScope, and the one
// list of exported names (shim/exports.map) against the table of libc functions it wraps.
#include <catch2/catch.hpp>

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "shim/fd_table.h"
#include "shim/guard.h"
#include "shim/hook.h"
#include "shim/real_calls.h"
#include "shim/text.h"

using namespace rdzv;

namespace {

// A connected TCP pair on loopback is not needed: the table only looks at the inode.
struct SocketPair {
  int fd[2] = {-1, -1};
  SocketPair() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fd) == 0); }
  ~SocketPair() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
};

rdzv_sockaddr peer_at(std::uint16_t port) {
  rdzv_sockaddr a{};
  a.family = 2;  // AF_INET
  a.port = port;
  a.addr[0] = 127;
  a.addr[3] = 1;
  return a;
}

}  // namespace

// ---------------------------------------------------------------- fd table

TEST_CASE("fd table: fds out of range are never tracked", "[shim][fd_table]") {
  CHECK(fd_info(-1) == 0);
  CHECK(fd_info(kMaxTrackedFd) == 0);
  fd_info_set(kMaxTrackedFd, kFdTcp);
  fd_info_set(-5, kFdTcp);
  fd_info_update(kMaxTrackedFd + 1, kFdTcp, 0);
  CHECK(fd_forget(kMaxTrackedFd) == 0);
  CHECK(fd_info(kMaxTrackedFd) == 0);
  CHECK(g_watched_fds == 0);
}

TEST_CASE("fd table: watched fds and pending store connects are counted", "[shim][fd_table]") {
  const int fd = 900;
  fd_info_set(fd, kFdTcp);
  CHECK(g_watched_fds == 0);  // a plain TCP socket is not watched
  fd_info_update(fd, kFdStore | kFdPending, 0);
  CHECK(fd_info(fd) == (kFdTcp | kFdStore | kFdPending));
  CHECK(g_watched_fds == 1);
  CHECK(g_store_pending == 1);
  fd_info_update(fd, 0, kFdPending);  // the connect finished
  CHECK(g_watched_fds == 1);
  CHECK(g_store_pending == 0);
  fd_info_set(fd + 1, kFdTcp | kFdPending);  // a plain pending connect is watched too
  CHECK(g_watched_fds == 2);
  CHECK(g_store_pending == 0);
  CHECK(fd_forget(fd) == (kFdTcp | kFdStore));
  CHECK(fd_forget(fd + 1) == (kFdTcp | kFdPending));
  CHECK(fd_info(fd) == 0);
  CHECK(g_watched_fds == 0);
}

TEST_CASE("fd table: a slot is claimed, initialised, pointed at and freed", "[shim][fd_table]") {
  SocketPair sp;
  const int fd = sp.fd[0];
  ConnSlot* s = conn_slot_claim(fd, true, 123, peer_at(29500));
  REQUIRE(s != nullptr);
  CHECK(s->owner_fd == fd);
  ConnSlot* other = conn_slot_claim(sp.fd[1], false, 0, peer_at(1));
  REQUIRE(other != nullptr);
  CHECK(other != s);  // a claimed slot is not handed out again
  CHECK(s->store == 1);
  CHECK(s->opened_ns == 123);
  CHECK(s->peer.port == 29500);
  CHECK(s->local.family == 0);
  CHECK(s->calls_send == 0);
  CHECK(s->events_recorded == 0);
  CHECK(s->rcvtimeo_ms == -2);  // nothing recorded yet
  CHECK(s->sndtimeo_ms == -2);
  CHECK(s->inode != 0);
  const std::uint16_t bits = conn_slot_bits(s);
  CHECK(bits != 0);
  CHECK((bits & ~kFdSlotMask) == 0);
  CHECK(conn_slot(bits) == s);
  CHECK(conn_slot(kFdTcp | kFdStore) == nullptr);
  CHECK(conn_slot_bits(nullptr) == 0);

  fd_info_set(fd, static_cast<std::uint16_t>(kFdTcp | kFdStore | bits));
  CHECK_FALSE(forget_if_stale(fd, fd_info(fd)));  // still the socket it was made for
  fd_forget(fd);
  CHECK(s->owner_fd == -1);  // free again
  __atomic_store_n(&other->owner_fd, -1, __ATOMIC_RELEASE);
}

TEST_CASE("fd table: a number reused for another file is forgotten", "[shim][fd_table]") {
  SocketPair sp;
  const int fd = sp.fd[0];
  ConnSlot* s = conn_slot_claim(fd, true, 1, peer_at(29500));
  REQUIRE(s != nullptr);
  fd_info_set(fd, static_cast<std::uint16_t>(kFdTcp | kFdStore | conn_slot_bits(s)));
  // glibc closed it behind our back (fclose of an fdopen'ed socket) and the number was reused.
  const int file = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  REQUIRE(file >= 0);
  REQUIRE(::dup2(file, fd) == fd);
  ::close(file);
  CHECK(forget_if_stale(fd, fd_info(fd)));
  CHECK(fd_info(fd) == 0);
  CHECK(s->owner_fd == -1);
  CHECK_FALSE(forget_if_stale(fd, kFdTcp));  // no slot: nothing to compare, nothing done
}

TEST_CASE("fd table: dup copies a traced socket's classification", "[shim][fd_table]") {
  SocketPair sp;
  const int fd = sp.fd[0];
  ConnSlot* s = conn_slot_claim(fd, true, 7, peer_at(29500));
  REQUIRE(s != nullptr);
  s->local = peer_at(40000);
  fd_info_set(fd, static_cast<std::uint16_t>(kFdTcp | kFdStore | kFdNonblock | kFdPending |
                                             conn_slot_bits(s)));
  const int copy = ::dup(fd);
  REQUIRE(copy >= 0);
  fd_copy_classification(fd, copy);
  const std::uint16_t info = fd_info(copy);
  CHECK((info & kFdTcp));
  CHECK((info & kFdStore));
  CHECK((info & kFdNonblock));
  CHECK_FALSE((info & kFdPending));  // the outcome is read on the original
  ConnSlot* c = conn_slot(info);
  REQUIRE(c != nullptr);
  CHECK(c != s);
  CHECK(c->owner_fd == copy);
  CHECK(c->peer.port == 29500);
  CHECK(c->local.port == 40000);
  CHECK(c->opened_ns == 7);

  fd_copy_classification(fd, fd);  // onto itself: nothing
  CHECK(conn_slot(fd_info(fd)) == s);
  fd_forget(copy);
  fd_forget(fd);
  ::close(copy);
}

TEST_CASE("fd table: a fork child's counters start at zero", "[shim][fd_table]") {
  SocketPair sp;
  ConnSlot* s = conn_slot_claim(sp.fd[0], true, 1, peer_at(29500));
  REQUIRE(s != nullptr);
  s->bytes_sent = 10;
  s->calls_recv = 3;
  s->events_recorded = 32;
  s->failures_recorded = 2;
  fd_table_reset_counters();
  CHECK(s->bytes_sent == 0);
  CHECK(s->calls_recv == 0);
  CHECK(s->events_recorded == 0);
  CHECK(s->failures_recorded == 0);
  CHECK(s->peer.port == 29500);  // what the socket is stays
  fd_forget(sp.fd[0]);
}

// ---------------------------------------------------------------- text

TEST_CASE("TextBuf: the shim's face of the core's text building", "[shim][text]") {
  char buf[16];
  TextBuf t(buf, sizeof buf);
  t.str("fd ").i64(-3).ch('/').u64(42).str("xyz", 2);
  CHECK(std::string(t.c_str()) == "fd -3/42xy");
  CHECK(t.size() == 10);
  CHECK_FALSE(t.truncated());
  t.str("0123456789");
  CHECK(t.size() == 15);
  CHECK(t.truncated());
  CHECK(std::string(buf) == "fd -3/42xy01234");
}

TEST_CASE("copy_cut and env_nonempty as the shim uses them", "[shim][text]") {
  char dst[3];
  CHECK(copy_cut(dst, sizeof dst, "abc"));
  CHECK(std::string(dst) == "ab");
  ::setenv("RDZVSCOPE_UNIT_SHIM_VAR", "", 1);
  CHECK(env_nonempty("RDZVSCOPE_UNIT_SHIM_VAR") == nullptr);
  ::setenv("RDZVSCOPE_UNIT_SHIM_VAR", "1", 1);
  CHECK(std::string(env_nonempty("RDZVSCOPE_UNIT_SHIM_VAR")) == "1");
  ::unsetenv("RDZVSCOPE_UNIT_SHIM_VAR");
}

// ---------------------------------------------------------------- the hooks' one form

TEST_CASE("RecordScope: guard held while recording, the call's errno given back", "[shim][hook]") {
  CHECK_FALSE(in_guard());
  errno = ECONNREFUSED;
  {
    RecordScope scope;
    CHECK(in_guard());
    CHECK(scope.call_errno() == ECONNREFUSED);
    errno = ENOENT;  // what a recorder's own calls leave
    {
      RecordScope nested;
      CHECK(in_guard());
    }
    CHECK(in_guard());
  }
  CHECK_FALSE(in_guard());
  CHECK(errno == ECONNREFUSED);
}

TEST_CASE("exports.map lists exactly the wrapped libc functions", "[shim][hook]") {
  std::ifstream in(RDZVSCOPE_SOURCE_DIR "/shim/exports.map");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  std::string map = text.str();
  map = std::regex_replace(map, std::regex(R"(/\*[\s\S]*?\*/)"), "");
  const auto global = map.find("global:");
  const auto local = map.find("local:");
  REQUIRE(global != std::string::npos);
  REQUIRE(local != std::string::npos);
  std::set<std::string> exported;
  const std::string names = map.substr(global + 7, local - global - 7);
  const std::regex name(R"([A-Za-z_][A-Za-z0-9_]*)");
  for (auto it = std::sregex_iterator(names.begin(), names.end(), name);
       it != std::sregex_iterator(); ++it)
    exported.insert(it->str());

  std::set<std::string> wrapped;
#define RDZV_NAME_OF(fn, ret, params) wrapped.insert(#fn);
  RDZV_REAL_FUNCTIONS(RDZV_NAME_OF)
#undef RDZV_NAME_OF

  std::set<std::string> only_exported, only_wrapped;
  std::set_difference(exported.begin(), exported.end(), wrapped.begin(), wrapped.end(),
                      std::inserter(only_exported, only_exported.end()));
  std::set_difference(wrapped.begin(), wrapped.end(), exported.begin(), exported.end(),
                      std::inserter(only_wrapped, only_wrapped.end()));
  // Every libc function the shim reaches through real:: is one it exports a hook for, and the
  // only hooks without a real:: counterpart are the exec variants built on execve/execvpe.
  CHECK(only_wrapped.empty());
  CHECK(only_exported == std::set<std::string>{"execl", "execle", "execlp", "execv", "execvp"});
}
