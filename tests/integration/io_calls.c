/* Every send/recv entry point once on a connected store socket, plus poll/ppoll/select that
 * time out on it. Built with -O2 -D_FORTIFY_SOURCE=2 and sizes the compiler cannot see, so
 * that recv/recvfrom/read/poll become __recv_chk/__recvfrom_chk/__read_chk/__poll_chk.
 * Usage: io_calls PORT [N [NFDS]] (N = 1 byte per call, NFDS = 1: values the compiler
 * cannot see) */
#include "common.h"

#include <poll.h>
#include <signal.h>
#include <sys/select.h>
#include <netinet/tcp.h>
#include <sys/uio.h>

int main(int argc, char** argv) {
  if (argc < 2) return 98;
  int port = it_port_arg(argv[1]);
  size_t n = argc > 2 ? (size_t)strtoul(argv[2], NULL, 10) : 1; /* unknown to the compiler */
  nfds_t one = (nfds_t)(argc > 3 ? strtoul(argv[3], NULL, 10) : 1);
  int l = it_listener(port);
  int c = it_connect(port);
  int s = accept(l, NULL, NULL);
  it_report("accept", s >= 0 ? 0 : -1, errno);
  struct sockaddr_in peer = it_loopback(port);
  char buf[64];
  memset(buf, 'x', sizeof buf);

  REPORT("send", send(c, buf, n, 0));
  REPORT("sendto", sendto(c, buf, n, 0, NULL, 0));
  struct iovec iov = {buf, n};
  struct msghdr mh;
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  REPORT("sendmsg", sendmsg(c, &mh, 0));
  REPORT("write", write(c, buf, n));
  REPORT("writev", writev(c, &iov, 1));
  (void)peer;

  REPORT("recv", recv(s, buf, n, 0));
  REPORT("recvfrom", recvfrom(s, buf, n, 0, NULL, NULL));
  REPORT("recvmsg", recvmsg(s, &mh, 0));
  REPORT("read", read(s, buf, n));
  REPORT("read rest", read(s, buf, n));

  /* Two messages of n bytes in one call each way: the records carry the bytes, 2n. */
  struct iovec two[2] = {{buf, n}, {buf, n}}, back[2] = {{buf, sizeof buf}, {buf, sizeof buf}};
  struct mmsghdr out[2], in[2];
  it_messages(out, two, 2);
  it_messages(in, back, 2);
  int nodelay = 1; /* both segments leave at once (no Nagle wait for an ACK) */
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &nodelay, sizeof nodelay);
  REPORT("sendmmsg", sendmmsg(c, out, 2, 0));
  usleep(20000);
  REPORT("recvmmsg", recvmmsg(s, in, 2, MSG_WAITFORONE, NULL)); /* 1 or 2 messages, 2n bytes */

  struct pollfd p[2] = {{s, POLLIN, 0}, {-1, 0, 0}};
  REPORT("poll 120ms", poll(p, one, 120));
  struct timespec ts = {0, 110 * 1000000L};
  REPORT("ppoll 110ms", ppoll(p, one, &ts, NULL));
  fd_set rd;
  FD_ZERO(&rd);
  FD_SET(s, &rd);
  struct timeval tv = {0, 100000};
  REPORT("select 100ms", select(s + 1, &rd, NULL, NULL, &tv));
  REPORT("close client", close(c));
  REPORT("close accepted", close(s));
  REPORT("close listener", close(l));
  return 37;
}
