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
#include <sys/epoll.h>
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

int main(int argc, char** argv) {
  const char* what = argc > 1 ? argv[1] : "";
  if (strcmp(what, "thread") == 0) {
    listen_on(8080);
    pthread_t thread;
    pthread_create(&thread, NULL, idle, NULL);
    return 0;
  }
  if (strcmp(what, "recvmsg") == 0) {
    int fd = accept_one(listen_on(8080));
    char buffer[64];
    struct iovec part = {buffer, sizeof buffer};
    struct msghdr message = {.msg_iov = &part, .msg_iovlen = 1};
    recvmsg(fd, &message, 0);
    return 0;
  }
  if (strcmp(what, "elsewhere") == 0) {  /* listens, but not on the scenario's port */
    listen_on(9090);
    sleep(10);
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
  fprintf(stderr, "seam_probe: thread | recvmsg | elsewhere | nothing | dies | fails-to-start | spin | wait-intmax | hog | names\n");
  return 2;
}
