/* A program that never touches a socket or the resolver: files, a pipe, fork, exec. It must
 * leave no trace file and behave exactly as without the shim. Usage: no_socket TMPFILE */
#include "common.h"

#include <fcntl.h>
#include <sys/wait.h>

int main(int argc, char** argv) {
  if (argc < 2) return 98;
  int fd = REPORT("open", open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600));
  REPORT("write", write(fd, "hello world\n", 12));
  REPORT("lseek", lseek(fd, 0, SEEK_SET));
  char buf[64];
  REPORT("read", read(fd, buf, sizeof buf));
  REPORT("close", close(fd));
  REPORT("close again", close(fd));
  REPORT("read bad fd", read(-1, buf, 1));
  int p[2];
  REPORT("pipe", pipe(p));
  REPORT("write pipe", write(p[1], "x", 1));
  REPORT("read pipe", read(p[0], buf, 1));
  pid_t pid = fork();
  if (pid == 0) {
    char* args[] = {(char*)"true", NULL};
    execvp("true", args);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  printf("child exited=%d code=%d\n", WIFEXITED(status), WEXITSTATUS(status));
  pid = fork();
  if (pid == 0) _exit(4);
  waitpid(pid, &status, 0);
  printf("child2 code=%d\n", WEXITSTATUS(status));
  return 9;
}
