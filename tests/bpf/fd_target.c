/* The program `rdzvscope attach` is tested on for store sockets whose descriptor changes behind
 * the calls the store-socket table is learnt from (bpf/fd_copies.bpf.h, bpf/waits.bpf.h).
 * Started untraced, it waits for a line on stdin (sent once the probes are attached), makes a
 * store connection to itself on IO_PORT (a store port: RDZVSCOPE_PORTS), then:
 *   fd_target dup IO_PORT          sends on copies made by dup, dup2, dup3, F_DUPFD and
 *                                  F_DUPFD_CLOEXEC, each closed; dup2 over a store socket
 *   fd_target fork IO_PORT         a forked child sends on the inherited socket and closes it
 *   fd_target close_range IO_PORT  two copies closed by close_range; their numbers reused by an
 *                                  AF_UNIX socketpair, written to
 *   fd_target exec IO_PORT         a close-on-exec copy and a plain copy, then exec of itself
 *                                  (`after_exec`): the first number reused and written to, the
 *                                  surviving copy sent on and closed
 *   fd_target quick_client PORT    no handshake: at once connects to PORT (a store port only
 *                                  its own environment names), sends "ping", reads 4 bytes,
 *                                  closes: a program that beats any loader to its first connect
 *   fd_target waits IO_PORT STORE_PORT  select and pselect time out on the store socket;
 *                                  epoll_wait and epoll_pwait time out while a connect to the
 *                                  store port (a listener with a full backlog) is pending; a
 *                                  readv reads the store socket
 * and prints "what ret errno [fd]" per call, for the test to compare with the trace. */
#define _GNU_SOURCE
#include "common.h" /* tests/integration: it_loopback and friends */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>


static void die(const char* what) {
  perror(what);
  exit(4);
}

static int listen_on(int port, int backlog) {
  struct sockaddr_in a = it_loopback(port);
  int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0);
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(ls, (struct sockaddr*)&a, sizeof a) != 0 || listen(ls, backlog) != 0) die("fd_target: listen");
  return ls;
}

static int connect_to(int port, int type) {
  struct sockaddr_in a = it_loopback(port);
  int s = socket(AF_INET, type, 0);
  int r = connect(s, (struct sockaddr*)&a, sizeof a);
  if (r != 0 && !(errno == EINPROGRESS && (type & SOCK_NONBLOCK))) die("fd_target: connect");
  return s;
}

static void print_call(const char* what, long r, int fd) {
  printf("%s %ld %d %d\n", what, r, r < 0 ? errno : 0, fd);
  fflush(stdout);
}

static char buf[64] = "0123456789";

/* Sends n bytes on the copy fd (n tells the copies apart in the trace), then closes it. */
static void use_copy(const char* what, int fd, int n) {
  if (fd < 0) die(what);
  print_call(what, send(fd, buf, n, MSG_NOSIGNAL), fd);
  close(fd);
}

static void dup_section(int c, int io_port) {
  use_copy("dup", dup(c), 3);
  use_copy("dup2", dup2(c, 50), 4);
  use_copy("dup3", dup3(c, 51, O_CLOEXEC), 5);
  use_copy("dupfd", fcntl(c, F_DUPFD, 60), 6);
  use_copy("dupfd_cloexec", fcntl(c, F_DUPFD_CLOEXEC, 70), 7);
  /* dup2 over another store socket: that one is closed by the call (its close record), and
   * its number is a copy of c from then on. */
  int other = connect_to(io_port, SOCK_STREAM);
  print_call("other", send(other, buf, 1, MSG_NOSIGNAL), other);
  use_copy("dup2_over", dup2(c, other), 8);
}

static void fork_section(int c) {
  pid_t child = fork();
  if (child == 0) {
    send(c, buf, 9, MSG_NOSIGNAL); /* the child's own file: send and close, 9 bytes */
    close(c);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  print_call("child", status, child);
  print_call("parent_send", send(c, buf, 2, MSG_NOSIGNAL), c);
}

static void close_range_section(int c) {
  int a = dup(c), b = dup(c);
  if (b != a + 1) die("fd_target: copies not adjacent");
  print_call("close_range", close_range(a, b, 0), a);
  /* The numbers are free again: the next descriptors made take them. Not store sockets. */
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 || sv[0] != a) die("fd_target: socketpair");
  print_call("reused_write", write(a, buf, 1), a);
}

static void exec_section(int c, const char* self, const char* io_port) {
  int cloexec = fcntl(c, F_DUPFD_CLOEXEC, 0), kept = dup(c);
  print_call("cloexec_copy", 0, cloexec);
  print_call("kept_copy", 0, kept);
  char cloexec_s[16], kept_s[16];
  snprintf(cloexec_s, sizeof cloexec_s, "%d", cloexec);
  snprintf(kept_s, sizeof kept_s, "%d", kept);
  execl(self, self, "after_exec", io_port, cloexec_s, kept_s, (char*)NULL);
  die("fd_target: exec");
}

/* The new image: the close-on-exec copy's number is free (the kernel closed it), the other
 * copy is still the store socket. */
static int after_exec(int cloexec, int kept) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 || sv[0] != cloexec) die("fd_target: socketpair");
  print_call("reused_write", write(cloexec, buf, 1), cloexec);
  print_call("kept_send", send(kept, buf, 6, MSG_NOSIGNAL), kept);
  close(kept);
  return 0;
}

static void waits_section(int c, int s, int store_port) {
  fd_set rd;
  FD_ZERO(&rd);
  FD_SET(c, &rd);
  struct timeval tv = {0, 100000};
  print_call("select", select(c + 1, &rd, NULL, NULL, &tv), c);
  FD_ZERO(&rd);
  FD_SET(c, &rd);
  struct timespec ts = {0, 100000000};
  print_call("pselect", pselect(c + 1, &rd, NULL, NULL, &ts, NULL), c);

  /* A connect that stays pending: the listener's backlog (0) holds the first connection, and
   * the kernel drops the SYNs of the next while nobody accepts. */
  int ls = listen_on(store_port, 0);
  int first = connect_to(store_port, SOCK_STREAM);
  int pending = connect_to(store_port, SOCK_STREAM | SOCK_NONBLOCK);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLOUT, .data = {.fd = pending}};
  epoll_ctl(ep, EPOLL_CTL_ADD, pending, &ev);
  print_call("epoll_wait", epoll_wait(ep, &ev, 1, 100), ep);
  print_call("epoll_pwait", epoll_pwait(ep, &ev, 1, 100, NULL), ep);
  close(ep);
  close(pending);
  close(first);
  close(ls);

  print_call("send", send(c, buf, 5, MSG_NOSIGNAL), c);
  char a[8], b[8];
  struct iovec iov[2] = {{a, sizeof a}, {b, sizeof b}};
  print_call("readv", readv(s, iov, 2), s);
}

/* The first thing the program does: whatever learns its store port must have done so at exec. */
static int quick_client(int port) {
  int c = connect_to(port, SOCK_STREAM);
  char reply[4];
  if (send(c, "ping", 4, MSG_NOSIGNAL) != 4 || it_read_full(c, reply, sizeof reply) != sizeof reply)
    die("fd_target: quick_client");
  close(c);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 5 && strcmp(argv[1], "after_exec") == 0) return after_exec(atoi(argv[3]), atoi(argv[4]));
  if (argc < 3) {
    fprintf(stderr, "usage: fd_target dup|fork|close_range|exec|quick_client|waits IO_PORT [STORE_PORT]\n");
    return 2;
  }
  const char* mode = argv[1];
  int io_port = atoi(argv[2]);
  if (strcmp(mode, "quick_client") == 0) return quick_client(io_port);
  printf("ready\n");
  fflush(stdout);
  char line[16];
  if (!fgets(line, sizeof line, stdin)) return 3;

  int ls = listen_on(io_port, 8);
  int c = connect_to(io_port, SOCK_STREAM), s = accept(ls, NULL, NULL);
  if (s < 0) die("fd_target: accept");
  if (strcmp(mode, "dup") == 0) dup_section(c, io_port);
  else if (strcmp(mode, "fork") == 0) fork_section(c);
  else if (strcmp(mode, "close_range") == 0) close_range_section(c);
  else if (strcmp(mode, "exec") == 0) exec_section(c, argv[0], argv[2]);
  else if (strcmp(mode, "waits") == 0 && argc == 4) waits_section(c, s, atoi(argv[3]));
  else return 2;
  close(c);
  return 0;
}
