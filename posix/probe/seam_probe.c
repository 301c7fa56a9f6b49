/* A small program for the seam's tests: it does one thing a target might do, named by its
 * first argument, so that a test can see what the seam makes of it. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int listen_on(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  struct sockaddr_in address;
  memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_port = htons((unsigned short)port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || bind(fd, (struct sockaddr*)&address, sizeof address) != 0 || listen(fd, 16) != 0) {
    perror("listen");
    exit(1);
  }
  return fd;
}

/* Waits for a connection and accepts it. */
static int accept_one(int listener) {
  int poller = epoll_create1(0);
  struct epoll_event event = {.events = EPOLLIN, .data.fd = listener};
  epoll_ctl(poller, EPOLL_CTL_ADD, listener, &event);
  for (;;) {
    struct epoll_event ready;
    if (epoll_wait(poller, &ready, 1, -1) == 1) {
      int fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK);
      if (fd >= 0) return fd;
    }
  }
}

static void* idle(void* unused) { return unused; }

/* A call's result and errno's name, one line: the same lines whether the seam or Linux answers. */
static void say(const char* what, long rc) {
  printf("%s %ld %s\n", what, rc, rc < 0 ? strerrorname_np(errno) : "ok");
}

static void show_stat(const char* name, int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    say(name, -1);
    return;
  }
  printf("fstat %s mode %o nlink %lu size %lld\n", name, (unsigned)st.st_mode, (unsigned long)st.st_nlink,
         (long long)st.st_size);
}

static void show_poll(const char* what, int fd, short events, int timeout) {
  struct pollfd entry = {fd, events, 0};
  int n = poll(&entry, 1, timeout);
  printf("poll %s -> %d revents %#x\n", what, n, (unsigned)entry.revents);
}

/* poll and select on pipes and socket pairs, as Linux answers them. */
static void polls(void) {
  int p[2], s[2];
  if (pipe(p) != 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, s) != 0) perror("pipe, socketpair");
  show_poll("empty pipe, reader", p[0], POLLIN, 0);
  show_poll("empty pipe, writer", p[1], POLLOUT, 0);
  say("write", write(p[1], "x", 1));
  show_poll("pipe with a byte", p[0], POLLIN | POLLOUT, 0);
  close(p[1]);
  show_poll("pipe, writer closed", p[0], POLLIN, 0);
  char byte;
  say("read", read(p[0], &byte, 1));
  show_poll("pipe, drained and ended", p[0], POLLIN, 0);
  show_poll("quiet pair, 100 ms", s[1], POLLIN, 100);
  say("shutdown", shutdown(s[0], SHUT_WR));
  show_poll("pair, other end shut", s[1], POLLIN | POLLRDHUP, 0);
  show_poll("pair, own end shut", s[0], POLLIN | POLLOUT, 0);
  struct pollfd both[2] = {{s[0], POLLOUT, 0}, {s[1], POLLIN, 0}};
  int ready = poll(both, 2, 0);
  printf("poll both -> %d revents %#x %#x\n", ready, (unsigned)both[0].revents, (unsigned)both[1].revents);
  fd_set readable, writable;
  FD_ZERO(&readable);
  FD_ZERO(&writable);
  FD_SET(s[1], &readable);
  FD_SET(s[0], &writable);
  struct timeval now = {0, 0};
  int n = select((s[0] > s[1] ? s[0] : s[1]) + 1, &readable, &writable, NULL, &now);
  printf("select -> %d readable %d writable %d\n", n, FD_ISSET(s[1], &readable), FD_ISSET(s[0], &writable));
  close(s[1]);
  show_poll("pair, other end closed", s[0], POLLOUT, 0);
  /* Naming no descriptor, poll and select sleep: in virtual time under the seam. */
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int slept = poll(NULL, 0, 250);
  struct timeval tenth = {0, 100000};
  int selected = select(0, NULL, NULL, NULL, &tenth);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  long ms = (long)(t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
  printf("poll and select of nothing -> %d %d, at least 350 ms: %d\n", slept, selected, ms >= 350);
  fflush(stdout);
}

/* sendmsg and recvmsg, without ancillary data, on a socket pair, as Linux answers them. */
static void msgs(void) {
  int s[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, s) != 0) perror("socketpair");
  struct iovec out[2] = {{"hel", 3}, {"lo", 2}};
  struct msghdr sent = {.msg_iov = out, .msg_iovlen = 2};
  say("sendmsg", sendmsg(s[0], &sent, 0));
  char a[2], b[10];
  struct iovec in[2] = {{a, sizeof a}, {b, sizeof b}};
  struct sockaddr_storage peer;
  struct msghdr got = {.msg_name = &peer, .msg_namelen = sizeof peer, .msg_iov = in, .msg_iovlen = 2};
  long n = recvmsg(s[1], &got, 0);
  printf("recvmsg %ld [%.2s][%.*s] namelen %u controllen %zu flags %d\n", n, a, (int)(n > 2 ? n - 2 : 0), b,
         (unsigned)got.msg_namelen, (size_t)got.msg_controllen, got.msg_flags);
  say("recvmsg empty, MSG_DONTWAIT", recvmsg(s[1], &got, MSG_DONTWAIT));
  close(s[0]);
  say("recvmsg after the close", recvmsg(s[1], &got, 0));
  fflush(stdout);
}

/* fstat, the pipe size commands and the descriptor limit, as Linux answers them. The lines
 * prefixed "privileged" depend on CAP_SYS_RESOURCE, which the seam's process never has. */
static void calls(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0), p[2], e = eventfd(0, 0), ep = epoll_create1(0);
  if (pipe(p) != 0) perror("pipe");
  show_stat("socket", s);
  show_stat("pipe-read", p[0]);
  show_stat("pipe-write", p[1]);
  show_stat("eventfd", e);
  show_stat("epoll", ep);
  struct stat st;
  say("fstatat-empty-path", fstatat(s, "", &st, AT_EMPTY_PATH));
  say("getpipe", fcntl(p[0], F_GETPIPE_SZ));
  say("setpipe-5000", fcntl(p[1], F_SETPIPE_SZ, 5000));
  say("getpipe-after", fcntl(p[0], F_GETPIPE_SZ));
  say("setpipe-100", fcntl(p[1], F_SETPIPE_SZ, 100));
  say("setpipe-65536", fcntl(p[1], F_SETPIPE_SZ, 65536));
  fcntl(p[1], F_SETFL, O_NONBLOCK);
  static char bytes[10000];
  say("write-10000", write(p[1], bytes, sizeof bytes));
  say("setpipe-4096-holding-10000", fcntl(p[1], F_SETPIPE_SZ, 4096));
  say("setpipe-socket", fcntl(s, F_SETPIPE_SZ, 4096));
  say("getpipe-socket", fcntl(s, F_GETPIPE_SZ));
  say("privileged setpipe-2MiB", fcntl(p[1], F_SETPIPE_SZ, 2 * 1024 * 1024));
  struct rlimit limit, asked;
  getrlimit(RLIMIT_NOFILE, &limit);
  printf("rlimit soft<=hard %d\n", limit.rlim_cur <= limit.rlim_max);
  asked = (struct rlimit){limit.rlim_cur - 10, limit.rlim_max};
  say("lower-soft", setrlimit(RLIMIT_NOFILE, &asked));
  getrlimit(RLIMIT_NOFILE, &asked);
  printf("soft lowered by %lld\n", (long long)(limit.rlim_cur - asked.rlim_cur));
  asked = (struct rlimit){limit.rlim_max + 1, limit.rlim_max};
  say("soft-above-hard", setrlimit(RLIMIT_NOFILE, &asked));
  asked = (struct rlimit){limit.rlim_cur - 10, limit.rlim_cur - 5};
  say("lower-hard", setrlimit(RLIMIT_NOFILE, &asked));
  getrlimit(RLIMIT_NOFILE, &asked);
  printf("hard now soft+5 %d\n", asked.rlim_max == asked.rlim_cur + 5);
  asked = (struct rlimit){limit.rlim_cur, limit.rlim_cur};
  say("privileged raise-hard", setrlimit(RLIMIT_NOFILE, &asked));
  errno = 4321;
  struct timespec ms = {0, 1000000};
  nanosleep(&ms, NULL);
  printf("errno after a sleep %d\n", errno);
  fflush(stdout);
}

int main(int argc, char** argv) {
  const char* what = argc > 1 ? argv[1] : "";
  if (strcmp(what, "thread") == 0) {
    listen_on(8080);
    pthread_t thread;
    pthread_create(&thread, NULL, idle, NULL);
    return 0;
  }
  if (strcmp(what, "dup") == 0) {  /* a call the seam does not serve, on a simulated descriptor */
    int fd = accept_one(listen_on(8080));
    dup(fd);
    return 0;
  }
  if (strcmp(what, "elsewhere") == 0) {  /* listens, but not on the scenario's port */
    listen_on(9090);
    sleep(10);
    return 0;
  }
  if (strcmp(what, "calls") == 0) {  /* with "alone", natively: no listener */
    calls();
    if (argc > 2 && strcmp(argv[2], "alone") == 0) return 0;
    int listener = listen_on(8080);
    errno = 4321;
    int fd = accept_one(listener); /* blocks in epoll_wait while the client connects */
    printf("errno after a blocking wait %d\n", errno);
    fflush(stdout);
    return fd < 0;
  }
  if (strcmp(what, "msgs") == 0) {  /* with "alone", natively: no listener */
    msgs();
    if (argc > 2 && strcmp(argv[2], "alone") == 0) return 0;
    accept_one(listen_on(8080));
    return 0;
  }
  if (strcmp(what, "polls") == 0) {  /* with "alone", natively: no listener */
    polls();
    if (argc > 2 && strcmp(argv[2], "alone") == 0) return 0;
    accept_one(listen_on(8080));
    return 0;
  }
  if (strcmp(what, "fcntl-lease") == 0) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    fcntl(s, F_SETLEASE, F_RDLCK);
    return 0;
  }
  if (strcmp(what, "nothing") == 0) return 0;
  if (strcmp(what, "hog") == 0) {  /* asks for memory until refused, touching none of it */
    long mib = 0;
    while (mib < (1L << 20) && malloc(64L << 20) != NULL) mib += 64;
    fprintf(stderr, "seam_probe: allocated %ld MiB, then refused\n", mib);
    return 4;
  }
  if (strcmp(what, "dies") == 0) {  /* serves nobody: takes the first connection and exits */
    accept_one(listen_on(8080));
    fprintf(stderr, "seam_probe: giving up after one connection\n");
    exit(3);
  }
  if (strcmp(what, "wait-intmax") == 0) {  /* Linux: EINVAL past EP_MAX_EVENTS, and no allocation */
    int listener = listen_on(8080);
    int poller = epoll_create1(0);
    struct epoll_event event = {.events = EPOLLIN, .data.fd = listener}, ready;
    epoll_ctl(poller, EPOLL_CTL_ADD, listener, &event);
    errno = 0;
    volatile int asked = INT_MAX;  /* as a program that miscomputes it would: not a constant */
    int n = epoll_wait(poller, &ready, asked, -1);
    printf("epoll_wait INT_MAX %d %s\n", n, errno == EINVAL ? "EINVAL" : "other");
    fflush(stdout);
    accept_one(listener);
    return 0;
  }
  if (strcmp(what, "spin") == 0) {  /* accepts in a loop that never waits: with free failing calls, time stands still */
    int listener = listen_on(8080);
    for (;;) accept4(listener, NULL, NULL, SOCK_NONBLOCK);
  }
  if (strcmp(what, "fails-to-start") == 0) {
    fprintf(stderr, "seam_probe: cannot read its configuration\n");
    return 1;
  }
  if (strcmp(what, "names") == 0) {
    /* Real and simulated descriptors side by side: their numbers never meet, the clocks are
     * virtual, and a real file still works. */
    int file = open("/dev/null", O_RDONLY);
    int listener = listen_on(8080);
    int poller = epoll_create1(0);
    int other = open("/dev/null", O_RDONLY);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    printf("file %d listener %d poller %d other %d distinct %d\n", file, listener, poller, other,
           file != listener && file != poller && other != listener && other != poller);
    printf("monotonic %lld.%09ld realtime %lld\n", (long long)now.tv_sec, now.tv_nsec, (long long)time(NULL));
    char byte;
    printf("real read %zd\n", read(other, &byte, 1));
    errno = 0;
    long ring = syscall(425 /* io_uring_setup */, 1, NULL);
    printf("io_uring %ld %s\n", ring, errno == ENOSYS ? "ENOSYS" : "other");
    fflush(stdout);
    sleep(1);
    clock_gettime(CLOCK_MONOTONIC, &now);
    printf("after sleep %lld.%09ld\n", (long long)now.tv_sec, now.tv_nsec);
    fflush(stdout);
    accept_one(listener);
    return 0;
  }
  fprintf(stderr, "seam_probe: calls | polls | msgs | fcntl-lease | thread | dup | elsewhere | nothing | dies | fails-to-start | spin | wait-intmax | hog | names\n");
  return 2;
}
