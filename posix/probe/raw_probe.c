/* The probe's raw mode: a server that never calls libc for its system calls. Each is a
 * `syscall` instruction in the program's own code, as Go's runtime and hand-written loops make
 * them, so that only the seam's trap (posix/interpose_trap.cpp) can serve them. Natively
 * ("alone"), it listens on a port of Linux's and reports what Linux said; under the seam, it
 * serves one request on 8080. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

#if defined(__x86_64__)
static long raw(long number, long a, long b, long c, long d, long e, long f) {
  long rc;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall"
                   : "=a"(rc)
                   : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return rc;
}

static void said(const char* what, long rc) {
  if (rc < 0) {
    printf("%s %s\n", what, strerrorname_np((int)-rc));
  } else {
    printf("%s ok\n", what);
  }
}

static int caught = 0;
static void on_sigsys(int signal) { caught = signal; }

int raw_mode(int alone) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const long listener = raw(SYS_socket, AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0, 0, 0, 0);
  said("socket", listener);
  struct sockaddr_in address;
  memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_port = htons(alone ? 18091 : 8080);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int on = 1;
  said("setsockopt", raw(SYS_setsockopt, listener, SOL_SOCKET, SO_REUSEADDR, (long)&on, sizeof on, 0));
  said("bind", raw(SYS_bind, listener, (long)&address, sizeof address, 0, 0, 0));
  said("listen", raw(SYS_listen, listener, 16, 0, 0, 0, 0));
  said("accept before a client", raw(SYS_accept4, listener, 0, 0, SOCK_NONBLOCK, 0, 0));
  said("read a bad descriptor", raw(SYS_read, 999, (long)&on, 1, 0, 0, 0));
  /* The program's own SIGSYS handler, set by the raw call: taken, and the trap still works. */
  struct {
    void* handler;
    unsigned long flags;
    void* restorer;
    unsigned long mask;
  } action = {(void*)on_sigsys, 0, 0, 0};
  said("rt_sigaction SIGSYS", raw(SYS_rt_sigaction, SIGSYS, (long)&action, 0, 8, 0, 0));
  said("rt_sigaction with a bad size", raw(SYS_rt_sigaction, SIGSYS, (long)&action, 0, 4, 0, 0));
  /* A signal set written where nothing may be written: EFAULT, not a fault in whoever serves it. */
  said("rt_sigprocmask's old set at address 8", raw(SYS_rt_sigprocmask, SIG_BLOCK, 0, 8, 8, 0, 0));
  said("rt_sigpending at address 8", raw(SYS_rt_sigpending, 8, 8, 0, 0, 0, 0));
  /* Random bytes, and clone3's arguments, at an address that cannot be reached: EFAULT, by the
   * program's own instruction and by libc's syscall(). */
  said("getrandom at address 8", raw(SYS_getrandom, 8, 16, 0, 0, 0, 0));
  said("clone3 at address 8", raw(SYS_clone3, 8, 88, 0, 0, 0, 0));
  long rc = syscall(SYS_getrandom, 8, 16, 0);
  said("syscall(SYS_getrandom) at address 8", rc < 0 ? -errno : rc);
  rc = syscall(SYS_clone3, 8, 88);
  said("syscall(SYS_clone3) at address 8", rc < 0 ? -errno : rc);
  if (alone) return 0;

  struct timespec before, after;
  raw(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&before, 0, 0, 0, 0);
  const long poller = raw(SYS_epoll_create1, EPOLL_CLOEXEC, 0, 0, 0, 0, 0);
  struct epoll_event event = {.events = EPOLLIN, .data.fd = (int)listener};
  raw(SYS_epoll_ctl, poller, EPOLL_CTL_ADD, listener, (long)&event, 0, 0);
  long fd = -1;
  while (fd < 0) {
    struct epoll_event ready;
    if (raw(SYS_epoll_wait, poller, (long)&ready, 1, -1, 0, 0) == 1) fd = raw(SYS_accept4, listener, 0, 0, 0, 0, 0);
  }
  raw(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&after, 0, 0, 0, 0);
  printf("accepted after %ld ms of virtual time\n",
         (long)((after.tv_sec - before.tv_sec) * 1000 + (after.tv_nsec - before.tv_nsec) / 1000000));
  char request[1024];
  long got = 0;
  while (got < (long)sizeof request && memmem(request, (size_t)got, "\r\n\r\n", 4) == NULL) {
    const long n = raw(SYS_read, fd, (long)(request + got), sizeof request - (size_t)got, 0, 0, 0);
    if (n <= 0) break;
    got += n;
  }
  printf("read %ld bytes\n", got);
  static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  said("write", raw(SYS_write, fd, (long)answer, sizeof answer - 1, 0, 0, 0));
  said("close", raw(SYS_close, fd, 0, 0, 0, 0, 0));
  printf("SIGSYS caught %d\n", caught);
  /* The end, as exit_group: the process's status is the run's. */
  raw(SYS_exit_group, 0, 0, 0, 0, 0, 0);
  return 0;
}
/* A SIGTERM handler with SA_ONSTACK (as Go's are), and SIGTERM blocked by the program's own
 * rt_sigprocmask, which only the real mask knows: the scenario's SIGTERM comes while main()
 * waits, stays pending, and runs the handler once the program unblocks it, as on Linux. */
static volatile sig_atomic_t terms;
static void on_term(int signal) {
  (void)signal;
  ++terms;
}

int onstack_mode(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  static char alternate[65536];
  stack_t stack = {.ss_sp = alternate, .ss_size = sizeof alternate, .ss_flags = 0};
  sigaltstack(&stack, NULL);
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_term;
  action.sa_flags = SA_ONSTACK;
  sigaction(SIGTERM, &action, NULL);
  unsigned long term = 1ul << (SIGTERM - 1), old = 0;
  raw(SYS_rt_sigprocmask, SIG_BLOCK, (long)&term, (long)&old, 8, 0, 0);
  const int listener = listen_on(8080);
  const int poller = epoll_create1(0);
  struct epoll_event event = {.events = EPOLLIN, .data.fd = listener};
  epoll_ctl(poller, EPOLL_CTL_ADD, listener, &event);
  struct epoll_event ready;
  const int n = epoll_wait(poller, &ready, 1, 500);  /* the SIGTERM comes at 100 ms */
  printf("wait %d %s, handled %d while blocked\n", n, n < 0 ? strerrorname_np(errno) : "ok", (int)terms);
  raw(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&term, 0, 8, 0, 0);
  printf("handled %d once unblocked\n", (int)terms);
  return 0;
}

/* For bench/seam_overhead.sh: `count` reads of CLOCK_MONOTONIC, each by the program's own
 * system call (`raw`, trapped) or by libc's clock_gettime (interposed), then one request
 * answered. The difference of the two runs' wall times is the trap's cost. */
int calls_mode(const char* how, long count) {
  const int trapped = strcmp(how, "raw") == 0;
  struct timespec t;
  for (long i = 0; i < count; ++i) {
    if (trapped) {
      raw(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&t, 0, 0, 0, 0);
    } else {
      clock_gettime(CLOCK_MONOTONIC, &t);
    }
  }
  const int fd = accept_one(listen_on(8080));
  static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
  char request[1024];
  (void)read(fd, request, sizeof request);
  (void)write(fd, answer, sizeof answer - 1);
  close(fd);
  return 0;
}
#else
int onstack_mode(void) { return 0; }
int calls_mode(const char* how, long count) {
  (void)how;
  (void)count;
  return 0;
}
int raw_mode(int alone) {
  (void)alone;
  printf("raw system calls: x86-64 only\n");
  return 0;
}
#endif
