/* Process trees under the shim: fork, exec chains with a scrubbed environment, posix_spawn,
 * vfork + exec. Every image makes one refused connect to PORT (a store port), so that each
 * traced image has a file. Usage:
 *   forks fork PORT
 *   forks exec_chain PORT SELF   connect; execve(SELF stage2) without LD_PRELOAD/RDZVSCOPE_*;
 *                                stage2: connect; fork; child execve(SELF stage3), likewise
 *   forks spawn PORT SELF        connect; posix_spawn(SELF stage3) with the scrubbed env
 *   forks vfork PORT SELF        connect; vfork; child execve(SELF stage3) with it
 *   forks exec_fail PORT         execve() of a missing and of a non-executable file
 *   forks signals PORT           connect; three children: a (connects, waits) gets kill(SIGTERM)
 *                                after a kill(a, 0) probe, b (its own process group, connects,
 *                                waits) killpg(SIGKILL), c exits 7; reaped by waitpid, wait4, wait
 * stderr gets "key=pid" lines the driver uses to find the files. */
#include "common.h"

#include <spawn.h>
#include <sys/wait.h>

extern char** environ;

static char** scrubbed_env(void) {
  size_t n = 0;
  while (environ[n]) ++n;
  char** out = calloc(n + 1, sizeof *out);
  size_t k = 0;
  for (size_t i = 0; i < n; ++i)
    if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0 && strncmp(environ[i], "RDZVSCOPE_", 10) != 0)
      out[k++] = environ[i];
  out[k] = NULL;
  return out;
}

static void refused(const char* what, int port) {
  struct sockaddr_in a = it_loopback(port);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REPORT(what, connect(fd, (struct sockaddr*)&a, sizeof a));
  close(fd);
}

/* The same connect, unreported: children that run at once would print in any order. */
static void refused_quietly(int port) {
  struct sockaddr_in a = it_loopback(port);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  (void)connect(fd, (struct sockaddr*)&a, sizeof a);
  close(fd);
}

static void report_status(const char* what, int status) {
  printf("%s: exited=%d code=%d\n", what, WIFEXITED(status), WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  fflush(stdout);
}

int main(int argc, char** argv) {
  if (argc < 3) return 98;
  const char* mode = argv[1];
  int port = it_port_arg(argv[2]);
  const char* self = argc > 3 ? argv[3] : NULL;
  int status = 0;

  if (strcmp(mode, "fork") == 0) {
    refused("parent connect", port);
    fprintf(stderr, "parent=%d\n", (int)getpid());
    pid_t pid = fork();
    if (pid == 0) {
      refused("child connect", port);
      exit(5);
    }
    int err = errno;
    fprintf(stderr, "child=%d\n", (int)pid);
    waitpid(pid, &status, 0);
    it_report("fork", pid > 0 ? 0 : -1, err);
    report_status("child", status);
    refused("parent connect after fork", port);
    return 61;
  }
  if (strcmp(mode, "exec_chain") == 0 && self) {
    refused("stage1 connect", port);
    fprintf(stderr, "stage1=%d\n", (int)getpid());
    char* args[] = {(char*)"forks", (char*)"exec_stage2", argv[2], (char*)self, NULL};
    execve(self, args, scrubbed_env());
    it_die("execve stage2");
  }
  if (strcmp(mode, "exec_stage2") == 0 && self) {
    refused("stage2 connect", port);
    fprintf(stderr, "stage2=%d\n", (int)getpid());
    pid_t pid = fork();
    if (pid == 0) {
      char* args[] = {(char*)"forks", (char*)"exec_stage3", argv[2], NULL};
      execve(self, args, scrubbed_env());
      _exit(127);
    }
    fprintf(stderr, "stage3=%d\n", (int)pid);
    waitpid(pid, &status, 0);
    report_status("stage3", status);
    return 62;
  }
  if (strcmp(mode, "exec_fail") == 0) {
    refused("connect", port);
    char* args[] = {(char*)"nope", NULL};
    REPORT("execve missing", execve("/nonexistent/rdzvscope-no-such-program", args, environ));
    REPORT("execv not executable", execv("/etc/hostname", args));
    refused("connect after failed execs", port);
    return 65;
  }
  if (strcmp(mode, "signals") == 0) {
    refused("parent connect", port);
    fprintf(stderr, "parent=%d\n", (int)getpid());
    pid_t a = fork();
    if (a == 0) {
      refused_quietly(port);
      for (;;) pause();
    }
    pid_t b = fork();
    if (b == 0) {
      setpgid(0, 0);
      refused_quietly(port);
      for (;;) pause();
    }
    setpgid(b, b); /* whichever of the two runs first */
    pid_t c = fork();
    if (c == 0) _exit(7);
    fprintf(stderr, "a=%d\nb=%d\nc=%d\n", (int)a, (int)b, (int)c);
    usleep(300 * 1000); /* a and b made their connects */
    REPORT("kill probe", kill(a, 0));
    REPORT("kill", kill(a, SIGTERM));
    REPORT("killpg", killpg(b, SIGKILL));
    waitpid(a, &status, 0);
    printf("a: signaled=%d sig=%d\n", WIFSIGNALED(status), WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    wait4(b, &status, 0, NULL);
    printf("b: signaled=%d sig=%d\n", WIFSIGNALED(status), WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    wait(&status);
    report_status("c", status);
    return 66;
  }
  if (strcmp(mode, "exec_stage3") == 0) {
    refused("stage3 connect", port);
    exit(6);
  }
  if (strcmp(mode, "spawn") == 0 && self) {
    refused("parent connect", port);
    fprintf(stderr, "parent=%d\n", (int)getpid());
    char* args[] = {(char*)"forks", (char*)"exec_stage3", argv[2], NULL};
    pid_t pid = -1;
    int r = posix_spawn(&pid, self, NULL, NULL, args, scrubbed_env());
    fprintf(stderr, "child=%d\n", (int)pid);
    waitpid(pid, &status, 0);
    printf("posix_spawn: ret=%d\n", r); /* after the child's own output */
    report_status("spawned", status);
    refused("parent connect after spawn", port);
    return 63;
  }
  if (strcmp(mode, "vfork") == 0 && self) {
    refused("parent connect", port);
    fprintf(stderr, "parent=%d\n", (int)getpid());
    char* args[] = {(char*)"forks", (char*)"exec_stage3", argv[2], NULL};
    char** env = scrubbed_env();
    pid_t pid = vfork();
    if (pid == 0) {
      execve(self, args, env);
      _exit(127);
    }
    int err = errno;
    fprintf(stderr, "child=%d\n", (int)pid);
    waitpid(pid, &status, 0);
    it_report("vfork", pid > 0 ? 0 : -1, err);
    report_status("vforked", status);
    refused("parent connect after vfork", port);
    return 64;
  }
  return 97;
}
