/* connect() failures: refused, and (inside a namespace whose SYNs are dropped) timed out,
 * blocking and non-blocking. Usage:
 *   connect_errors refused PORT
 *   connect_errors nonblock_used PORT           (non-blocking connect that succeeds, then send)
 *   connect_errors timeout_blocking PORT        (inside the SYN-dropping namespace)
 *   connect_errors timeout_poll PORT            (non-blocking, poll 500 ms, epoll_wait 200 ms,
 *                                               close: abandoned)
 *   connect_errors timeout_so_error PORT        (non-blocking, poll until done, SO_ERROR) */
#include "common.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>

static int nb_socket(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) it_die("socket");
  int fl = fcntl(s, F_GETFL);
  if (fcntl(s, F_SETFL, fl | O_NONBLOCK) != 0) it_die("fcntl");
  return s;
}

int main(int argc, char** argv) {
  if (argc < 3) return 98;
  const char* mode = argv[1];
  int port = it_port_arg(argv[2]);
  struct sockaddr_in a = it_loopback(port);

  if (strcmp(mode, "refused") == 0) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    REPORT("connect refused", connect(fd, (struct sockaddr*)&a, sizeof a));
    /* The shim opens its trace file at that first connect: it must keep no descriptor. */
    int probe = open("/dev/null", O_RDONLY);
    printf("next free fd after the first connect: %d\n", probe);
    close(probe);
    /* Same socket again: Linux lets a refused socket retry. */
    REPORT("connect refused again", connect(fd, (struct sockaddr*)&a, sizeof a));
    REPORT("close", close(fd));
    return 11;
  }
  if (strcmp(mode, "refused6") == 0) {
    struct sockaddr_in6 a6;
    memset(&a6, 0, sizeof a6);
    a6.sin6_family = AF_INET6;
    a6.sin6_port = htons((unsigned short)port);
    a6.sin6_addr = in6addr_loopback;
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    REPORT("connect [::1] refused", connect(fd, (struct sockaddr*)&a6, sizeof a6));
    REPORT("close", close(fd));
    return 15;
  }
  if (strcmp(mode, "setenv_master_port") == 0) {
    /* torchrun's agent sets MASTER_PORT in its own environment before its workers connect. */
    setenv("MASTER_PORT", argv[2], 1);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    REPORT("connect to MASTER_PORT", connect(fd, (struct sockaddr*)&a, sizeof a));
    REPORT("close", close(fd));
    return 16;
  }
  if (strcmp(mode, "nonblock_used") == 0) {
    /* A non-blocking connect that succeeds; the program learns it from poll(POLLOUT) and
     * goes straight to send(), never reading SO_ERROR. */
    int l = it_listener(port);
    int fd = nb_socket();
    REPORT("connect nonblocking", connect(fd, (struct sockaddr*)&a, sizeof a));
    struct pollfd p = {fd, POLLOUT, 0};
    REPORT("poll POLLOUT", poll(&p, 1, 5000));
    int s = accept(l, NULL, NULL);
    it_report("accept", s >= 0 ? 0 : -1, errno);
    REPORT("send", send(fd, "abc", 3, 0));
    char b[8];
    REPORT("recv on accepted", recv(s, b, sizeof b, 0));
    REPORT("close", close(fd));
    close(s);
    close(l);
    return 17;
  }
  if (strcmp(mode, "timeout_blocking") == 0) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    double t0 = it_now();
    REPORT("connect blocking", connect(fd, (struct sockaddr*)&a, sizeof a));
    double dt = it_now() - t0;
    printf("took_more_than_2s=%d\n", dt > 2.0);
    fprintf(stderr, "elapsed_s=%.3f\n", dt);
    REPORT("close", close(fd));
    return 12;
  }
  if (strcmp(mode, "timeout_poll") == 0) {
    int fd = nb_socket();
    REPORT("connect nonblocking", connect(fd, (struct sockaddr*)&a, sizeof a));
    struct pollfd p = {fd, POLLOUT, 0};
    REPORT("poll 500ms", poll(&p, 1, 500));
    printf("revents=%d\n", p.revents);
    /* The same pending connect waited on through epoll. */
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLOUT, .data = {.fd = fd}};
    REPORT("epoll_ctl", epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
    REPORT("epoll_wait 200ms", epoll_wait(ep, &ev, 1, 200));
    close(ep);
    REPORT("close", close(fd));
    return 13;
  }
  if (strcmp(mode, "timeout_so_error") == 0) {
    int fd = nb_socket();
    REPORT("connect nonblocking", connect(fd, (struct sockaddr*)&a, sizeof a));
    struct pollfd p = {fd, POLLOUT, 0};
    double t0 = it_now();
    REPORT("poll until done", poll(&p, 1, 10000));
    fprintf(stderr, "elapsed_s=%.3f\n", it_now() - t0);
    int soerr = -1;
    socklen_t len = sizeof soerr;
    REPORT("getsockopt SO_ERROR", getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len));
    printf("so_error=%s\n", it_errname(soerr));
    REPORT("close", close(fd));
    return 14;
  }
  return 97;
}
