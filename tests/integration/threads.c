/* 32 threads connect, send and close at the same moment, against a server in a child process;
 * the threads' connects are this process's first socket calls, so they also race to create
 * the trace file. Usage: threads PORT */
#include "common.h"

#include <pthread.h>
#include <poll.h>
#include <sys/wait.h>

#define NTHREADS 32
#define NMSG 100
#define MSGLEN 64

static pthread_barrier_t g_barrier;
static int g_port;
static struct {
  int connect_ret, connect_err;
  long sent;
  int close_ret;
} g_res[NTHREADS];

static void* client(void* arg) {
  long i = (long)arg;
  struct sockaddr_in a = it_loopback(g_port);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  pthread_barrier_wait(&g_barrier);
  errno = 0;
  g_res[i].connect_ret = connect(fd, (struct sockaddr*)&a, sizeof a);
  g_res[i].connect_err = g_res[i].connect_ret ? errno : 0;
  char msg[MSGLEN];
  memset(msg, 'a' + (int)(i % 26), sizeof msg);
  for (int k = 0; k < NMSG && g_res[i].connect_ret == 0; ++k) {
    ssize_t r = send(fd, msg, sizeof msg, MSG_NOSIGNAL);
    if (r > 0) g_res[i].sent += r;
  }
  g_res[i].close_ret = close(fd);
  return NULL;
}

/* Accepts NTHREADS connections and reads each to its end; exits with the number of bytes
 * received / MSGLEN modulo 256 wrapped into a check. */
static void server(int l, int ready_fd) {
  char c = 'r';
  if (write(ready_fd, &c, 1) != 1) _exit(90);
  struct pollfd p[NTHREADS + 1];
  int open_conns = 0, accepted = 0;
  long total = 0;
  p[0].fd = l;
  p[0].events = POLLIN;
  for (int i = 1; i <= NTHREADS; ++i) p[i].fd = -1, p[i].events = POLLIN;
  while (accepted < NTHREADS || open_conns > 0) {
    if (poll(p, NTHREADS + 1, 10000) <= 0) _exit(91);
    if ((p[0].revents & POLLIN) && accepted < NTHREADS) {
      int s = accept(l, NULL, NULL);
      if (s < 0) _exit(92);
      p[++accepted].fd = s;
      ++open_conns;
    }
    for (int i = 1; i <= accepted; ++i) {
      if (p[i].fd < 0 || !p[i].revents) continue;
      char buf[8192];
      ssize_t r = recv(p[i].fd, buf, sizeof buf, 0);
      if (r > 0) {
        total += r;
      } else {
        close(p[i].fd);
        p[i].fd = -1;
        --open_conns;
      }
    }
  }
  _exit(total == (long)NTHREADS * NMSG * MSGLEN ? 0 : 93);
}

int main(int argc, char** argv) {
  if (argc < 2) return 98;
  g_port = it_port_arg(argv[1]);
  int sync[2];
  if (pipe(sync) != 0) it_die("pipe");
  pid_t pid = fork();
  if (pid < 0) it_die("fork");
  if (pid == 0) {
    int l = it_listener(g_port);
    server(l, sync[1]);
  }
  char c;
  if (read(sync[0], &c, 1) != 1) it_die("sync");
  pthread_barrier_init(&g_barrier, NULL, NTHREADS);
  pthread_t th[NTHREADS];
  for (long i = 0; i < NTHREADS; ++i)
    if (pthread_create(&th[i], NULL, client, (void*)i) != 0) it_die("pthread_create");
  for (int i = 0; i < NTHREADS; ++i) pthread_join(th[i], NULL);
  for (int i = 0; i < NTHREADS; ++i)
    printf("thread %d: connect ret=%d errno=%s sent=%ld close=%d\n", i, g_res[i].connect_ret,
           it_errname(g_res[i].connect_err), g_res[i].sent, g_res[i].close_ret);
  int status = 0;
  waitpid(pid, &status, 0);
  printf("server exit=%d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 51;
}
