/* A connect loop meant to be SIGKILLed: prints "done N" after each completed attempt.
 * Usage: killed PORT */
#include "common.h"

int main(int argc, char** argv) {
  if (argc < 2) return 98;
  struct sockaddr_in a = it_loopback(it_port_arg(argv[1]));
  for (long i = 1; i <= 1000000; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    connect(fd, (struct sockaddr*)&a, sizeof a);
    close(fd);
    printf("done %ld\n", i);
    fflush(stdout);
    it_sleep_ms(1);
  }
  return 0;
}
