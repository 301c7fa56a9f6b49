/* The probe's signal modes: SIGPIPE as Linux raises it on a broken write, and the calls that
 * wait for a signal. Each prints what it saw, so that a test can compare Linux's lines with the
 * seam's (posix/signals_test.cpp). */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

static volatile sig_atomic_t pipes_caught;
static pthread_t catcher;

/* A handler that leaves errno otherwise than it found it: the write's errno must still be
 * EPIPE, as libc sets it after the kernel returns, where the handler ran. */
static void on_pipe(int signal) {
  (void)signal;
  ++pipes_caught;
  catcher = pthread_self();
  errno = ENOTTY;
}

static void report(const char* what, long rc) {
  printf("%s %ld %s caught %d\n", what, rc, rc < 0 ? strerrorname_np(errno) : "ok", (int)pipes_caught);
}

/* A socket pair whose other end is closed: every write to `*end` breaks. */
static void broken_pair(int* end) {
  int ends[2];
  socketpair(AF_UNIX, SOCK_STREAM, 0, ends);
  close(ends[1]);
  *end = ends[0];
}

static void* write_broken(void* fd) {
  report("a thread's write", (long)write(*(int*)fd, "t", 1));
  printf("caught on the writing thread %d\n", pthread_equal(catcher, pthread_self()) != 0);
  return NULL;
}

/* Under the seam the scenario's client comes at 10 ms: listen at once, take it at the end. */
static int listening(int alone) { return alone ? -1 : listen_on(8080); }
static void serve_one(int listener) {
  if (listener >= 0) close(accept_one(listener));
}

/* sigaction(2) with `handler`, `flags` and an empty sa_mask. */
static void catch_with(int signal, void (*handler)(int), int flags) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = handler;
  action.sa_flags = flags;
  sigaction(signal, &action, NULL);
}

int sigpipe_mode(int alone) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  serve_one(listening(alone));
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_pipe;
  sigaction(SIGPIPE, &action, NULL);
  int end;
  broken_pair(&end);
  report("write to a closed peer", (long)write(end, "x", 1));
  report("send MSG_NOSIGNAL", (long)send(end, "x", 1, MSG_NOSIGNAL));
  report("send", (long)send(end, "x", 1, 0));
  struct iovec part = {.iov_base = "x", .iov_len = 1};
  struct msghdr message = {.msg_iov = &part, .msg_iovlen = 1};
  report("sendmsg MSG_NOSIGNAL", (long)sendmsg(end, &message, MSG_NOSIGNAL));
  report("sendmsg", (long)sendmsg(end, &message, 0));
  report("writev", (long)writev(end, &part, 1));
  int ends[2];
  pipe(ends);
  close(ends[0]);
  report("write to a pipe without a reader", (long)write(ends[1], "x", 1));
  int pair[2];
  socketpair(AF_UNIX, SOCK_STREAM, 0, pair);
  shutdown(pair[0], SHUT_WR);
  report("write after shutting for writing", (long)write(pair[0], "x", 1));
  report("read of the shut end's peer", (long)read(pair[1], (char[4]){0}, 4));
  pthread_t thread;
  pthread_create(&thread, NULL, write_broken, &end);
  pthread_join(thread, NULL);
  signal(SIGPIPE, SIG_IGN);
  report("ignored", (long)write(end, "x", 1));
  sigaction(SIGPIPE, &action, NULL);
  sigset_t pipe_only, pending;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  sigprocmask(SIG_BLOCK, &pipe_only, NULL);
  report("blocked", (long)write(end, "x", 1));
  sigpending(&pending);
  printf("pending %d\n", sigismember(&pending, SIGPIPE));
  sigprocmask(SIG_UNBLOCK, &pipe_only, NULL);
  printf("unblocked: caught %d\n", (int)pipes_caught);
  return 0;
}

/* SIGPIPE's default action ends the process: the shell reports 141. */
int sigpipe_dies_mode(int alone) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  serve_one(listening(alone));
  int end;
  broken_pair(&end);
  printf("writing to a closed peer\n");
  report("survived", (long)write(end, "x", 1));
  return 0;
}

static volatile sig_atomic_t usr1;
static void on_usr1(int signal) {
  (void)signal;
  ++usr1;
}

struct Sending {
  int first, second;  /* signals to send, in order (0: none) */
};

/* Sends its signals to the process, 20 ms apart, from a thread that blocks them all, so that
 * Linux delivers each to main(). */
static void* send_later(void* argument) {
  const struct Sending* sending = argument;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  const struct timespec pause_between = {0, 20 * 1000 * 1000};
  int signals[2] = {sending->first, sending->second};
  for (int i = 0; i < 2; ++i) {
    if (signals[i] == 0) continue;
    nanosleep(&pause_between, NULL);
    kill(getpid(), signals[i]);
  }
  return NULL;
}

static pthread_t send_signals(struct Sending* sending) {
  pthread_t thread;
  pthread_create(&thread, NULL, send_later, sending);
  return thread;
}

int signal_waits_mode(int alone) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int listener = listening(alone);
  catch_with(SIGUSR1, on_usr1, 0);
  signal(SIGUSR2, SIG_IGN);

  /* pause: an ignored signal does not end it; a caught one does, its handler run first. */
  struct Sending ignored_then_caught = {SIGUSR2, SIGUSR1};
  pthread_t thread = send_signals(&ignored_then_caught);
  int rc = pause();
  printf("pause %d %s usr1 %d\n", rc, strerrorname_np(errno), (int)usr1);
  pthread_join(thread, NULL);

  /* A caught signal cuts a sleep short, 20 ms into its second: never restarted. What is left
   * is printed to the 100 ms below (a machine's sleep is late by a little). */
  struct Sending caught = {SIGUSR1, 0};
  const struct timespec second = {1, 0};
  struct timespec left = {0, 0};
  thread = send_signals(&caught);
  rc = nanosleep(&second, &left);
  printf("nanosleep %d %s left %ld00 ms usr1 %d\n", rc, strerrorname_np(errno),
         (long)(left.tv_sec * 10 + left.tv_nsec / 100000000), (int)usr1);
  pthread_join(thread, NULL);
  thread = send_signals(&caught);
  rc = clock_nanosleep(CLOCK_MONOTONIC, 0, &second, &left);
  printf("clock_nanosleep returned %s left %ld00 ms\n", strerrorname_np(rc), (long)(left.tv_sec * 10 + left.tv_nsec / 100000000));
  pthread_join(thread, NULL);
  thread = send_signals(&caught);
  rc = usleep(1000000);
  printf("usleep %d %s\n", rc, strerrorname_np(errno));
  pthread_join(thread, NULL);
  thread = send_signals(&caught);
  printf("sleep(1) returned %u usr1 %d\n", sleep(1), (int)usr1);
  pthread_join(thread, NULL);
  thread = send_signals(&caught);
  printf("sleep(3) returned %u\n", sleep(3));
  pthread_join(thread, NULL);
  /* An ignored one does not. */
  struct Sending ignored = {SIGUSR2, 0};
  thread = send_signals(&ignored);
  const struct timespec tenth = {0, 100 * 1000 * 1000};
  printf("nanosleep with an ignored signal %d\n", nanosleep(&tenth, NULL));
  pthread_join(thread, NULL);

  /* A blocked signal waits, pending; sigsuspend with an empty mask takes it at once. */
  sigset_t usr1_only, none, pending;
  sigemptyset(&usr1_only);
  sigaddset(&usr1_only, SIGUSR1);
  sigemptyset(&none);
  sigprocmask(SIG_BLOCK, &usr1_only, NULL);
  struct Sending one = {SIGUSR1, 0};
  thread = send_signals(&one);
  pthread_join(thread, NULL);
  sigpending(&pending);
  printf("blocked: usr1 %d pending %d\n", (int)usr1, sigismember(&pending, SIGUSR1));
  rc = sigsuspend(&none);
  printf("sigsuspend %d %s usr1 %d\n", rc, strerrorname_np(errno), (int)usr1);
  sigprocmask(SIG_BLOCK, NULL, &pending);
  printf("mask back: usr1 blocked %d\n", sigismember(&pending, SIGUSR1));

  /* sigsuspend that waits: the signal comes while it does. */
  thread = send_signals(&one);
  rc = sigsuspend(&none);
  printf("sigsuspend waited %d %s usr1 %d\n", rc, strerrorname_np(errno), (int)usr1);
  pthread_join(thread, NULL);

  /* sigwait takes a blocked signal without running its handler. */
  thread = send_signals(&one);
  int taken = 0;
  rc = sigwait(&usr1_only, &taken);
  printf("sigwait %d took %s usr1 %d\n", rc, sigabbrev_np(taken), (int)usr1);
  pthread_join(thread, NULL);

  /* raise while blocked: pending, delivered as the mask lets it go. */
  raise(SIGUSR1);
  printf("raised while blocked: usr1 %d\n", (int)usr1);
  sigprocmask(SIG_UNBLOCK, &usr1_only, NULL);
  printf("unblocked: usr1 %d\n", (int)usr1);
  serve_one(listener);
  return 0;
}

/* SIGTERM's handler sets the default back and raises the signal again, to die of it, as node's
 * and many runtimes' handlers do once they have cleaned up. */
static void die_of_it(int signal) {
  struct sigaction fallback;
  memset(&fallback, 0, sizeof fallback);
  fallback.sa_handler = SIG_DFL;
  sigaction(signal, &fallback, NULL);
  raise(signal);
}

int reraise_mode(void) {
  const int listener = listen_on(8080);
  catch_with(SIGTERM, die_of_it, 0);
  for (;;) serve_one(listener);
}

static volatile sig_atomic_t alarms;
static void on_alarm(int signal) {
  (void)signal;
  ++alarms;
}

/* Time left on ITIMER_REAL, to the 10 ms (a machine's timer runs a little late). */
static long timer_left_ms(void) {
  struct itimerval now;
  getitimer(ITIMER_REAL, &now);
  return (now.it_value.tv_sec * 1000000L + now.it_value.tv_usec + 5000) / 10000 * 10;
}

/* alarm, setitimer and getitimer (ITIMER_REAL), and sigtimedwait: what Linux does in wall-clock
 * time, the seam does in virtual time. */
int timers_mode(int alone) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int listener = listening(alone);
  catch_with(SIGALRM, on_alarm, 0);
  catch_with(SIGUSR1, on_usr1, 0);

  /* A one-shot timer: getitimer shows what is left, and pause ends with its SIGALRM. */
  struct itimerval once = {{0, 0}, {0, 50000}}, old;
  setitimer(ITIMER_REAL, &once, NULL);
  printf("armed: left %ld ms\n", timer_left_ms());
  int rc = pause();
  printf("pause %d %s alarms %d left %ld ms\n", rc, strerrorname_np(errno), (int)alarms, timer_left_ms());

  /* alarm: what was left, rounded as Linux rounds it. */
  const unsigned first = alarm(2);
  printf("alarm(2) %u alarm(5) %u\n", first, alarm(5));
  const struct timespec short_sleep = {0, 300 * 1000 * 1000};
  nanosleep(&short_sleep, NULL);
  const unsigned cancelled = alarm(0);
  printf("alarm(0) after 300 ms %u, again %u\n", cancelled, alarm(0));

  /* An interval timer fires again and again, until disarmed; setitimer returns the old one. */
  struct itimerval every = {{0, 20000}, {0, 20000}};
  setitimer(ITIMER_REAL, &every, NULL);
  for (int i = 0; i < 3; ++i) pause();
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, &old);
  printf("interval: alarms %d, old interval %ld us, left %ld ms\n", (int)alarms, (long)old.it_interval.tv_usec,
         timer_left_ms());

  /* sigtimedwait takes a blocked SIGALRM without its handler, times out with EAGAIN, refuses a
   * bad timeout, and gives way to a handler's signal with EINTR. */
  sigset_t alarm_only;
  sigemptyset(&alarm_only);
  sigaddset(&alarm_only, SIGALRM);
  sigprocmask(SIG_BLOCK, &alarm_only, NULL);
  once.it_value.tv_usec = 30000;
  setitimer(ITIMER_REAL, &once, NULL);
  const struct timespec second = {1, 0}, tenth = {0, 100 * 1000 * 1000}, bad = {0, 2000000000L};
  siginfo_t info;
  rc = sigtimedwait(&alarm_only, &info, &second);
  printf("sigtimedwait %d signo %d alarms %d\n", rc, info.si_signo, (int)alarms);
  rc = sigtimedwait(&alarm_only, &info, &tenth);
  printf("sigtimedwait with nothing %d %s\n", rc, strerrorname_np(errno));
  rc = sigtimedwait(&alarm_only, &info, &bad);
  printf("sigtimedwait bad timeout %d %s\n", rc, strerrorname_np(errno));
  struct Sending one = {SIGUSR1, 0};
  pthread_t thread = send_signals(&one);
  rc = sigtimedwait(&alarm_only, &info, &second);
  printf("sigtimedwait cut short %d %s usr1 %d\n", rc, strerrorname_np(errno), (int)usr1);
  pthread_join(thread, NULL);
  serve_one(listener);
  return 0;
}

/* SIGALRM's default action ends the process: the shell reports 142. */
int alarm_dies_mode(int alone) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  serve_one(listening(alone));
  printf("alarm in 1 s\n");
  alarm(1);
  pause();
  printf("survived\n");
  return 0;
}

/* SIGUSR1 and SIGUSR2, the set the waits below take. */
static sigset_t usr_signals(void) {
  sigset_t usr;
  sigemptyset(&usr);
  sigaddset(&usr, SIGUSR1);
  sigaddset(&usr, SIGUSR2);
  return usr;
}

/* A thread of its own for signals, the others blocking them (a common C server design): it
 * waits with sigwait and sigtimedwait, and takes what comes for the process. */
static void* signal_thread(void* unused) {
  (void)unused;
  const sigset_t usr = usr_signals();
  const struct timespec tenth = {0, 100 * 1000 * 1000};
  siginfo_t info;
  int rc = sigtimedwait(&usr, &info, &tenth);
  printf("the signal thread's sigtimedwait %d %s\n", rc, strerrorname_np(errno));
  int taken = 0;
  rc = sigwait(&usr, &taken);
  printf("the signal thread's sigwait %d took %s\n", rc, sigabbrev_np(taken));
  rc = sigwaitinfo(&usr, &info);
  printf("the signal thread's sigwaitinfo took %s\n", sigabbrev_np(rc));
  return NULL;
}

int signal_thread_mode(int alone) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int listener = listening(alone);
  const sigset_t usr = usr_signals();
  pthread_sigmask(SIG_BLOCK, &usr, NULL);  /* the thread inherits it */
  pthread_t thread;
  pthread_create(&thread, NULL, signal_thread, NULL);
  const struct timespec later = {0, 300 * 1000 * 1000};
  nanosleep(&later, NULL);
  kill(getpid(), SIGUSR1);
  nanosleep(&later, NULL);
  kill(getpid(), SIGUSR2);
  pthread_join(thread, NULL);
  printf("main: usr1 handler runs %d\n", (int)usr1);
  serve_one(listener);
  return 0;
}

/* main() blocks the signals, a worker does not (a common design: the others leave signals to one
 * thread that waits in a call of its own). A signal for the process goes to the worker, as
 * Linux's complete_signal chooses: its read is cut short (EINTR) where the handler did not ask
 * SA_RESTART, and goes on after the handler where it did. The handler runs on the worker. */
static volatile sig_atomic_t on_worker, on_main;
static pthread_t mask_main;
static void took(int signal) {
  (void)signal;
  if (pthread_equal(pthread_self(), mask_main)) {
    ++on_main;
  } else {
    ++on_worker;
  }
}

static void* unblocked_worker(void* pipe_end) {
  const sigset_t usr = usr_signals();
  pthread_sigmask(SIG_UNBLOCK, &usr, NULL);
  char byte = 0;
  ssize_t n = read(*(int*)pipe_end, &byte, 1);
  printf("the worker's read %zd %s, handlers run on it %d\n", n, n < 0 ? strerrorname_np(errno) : "ok",
         (int)on_worker);
  n = read(*(int*)pipe_end, &byte, 1);
  printf("the worker's read again %zd %c, handlers run on it %d\n", n, byte, (int)on_worker);
  /* Blocking them again, it waits for one under sigsuspend's empty mask, which takes it. */
  pthread_sigmask(SIG_BLOCK, &usr, NULL);
  sigset_t none, now;
  sigemptyset(&none);
  const int rc = sigsuspend(&none);
  pthread_sigmask(SIG_BLOCK, NULL, &now);
  printf("the worker's sigsuspend %d %s, handlers run on it %d, USR1 blocked again %d\n", rc, strerrorname_np(errno),
         (int)on_worker, sigismember(&now, SIGUSR1));
  return NULL;
}

/* main() blocks SIGUSR1 and SIGUSR2 and starts the worker, which lets them go and reads `ends[0]`. */
static pthread_t start_unblocked_worker(int ends[2]) {
  const sigset_t usr = usr_signals();
  pthread_sigmask(SIG_BLOCK, &usr, NULL); /* the worker inherits it, and lets it go */
  if (pipe(ends) != 0) _exit(1);
  pthread_t worker;
  pthread_create(&worker, NULL, unblocked_worker, &ends[0]);
  return worker;
}

int mask_thread_mode(int alone) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int listener = listening(alone);
  mask_main = pthread_self();
  catch_with(SIGUSR1, took, 0);
  catch_with(SIGUSR2, took, SA_RESTART);
  int ends[2];
  const pthread_t worker = start_unblocked_worker(ends);
  const struct timespec later = {0, 300 * 1000 * 1000};
  nanosleep(&later, NULL);
  kill(getpid(), SIGUSR1); /* no SA_RESTART: the worker's read fails EINTR */
  nanosleep(&later, NULL);
  kill(getpid(), SIGUSR2); /* SA_RESTART: its read goes on */
  nanosleep(&later, NULL);
  if (write(ends[1], "x", 1) != 1) return 1;
  nanosleep(&later, NULL);
  kill(getpid(), SIGUSR1); /* to the worker, in sigsuspend */
  pthread_join(worker, NULL);
  sigset_t pending;
  sigpending(&pending);
  printf("main: handlers run on it %d, USR1 pending %d\n", (int)on_main, sigismember(&pending, SIGUSR1));
  /* With the worker gone, a signal main() blocks waits for main() to let it go. */
  kill(getpid(), SIGUSR1);
  sigpending(&pending);
  printf("main: USR1 pending %d, handlers run on it %d\n", sigismember(&pending, SIGUSR1), (int)on_main);
  const sigset_t usr = usr_signals();
  pthread_sigmask(SIG_UNBLOCK, &usr, NULL);
  printf("main: unblocked, handlers run on it %d\n", (int)on_main);
  serve_one(listener);
  return 0;
}

/* raise(3) on a thread that blocks the signal: Linux keeps it pending for that thread alone (a
 * tgkill to itself). main(), which lets it go and sleeps meanwhile, neither takes it (its sleep
 * runs out) nor sees it pending; the worker takes it when it lets it go. */
static void* raising_worker(void* unused) {
  (void)unused;
  const sigset_t usr = usr_signals();
  pthread_sigmask(SIG_BLOCK, &usr, NULL);
  raise(SIGUSR1);
  sigset_t pending;
  sigpending(&pending);
  printf("the worker raised USR1, blocked: pending %d, handlers run on it %d\n", sigismember(&pending, SIGUSR1),
         (int)on_worker);
  const struct timespec later = {0, 600 * 1000 * 1000};
  nanosleep(&later, NULL);
  pthread_sigmask(SIG_UNBLOCK, &usr, NULL);
  printf("the worker let it go: handlers run on it %d\n", (int)on_worker);
  return NULL;
}

int raise_thread_mode(int alone) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int listener = listening(alone);
  mask_main = pthread_self();
  catch_with(SIGUSR1, took, 0);
  pthread_t worker;
  pthread_create(&worker, NULL, raising_worker, NULL);
  const struct timespec later = {0, 300 * 1000 * 1000};
  const int rc = nanosleep(&later, NULL);
  sigset_t pending;
  sigpending(&pending);
  printf("main: its sleep %d, USR1 pending %d, handlers run on it %d\n", rc, sigismember(&pending, SIGUSR1),
         (int)on_main);
  pthread_join(worker, NULL);
  printf("main: the worker joined, handlers run on it %d\n", (int)on_main);
  serve_one(listener);
  return 0;
}

/* A signal for a thread that waits on a lock: Linux runs its handler during the wait, which then
 * goes on (glibc waits on a futex and waits again). A semaphore's wait fails EINTR instead, unless
 * the handler asked SA_RESTART (sem_wait(3)). main() blocks SIGUSR1 and SIGUSR2, so each goes to
 * the worker, which lets them go. */
static pthread_mutex_t waited_lock = PTHREAD_MUTEX_INITIALIZER;
static sem_t waited_semaphore;
static void* lock_waiting_worker(void* unused) {
  (void)unused;
  const sigset_t usr = usr_signals();
  pthread_sigmask(SIG_UNBLOCK, &usr, NULL);
  int rc = pthread_mutex_lock(&waited_lock);
  printf("the worker's lock %d, handlers run on it %d\n", rc, (int)on_worker);
  pthread_mutex_unlock(&waited_lock);
  rc = sem_wait(&waited_semaphore);
  printf("the worker's sem_wait %d %s, handlers run on it %d\n", rc, rc < 0 ? strerrorname_np(errno) : "ok",
         (int)on_worker);
  rc = sem_wait(&waited_semaphore);
  printf("the worker's sem_wait again %d, handlers run on it %d\n", rc, (int)on_worker);
  return NULL;
}

int lock_signal_mode(int alone) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int listener = listening(alone);
  mask_main = pthread_self();
  catch_with(SIGUSR1, took, 0);
  catch_with(SIGUSR2, took, SA_RESTART);
  sem_init(&waited_semaphore, 0, 0);
  const sigset_t usr = usr_signals();
  pthread_sigmask(SIG_BLOCK, &usr, NULL);
  pthread_mutex_lock(&waited_lock);
  pthread_t worker;
  pthread_create(&worker, NULL, lock_waiting_worker, NULL);
  const struct timespec later = {0, 300 * 1000 * 1000};
  nanosleep(&later, NULL);
  kill(getpid(), SIGUSR1); /* the worker waits for the lock */
  nanosleep(&later, NULL);
  printf("main: holding the lock, handlers run on the worker %d\n", (int)on_worker);
  pthread_mutex_unlock(&waited_lock);
  nanosleep(&later, NULL);
  kill(getpid(), SIGUSR1); /* the worker waits on the semaphore: no SA_RESTART */
  nanosleep(&later, NULL);
  kill(getpid(), SIGUSR2); /* it waits on it again: SA_RESTART */
  nanosleep(&later, NULL);
  printf("main: the worker waits on, handlers run on it %d\n", (int)on_worker);
  sem_post(&waited_semaphore);
  pthread_join(worker, NULL);
  printf("main: handlers run on it %d\n", (int)on_main);
  serve_one(listener);
  return 0;
}

/* pthread_kill(3), or tgkill(2) by the thread's id (its system call, or libc's tgkill()): a
 * signal for one thread. The worker, asleep,
 * is cut short by SIGUSR1 and runs its handler; main(), asleep too and letting it go, sleeps on.
 * SIGUSR2, which the worker blocks, waits pending for the worker alone, where main()'s sigpending
 * does not see it, until the worker lets it go. Then the worker sends main() SIGUSR1, which main()
 * takes waiting in pthread_join. */
static int by_id; /* 0: pthread_kill; 1: the tgkill system call; 2: libc's tgkill() */
static pid_t worker_id;
static void send_to(pthread_t thread, pid_t id, int signal) {
  if (by_id == 1) {
    syscall(SYS_tgkill, getpid(), id, signal);
  } else if (by_id == 2) {
    tgkill(getpid(), id, signal);
  } else {
    pthread_kill(thread, signal);
  }
}

static void* killed_worker(void* unused) {
  (void)unused;
  worker_id = gettid();
  sigset_t usr2;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &usr2, NULL);
  const struct timespec long_sleep = {5, 0};
  int rc = nanosleep(&long_sleep, NULL);
  printf("the worker's nanosleep %d %s, handlers run on it %d\n", rc, strerrorname_np(errno), (int)on_worker);
  const struct timespec later = {0, 600 * 1000 * 1000};
  nanosleep(&later, NULL);
  sigset_t pending;
  sigpending(&pending);
  printf("the worker: USR2 pending %d\n", sigismember(&pending, SIGUSR2));
  pthread_sigmask(SIG_UNBLOCK, &usr2, NULL);
  printf("the worker let it go: handlers run on it %d\n", (int)on_worker);
  send_to(mask_main, getpid(), SIGUSR1);
  return NULL;
}

int thread_kill_mode(int alone, int how) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  by_id = how;
  const int listener = listening(alone);
  mask_main = pthread_self();
  catch_with(SIGUSR1, took, 0);
  catch_with(SIGUSR2, took, 0);
  pthread_t worker;
  pthread_create(&worker, NULL, killed_worker, NULL);
  const struct timespec later = {0, 300 * 1000 * 1000};
  nanosleep(&later, NULL);
  send_to(worker, worker_id, SIGUSR1);
  const int rc = nanosleep(&later, NULL);
  send_to(worker, worker_id, SIGUSR2);
  sigset_t pending;
  sigpending(&pending);
  printf("main: its sleep %d, USR2 pending %d, handlers run on it %d\n", rc, sigismember(&pending, SIGUSR2),
         (int)on_main);
  pthread_join(worker, NULL);
  printf("main: the worker joined, handlers run on it %d\n", (int)on_main);
  serve_one(listener);
  return 0;
}

/* The same, but SIGUSR2 has its default action: the worker that takes it ends the process. */
int mask_thread_dies_mode(int alone) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  serve_one(listening(alone));
  int ends[2];
  const pthread_t worker = start_unblocked_worker(ends);
  const struct timespec later = {0, 300 * 1000 * 1000};
  nanosleep(&later, NULL);
  printf("main: USR2 for the process\n");
  kill(getpid(), SIGUSR2);
  pthread_join(worker, NULL);
  printf("survived\n");
  return 0;
}

/* The same design, the worker waiting otherwise: in a sleep, then on a futex. A signal it lets go
 * cuts each short (signal(7): a sleep is never restarted, and FUTEX_WAIT fails EINTR where the
 * handler did not ask SA_RESTART), and its handler runs on the worker. */
static int waits_word;
static void* sleeping_worker(void* unused) {
  (void)unused;
  const sigset_t usr = usr_signals();
  pthread_sigmask(SIG_UNBLOCK, &usr, NULL);
  const struct timespec long_sleep = {5, 0};
  struct timespec left = {0, 0};
  int rc = nanosleep(&long_sleep, &left);
  printf("the worker's nanosleep %d %s, handlers run on it %d, over 4 s left %d\n", rc, strerrorname_np(errno),
         (int)on_worker, left.tv_sec >= 4);
  rc = (int)syscall(SYS_futex, &waits_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
  printf("the worker's futex wait %d %s, handlers run on it %d\n", rc, strerrorname_np(errno), (int)on_worker);
  return NULL;
}

int mask_thread_waits_mode(int alone) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int listener = listening(alone);
  mask_main = pthread_self();
  catch_with(SIGUSR1, took, 0);
  const sigset_t usr = usr_signals();
  pthread_sigmask(SIG_BLOCK, &usr, NULL); /* the worker inherits it, and lets it go */
  pthread_t worker;
  pthread_create(&worker, NULL, sleeping_worker, NULL);
  const struct timespec later = {0, 300 * 1000 * 1000};
  nanosleep(&later, NULL);
  kill(getpid(), SIGUSR1); /* to the worker, asleep */
  nanosleep(&later, NULL);
  kill(getpid(), SIGUSR1); /* to the worker, on the futex */
  pthread_join(worker, NULL);
  printf("main: handlers run on it %d\n", (int)on_main);
  serve_one(listener);
  return 0;
}

/* signalfd: the blocked signals as a descriptor, waited for with epoll (systemd's services and
 * many C daemons take their signals so). */
int signalfd_mode(int alone) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int listener = listening(alone);
  const sigset_t usr = usr_signals();
  sigprocmask(SIG_BLOCK, &usr, NULL);
  int fd = signalfd(-1, &usr, SFD_NONBLOCK | SFD_CLOEXEC);
  struct signalfd_siginfo info;
  ssize_t n = read(fd, &info, sizeof info);
  printf("empty: %zd %s\n", n, strerrorname_np(errno));
  n = read(fd, &info, 8);
  printf("short buffer: %zd %s\n", n, strerrorname_np(errno));
  kill(getpid(), SIGUSR1);
  int poller = epoll_create1(0);
  struct epoll_event event = {.events = EPOLLIN, .data.fd = fd}, ready;
  epoll_ctl(poller, EPOLL_CTL_ADD, fd, &event);
  printf("ready at once: %d\n", epoll_wait(poller, &ready, 1, 0));
  n = read(fd, &info, sizeof info);
  printf("read %zd: %s\n", n, sigabbrev_np((int)info.ssi_signo));
  printf("ready after: %d\n", epoll_wait(poller, &ready, 1, 0));
  struct Sending later = {SIGUSR2, 0};
  pthread_t thread = send_signals(&later);
  printf("waited: %d\n", epoll_wait(poller, &ready, 1, 1000));
  n = read(fd, &info, sizeof info);
  printf("read %zd: %s, usr1 handler runs %d\n", n, sigabbrev_np((int)info.ssi_signo), (int)usr1);
  pthread_join(thread, NULL);
  close(poller);
  close(fd);
  serve_one(listener);
  return 0;
}

/* A condition variable told to time its waits on CLOCK_MONOTONIC (pthread_condattr_setclock),
 * and one left on CLOCK_REALTIME: each waits until 50 ms past its own clock's now, and the wait
 * is measured on the monotonic clock, to the 10 ms below. A wait that read the other clock
 * would end at once, or never. */
static long waited_ms(pthread_cond_t* cond, clockid_t clock) {
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  struct timespec start, at, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  clock_gettime(clock, &at);
  at.tv_nsec += 50 * 1000 * 1000;
  if (at.tv_nsec >= 1000 * 1000 * 1000) at.tv_sec += 1, at.tv_nsec -= 1000 * 1000 * 1000;
  pthread_mutex_lock(&lock);
  int rc = 0;
  while (rc == 0) rc = pthread_cond_timedwait(cond, &lock, &at);
  pthread_mutex_unlock(&lock);
  clock_gettime(CLOCK_MONOTONIC, &end);
  const long ms = (end.tv_sec - start.tv_sec) * 1000 + (end.tv_nsec - start.tv_nsec) / 1000000;
  printf("%s: %s after %ld ms\n", clock == CLOCK_MONOTONIC ? "monotonic" : "realtime", strerrorname_np(rc), ms / 10 * 10);
  return ms;
}

int cond_clock_mode(int alone) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int listener = listening(alone);
  pthread_condattr_t attributes;
  pthread_condattr_init(&attributes);
  pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
  pthread_cond_t monotonic, realtime;
  pthread_cond_init(&monotonic, &attributes);
  pthread_cond_init(&realtime, NULL);
  pthread_condattr_destroy(&attributes);
  waited_ms(&monotonic, CLOCK_MONOTONIC);
  waited_ms(&realtime, CLOCK_REALTIME);
  pthread_cond_destroy(&monotonic);
  pthread_cond_destroy(&realtime);
  serve_one(listener);
  return 0;
}
