/*
 * Shared helpers of the integration programs. Every program prints one line per call it
 * makes ("what: ret=R errno=NAME"), only values that are the same from run to run, so that
 * run_integration.py can compare a run without the shim against a run with it byte for byte.
 * Measurements that vary (timings, pids, RSS) go to stderr as "key=value" lines.
 */
#ifndef RDZVSCOPE_IT_COMMON_H
#define RDZVSCOPE_IT_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static inline const char* it_errname(int err) {
  if (err == 0) return "0";
  const char* n = strerrorname_np(err);
  return n ? n : "E?";
}

/* Prints "what: ret=R errno=NAME" (errno only when ret < 0) and returns ret unchanged. */
static inline long it_report(const char* what, long ret, int err) {
  printf("%s: ret=%ld errno=%s\n", what, ret, ret < 0 ? it_errname(err) : "0");
  fflush(stdout);
  return ret;
}
/* Like it_report, and also shows errno after a call that succeeded: REPORT sets errno to a
 * sentinel (EDOM) first, so a shim that clobbers errno on success changes the output. */
static inline long it_report_keep(const char* what, long ret, int err) {
  printf("%s: ret=%ld errno=%s\n", what, ret, it_errname(err));
  fflush(stdout);
  return ret;
}
#define REPORT(what, call)                    \
  ({                                          \
    errno = EDOM;                             \
    long it_r_ = (long)(call);                \
    int it_e_ = errno;                        \
    it_report_keep((what), it_r_, it_e_);     \
    errno = it_e_;                            \
    it_r_;                                    \
  })

/* A sendmmsg/recvmmsg vector of n messages, message i being the one buffer iov[i]. */
static inline void it_messages(struct mmsghdr* m, struct iovec* iov, int n) {
  memset(m, 0, sizeof(*m) * (size_t)n);
  for (int i = 0; i < n; i++) {
    m[i].msg_hdr.msg_iov = &iov[i];
    m[i].msg_hdr.msg_iovlen = 1;
  }
}

static inline void it_die(const char* what) {
  fprintf(stderr, "FATAL %s: %s\n", what, strerror(errno));
  fflush(stderr);
  _exit(99);
}

static inline int it_port_arg(const char* s) {
  long v = strtol(s, NULL, 10);
  if (v <= 0 || v > 65535) {
    fprintf(stderr, "bad port %s\n", s);
    exit(98);
  }
  return (int)v;
}

static inline struct sockaddr_in it_loopback(int port) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

/* A TCP listener on 127.0.0.1:port with SO_REUSEADDR; dies on failure. */
static inline int it_listener(int port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) it_die("socket");
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = it_loopback(port);
  if (bind(s, (struct sockaddr*)&a, sizeof a) != 0) it_die("bind listener");
  if (listen(s, 128) != 0) it_die("listen");
  return s;
}

/* A blocking TCP connect to 127.0.0.1:port; dies on failure. */
static inline int it_connect(int port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) it_die("socket");
  struct sockaddr_in a = it_loopback(port);
  if (connect(s, (struct sockaddr*)&a, sizeof a) != 0) it_die("connect");
  return s;
}

static inline double it_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void it_sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Reads exactly n bytes (blocking); returns bytes read before EOF/error. */
static inline size_t it_read_full(int fd, void* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = recv(fd, (char*)buf + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  return got;
}

static inline int it_write_full(int fd, const void* buf, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = send(fd, (const char*)buf + done, n - done, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    done += (size_t)r;
  }
  return 0;
}

#endif
