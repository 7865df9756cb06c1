/* Loopback TCP loop of fixed-size send() calls: the workload of the shim's overhead benchmark.
 *   send_loop sink PORT          accept one connection on 127.0.0.1:PORT, read until EOF
 *   send_loop send PORT N SIZE   connect, N x send(SIZE bytes); prints ns per send
 * The sink runs as its own process, without the shim, so that only the sender is measured. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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

static int sink(int port) {
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
  char buf[1 << 16];
  while (read(c, buf, sizeof buf) > 0) {
  }
  return 0;
}

static int sender(int port, long n, size_t size) {
  int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  struct sockaddr_in a = loopback(port);
  for (int tries = 0; connect(s, (struct sockaddr*)&a, sizeof a) != 0; ++tries) {
    if (tries > 200) {
      perror("send_loop connect");
      return 1;
    }
    usleep(10000);
  }
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
  free(buf);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "sink") == 0) return sink(atoi(argv[2]));
  if (argc == 5 && strcmp(argv[1], "send") == 0)
    return sender(atoi(argv[2]), atol(argv[3]), (size_t)atol(argv[4]));
  fprintf(stderr, "usage: send_loop sink PORT | send_loop send PORT N SIZE\n");
  return 2;
}
