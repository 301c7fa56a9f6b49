/* A small program for the seam's tests: it does one thing a target might do, named by its
 * first argument, so that a test can see what the seam makes of it. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <semaphore.h>
#include <spawn.h>
#include <sched.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

int listen_on(int port) {
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

int accept_one(int listener) {
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

/* "threads": the main thread accepts with blocking calls and queues each connection; two
 * worker threads take them from the queue (a mutex and a condition variable), read a request
 * and answer it. One more thread only computes, and is joined. */
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_ready = PTHREAD_COND_INITIALIZER;
static int queue[64];
static int queued = 0;
static long served_by[3];

static void* worker(void* number) {
  long me = (long)number;
  for (;;) {
    pthread_mutex_lock(&queue_lock);
    while (queued == 0) pthread_cond_wait(&queue_ready, &queue_lock);
    int fd = queue[--queued];
    pthread_mutex_unlock(&queue_lock);
    char request[1024];
    ssize_t n = read(fd, request, sizeof request);
    if (n > 0) {
      char answer[128];
      int length = snprintf(answer, sizeof answer, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n%ld\n", me);
      write(fd, answer, (size_t)length);
      ++served_by[me];
    }
    close(fd);
  }
  return NULL;
}

/* Sleeps a second of the machine's time in a call no interposer sees (the raw syscall). */
static void* sleep_for_real(void* unused) {
  const struct timespec second = {1, 0};
#if defined(__x86_64__)
  long rc;
  __asm__ volatile("syscall" : "=a"(rc) : "a"((long)SYS_nanosleep), "D"(&second), "S"(0L) : "rcx", "r11", "memory");
  (void)rc;
#else
  nanosleep(&second, NULL); /* interposed elsewhere: virtual, and the test shows nothing there */
#endif
  return unused;
}

static void* compute_forever(void* unused) {
  volatile unsigned long sum = 0;
  for (;;) ++sum;
  return unused;
}

static void* compute(void* unused) {
  volatile unsigned long sum = 0;
  for (unsigned long i = 0; i < 1000000; ++i) sum += i;
  return unused;
}

/* "sync": each blocking point of threads, with lines that are the same whoever schedules them. */
static sem_t sync_sem;
static pthread_barrier_t sync_barrier;
static pthread_rwlock_t sync_rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t sync_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sync_cond = PTHREAD_COND_INITIALIZER;
static int sync_counter = 0, serial = 0, futex_word = 0, timedlock_rc = 0;

static void* sync_worker(void* number) {
  if (pthread_barrier_wait(&sync_barrier) == PTHREAD_BARRIER_SERIAL_THREAD) __atomic_add_fetch(&serial, 1, __ATOMIC_SEQ_CST);
  sem_wait(&sync_sem);
  pthread_rwlock_wrlock(&sync_rw);
  ++sync_counter;
  pthread_rwlock_unlock(&sync_rw);
  return (void*)((long)number * 10);
}

static void* futex_waiter(void* unused) {
  while (__atomic_load_n(&futex_word, __ATOMIC_SEQ_CST) == 0) syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
  return unused;
}

static void* timed_locker(void* unused) {
  struct timespec at;
  clock_gettime(CLOCK_REALTIME, &at);
  at.tv_nsec += 100000000;
  if (at.tv_nsec >= 1000000000) { at.tv_sec += 1; at.tv_nsec -= 1000000000; }
  timedlock_rc = pthread_mutex_timedlock(&sync_lock, &at);
  return unused;
}

static void sync_points(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  sem_init(&sync_sem, 0, 0);
  pthread_barrier_init(&sync_barrier, NULL, 3);
  pthread_t workers[2];
  for (long i = 0; i < 2; ++i) pthread_create(&workers[i], NULL, sync_worker, (void*)(i + 1));
  if (pthread_barrier_wait(&sync_barrier) == PTHREAD_BARRIER_SERIAL_THREAD) __atomic_add_fetch(&serial, 1, __ATOMIC_SEQ_CST);
  sem_post(&sync_sem);
  sem_post(&sync_sem);
  void* values[2];
  for (int i = 0; i < 2; ++i) pthread_join(workers[i], &values[i]);
  printf("joined %ld %ld counter %d serial %d\n", (long)values[0], (long)values[1], sync_counter, serial);
  printf("sched_yield %d\n", sched_yield());

  pthread_t waiter;
  pthread_create(&waiter, NULL, futex_waiter, NULL);
  struct timespec ms = {0, 20000000};
  nanosleep(&ms, NULL);
  __atomic_store_n(&futex_word, 1, __ATOMIC_SEQ_CST);
  syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
  printf("futex waiter joined %d\n", pthread_join(waiter, NULL));

  pthread_t locker;
  pthread_mutex_lock(&sync_lock);
  pthread_create(&locker, NULL, timed_locker, NULL);
  pthread_join(locker, NULL);
  pthread_mutex_unlock(&sync_lock);
  printf("timedlock %s\n", timedlock_rc == ETIMEDOUT ? "ETIMEDOUT" : "other");

  struct timespec before, at, after;
  clock_gettime(CLOCK_MONOTONIC, &before);
  clock_gettime(CLOCK_REALTIME, &at);
  at.tv_sec += 1;
  pthread_mutex_lock(&sync_lock);
  int rc = pthread_cond_timedwait(&sync_cond, &sync_lock, &at);
  pthread_mutex_unlock(&sync_lock);
  clock_gettime(CLOCK_MONOTONIC, &after);
  long waited_ms = (after.tv_sec - before.tv_sec) * 1000 + (after.tv_nsec - before.tv_nsec) / 1000000;
  printf("cond timedwait %s, at least 1 s: %d\n", rc == ETIMEDOUT ? "ETIMEDOUT" : "other", waited_ms >= 999);
  fflush(stdout);
}

/* "signals": a SIGTERM handler by sigaction (no SA_RESTART), a SIGHUP one by signal(); an epoll
 * loop that serves until SIGTERM, then closes its listener, answers what it holds, and returns. */
static volatile sig_atomic_t got_term = 0, got_hup = 0;
static void on_term(int number) { (void)number; got_term = 1; }
static void on_hup(int number) { (void)number; got_hup++; }
static volatile sig_atomic_t got_usr2 = 0;
static void on_usr2(int number) { (void)number; got_usr2++; }

static int signals_mode(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_term;
  sigaction(SIGTERM, &action, NULL);
  signal(SIGHUP, on_hup);
  struct sigaction asked;
  sigaction(SIGTERM, NULL, &asked);
  printf("SIGTERM's handler kept %d\n", asked.sa_handler == on_term);
  signal(SIGUSR2, on_usr2);
  raise(SIGUSR2);
  kill(getpid(), SIGUSR2);
  printf("raised twice, handled %d\n", (int)got_usr2);
  int listener = listen_on(8080);
  int poller = epoll_create1(0);
  struct epoll_event event = {.events = EPOLLIN, .data.fd = listener};
  epoll_ctl(poller, EPOLL_CTL_ADD, listener, &event);
  int held = 0;
  for (;;) {
    struct epoll_event ready[8];
    int n = epoll_wait(poller, ready, 8, -1);
    if (n < 0) printf("epoll_wait %s hup %d term %d\n", strerrorname_np(errno), (int)got_hup, (int)got_term);
    if (got_term && listener >= 0) {
      close(listener);
      listener = -1;
      printf("closed the listener, holding %d\n", held);
    }
    for (int i = 0; i < n; ++i) {
      int fd = ready[i].data.fd;
      if (fd == listener) {
        int conn = accept4(listener, NULL, NULL, SOCK_NONBLOCK);
        if (conn < 0) continue;
        struct epoll_event readable = {.events = EPOLLIN, .data.fd = conn};
        epoll_ctl(poller, EPOLL_CTL_ADD, conn, &readable);
        ++held;
        continue;
      }
      char request[1024];
      if (read(fd, request, sizeof request) > 0) {
        const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        write(fd, answer, sizeof answer - 1);
      }
      close(fd);
      --held;
    }
    if (listener < 0 && held == 0) return 0;
  }
}

/* "grow": a thread blocks in epoll_wait on a pipe while the main thread opens a thousand
 * descriptors, then writes to the pipe: the thread wakes with its event. */
static int grow_pipe[2];
static void* grow_waiter(void* unused) {
  int poller = epoll_create1(0);
  struct epoll_event event = {.events = EPOLLIN, .data.u64 = 77};
  epoll_ctl(poller, EPOLL_CTL_ADD, grow_pipe[0], &event);
  struct epoll_event ready;
  int n = epoll_wait(poller, &ready, 1, -1);
  printf("woke with %d event(s), data %llu\n", n, (unsigned long long)ready.data.u64);
  fflush(stdout);
  return unused;
}

static void grow(void) {
  listen_on(8080);
  if (pipe(grow_pipe) != 0) perror("pipe");
  pthread_t waiter;
  pthread_create(&waiter, NULL, grow_waiter, NULL);
  struct timespec ms = {0, 1000000};
  nanosleep(&ms, NULL);  /* the waiter blocks */
  for (int i = 0; i < 1000; ++i) eventfd(0, 0);
  write(grow_pipe[1], "x", 1);
  pthread_join(waiter, NULL);
}

static void threads(void) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in address;
  memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_port = htons(8080);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listener, (struct sockaddr*)&address, sizeof address) != 0 || listen(listener, 16) != 0) exit(1);
  pthread_t workers[2], computer;
  for (long i = 0; i < 2; ++i) pthread_create(&workers[i], NULL, worker, (void*)(i + 1));
  pthread_create(&computer, NULL, compute, NULL);
  pthread_join(computer, NULL);
  for (;;) {
    int fd = accept(listener, NULL, NULL);
    if (fd < 0) continue;
    pthread_mutex_lock(&queue_lock);
    queue[queued++] = fd;
    pthread_cond_signal(&queue_ready);
    pthread_mutex_unlock(&queue_lock);
  }
}

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
/* dup, dup2, dup3 and F_DUPFD: a duplicate opens the same file as Linux shares it (its status
 * flags, its bytes, its epoll registrations, its end), with FD_CLOEXEC its own. */
static void dups(void) {
  int s[2], p[2];
  char got[4] = {0};
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, s) != 0 || pipe(p) != 0) perror("socketpair, pipe");
  const int copy = dup(s[0]);
  printf("dup -> a new number: %d\n", copy >= 0 && copy != s[0] && copy != s[1]);
  say("F_SETFL O_NONBLOCK through the copy", fcntl(copy, F_SETFL, O_NONBLOCK));
  printf("the original is nonblocking: %d\n", (fcntl(s[0], F_GETFL) & O_NONBLOCK) != 0);
  say("read on the original, nothing there", read(s[0], got, 1));
  const int high = fcntl(s[0], F_DUPFD_CLOEXEC, 20);
  printf("F_DUPFD_CLOEXEC from 20 -> at least 20: %d; FD_CLOEXEC %d, the original's %d\n", high >= 20,
         fcntl(high, F_GETFD), fcntl(s[0], F_GETFD));
  printf("F_DUPFD from 20 -> the next: %d\n", fcntl(s[0], F_DUPFD, 20) == high + 1);
  close(high + 1);
  say("write to the peer", write(s[1], "ab", 2));
  say("read through the copy", read(copy, got, 1));
  say("read through the original", read(s[0], got + 1, 1));
  printf("read [%s]\n", got);
  /* epoll: the registration is the file's and its number's; it outlives the number's close */
  int poller = epoll_create1(0);
  struct epoll_event event = {.events = EPOLLIN, .data.u64 = 7}, ready = {0};
  say("epoll_ctl ADD through the original", epoll_ctl(poller, EPOLL_CTL_ADD, s[0], &event));
  say("close the original", close(s[0]));
  say("write to the peer", write(s[1], "x", 1));
  int n = epoll_wait(poller, &ready, 1, 0);
  printf("epoll_wait %d data %llu events %#x\n", n, (unsigned long long)ready.data.u64, (unsigned)ready.events);
  say("epoll_ctl MOD through the copy", epoll_ctl(poller, EPOLL_CTL_MOD, copy, &event));
  say("epoll_ctl DEL through the copy", epoll_ctl(poller, EPOLL_CTL_DEL, copy, NULL));
  say("epoll_ctl DEL through the closed number", epoll_ctl(poller, EPOLL_CTL_DEL, s[0], NULL));
  say("read through the high copy", read(high, got, 1));
  /* the peer sees its end only when the last descriptor of the file closes */
  say("close the copy", close(copy));
  fcntl(s[1], F_SETFL, O_NONBLOCK);
  say("the peer reads, one descriptor left", read(s[1], got, 1));
  say("close the high copy", close(high));
  say("the peer reads, none left", read(s[1], got, 1));
  /* dup2 and dup3 onto an open descriptor close it first */
  int counter = eventfd(0, 0);
  printf("dup2 onto an eventfd -> its number: %d\n", dup2(p[0], counter) == counter);
  say("write to the pipe", write(p[1], "z", 1));
  say("read through the eventfd's number", read(counter, got, 1));
  printf("read [%c]\n", got[0]);
  printf("dup2 onto itself -> itself: %d\n", dup2(p[0], p[0]) == p[0]);
  say("dup3 onto itself", dup3(p[0], p[0], 0));
  say("dup3 with a flag it does not know", dup3(p[0], counter, O_NONBLOCK));
  printf("dup3 O_CLOEXEC -> FD_CLOEXEC %d\n", fcntl(dup3(p[0], counter, O_CLOEXEC), F_GETFD));
  say("close the pipe's reader", close(p[0]));
  say("the duplicate still reads", (write(p[1], "y", 1), read(counter, got, 1)));
  say("dup of a closed descriptor", dup(p[0]));
  /* each duplicate counts against RLIMIT_NOFILE */
  struct rlimit was, low;
  getrlimit(RLIMIT_NOFILE, &was);
  low = was;
  low.rlim_cur = 64;
  setrlimit(RLIMIT_NOFILE, &low);
  int made[64], count = 0;
  errno = 0;
  while (count < 64 && (made[count] = dup(p[1])) >= 0) ++count;
  printf("dup until it fails: %s, fewer than 64: %d\n", strerrorname_np(errno), count < 64);
  if (count > 0) close(made[--count]);
  made[count] = dup(p[1]);
  say("dup once one closed", made[count] < 0 ? -1 : 0);
  for (int i = 0; i <= count; ++i) close(made[i]);
  setrlimit(RLIMIT_NOFILE, &was);
  fflush(stdout);
}

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
  /* A timeout below zero, or with its fraction out of range, is refused before anything is looked at. */
  struct pollfd one = {s[1], POLLIN, 0};
  struct timespec negative = {-1, 0}, too_many_ns = {0, 1000000000};
  say("ppoll with a negative timeout", ppoll(&one, 1, &negative, NULL));
  say("ppoll with 10^9 ns", ppoll(&one, 1, &too_many_ns, NULL));
  FD_ZERO(&readable);
  FD_SET(s[1], &readable);
  struct timeval negative_us = {0, -1};
  say("select with a negative timeout", select(s[1] + 1, &readable, NULL, NULL, &negative_us));
  FD_ZERO(&readable);
  FD_SET(s[1], &readable);
  say("pselect with a negative timeout", pselect(s[1] + 1, &readable, NULL, NULL, &negative, NULL));
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
/* sendfile from a real file onto a socket pair, with an offset and from the file's position;
 * splice from the pair into a pipe (the line the seam answers otherwise: EINVAL). */
static void files(void) {
  char name[] = "/tmp/seam-probe-XXXXXX";
  int file = mkstemp(name);
  unlink(name);
  if (file < 0 || write(file, "0123456789", 10) != 10) perror("mkstemp");
  lseek(file, 0, SEEK_SET);
  int s[2], p[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, s) != 0 || pipe(p) != 0) perror("socketpair, pipe");
  off_t at = 2;
  say("sendfile 5 at 2", sendfile(s[0], file, &at, 5));
  char got[16] = {0};
  say("read", read(s[1], got, sizeof got - 1));
  printf("got [%s] offset now %ld position %ld\n", got, (long)at, (long)lseek(file, 0, SEEK_CUR));
  say("sendfile 3 from the position", sendfile(s[0], file, NULL, 3));
  memset(got, 0, sizeof got);
  say("read", read(s[1], got, sizeof got - 1));
  printf("got [%s] position %ld\n", got, (long)lseek(file, 0, SEEK_CUR));
  say("sendfile the rest", sendfile(s[0], file, NULL, 100));
  say("sendfile 100 from the offset", sendfile(s[0], file, &at, 100));
  say("sendfile from a socket", sendfile(s[0], s[1], NULL, 1));
  say("write", write(s[0], "abcd", 4));
  say("splice pair to pipe", splice(s[1], NULL, p[1], NULL, 4, SPLICE_F_NONBLOCK));
  fflush(stdout);
}

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
  say("send", send(s[0], "peek", 4, 0));
  char peeked[8] = {0};
  say("recv MSG_PEEK 2", recv(s[1], peeked, 2, MSG_PEEK));
  printf("peeked [%s]\n", peeked);
  say("recvmsg MSG_PEEK", recvmsg(s[1], &got, MSG_PEEK));
  memset(peeked, 0, sizeof peeked);
  say("recv", recv(s[1], peeked, sizeof peeked - 1, 0));
  printf("then read [%s]\n", peeked);
  say("recv MSG_PEEK empty, MSG_DONTWAIT", recv(s[1], peeked, 2, MSG_PEEK | MSG_DONTWAIT));
  int p[2];
  if (pipe(p) != 0) perror("pipe");
  say("recv MSG_PEEK on a pipe", recv(p[0], peeked, 2, MSG_PEEK));
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

/* "crash-on-order": answers each request on its own connection, in the order the connections
 * were accepted, and dies of a bad access if the first it reads asks for /second: a crash that
 * only some schedules reach (two clients connecting at one instant, "second" first). */
static void crash_on_order(void) {
  int listener = listen_on(8080);
  int served = 0;
  for (;;) {
    int fd = accept_one(listener);
    int poller = epoll_create1(0);
    struct epoll_event event = {.events = EPOLLIN, .data.fd = fd}, ready;
    epoll_ctl(poller, EPOLL_CTL_ADD, fd, &event);
    char request[1024];
    ssize_t n = 0;
    while (n <= 0) {
      if (epoll_wait(poller, &ready, 1, -1) == 1) n = read(fd, request, sizeof request - 1);
    }
    request[n] = 0;
    if (served++ == 0 && strstr(request, "GET /second ") != NULL) {
      volatile int* nowhere = NULL;
      *nowhere = 1;
    }
    static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n";
    write(fd, answer, sizeof answer - 1);
    close(poller);
    close(fd);
  }
}

/* "starts WAY TOKEN": starts a process by WAY, which stays (it carries TOKEN on its command
 * line, which the test looks for). "raw" is the syscall instruction itself, which no
 * interposer sees: only the end of the target's process group ends its child. */
extern char** environ;
static int child_body(void* unused) {
  (void)unused;
  for (;;) pause();
  return 0;
}
static void start_process(const char* way, const char* token) {
  char* stay[] = {"/bin/sh", "-c", "sleep 1000; : ", (char*)token, NULL};
  pid_t child = 0;
  if (strcmp(way, "fork") == 0 && (child = fork()) == 0) child_body(NULL);
  if (strcmp(way, "vfork") == 0 && (child = vfork()) == 0) {
    execve(stay[0], stay, environ);
    _exit(127);
  }
  if (strcmp(way, "posix_spawn") == 0) posix_spawn(&child, stay[0], NULL, NULL, stay, environ);
  if (strcmp(way, "system") == 0) {
    char command[256];
    snprintf(command, sizeof command, "sh -c 'sleep 1000; : %s' &", token);
    int status = system(command);
    (void)status;
  }
  if (strcmp(way, "popen") == 0) {
    char command[256];
    snprintf(command, sizeof command, "sleep 1000; : %s", token);
    FILE* piped = popen(command, "r");
    (void)piped;
  }
  if (strcmp(way, "syscall-fork") == 0 && (child = (pid_t)syscall(SYS_fork)) == 0) child_body(NULL);
  if (strcmp(way, "clone") == 0) {
    static char stack[65536];
    child = clone(child_body, stack + sizeof stack, SIGCHLD, NULL);
  }
#if defined(__x86_64__)
  if (strcmp(way, "raw") == 0) {
    long made;
    __asm__ volatile("syscall" : "=a"(made) : "a"(57L /* SYS_fork */) : "rcx", "r11", "memory");
    if (made == 0) child_body(NULL);
    child = (pid_t)made;
  }
#endif
  fprintf(stderr, "seam_probe: started a process by %s: %d\n", way, (int)child);
}

int main(int argc, char** argv) {
  const char* what = argc > 1 ? argv[1] : "";
  if (strcmp(what, "thread") == 0) {  /* starts a thread that ends at once, and joins it */
    listen_on(8080);
    pthread_t thread;
    void* value = &what;
    pthread_create(&thread, NULL, idle, NULL);
    int rc = pthread_join(thread, &value);
    printf("joined %d value %p\n", rc, value);
    fflush(stdout);
    sleep(10);
    return 0;
  }
  if (strcmp(what, "threads") == 0) threads();
  if (strcmp(what, "grow") == 0) {
    grow();
    return 0;
  }
  if (strcmp(what, "signals") == 0) return signals_mode();
  const int alone = argc > 2 && strcmp(argv[2], "alone") == 0;
  if (strcmp(what, "sigpipe") == 0) return sigpipe_mode(alone);
  if (strcmp(what, "sigpipe-dies") == 0) return sigpipe_dies_mode(alone);
  if (strcmp(what, "signal-waits") == 0) return signal_waits_mode(alone);
  if (strcmp(what, "timers") == 0) return timers_mode(alone);
  if (strcmp(what, "signal-thread") == 0) return signal_thread_mode(alone);
  if (strcmp(what, "mask-thread") == 0) return mask_thread_mode(alone);
  if (strcmp(what, "raise-thread") == 0) return raise_thread_mode(alone);
  if (strcmp(what, "lock-signal") == 0) return lock_signal_mode(alone);
  if (strcmp(what, "thread-kill") == 0) return thread_kill_mode(alone, 0);
  if (strcmp(what, "thread-tgkill") == 0) return thread_kill_mode(alone, 1);
  if (strcmp(what, "thread-tgkill-libc") == 0) return thread_kill_mode(alone, 2);
  if (strcmp(what, "mask-thread-dies") == 0) return mask_thread_dies_mode(alone);
  if (strcmp(what, "mask-thread-waits") == 0) return mask_thread_waits_mode(alone);
  if (strcmp(what, "cond-clock") == 0) return cond_clock_mode(alone);
  if (strcmp(what, "signalfd") == 0) return signalfd_mode(alone);
  if (strcmp(what, "children") == 0) return children_mode(alone);
  if (strcmp(what, "families") == 0) return families_mode(alone);
  if (strcmp(what, "sndbuf") == 0) return sndbuf_mode();
  if (strcmp(what, "raw") == 0) return raw_mode(alone);
  if (strcmp(what, "onstack") == 0) return onstack_mode();
  if (strcmp(what, "clock-reads") == 0) return calls_mode(argc > 2 ? argv[2] : "", argc > 3 ? atol(argv[3]) : 0);
  if (strcmp(what, "entropy") == 0) return entropy_mode();
  if (strcmp(what, "fclosed") == 0) return fclosed_mode();
  if (strcmp(what, "fortify") == 0) return fortify_mode();
  if (strcmp(what, "spins") == 0) return spins_mode(alone);
  if (strcmp(what, "datagrams") == 0) return datagrams_mode();
  if (strcmp(what, "child-refused") == 0) return child_refused_mode(argc > 2 ? argv[2] : "");
  if (strcmp(what, "child-serves") == 0) return child_serves_mode(argc > 2 && strcmp(argv[2], "mute") == 0);
  if (strcmp(what, "alarm-dies") == 0) return alarm_dies_mode(alone);
  if (strcmp(what, "reraise") == 0) return reraise_mode();
  if (strcmp(what, "sync") == 0) {  /* with "alone", natively: no listener */
    sync_points();
    if (argc > 2) return 0;
    int fd = accept_one(listen_on(8080));
    close(fd);
    return 0;
  }
  if (strcmp(what, "thread-waits-for-real") == 0) {  /* 1 s in a sleep the seam does not see: no CPU */
    int listener = listen_on(8080);
    pthread_t sleeper;
    pthread_create(&sleeper, NULL, sleep_for_real, NULL);
    pthread_join(sleeper, NULL);
    close(accept_one(listener));
    return 0;
  }
  if (strcmp(what, "thread-spins") == 0) {  /* a thread that never makes a call the seam serves */
    listen_on(8080);
    pthread_t spinner;
    pthread_create(&spinner, NULL, compute_forever, NULL);
    sleep(1);
    return 0;
  }
  if (strcmp(what, "unserved") == 0) {  /* a call the seam does not serve, on a simulated descriptor */
    int fd = accept_one(listen_on(8080));
    fcntl(fd, F_SETOWN, getpid());
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
  if (strcmp(what, "files") == 0) {  /* with "alone", natively: no listener */
    files();
    if (argc > 2 && strcmp(argv[2], "alone") == 0) return 0;
    accept_one(listen_on(8080));
    return 0;
  }
  if (strcmp(what, "msgs") == 0) {  /* with "alone", natively: no listener */
    msgs();
    if (argc > 2 && strcmp(argv[2], "alone") == 0) return 0;
    accept_one(listen_on(8080));
    return 0;
  }
  if (strcmp(what, "dups") == 0) {  /* with "alone", natively: no listener */
    dups();
    if (argc > 2 && strcmp(argv[2], "alone") == 0) return 0;
    close(accept_one(listen_on(8080)));
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
  if (strcmp(what, "dup-watch") == 0) {  /* two registrations of one file: Linux's, not the seam's */
    int s[2], poller = epoll_create1(0);
    struct epoll_event event = {.events = EPOLLIN};
    socketpair(AF_UNIX, SOCK_STREAM, 0, s);
    epoll_ctl(poller, EPOLL_CTL_ADD, s[0], &event);
    printf("a second registration through a dup %d\n", epoll_ctl(poller, EPOLL_CTL_ADD, dup(s[0]), &event));
    return 0;
  }
  if (strcmp(what, "fioasync") == 0) {  /* nginx's master asks this of its channel */
    int s = socket(AF_INET, SOCK_STREAM, 0), on = 1;
    ioctl(s, FIOASYNC, &on);
    return 0;
  }
  if (strcmp(what, "raw-socket") == 0) {  /* ping's */
    printf("raw socket %d\n", socket(AF_INET, SOCK_RAW, IPPROTO_ICMP));
    return 0;
  }
  if (strcmp(what, "nothing") == 0) return 0;
  if (strcmp(what, "brk") == 0) {  /* where its break is, past its last segment's page, and that it moves */
    extern char end;
    static char line[4096];  /* stdout's buffer, so that printf takes nothing of the break */
    setvbuf(stdout, line, _IOLBF, sizeof line);
    const uintptr_t page = 4096, after = ((uintptr_t)&end + page - 1) & ~(page - 1);
    char* start = sbrk(0);
    printf("break past its end by %ld\n", (long)((uintptr_t)start - after));
    char* grown = sbrk(1 << 20);
    memset(grown, 1, 1 << 20);
    printf("grown by 1 MiB: %s\n", grown == start && sbrk(0) == start + (1 << 20) ? "yes" : "no");
    printf("shrunk back: %s\n", sbrk(-(1 << 20)) != (void*)-1 && sbrk(0) == start ? "yes" : "no");
    fflush(stdout);
    if (argc > 2 && strcmp(argv[2], "alone") == 0) return 0;
    close(accept_one(listen_on(8080)));
    return 0;
  }
  if (strcmp(what, "hog") == 0) {  /* asks for memory until refused, touching none of it */
    long mib = 0;
    while (mib < (1L << 20) && malloc(64L << 20) != NULL) mib += 64;
    fprintf(stderr, "seam_probe: allocated %ld MiB, then refused\n", mib);
    return 4;
  }
  if (strcmp(what, "dies") == 0) {  /* serves nobody: takes the first connection and exits */
    accept_one(listen_on(8080));
    /* "--stay": holds it, unanswered, and lives on (a failure of another kind than dying,
     * which shrinking must not trade for the death that leaving the flag out gives) */
    if (argc > 2 && strcmp(argv[2], "--stay") == 0)
      for (;;) sleep(1000);
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
    /* "spin TOKEN as-nobody": as root, first becomes nobody, as servers drop their privileges */
    if (argc > 3 && strcmp(argv[3], "as-nobody") == 0 && getuid() == 0 && setuid(65534) != 0) return 1;
    for (;;) accept4(listener, NULL, NULL, SOCK_NONBLOCK);
  }
  if (strcmp(what, "crash-on-order") == 0) crash_on_order();
  if (strcmp(what, "starts") == 0 && argc > 3) {
    int listener = listen_on(8080);
    start_process(argv[2], argv[3]);
    accept_one(listener);
    sleep(10);
    return 0;
  }
  if (strcmp(what, "spins-main") == 0) {  /* main() itself never makes a call the seam serves */
    listen_on(8080);
    volatile unsigned long turns = 0;
    for (;;) ++turns;
  }
  if (strcmp(what, "bad-pointer") == 0) {  /* Linux: EFAULT, when there is an event to copy */
    /* futex: a word that cannot be read is EFAULT, one out of alignment EINVAL */
    int* volatile unmapped = (int*)8;
    static int word = 0;
    struct timespec* volatile no_time = (struct timespec*)16;
    long rc = syscall(SYS_futex, unmapped, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    printf("futex wait at 8 %ld %s\n", rc, strerrorname_np(errno));
    rc = syscall(SYS_futex, (int*)((char*)&word + 1), FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    printf("futex wait out of alignment %ld %s\n", rc, strerrorname_np(errno));
    rc = syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, no_time, NULL, 0);
    printf("futex wait with a bad timeout %ld %s\n", rc, strerrorname_np(errno));
    fflush(stdout);
    if (argc > 2 && strcmp(argv[2], "alone") == 0) return 0;
    int listener = listen_on(8080);
    int poller = epoll_create1(0);
    struct epoll_event event = {.events = EPOLLIN, .data.fd = listener};
    epoll_ctl(poller, EPOLL_CTL_ADD, listener, &event);
    struct epoll_event* volatile bad = (struct epoll_event*)8; /* unmapped: not a constant, as in a program's bug */
    int n = epoll_wait(poller, bad, 1, -1);
    printf("epoll_wait bad pointer %d %s\n", n, errno == EFAULT ? "EFAULT" : "other");
    fflush(stdout);
    accept_one(listener);
    return 0;
  }
  if (strcmp(what, "chatty") == 0) {  /* 3 MiB on each stream, then its last words */
    static char line[1024];
    memset(line, 'x', sizeof line - 1);
    line[sizeof line - 1] = '\n';
    for (int i = 0; i < 3 * 1024; ++i) {
      fwrite(line, 1, sizeof line, stdout);
      fwrite(line, 1, sizeof line, stderr);
    }
    fflush(stdout);
    fprintf(stderr, "seam_probe: the last words\n");
    accept_one(listen_on(8080));
    return 0;
  }
  if (strcmp(what, "shared-hog") == 0) {  /* shared memory 64 MiB at a time until refused, touching none */
    long mib = 0;
    while (mib < (1L << 20) &&
           mmap(NULL, 64L << 20, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0) != MAP_FAILED)
      mib += 64;
    fprintf(stderr, "seam_probe: mapped %ld MiB shared, then refused\n", mib);
    return 4;
  }
  if (strcmp(what, "needs-descriptors") == 0) {  /* as memcached under a low limit */
    struct rlimit limit;
    getrlimit(RLIMIT_NOFILE, &limit);
    if (limit.rlim_cur < 100) {
      fprintf(stderr, "seam_probe: failed to set rlimit for open files\n");
      return 71;
    }
    close(accept_one(listen_on(8080)));
    return 0;
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
  fprintf(stderr, "seam_probe: calls | polls | msgs | fcntl-lease | thread | unserved | dups | dup-watch | elsewhere | nothing | dies | crash-on-order | fails-to-start | spin | wait-intmax | hog | names | starts | spins-main | bad-pointer | chatty | shared-hog\n");
  return 2;
}
