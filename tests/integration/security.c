/* Waits for a line on stdin (so that the driver can plant files at this pid's trace path),
 * then makes its first socket call. Usage: security PORT */
#include "common.h"

int main(int argc, char** argv) {
  if (argc < 2) return 98;
  char line[64];
  if (!fgets(line, sizeof line, stdin)) return 96;
  struct sockaddr_in a = it_loopback(it_port_arg(argv[1]));
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REPORT("connect", connect(fd, (struct sockaddr*)&a, sizeof a));
  REPORT("close", close(fd));
  return 71;
}
