/* Host matrix: a long-running sender. N 16-byte sends on a store socket, then N on a plain
 * socket (both to listeners of this process, drained by threads). Anonymous memory is read
 * from /proc/self/status before and after the send loops.
 * Usage: host_sender STORE_PORT PLAIN_PORT N
 * stdout: the send counts and bytes received; stderr: rss_anon_* = kB.  Exit status 84. */
#include "common.h"

#include <pthread.h>

static long rss_anon_kb(void) {
  FILE* f = fopen("/proc/self/status", "re");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "RssAnon: %ld kB", &kb) == 1) break;
  fclose(f);
  return kb;
}

static void* drain(void* arg) {
  int s = *(int*)arg;
  char* buf = malloc(1 << 16);
  long total = 0;
  for (;;) {
    ssize_t r = recv(s, buf, 1 << 16, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    total += r;
  }
  free(buf);
  return (void*)total;
}

struct pipe_ends {
  int l, c, s;
  pthread_t th;
};

static void setup(struct pipe_ends* p, int port) {
  p->l = it_listener(port);
  p->c = it_connect(port);
  p->s = accept(p->l, NULL, NULL);
  if (p->s < 0) it_die("accept");
  if (pthread_create(&p->th, NULL, drain, &p->s) != 0) it_die("pthread_create");
}

static long send_loop(int fd, long n) {
  const char msg[16] = "rdzvscope-16byte";
  long ok = 0;
  for (long i = 0; i < n; ++i)
    if (send(fd, msg, sizeof msg, 0) == (ssize_t)sizeof msg) ++ok;
  return ok;
}

static long finish_pipe(struct pipe_ends* p) {
  shutdown(p->c, SHUT_WR);
  void* got = NULL;
  pthread_join(p->th, &got);
  close(p->c);
  close(p->s);
  close(p->l);
  return (long)got;
}

int main(int argc, char** argv) {
  if (argc < 4) return 98;
  int store = it_port_arg(argv[1]), plain = it_port_arg(argv[2]);
  long n = strtol(argv[3], NULL, 10);
  printf("sends=%ld\n", n);
  fflush(stdout);
  struct pipe_ends ps, pp;
  setup(&ps, store);
  setup(&pp, plain);
  /* warm up both paths (first-call allocations, lazy binding) before the first measure */
  send_loop(ps.c, 1000);
  send_loop(pp.c, 1000);
  long before = rss_anon_kb();
  long ok_store = send_loop(ps.c, n);
  long mid = rss_anon_kb();
  long ok_plain = send_loop(pp.c, n);
  long after = rss_anon_kb();
  long got_store = finish_pipe(&ps), got_plain = finish_pipe(&pp);
  printf("store: sent_ok=%ld received=%ld\n", ok_store, got_store);
  printf("plain: sent_ok=%ld received=%ld\n", ok_plain, got_plain);
  fprintf(stderr, "rss_anon_before_kb=%ld\nrss_anon_mid_kb=%ld\nrss_anon_after_kb=%ld\n", before,
          mid, after);
  fprintf(stderr, "rss_anon_growth_kb=%ld\nrss_anon_store_growth_kb=%ld\n", after - before,
          mid - before);
  return 84;
}
