/* A program whose store sockets exist before attach starts (tests/bpf/run_seed.py):
 *
 *   seed_target STORE_PORT OWN_PORT OTHER_PORT
 *
 * Before "ready": connects A and B to the test's store server on STORE_PORT (A sends 5 bytes),
 * listens on OWN_PORT (a store port too, RDZVSCOPE_PORTS) and connects C to itself there
 * (accepted as S), connects D to OTHER_PORT (no store port), and connects E and F to the store
 * server, on which two threads block: one in recv(E), one in a 5 s poll(F) (margin for attach
 * to start on a loaded machine), and G, on which it calls nothing until its close. Prints
 * "ready A B L C S D E F G" and waits for "go" on stdin (attach starts meanwhile; the test
 * closes the server's ends of A and E, and resets G's). Then: recv(A) (0: the peer closed),
 * send(A) (accepted; the peer answers with a reset), send(A) again (EPIPE), poll(B) (times out
 * after 200 ms), send(S), send(D); forks a child that sends on B; waits for the threads
 * (recv(E) returns 0, poll(F) times out) and closes everything. Prints each result as "name
 * ret errno" (the child's: "kid PID STATUS"). */
#include "common.h" /* tests/integration: it_loopback and friends */

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>


static int connected(int port) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = it_loopback(port);
  if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
    perror("connect");
    exit(1);
  }
  return s;
}

static void said(const char *name, long ret) { printf("%s %ld %d\n", name, ret, ret < 0 ? errno : 0); }

/* Calls that began before attach and end after it started. */
static int fd_e, fd_f;
static long recv_e, poll_f;

static void *blocked_recv(void *arg) {
  char buf[16];
  recv_e = recv(fd_e, buf, sizeof buf, 0);
  return arg;
}

static void *blocked_poll(void *arg) {
  struct pollfd p = {.fd = fd_f, .events = POLLIN};
  poll_f = poll(&p, 1, 5000);
  return arg;
}

int main(int argc, char **argv) {
  if (argc != 4) return 2;
  int store_port = atoi(argv[1]), own_port = atoi(argv[2]), other_port = atoi(argv[3]);
  int a = connected(store_port), b = connected(store_port);
  if (send(a, "hello", 5, MSG_NOSIGNAL) != 5) return 1; /* before attach: not in the totals */
  int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  struct sockaddr_in own = it_loopback(own_port);
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(l, (struct sockaddr *)&own, sizeof own) != 0 || listen(l, 4) != 0) return 1;
  int c = connected(own_port), s = accept(l, NULL, NULL), d = connected(other_port);
  if (s < 0) return 1;
  fd_e = connected(store_port);
  fd_f = connected(store_port);
  pthread_t te, tf;
  if (pthread_create(&te, NULL, blocked_recv, NULL) || pthread_create(&tf, NULL, blocked_poll, NULL)) return 1;
  int g = connected(store_port);
  usleep(100 * 1000); /* both are in their call */
  printf("ready %d %d %d %d %d %d %d %d %d\n", a, b, l, c, s, d, fd_e, fd_f, g);
  fflush(stdout);
  char line[16];
  if (!fgets(line, sizeof line, stdin)) return 1;

  char buf[16];
  said("recv_a", recv(a, buf, sizeof buf, 0));
  said("send_a", send(a, "ping", 4, MSG_NOSIGNAL));
  usleep(200 * 1000); /* the reset comes back */
  said("send_a2", send(a, "ping", 4, MSG_NOSIGNAL));
  struct pollfd p = {.fd = b, .events = POLLIN};
  said("poll_b", poll(&p, 1, 200));
  said("send_s", send(s, "abc", 3, MSG_NOSIGNAL));
  said("send_d", send(d, "xyz", 3, MSG_NOSIGNAL));
  fflush(stdout);
  pid_t kid = fork();
  if (kid == 0) _exit(send(b, "kid", 3, MSG_NOSIGNAL) == 3 ? 0 : 1); /* an inherited found socket */
  int status = -1;
  if (kid < 0 || waitpid(kid, &status, 0) != kid) return 1;
  printf("kid %d %d\n", (int)kid, status);
  pthread_join(te, NULL);
  pthread_join(tf, NULL);
  said("recv_e", recv_e);
  said("poll_f", poll_f);
  close(fd_e);
  close(fd_f);
  close(g);
  close(a);
  close(b);
  close(s);
  close(c);
  close(l);
  close(d);
  return 0;
}
