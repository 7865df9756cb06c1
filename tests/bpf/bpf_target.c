/* The program `rdzvscope attach` is tested on: started untraced, it waits for a line on stdin
 * (the test sends it once the probes are attached), then fails in the ways a rendezvous does:
 *   bpf_target STORE_PORT TAKEN_PORT IO_PORT   (IO_PORT must be a store port: RDZVSCOPE_PORTS)
 *   1. a blocking connect to 127.0.0.1:STORE_PORT, where nothing listens: ECONNREFUSED
 *   2. a non-blocking connect there, its outcome read through poll + SO_ERROR: ECONNREFUSED
 *   3. getaddrinfo of a name that does not exist: EAI_NONAME
 *   4. bind to 127.0.0.1:TAKEN_PORT, which the test holds: EADDRINUSE
 *   5. store traffic with itself on IO_PORT (io_section below): a 0-byte recv, EPIPE and
 *      ECONNRESET on send, an expired SO_RCVTIMEO, a poll timeout, sendmmsg/recvmmsg
 *   bpf_target timeout STORE_PORT   (run where SYNs to STORE_PORT are dropped)
 *   1. a blocking connect: ETIMEDOUT
 *   2. a non-blocking connect given up after a 300 ms poll, then closed (abandoned)
 *   bpf_target forever STORE_PORT   (a server there accepts and never answers)
 *   after "go": a poll with no timeout and a ppoll with none, each on its own store
 *   connection in its own thread; prints "waiting", then blocks until killed
 *   bpf_target lookups NAME   (where the only DNS server never answers)
 *   after "go": getaddrinfo and gethostbyname of NAME, each in its own thread; prints
 *   "waiting", then blocks until killed (or the resolver gives up)
 *   bpf_target polls STORE_PORT   (a server there accepts and never answers)
 *   a loop of 1 ms polls on a store connection, from before "ready" until killed
 * and prints what each call returned, for the test to compare with the trace. */
#define _GNU_SOURCE /* ppoll */
#include "common.h" /* tests/integration: it_loopback and friends */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>


static int connect_to(int port) {
  struct sockaddr_in a = it_loopback(port);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(s, (struct sockaddr*)&a, sizeof a) != 0) {
    perror("bpf_target: connect to IO_PORT");
    exit(4);
  }
  return s;
}

static void print_call(const char* what, long r) { printf("%s %ld %d\n", what, r, r < 0 ? errno : 0); }

/* Both ends are this process's own store sockets: each failure is produced by the other end,
 * in an order that makes it certain. */
static void io_section(int io_port) {
  struct sockaddr_in a = it_loopback(io_port);
  int one = 1;
  char buf[64] = "ping";
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(ls, (struct sockaddr*)&a, sizeof a) != 0 || listen(ls, 4) != 0) {
    perror("bpf_target: listen on IO_PORT");
    exit(4);
  }

  /* The peer closes (FIN): a 0-byte recv; a send is answered by RST; the next one: EPIPE. */
  int c = connect_to(io_port), s = accept(ls, NULL, NULL);
  print_call("send_ping", send(c, buf, 4, MSG_NOSIGNAL));
  print_call("recv_ping", recv(s, buf, 4, 0));
  close(s);
  print_call("recv_zero", recv(c, buf, sizeof buf, 0));
  print_call("send_after_fin", send(c, buf, 1, MSG_NOSIGNAL));
  usleep(50000);
  print_call("send_epipe", send(c, buf, 1, MSG_NOSIGNAL));
  close(c);

  /* The peer aborts (SO_LINGER 0: RST): ECONNRESET on the next send. */
  c = connect_to(io_port);
  s = accept(ls, NULL, NULL);
  struct linger lg = {1, 0};
  setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  close(s);
  usleep(50000);
  print_call("send_reset", send(c, buf, 1, MSG_NOSIGNAL));
  close(c);

  /* A quiet peer: SO_RCVTIMEO expires (c10d 1.13's "Socket Timeout"), then a poll times out. */
  c = connect_to(io_port);
  s = accept(ls, NULL, NULL);
  struct timeval tv = {0, 200000};
  setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  print_call("recv_timeout", recv(c, buf, sizeof buf, 0));
  struct pollfd p = {c, POLLIN, 0};
  print_call("poll_timeout", poll(&p, 1, 100));
  /* Two messages each way in one call (3 + 2 bytes): records carry the bytes, 5. */
  char in[2][64];
  struct iovec out_iov[2] = {{"abc", 3}, {"de", 2}}, in_iov[2] = {{in[0], 64}, {in[1], 64}};
  struct mmsghdr out_m[2], in_m[2];
  it_messages(out_m, out_iov, 2);
  it_messages(in_m, in_iov, 2);
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* no Nagle wait between the two */
  print_call("sendmmsg", sendmmsg(s, out_m, 2, MSG_NOSIGNAL));
  usleep(50000); /* both segments in: the first message takes all 5 bytes */
  long got = recvmmsg(c, in_m, 2, MSG_WAITFORONE, NULL);
  print_call("recvmmsg_bytes", got < 0 ? got : (long)(in_m[0].msg_len + (got > 1 ? in_m[1].msg_len : 0)));
  close(c);
  close(s);
  close(ls);
}

/* Where SYNs to the store port are dropped. */
static int timeout_section(int store_port) {
  struct sockaddr_in a = it_loopback(store_port);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  print_call("connect", connect(s, (struct sockaddr*)&a, sizeof a));
  close(s);
  s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  print_call("connect_nonblock", connect(s, (struct sockaddr*)&a, sizeof a));
  struct pollfd p = {s, POLLOUT, 0};
  print_call("poll_connect", poll(&p, 1, 300));
  close(s);
  fflush(stdout);
  return 0;
}

static int wait_for_go(void) {
  printf("ready\n");
  fflush(stdout);
  char line[16];
  return fgets(line, sizeof line, stdin) != NULL;
}

/* Waits that began before attach and time out after it started: ppoll, select and
 * epoll_wait, each on its own store connection, each in its own thread, 4 s. */
static int wait_fds[3];
static long wait_rets[3];

static void *in_ppoll(void *arg) {
  struct pollfd p = {wait_fds[0], POLLIN, 0};
  struct timespec ts = {4, 0};
  wait_rets[0] = ppoll(&p, 1, &ts, NULL);
  return arg;
}

static void *in_select(void *arg) {
  fd_set r;
  FD_ZERO(&r);
  FD_SET(wait_fds[1], &r);
  struct timeval tv = {4, 0};
  wait_rets[1] = select(wait_fds[1] + 1, &r, NULL, NULL, &tv);
  return arg;
}

static void *in_epoll(void *arg) {
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = wait_fds[2]};
  epoll_ctl(ep, EPOLL_CTL_ADD, wait_fds[2], &ev);
  wait_rets[2] = epoll_wait(ep, &ev, 1, 4000);
  close(ep);
  return arg;
}

static int waits_now_section(int store_port) {
  void *(*waits[3])(void *) = {in_ppoll, in_select, in_epoll};
  pthread_t t[3];
  struct sockaddr_in a = it_loopback(store_port);
  for (int i = 0; i < 3; i++) {
    wait_fds[i] = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(wait_fds[i], (struct sockaddr*)&a, sizeof a) != 0) return 4;
  }
  for (int i = 0; i < 3; i++)
    if (pthread_create(&t[i], NULL, waits[i], NULL)) return 4;
  printf("ready %d %d %d\n", wait_fds[0], wait_fds[1], wait_fds[2]);
  fflush(stdout);
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  printf("ppoll %ld\nselect %ld\nepoll_wait %ld\n", wait_rets[0], wait_rets[1], wait_rets[2]);
  for (int i = 0; i < 3; i++) close(wait_fds[i]);
  return 0;
}

/* A hung rank's connect: blocking, begun before attach starts (no "go" awaited), its outcome
 * decided after. */
static int connect_now_section(int store_port) {
  struct sockaddr_in a = it_loopback(store_port);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  printf("ready\n");
  fflush(stdout);
  print_call("connect", connect(s, (struct sockaddr*)&a, sizeof a));
  close(s);
  fflush(stdout);
  return 0;
}

/* Calls that wait for ever, published in flight by attach as by the shim (inflight_forever
 * and inflight_lookups in run_bpf.py). */
static int forever_fds[2];
static void *poll_forever(void *arg) {
  (void)arg;
  struct pollfd p = {forever_fds[0], POLLIN, 0};
  poll(&p, 1, -1);
  return NULL;
}
static void *ppoll_forever(void *arg) {
  (void)arg;
  struct pollfd p = {forever_fds[1], POLLIN, 0};
  ppoll(&p, 1, NULL, NULL);
  return NULL;
}
static const char *lookup_name;
static void *getaddrinfo_forever(void *arg) {
  (void)arg;
  struct addrinfo *res = NULL;
  if (getaddrinfo(lookup_name, "29500", NULL, &res) == 0) freeaddrinfo(res);
  return NULL;
}
static void *gethostbyname_forever(void *arg) {
  (void)arg;
  gethostbyname(lookup_name);
  return NULL;
}
static int forever_section(void *(*a)(void *), void *(*b)(void *)) {
  pthread_t t[2];
  if (!wait_for_go()) return 3;
  if (pthread_create(&t[0], NULL, a, NULL) || pthread_create(&t[1], NULL, b, NULL)) return 4;
  printf("waiting\n");
  fflush(stdout);
  pthread_join(t[0], NULL);
  pthread_join(t[1], NULL);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "forever") == 0) {
    struct sockaddr_in a = it_loopback(atoi(argv[2]));
    for (int i = 0; i < 2; i++) {
      forever_fds[i] = socket(AF_INET, SOCK_STREAM, 0);
      if (connect(forever_fds[i], (struct sockaddr*)&a, sizeof a) != 0) return 4;
    }
    return forever_section(poll_forever, ppoll_forever);
  }
  if (argc == 3 && strcmp(argv[1], "polls") == 0) {
    struct sockaddr_in a = it_loopback(atoi(argv[2]));
    struct pollfd p = {socket(AF_INET, SOCK_STREAM, 0), POLLIN, 0};
    if (connect(p.fd, (struct sockaddr*)&a, sizeof a) != 0) return 4;
    printf("ready\n");
    fflush(stdout);
    for (;;) poll(&p, 1, 1);
  }
  if (argc == 3 && strcmp(argv[1], "lookups") == 0) {
    lookup_name = argv[2];
    return forever_section(getaddrinfo_forever, gethostbyname_forever);
  }
  if (argc == 3 && strcmp(argv[1], "connect_now") == 0) return connect_now_section(atoi(argv[2]));
  if (argc == 3 && strcmp(argv[1], "waits_now") == 0) return waits_now_section(atoi(argv[2]));
  if (argc == 3 && strcmp(argv[1], "timeout") == 0) {
    if (!wait_for_go()) return 3;
    return timeout_section(atoi(argv[2]));
  }
  if (argc != 4) {
    fprintf(stderr, "usage: bpf_target STORE_PORT TAKEN_PORT IO_PORT | bpf_target timeout|connect_now|waits_now STORE_PORT\n");
    return 2;
  }
  int store_port = atoi(argv[1]), taken_port = atoi(argv[2]);
  if (!wait_for_go()) return 3;

  struct sockaddr_in a = it_loopback(store_port);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  int r = connect(s, (struct sockaddr*)&a, sizeof a);
  printf("connect %d %d\n", r, r < 0 ? errno : 0);
  close(s);

  s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  r = connect(s, (struct sockaddr*)&a, sizeof a);
  int e = r < 0 ? errno : 0;
  int so_error = 0;
  if (r < 0 && e == EINPROGRESS) {
    struct pollfd p = {s, POLLOUT, 0};
    poll(&p, 1, 2000);
    socklen_t len = sizeof so_error;
    getsockopt(s, SOL_SOCKET, SO_ERROR, &so_error, &len);
  }
  printf("connect_nonblock %d %d %d\n", r, e, so_error);
  close(s);

  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  r = getaddrinfo("rdzv-no-such-host.invalid", argv[1], &hints, &res);
  printf("getaddrinfo %d\n", r);
  if (res) freeaddrinfo(res);

  struct sockaddr_in b = it_loopback(taken_port);
  s = socket(AF_INET, SOCK_STREAM, 0);
  r = bind(s, (struct sockaddr*)&b, sizeof b);
  printf("bind %d %d\n", r, r < 0 ? errno : 0);
  close(s);
  io_section(atoi(argv[3]));
  fflush(stdout);
  return 0;
}
