/* The server side: bind/listen/accept, and the totals kept for store sockets. Usage:
 *   server eaddrinuse PORT        bind PORT while a listener holds it
 *   server serve PORT             listen on PORT, connect to it, exchange 1000 + 500 bytes
 *   server nonstore PORT          the same on a port that is no store port, plus 1000 sends
 *   server secret PORT            send $IT_SECRET both ways over a store socket (not argv:
 *                                 the command line is recorded in the trace header)
 *   server fclose PORT            fdopen()+fclose() a connected store socket (glibc closes
 *                                 it internally), then read a regular file that gets its fd
 *   server dup PORT               send through dup(), fcntl(F_DUPFD_CLOEXEC) and dup2()
 *                                 copies of a connected store socket: 100 + 50 + 25 bytes */
#include "common.h"

#include <fcntl.h>

static void exchange(int port, const char* payload, size_t srv_bytes, size_t cli_bytes,
                     int use_accept4) {
  int l = REPORT("socket", socket(AF_INET, SOCK_STREAM, 0));
  int one = 1;
  REPORT("setsockopt SO_REUSEADDR", setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one));
  struct sockaddr_in a = it_loopback(port);
  REPORT("bind", bind(l, (struct sockaddr*)&a, sizeof a));
  REPORT("listen", listen(l, 16));
  int c = socket(AF_INET, SOCK_STREAM, 0);
  REPORT("connect", connect(c, (struct sockaddr*)&a, sizeof a));
  int s = use_accept4 ? accept4(l, NULL, NULL, SOCK_CLOEXEC) : accept(l, NULL, NULL);
  it_report("accept", s >= 0 ? 0 : -1, errno);

  char out[4096], in[4096];
  size_t plen = strlen(payload);
  for (size_t i = 0; i < sizeof out; ++i) out[i] = payload[i % plen];
  /* server -> client in pieces of at most 400 bytes */
  for (size_t done = 0; done < srv_bytes;) {
    size_t n = srv_bytes - done < 400 ? srv_bytes - done : 400;
    REPORT("server send", send(s, out, n, 0));
    done += n;
  }
  REPORT("client recv all", it_read_full(c, in, srv_bytes));
  for (size_t done = 0; done < cli_bytes;) {
    size_t n = cli_bytes - done < 250 ? cli_bytes - done : 250;
    REPORT("client write", write(c, out, n));
    done += n;
  }
  REPORT("server recv all", it_read_full(s, in, cli_bytes));
  REPORT("close accepted", close(s));
  REPORT("close client", close(c));
  REPORT("close listener", close(l));
}

int main(int argc, char** argv) {
  if (argc < 3) return 98;
  const char* mode = argv[1];
  int port = it_port_arg(argv[2]);
  struct sockaddr_in a = it_loopback(port);
  if (strcmp(mode, "eaddrinuse") == 0) {
    int l1 = socket(AF_INET, SOCK_STREAM, 0);
    REPORT("bind first", bind(l1, (struct sockaddr*)&a, sizeof a));
    REPORT("listen first", listen(l1, 4));
    int l2 = socket(AF_INET, SOCK_STREAM, 0);
    REPORT("bind second", bind(l2, (struct sockaddr*)&a, sizeof a));
    REPORT("close second", close(l2));
    REPORT("close first", close(l1));
    return 31;
  }
  if (strcmp(mode, "serve") == 0) {
    exchange(port, "0123456789abcdef", 1000, 500, 0);
    return 32;
  }
  if (strcmp(mode, "nonstore") == 0) {
    int l = it_listener(port);
    int c = it_connect(port);
    int s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    it_report("accept4", s >= 0 ? 0 : -1, errno);
    char buf[64] = "0123456789abcdef";
    long sent = 0, got = 0;
    for (int i = 0; i < 1000; ++i) {
      ssize_t r = send(c, buf, 16, 0);
      if (r > 0) sent += r;
      r = recv(s, buf, 16, 0);
      if (r > 0) got += r;
    }
    for (int i = 0; i < 100; ++i) {
      if (write(s, buf, 16) == 16) sent += 16;
      if (read(c, buf, 16) == 16) got += 16;
    }
    printf("sent=%ld received=%ld\n", sent, got);
    REPORT("close accepted", close(s));
    REPORT("close client", close(c));
    REPORT("close listener", close(l));
    return 33;
  }
  const char* secret = getenv("IT_SECRET");
  if (strcmp(mode, "secret") == 0 && secret && *secret) {
    exchange(port, secret, 3 * strlen(secret), 2 * strlen(secret), 1);
    return 34;
  }
  if (strcmp(mode, "fclose") == 0 && argc >= 4) {
    int l = it_listener(port);
    int c = it_connect(port);
    int s = accept(l, NULL, NULL);
    it_report("accept", s >= 0 ? 0 : -1, errno);
    FILE* f = fdopen(c, "r+");
    REPORT("fclose socket", fclose(f));
    int fd = open(argv[3], O_RDONLY | O_CLOEXEC);
    printf("regular file reuses the socket's fd: %d\n", fd == c);
    char buf[64];
    REPORT("read regular file", read(fd, buf, sizeof buf));
    REPORT("read regular file at EOF", read(fd, buf, sizeof buf));
    REPORT("close regular file", close(fd));
    REPORT("close accepted", close(s));
    REPORT("close listener", close(l));
    return 36;
  }
  if (strcmp(mode, "dup") == 0) {
    int l = it_listener(port);
    int c = it_connect(port);
    int s = accept(l, NULL, NULL);
    it_report("accept", s >= 0 ? 0 : -1, errno);
    char buf[200];
    memset(buf, 'd', sizeof buf);
    int d1 = dup(c);
    REPORT("send via dup", send(d1, buf, 100, 0));
    int d2 = fcntl(c, F_DUPFD_CLOEXEC, 20);
    REPORT("send via F_DUPFD_CLOEXEC", send(d2, buf, 50, 0));
    REPORT("dup2", dup2(c, 30));
    REPORT("write via dup2", write(30, buf, 25));
    REPORT("server recv all", it_read_full(s, buf, 175));
    REPORT("close dup", close(d1));
    REPORT("close F_DUPFD", close(d2));
    REPORT("close dup2", close(30));
    REPORT("close client", close(c));
    REPORT("close accepted", close(s));
    REPORT("close listener", close(l));
    return 35;
  }
  return 97;
}
