// The shim's multi-threaded stress program (issue 6): an in-process echo server on a store
// port and THREADS client threads that, all released at once, connect, send, receive, close,
// and every FORK_EVERY-th round fork a child that does one exchange of its own and _exits.
// Bounded: ROUNDS rounds per thread. Exit 0 when every exchange echoed exactly; else the
// number of the first check that failed. Run by run_stress.py under the regular shim
// (ctest stress.shim) and under a -fsanitize=thread build of it (stress.tsan).
// Usage: stress PORT [THREADS [ROUNDS [FORK_EVERY]]]
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr int kMsg = 64;

sockaddr_in loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

bool send_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::send(fd, p, n, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool recv_all(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// One client exchange: connect, send kMsg bytes, read them back, close. 0 or a failure code.
int exchange(int port, char tag) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 10;
  sockaddr_in a = loopback(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return 11;
  }
  char out[kMsg], in[kMsg];
  std::memset(out, tag, sizeof out);
  int rc = 0;
  if (!send_all(fd, out, sizeof out)) rc = 12;
  else if (!recv_all(fd, in, sizeof in)) rc = 13;
  else if (std::memcmp(in, out, sizeof in) != 0) rc = 14;
  if (::close(fd) != 0 && rc == 0) rc = 15;
  return rc;
}

// Echo server: poll over the listener, a stop pipe and every open connection.
void serve(int listener, int stop_fd, std::atomic<int>& failure) {
  std::vector<pollfd> fds{{listener, POLLIN, 0}, {stop_fd, POLLIN, 0}};
  for (;;) {
    if (::poll(fds.data(), fds.size(), 10000) <= 0) {
      failure = 20;  // nothing for 10 s: a client hung
      return;
    }
    if (fds[1].revents) return;
    if (fds[0].revents & POLLIN) {
      int s = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (s >= 0) fds.push_back({s, POLLIN, 0});
    }
    for (size_t i = 2; i < fds.size();) {
      if (fds[i].revents == 0) {
        ++i;
        continue;
      }
      char buf[4096];
      ssize_t r = ::recv(fds[i].fd, buf, sizeof buf, 0);
      if (r > 0 && send_all(fds[i].fd, buf, static_cast<size_t>(r))) {
        fds[i].revents = 0;
        ++i;
        continue;
      }
      ::close(fds[i].fd);
      fds[i] = fds.back();
      fds.pop_back();
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: stress PORT [THREADS [ROUNDS [FORK_EVERY]]]\n");
    return 2;
  }
  const int port = std::atoi(argv[1]);
  const int threads = argc > 2 ? std::atoi(argv[2]) : 8;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 200;
  const int fork_every = argc > 4 ? std::atoi(argv[4]) : 25;

  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = loopback(port);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listener, 512) != 0) {
    std::perror("stress: bind/listen");
    return 3;
  }
  int stop[2];
  if (::pipe2(stop, O_CLOEXEC) != 0) return 4;

  std::atomic<int> failure{0};
  std::atomic<int> exchanges{0}, children{0};
  std::thread server(serve, listener, stop[0], std::ref(failure));
  std::barrier start(threads);
  std::vector<std::thread> clients;
  for (int t = 0; t < threads; ++t) {
    clients.emplace_back([&, t] {
      start.arrive_and_wait();  // every thread's first connect at the same moment
      for (int r = 0; r < rounds && failure == 0; ++r) {
        if (fork_every > 0 && r % fork_every == fork_every - 1) {
          pid_t pid = ::fork();
          if (pid == 0) _exit(exchange(port, 'A' + t % 26));  // the child's own trace file
          int st = 0;
          if (pid < 0 || ::waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            std::fprintf(stderr, "stress: child of thread %d: status %d\n", t, st);
            failure = 30;
            return;
          }
          ++children;
        }
        if (int rc = exchange(port, 'a' + t % 26)) {
          std::fprintf(stderr, "stress: thread %d round %d: check %d (errno %d)\n", t, r, rc, errno);
          failure = rc;
          return;
        }
        ++exchanges;
      }
    });
  }
  for (auto& c : clients) c.join();
  char c = 's';
  if (::write(stop[1], &c, 1) != 1) failure = 5;
  server.join();
  ::close(listener);
  std::printf("stress: threads=%d rounds=%d exchanges=%d children=%d failure=%d\n", threads, rounds,
              exchanges.load(), children.load(), failure.load());
  return failure.load();
}
