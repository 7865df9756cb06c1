/* Loopback TCP loop of fixed-size send() calls: the workload of the shim's overhead benchmark.
 *   send_loop sink PORT [spin]   accept one connection on 127.0.0.1:PORT, read until EOF;
 *                                spin: without ever sleeping (non-blocking reads in a loop), so
 *                                that a send never has to wake it (on a VM, waking an idle CPU
 *                                costs more than the send and varies by 20 % from run to run)
 *   send_loop send PORT N SIZE [STORE_PORT]
 *                                connect, N x send(SIZE bytes); prints ns per send. With
 *                                STORE_PORT: first connect there (a store port for the shim,
 *                                so that the connection to PORT is a peer socket, as a
 *                                process group's are), and keep that connection open
 *   send_loop null N             N x write(64 bytes) to /dev/null, the cheapest syscall loop
 *                                that attach's probes look at (they test the fd's owner);
 *   send_loop getppid N          N x getppid(), a syscall they never look at;
 *                                both print wall and CPU ns per call
 * The sink runs as its own process, without the shim, so that only the sender is measured. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_in loopback(int port) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

static int sink(int port, int spin) {
  int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = loopback(port);
  if (bind(ls, (struct sockaddr*)&a, sizeof a) != 0 || listen(ls, 1) != 0) {
    perror("send_loop sink");
    return 1;
  }
  printf("ready\n");
  fflush(stdout);
  int c = accept(ls, NULL, NULL);
  if (spin) fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK);
  char buf[1 << 16];
  for (;;) {
    ssize_t r = read(c, buf, sizeof buf);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) break;
  }
  return 0;
}

static int connect_retrying(int port) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = loopback(port);
  for (int tries = 0; connect(s, (struct sockaddr*)&a, sizeof a) != 0; ++tries) {
    if (tries > 200) {
      perror("send_loop connect");
      return -1;
    }
    usleep(10000);
  }
  return s;
}

static int sender(int port, long n, size_t size, int store_port) {
  int store = store_port ? connect_retrying(store_port) : -1;
  if (store_port && store < 0) return 1;
  int s = connect_retrying(port), one = 1;
  if (s < 0) return 1;
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  char* buf = calloc(1, size);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long i = 0; i < n; ++i) {
    if (send(s, buf, size, MSG_NOSIGNAL) != (ssize_t)size) {
      perror("send_loop send");
      return 1;
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
  printf("%.1f ns/send\n", ns / (double)n);
  close(s);
  if (store >= 0) close(store);
  free(buf);
  return 0;
}

static double clock_ns(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int syscall_loop(int writes, long n) {
  int fd = open("/dev/null", O_WRONLY);
  char buf[64] = {0};
  double w0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  for (long i = 0; i < n; ++i) {
    if (writes ? write(fd, buf, sizeof buf) != (ssize_t)sizeof buf : syscall(SYS_getppid) <= 0) {
      perror("send_loop");
      return 1;
    }
  }
  double w1 = clock_ns(CLOCK_MONOTONIC), c1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  printf("%.1f ns/call %.1f cpu-ns/call\n", (w1 - w0) / (double)n, (c1 - c0) / (double)n);
  return 0;
}

int main(int argc, char** argv) {
  if ((argc == 3 || (argc == 4 && strcmp(argv[3], "spin") == 0)) && strcmp(argv[1], "sink") == 0)
    return sink(atoi(argv[2]), argc == 4);
  if (argc == 3 && strcmp(argv[1], "null") == 0) return syscall_loop(1, atol(argv[2]));
  if (argc == 3 && strcmp(argv[1], "getppid") == 0) return syscall_loop(0, atol(argv[2]));
  if ((argc == 5 || argc == 6) && strcmp(argv[1], "send") == 0)
    return sender(atoi(argv[2]), atol(argv[3]), (size_t)atol(argv[4]), argc == 6 ? atoi(argv[5]) : 0);
  fprintf(stderr, "usage: send_loop sink PORT [spin] | send_loop send PORT N SIZE | send_loop null N | send_loop getppid N\n");
  return 2;
}
