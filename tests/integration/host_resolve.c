/* Host matrix: names resolved from 16 threads at once. Each thread, released together by a
 * barrier, resolves localhost, 127.0.0.1 and a bogus .invalid name ITER times through
 * getaddrinfo and gethostbyname_r; the results (addresses sorted within each answer) are
 * counted and printed sorted, so the output is the same whatever the interleaving.
 * Usage: host_resolve ITER      exit status 71 */
#include "common.h"

#include <netdb.h>
#include <pthread.h>

#define NTHREADS 16
#define MAXLINES 4096

static const char* const kNames[] = {"localhost", "127.0.0.1", "rdzvscope-host-matrix.invalid"};
#define NNAMES (int)(sizeof kNames / sizeof kNames[0])

static pthread_barrier_t g_barrier;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char* g_lines[MAXLINES];
static int g_nlines;
static long g_iter;

static void add_line(const char* s) {
  pthread_mutex_lock(&g_lock);
  if (g_nlines < MAXLINES) g_lines[g_nlines++] = strdup(s);
  pthread_mutex_unlock(&g_lock);
}

static int cmp_str(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

/* Joins the sorted address strings into out. */
static void join_sorted(char addrs[][64], int n, char* out, size_t cap) {
  qsort(addrs, (size_t)n, sizeof addrs[0], (int (*)(const void*, const void*))strcmp);
  out[0] = '\0';
  for (int i = 0; i < n; ++i) {
    if (i) strncat(out, ",", cap - strlen(out) - 1);
    strncat(out, addrs[i], cap - strlen(out) - 1);
  }
}

static void do_gai(const char* name) {
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int r = getaddrinfo(name, "29500", &hints, &res);
  char addrs[32][64];
  int n = 0;
  for (struct addrinfo* ai = res; ai && n < 32; ai = ai->ai_next) {
    char host[64] = "?";
    getnameinfo(ai->ai_addr, ai->ai_addrlen, host, sizeof host, NULL, 0, NI_NUMERICHOST);
    snprintf(addrs[n++], sizeof addrs[0], "%s", host);
  }
  if (res) freeaddrinfo(res);
  char joined[1024], line[1200];
  join_sorted(addrs, n, joined, sizeof joined);
  snprintf(line, sizeof line, "getaddrinfo %s: ret=%d [%s]", name, r, joined);
  add_line(line);
}

static void do_ghbn(const char* name) {
  struct hostent he, *result = NULL;
  char buf[4096];
  int herr = 0;
  int r = gethostbyname_r(name, &he, buf, sizeof buf, &result, &herr);
  char addrs[32][64];
  int n = 0;
  if (result)
    for (char** p = result->h_addr_list; *p && n < 32; ++p)
      inet_ntop(result->h_addrtype, *p, addrs[n++], sizeof addrs[0]);
  char joined[1024], line[1200];
  join_sorted(addrs, n, joined, sizeof joined);
  snprintf(line, sizeof line, "gethostbyname_r %s: ret=%d found=%d h_errno=%d [%s]", name, r,
           result != NULL, result ? 0 : herr, joined);
  add_line(line);
}

static void* worker(void* arg) {
  long id = (long)arg;
  pthread_barrier_wait(&g_barrier);
  for (long i = 0; i < g_iter; ++i)
    for (int k = 0; k < NNAMES; ++k) {
      const char* name = kNames[(k + id) % NNAMES];
      do_gai(name);
      do_ghbn(name);
    }
  return NULL;
}

int main(int argc, char** argv) {
  g_iter = argc > 1 ? strtol(argv[1], NULL, 10) : 5;
  pthread_barrier_init(&g_barrier, NULL, NTHREADS);
  pthread_t th[NTHREADS];
  for (long i = 0; i < NTHREADS; ++i)
    if (pthread_create(&th[i], NULL, worker, (void*)i) != 0) it_die("pthread_create");
  for (int i = 0; i < NTHREADS; ++i) pthread_join(th[i], NULL);
  qsort(g_lines, (size_t)g_nlines, sizeof g_lines[0], cmp_str);
  for (int i = 0; i < g_nlines;) {
    int j = i;
    while (j < g_nlines && strcmp(g_lines[i], g_lines[j]) == 0) ++j;
    printf("%dx %s\n", j - i, g_lines[i]);
    i = j;
  }
  printf("answers=%d\n", g_nlines);
  return 71;
}
