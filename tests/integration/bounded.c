/* Boundedness: many sends on one store socket, many failing connects. Usage:
 *   bounded many_sends PORT N      N 8-byte sends on a store socket (a thread drains them);
 *                                  stderr: rss_anon_growth_kb=K (RssAnon after - before)
 *   bounded fail_connects PORT N   N connects to a closed port */
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
  static char buf[65536];
  long total = 0;
  for (;;) {
    ssize_t r = recv(s, buf, sizeof buf, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    total += r;
  }
  return (void*)total;
}

int main(int argc, char** argv) {
  if (argc < 4) return 98;
  const char* mode = argv[1];
  int port = it_port_arg(argv[2]);
  long n = strtol(argv[3], NULL, 10);

  if (strcmp(mode, "many_sends") == 0) {
    /* Start the thread and touch stdio before the first measure, so that only what the
     * sends themselves cost is counted. */
    printf("sends=%ld\n", n);
    fflush(stdout);
    long before = rss_anon_kb();
    int l = it_listener(port);
    int c = it_connect(port);
    int s = accept(l, NULL, NULL);
    if (s < 0) it_die("accept");
    pthread_t th;
    if (pthread_create(&th, NULL, drain, &s) != 0) it_die("pthread_create");
    long mid = rss_anon_kb();
    const char msg[8] = "rdzvmsg";
    long ok = 0;
    for (long i = 0; i < n; ++i)
      if (send(c, msg, sizeof msg, 0) == (ssize_t)sizeof msg) ++ok;
    long after = rss_anon_kb();
    shutdown(c, SHUT_WR);
    void* got = NULL;
    pthread_join(th, &got);
    printf("sent_ok=%ld received=%ld\n", ok, (long)got);
    REPORT("close client", close(c));
    REPORT("close accepted", close(s));
    REPORT("close listener", close(l));
    fprintf(stderr, "rss_anon_before_kb=%ld\nrss_anon_mid_kb=%ld\nrss_anon_after_kb=%ld\n",
            before, mid, after);
    fprintf(stderr, "rss_anon_growth_kb=%ld\nrss_anon_send_loop_growth_kb=%ld\n", after - before,
            after - mid);
    return 41;
  }
  if (strcmp(mode, "fail_connects") == 0) {
    struct sockaddr_in a = it_loopback(port);
    long refused = 0, other = 0;
    for (long i = 0; i < n; ++i) {
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      if (fd < 0) it_die("socket");
      if (connect(fd, (struct sockaddr*)&a, sizeof a) != 0 && errno == ECONNREFUSED)
        ++refused;
      else
        ++other;
      close(fd);
    }
    printf("refused=%ld other=%ld\n", refused, other);
    return 42;
  }
  return 97;
}
