/* I/O on a connected store socket that goes wrong, against a server in a child process.
 * Usage: io_errors MODE PORT, MODE one of
 *   epipe       server SIGKILLed after accept; client sees EOF, then sends until EPIPE
 *   econnreset  server closes with SO_LINGER {1,0} (RST); client sends until ECONNRESET
 *   zero_read   server sends 5 bytes and closes; client recv()s 5, then 0
 *   poll_timeout  poll(POLLIN, 200 ms) on a socket with nothing to read
 *   rcvtimeo    SO_RCVTIMEO 300 ms, then a blocking recv: EAGAIN */
#include "common.h"

#include <poll.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>

static int g_sync[2];

static void child_ready(void) {
  char c = 'r';
  if (write(g_sync[1], &c, 1) != 1) _exit(90);
}

static char wait_child(void) {
  char c = 0;
  if (read(g_sync[0], &c, 1) != 1) it_die("sync read");
  return c;
}

static void child_drain_then_exit(int c) {
  char buf[256];
  while (recv(c, buf, sizeof buf, 0) > 0) {
  }
  _exit(0);
}

static pid_t start_server(const char* mode, int port) {
  pid_t pid = fork();
  if (pid < 0) it_die("fork");
  if (pid > 0) return pid;
  int l = it_listener(port);
  child_ready();
  int c = accept(l, NULL, NULL);
  if (c < 0) _exit(91);
  if (strcmp(mode, "epipe") == 0) {
    for (;;) pause();
  } else if (strcmp(mode, "econnreset") == 0) {
    char b;
    if (recv(c, &b, 1, 0) != 1) _exit(92);
    struct linger lg = {1, 0};
    setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(c);  /* RST */
    char done = 'c';
    if (write(g_sync[1], &done, 1) != 1) _exit(93);
    for (;;) pause();
  } else if (strcmp(mode, "zero_read") == 0 || strcmp(mode, "zero_read_spin") == 0) {
    if (send(c, "hello", 5, 0) != 5) _exit(94);
    close(c);
    _exit(0);
  }
  child_drain_then_exit(c);
  return 0;
}

static void send_until_failure(int fd) {
  for (int i = 0; i < 100; ++i) {
    errno = 0;
    ssize_t r = send(fd, "x", 1, MSG_NOSIGNAL);
    if (r < 0) {
      it_report("send until failure", r, errno);
      return;
    }
    it_sleep_ms(20);
  }
  printf("send never failed\n");
}

int main(int argc, char** argv) {
  if (argc < 3) return 98;
  const char* mode = argv[1];
  int port = it_port_arg(argv[2]);
  signal(SIGPIPE, SIG_IGN);
  if (pipe(g_sync) != 0) it_die("pipe");
  pid_t child = start_server(mode, port);
  wait_child();
  struct sockaddr_in a = it_loopback(port);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REPORT("connect", connect(fd, (struct sockaddr*)&a, sizeof a));
  int status = 0;
  int code = 20;

  if (strcmp(mode, "epipe") == 0) {
    it_sleep_ms(50); /* let the server accept */
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    printf("server killed: %d\n", WIFSIGNALED(status) ? WTERMSIG(status) : -1);
    char b;
    REPORT("recv after kill", recv(fd, &b, 1, 0));
    send_until_failure(fd);
    REPORT("send again", send(fd, "x", 1, MSG_NOSIGNAL));
    code = 21;
  } else if (strcmp(mode, "econnreset") == 0) {
    REPORT("send first", send(fd, "h", 1, MSG_NOSIGNAL));
    wait_child(); /* the server has reset the connection */
    it_sleep_ms(50);
    send_until_failure(fd);
    REPORT("send again", send(fd, "x", 1, MSG_NOSIGNAL));
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    code = 22;
  } else if (strcmp(mode, "zero_read") == 0) {
    char buf[64];
    REPORT("recv data", it_read_full(fd, buf, 5));
    REPORT("recv eof", recv(fd, buf, sizeof buf, 0));
    waitpid(child, &status, 0);
    code = 23;
  } else if (strcmp(mode, "zero_read_spin") == 0) {
    /* A client that keeps calling recv() after the peer closed (torch 1.13's callback
     * client does this when the store goes away at shutdown). */
    char buf[64];
    REPORT("recv data", it_read_full(fd, buf, 5));
    long zeros = 0;
    for (int i = 0; i < 5000; ++i)
      if (recv(fd, buf, sizeof buf, 0) == 0) ++zeros;
    printf("zero reads: %ld\n", zeros);
    waitpid(child, &status, 0);
    code = 23;
  } else if (strcmp(mode, "poll_timeout") == 0) {
    struct pollfd p = {fd, POLLIN, 0};
    REPORT("poll 200ms", poll(&p, 1, 200));
    REPORT("close", close(fd));
    fd = -1;
    waitpid(child, &status, 0);
    code = 24;
  } else if (strcmp(mode, "rcvtimeo") == 0) {
    struct timeval tv = {0, 300000};
    REPORT("setsockopt SO_RCVTIMEO", setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
    char b;
    REPORT("recv with timeout", recv(fd, &b, 1, 0));
    REPORT("close", close(fd));
    fd = -1;
    waitpid(child, &status, 0);
    code = 25;
  } else {
    kill(child, SIGKILL);
    return 97;
  }
  if (fd >= 0) REPORT("close", close(fd));
  return code;
}
