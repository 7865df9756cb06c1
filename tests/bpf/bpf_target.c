/* The program `rdzvscope attach` is tested on: started untraced, it waits for a line on stdin
 * (the test sends it once the probes are attached), then fails in the ways a rendezvous does:
 *   bpf_target STORE_PORT TAKEN_PORT
 *   1. a blocking connect to 127.0.0.1:STORE_PORT, where nothing listens: ECONNREFUSED
 *   2. a non-blocking connect there, its outcome read through poll + SO_ERROR: ECONNREFUSED
 *   3. getaddrinfo of a name that does not exist: EAI_NONAME
 *   4. bind to 127.0.0.1:TAKEN_PORT, which the test holds: EADDRINUSE
 * and prints what each call returned, for the test to compare with the trace. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static struct sockaddr_in loopback(int port) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: bpf_target STORE_PORT TAKEN_PORT\n");
    return 2;
  }
  int store_port = atoi(argv[1]), taken_port = atoi(argv[2]);
  printf("ready\n");
  fflush(stdout);
  char line[16];
  if (!fgets(line, sizeof line, stdin)) return 3;

  struct sockaddr_in a = loopback(store_port);
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

  struct sockaddr_in b = loopback(taken_port);
  s = socket(AF_INET, SOCK_STREAM, 0);
  r = bind(s, (struct sockaddr*)&b, sizeof b);
  printf("bind %d %d\n", r, r < 0 ? errno : 0);
  close(s);
  fflush(stdout);
  return 0;
}
