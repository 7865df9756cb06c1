/* The sender of the attach benchmark (attach_overhead.py): send_loop's loop of fixed-size
 * send() calls on a loopback connection, but started before it connects, so that
 * `rdzvscope attach` can be attached first and learn the connection as a store socket.
 *   attach_sender PORT N SIZE RATE
 * prints "ready", waits for a line on stdin, connects to 127.0.0.1:PORT (a `send_loop sink`),
 * sends N x SIZE bytes, RATE sends per second (0: as fast as it can), then prints
 * "<wall ns> ns/send <cpu ns> cpu-ns/send <N> sends". The CPU time (user + system, which
 * includes the probes run in its syscalls) varies far less than wall time on a busy machine. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double cpu_ns(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ((double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec) * 1e9 +
         ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e3;
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* Paced: a batch each millisecond, so the rate holds without spinning a core that attach's
 * loader needs (the test machines have two). */
static void pace(long i, long rate, double t0) {
  if (rate <= 0 || i % (rate / 1000 > 0 ? rate / 1000 : 1) != 0) return;
  double due = t0 + (double)i * 1e9 / (double)rate;
  struct timespec ts = {(time_t)(due / 1e9), (long)(due - (double)(time_t)(due / 1e9) * 1e9)};
  clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: attach_sender PORT N SIZE RATE\n");
    return 2;
  }
  int port = atoi(argv[1]);
  long n = atol(argv[2]), rate = atol(argv[4]);
  size_t size = (size_t)atol(argv[3]);
  printf("ready\n");
  fflush(stdout);
  char line[16];
  if (!fgets(line, sizeof line, stdin)) return 3;

  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  if (connect(s, (struct sockaddr*)&a, sizeof a) != 0) {
    perror("attach_sender connect");
    return 1;
  }
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  char* buf = calloc(1, size);
  double t0 = now_ns(), c0 = cpu_ns();
  for (long i = 0; i < n; ++i) {
    pace(i, rate, t0);
    if (send(s, buf, size, MSG_NOSIGNAL) != (ssize_t)size) {
      perror("attach_sender send");
      return 1;
    }
  }
  double t1 = now_ns(), c1 = cpu_ns();
  printf("%.1f ns/send %.1f cpu-ns/send %ld sends\n", (t1 - t0) / (double)n, (c1 - c0) / (double)n, n);
  close(s);
  free(buf);
  return 0;
}
