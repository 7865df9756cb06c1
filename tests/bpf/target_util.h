/* What the programs attach is tested on (bpf_target.c, fd_target.c) share. */
#ifndef RDZVSCOPE_TESTS_BPF_TARGET_UTIL_H
#define RDZVSCOPE_TESTS_BPF_TARGET_UTIL_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

static inline struct sockaddr_in loopback(int port) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

#endif /* RDZVSCOPE_TESTS_BPF_TARGET_UTIL_H */
