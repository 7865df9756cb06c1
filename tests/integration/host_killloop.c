/* Host matrix, no data lost: numbered connect attempts (refused) in a tight loop, meant to be
 * SIGKILLed at a random moment. Writes "N\n" to stdout with write(2) after attempt N returned,
 * so that whatever is in stdout was completed. Usage: host_killloop PORT [MAX_ATTEMPTS] */
#include "common.h"

int main(int argc, char** argv) {
  if (argc < 2) return 98;
  struct sockaddr_in a = it_loopback(it_port_arg(argv[1]));
  /* At most this many attempts, then wait for the kill: a loaded machine can deliver the kill
   * late, and attempts past the trace file's capacity would be dropped, not lost by the kill. */
  const long max_attempts = argc > 2 ? atol(argv[2]) : 100000000;
  char line[32];
  for (long i = 1; i <= max_attempts; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    connect(fd, (struct sockaddr*)&a, sizeof a);
    close(fd);
    int len = snprintf(line, sizeof line, "%ld\n", i);
    if (write(1, line, (size_t)len) != len) return 3;
  }
  for (;;) pause();
}
