/* Host matrix: programs that are rough with file descriptors. Usage:
 *   host_fds closeall PORT         close_range(3, ~0U) and close() up to the fd limit at start,
 *                                  then a store exchange; once more after the trace exists
 *   host_fds dup2over PORT FILE    a first socket call, then FILE dup2()ed over fds 3..64,
 *                                  then a store exchange and file I/O through those fds
 *   host_fds fdlimit PORT MODE     RLIMIT_NOFILE 64, fds opened until EMFILE (MODE early: the
 *                                  trace exists first; late: exhausted before any socket call)
 *                                  then some closed and a store exchange
 * Every call's result is printed; exit status 81/82/83. */
#include "common.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

/* Calls, then reports: errno is read after the call (not as an argument beside it). */
#define REP(what, call)                  \
  ({                                     \
    errno = 0;                           \
    long rep_r_ = (long)(call);          \
    int rep_e_ = errno;                  \
    it_report((what), rep_r_, rep_e_);   \
    errno = rep_e_;                      \
    rep_r_;                              \
  })

/* A store exchange on 127.0.0.1:port: listen, connect, send, accept, recv, close all. */
static void exchange(const char* tag, int port) {
  char what[128];
  int l;
  snprintf(what, sizeof what, "%s socket listener", tag);
  REP(what, (l = socket(AF_INET, SOCK_STREAM, 0)) >= 0 ? 0 : -1);
  int one = 1;
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = it_loopback(port);
  snprintf(what, sizeof what, "%s bind", tag);
  REP(what, bind(l, (struct sockaddr*)&a, sizeof a));
  snprintf(what, sizeof what, "%s listen", tag);
  REP(what, listen(l, 4));
  int c;
  snprintf(what, sizeof what, "%s socket client", tag);
  REP(what, (c = socket(AF_INET, SOCK_STREAM, 0)) >= 0 ? 0 : -1);
  snprintf(what, sizeof what, "%s connect", tag);
  REP(what, connect(c, (struct sockaddr*)&a, sizeof a));
  snprintf(what, sizeof what, "%s send", tag);
  REP(what, send(c, "hello store", 11, 0));
  int s;
  snprintf(what, sizeof what, "%s accept", tag);
  REP(what, (s = accept(l, NULL, NULL)) >= 0 ? 0 : -1);
  char buf[32];
  snprintf(what, sizeof what, "%s recv", tag);
  REP(what, (long)it_read_full(s, buf, 11));
  snprintf(what, sizeof what, "%s close client", tag);
  REP(what, close(c));
  snprintf(what, sizeof what, "%s close accepted", tag);
  REP(what, close(s));
  snprintf(what, sizeof what, "%s close listener", tag);
  REP(what, close(l));
}

static void refused_connect(const char* what, int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = it_loopback(port);
  REP(what, connect(fd, (struct sockaddr*)&a, sizeof a));
  close(fd);
}

static int close_everything(const char* tag) {
  char what[128];
  snprintf(what, sizeof what, "%s close_range(3, ~0U, 0)", tag);
  REP(what, syscall(SYS_close_range, 3u, ~0u, 0));
  /* and through libc, where the shim can see it */
  snprintf(what, sizeof what, "%s libc close_range", tag);
  REP(what, close_range(3u, ~0u, 0));
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  long lim = rl.rlim_cur > 65536 ? 65536 : (long)rl.rlim_cur;
  long closed = 0, ebadf = 0;
  for (long fd = 3; fd < lim; ++fd) {
    if (close((int)fd) == 0)
      ++closed;
    else if (errno == EBADF)
      ++ebadf;
  }
  printf("%s close loop: closed=%ld ebadf=%ld of %ld\n", tag, closed, ebadf, lim - 3);
  fflush(stdout);
  return 0;
}

static int closeall(int port) {
  close_everything("start");
  exchange("first", port);
  /* The trace exists now: close everything again (the shim must hold no fd we could close),
   * then keep working. */
  close_everything("again");
  exchange("second", port);
  return 81;
}

static int dup2over(int port, const char* path) {
  refused_connect("first connect (makes the trace)", port);
  int f = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (f < 0) it_die("open file");
  long ok = 0, failed = 0;
  for (int fd = 3; fd <= 64; ++fd) {
    if (fd == f) continue;
    if (dup2(f, fd) == fd)
      ++ok;
    else
      ++failed;
  }
  printf("dup2 over 3..64: ok=%ld failed=%ld\n", ok, failed);
  fflush(stdout);
  /* Every fd 3..64 is the same open file now. Anything the shim wrote through an fd of its
   * own would land in it. */
  REP("write through fd 10", write(10, "0123456789", 10));
  refused_connect("second connect", port);
  /* socket() gets a number above 64 now */
  exchange("after dup2", port);
  REP("write through fd 64", write(64, "abcdef", 6));
  struct stat st;
  fstat(3, &st);
  printf("file size=%ld\n", (long)st.st_size);
  char buf[64] = {0};
  REP("pread fd 30", pread(30, buf, sizeof buf - 1, 0));
  printf("file content=%s\n", buf);
  for (int fd = 3; fd <= 64; ++fd) close(fd);
  return 82;
}

static int fdlimit(int port, const char* mode) {
  int late = strcmp(mode, "late") == 0;
  if (!late) refused_connect("first connect (makes the trace)", port);
  struct rlimit rl = {64, 64};
  REP("setrlimit NOFILE 64", setrlimit(RLIMIT_NOFILE, &rl));
  int fds[128];
  int n = 0, err = 0;
  for (;;) {
    int fd = late ? open("/dev/null", O_RDONLY) : socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
      err = errno;
      break;
    }
    if (n < 128) fds[n++] = fd;
  }
  printf("opened %d until errno=%s\n", n, it_errname(err));
  fflush(stdout);
  REP("socket at the limit", socket(AF_INET, SOCK_STREAM, 0));
  REP("dup at the limit", dup(0));
  /* close a few, keep working */
  for (int i = 0; i < 4; ++i) REP("close one", close(fds[--n]));
  exchange("after the limit", port);
  /* back at the limit, a store accept that cannot get an fd */
  int l = it_listener(port);
  int c = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = it_loopback(port);
  REP("connect before the last fd", connect(c, (struct sockaddr*)&a, sizeof a));
  int extra[8], ne = 0;
  for (;;) {
    int fd = open("/dev/null", O_RDONLY);
    if (fd < 0) break;
    if (ne < 8) extra[ne++] = fd;
  }
  printf("filled %d more\n", ne);
  errno = 0;
  REP("accept at the limit", accept(l, NULL, NULL));
  for (int i = 0; i < ne; ++i) close(extra[i]);
  int acc;
  REP("accept after freeing", (acc = accept(l, NULL, NULL)) >= 0 ? 0 : -1);
  close(acc);
  close(c);
  close(l);
  while (n > 0) close(fds[--n]);
  return 83;
}

int main(int argc, char** argv) {
  if (argc < 3) return 98;
  int port = it_port_arg(argv[2]);
  if (strcmp(argv[1], "closeall") == 0) return closeall(port);
  if (strcmp(argv[1], "dup2over") == 0 && argc > 3) return dup2over(port, argv[3]);
  if (strcmp(argv[1], "fdlimit") == 0 && argc > 3) return fdlimit(port, argv[3]);
  return 97;
}
