// Typed table of the libc functions the shim wraps. Each pointer is resolved lazily with
// dlsym(RTLD_NEXT) on first use, so a hook called before our constructor (by another
// library's constructor) still reaches libc. Racing resolutions store the same value.
#pragma once

#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <time.h>

#define RDZV_REAL_FUNCTIONS(X)                                                                   \
  X(getaddrinfo, int, (const char*, const char*, const struct addrinfo*, struct addrinfo**))    \
  X(gethostbyname, struct hostent*, (const char*))                                              \
  X(gethostbyname2, struct hostent*, (const char*, int))                                        \
  X(gethostbyname_r, int,                                                                       \
    (const char*, struct hostent*, char*, size_t, struct hostent**, int*))                      \
  X(gethostbyname2_r, int,                                                                      \
    (const char*, int, struct hostent*, char*, size_t, struct hostent**, int*))                 \
  X(getnameinfo, int,                                                                           \
    (const struct sockaddr*, socklen_t, char*, socklen_t, char*, socklen_t, int))               \
  X(connect, int, (int, const struct sockaddr*, socklen_t))                                     \
  X(bind, int, (int, const struct sockaddr*, socklen_t))                                        \
  X(listen, int, (int, int))                                                                    \
  X(accept, int, (int, struct sockaddr*, socklen_t*))                                           \
  X(accept4, int, (int, struct sockaddr*, socklen_t*, int))                                     \
  X(send, ssize_t, (int, const void*, size_t, int))                                             \
  X(sendto, ssize_t, (int, const void*, size_t, int, const struct sockaddr*, socklen_t))        \
  X(sendmsg, ssize_t, (int, const struct msghdr*, int))                                         \
  X(write, ssize_t, (int, const void*, size_t))                                                 \
  X(writev, ssize_t, (int, const struct iovec*, int))                                           \
  X(recv, ssize_t, (int, void*, size_t, int))                                                   \
  X(__recv_chk, ssize_t, (int, void*, size_t, size_t, int))                                     \
  X(recvfrom, ssize_t, (int, void*, size_t, int, struct sockaddr*, socklen_t*))                 \
  X(__recvfrom_chk, ssize_t, (int, void*, size_t, size_t, int, struct sockaddr*, socklen_t*))   \
  X(recvmsg, ssize_t, (int, struct msghdr*, int))                                               \
  X(sendmmsg, int, (int, struct mmsghdr*, unsigned int, int))                                   \
  X(recvmmsg, int, (int, struct mmsghdr*, unsigned int, int, struct timespec*))                 \
  X(read, ssize_t, (int, void*, size_t))                                                        \
  X(__read_chk, ssize_t, (int, void*, size_t, size_t))                                          \
  X(poll, int, (struct pollfd*, nfds_t, int))                                                   \
  X(__poll_chk, int, (struct pollfd*, nfds_t, int, size_t))                                     \
  X(ppoll, int, (struct pollfd*, nfds_t, const struct timespec*, const sigset_t*))              \
  X(__ppoll_chk, int,                                                                           \
    (struct pollfd*, nfds_t, const struct timespec*, const sigset_t*, size_t))                  \
  X(select, int, (int, fd_set*, fd_set*, fd_set*, struct timeval*))                             \
  X(pselect, int,                                                                               \
    (int, fd_set*, fd_set*, fd_set*, const struct timespec*, const sigset_t*))                  \
  X(epoll_wait, int, (int, struct epoll_event*, int, int))                                      \
  X(epoll_pwait, int, (int, struct epoll_event*, int, int, const sigset_t*))                    \
  X(getsockopt, int, (int, int, int, void*, socklen_t*))                                        \
  X(setsockopt, int, (int, int, int, const void*, socklen_t))                                   \
  X(fcntl, int, (int, int, ...))                                                                \
  X(fcntl64, int, (int, int, ...))                                                              \
  X(close, int, (int))                                                                          \
  X(close_range, int, (unsigned int, unsigned int, int))                                        \
  X(dup, int, (int))                                                                            \
  X(dup2, int, (int, int))                                                                      \
  X(dup3, int, (int, int, int))                                                                 \
  X(fork, pid_t, (void))                                                                        \
  X(vfork, pid_t, (void))                                                                       \
  X(posix_spawn, int,                                                                           \
    (pid_t*, const char*, const posix_spawn_file_actions_t*, const posix_spawnattr_t*,          \
     char* const*, char* const*))                                                               \
  X(posix_spawnp, int,                                                                          \
    (pid_t*, const char*, const posix_spawn_file_actions_t*, const posix_spawnattr_t*,          \
     char* const*, char* const*))                                                               \
  X(execve, int, (const char*, char* const*, char* const*))                                     \
  X(execvpe, int, (const char*, char* const*, char* const*))                                    \
  X(fexecve, int, (int, char* const*, char* const*))                                            \
  X(kill, int, (pid_t, int))                                                                    \
  X(killpg, int, (pid_t, int))                                                                  \
  X(waitpid, pid_t, (pid_t, int*, int))                                                         \
  X(wait4, pid_t, (pid_t, int*, int, struct rusage*))                                           \
  X(wait, pid_t, (int*))                                                                        \
  X(exit, void, (int))                                                                          \
  X(_exit, void, (int))                                                                         \
  X(_Exit, void, (int))                                                                         \
  X(__libc_start_main, int,                                                                     \
    (int (*)(int, char**, char**), int, char**, void (*)(void), void (*)(void),                 \
     void (*)(void), void*))

namespace rdzv::real {

void* resolve(const char* name);

#define RDZV_DECLARE_REAL(name, ret, params)                                 \
  using name##_fn = ret(*) params;                                           \
  inline name##_fn name() {                                                  \
    static void* cached;                                                     \
    void* p = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);                    \
    if (__builtin_expect(p == nullptr, 0)) {                                 \
      p = resolve(#name);                                                    \
      __atomic_store_n(&cached, p, __ATOMIC_RELEASE);                        \
    }                                                                        \
    return reinterpret_cast<name##_fn>(p);                                   \
  }
RDZV_REAL_FUNCTIONS(RDZV_DECLARE_REAL)
#undef RDZV_DECLARE_REAL

}  // namespace rdzv::real
