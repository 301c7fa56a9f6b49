/* The probe's process modes: children as servers start them (a helper's output read from a
 * pipe, system, popen, posix_spawn), and the waits. Each prints what it saw, so that a test can
 * compare Linux's lines with the seam's (posix/processes_test.cpp). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

extern char** environ;

static volatile sig_atomic_t children_ended;
static void on_child(int signal) {
  (void)signal;
  ++children_ended;
}

/* What a pipe gives until its end, newlines shown as '|'. */
static void read_to_end(int fd, char* into, size_t size) {
  size_t total = 0;
  ssize_t n;
  while (total + 1 < size && (n = read(fd, into + total, size - 1 - total)) > 0) total += (size_t)n;
  into[total] = 0;
  for (char* c = into; *c; ++c)
    if (*c == '\n') *c = '|';
}

static void report_wait(const char* what, pid_t child, int status) {
  if (child < 0) {
    printf("%s: %s\n", what, strerrorname_np(errno));
  } else if (WIFEXITED(status)) {
    printf("%s: exited %d, SIGCHLD %d\n", what, WEXITSTATUS(status), (int)children_ended);
  } else {
    printf("%s: killed by %s, SIGCHLD %d\n", what, sigabbrev_np(WTERMSIG(status)), (int)children_ended);
  }
}

int children_mode(int alone) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int listener = alone ? -1 : listen_on(8080);
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_child;
  sigaction(SIGCHLD, &action, NULL);

  /* Close-on-exec as it was asked for. */
  int ends[2];
  pipe2(ends, O_CLOEXEC);
  printf("pipe2(O_CLOEXEC): %d %d\n", fcntl(ends[0], F_GETFD), fcntl(ends[1], F_GETFD));
  fcntl(ends[0], F_SETFD, 0);
  printf("after F_SETFD 0: %d\n", fcntl(ends[0], F_GETFD));
  close(ends[0]);
  close(ends[1]);

  /* A helper's output, read from a pipe: fork, the write end onto stdout, exec (lighttpd's
   * include_shell). */
  char text[256];
  pipe(ends);
  pid_t child = fork();
  if (child == 0) {
    close(ends[0]);
    dup2(ends[1], STDOUT_FILENO);
    close(ends[1]);
    execl("/bin/sh", "sh", "-c", "echo from the child; echo second line; exit 3", (char*)NULL);
    _exit(127);
  }
  close(ends[1]);
  read_to_end(ends[0], text, sizeof text);
  close(ends[0]);
  int status = 0;
  pid_t waited = waitpid(child, &status, 0);
  printf("read \"%s\"; waited for the child %d\n", text, waited == child);
  report_wait("fork and exec", waited, status);
  waited = waitpid(child, &status, 0);
  report_wait("again", waited, status);

  /* A child that ends by a signal, and one that keeps the parent's handler. */
  child = fork();
  if (child == 0) {
    kill(getpid(), SIGKILL);
    _exit(0);
  }
  waited = waitpid(-1, &status, 0);
  report_wait("killed", waited, status);

  /* system and popen. */
  status = system("exit 5");
  report_wait("system", 0, status);
  FILE* from = popen("echo popen; echo again", "r");
  char line[64];
  while (fgets(line, sizeof line, from) != NULL) printf("popen gave %s", line);
  status = pclose(from);
  report_wait("pclose", 0, status);

  /* posix_spawn, its file actions putting a close-on-exec pipe on stdout. */
  pipe2(ends, O_CLOEXEC);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, ends[1], STDOUT_FILENO);
  char* spawned[] = {"sh", "-c", "echo spawned", NULL};
  int rc = posix_spawn(&child, "/bin/sh", &actions, NULL, spawned, environ);
  close(ends[1]);
  read_to_end(ends[0], text, sizeof text);
  close(ends[0]);
  printf("posix_spawn %d read \"%s\"\n", rc, text);
  waited = waitpid(child, &status, 0);
  report_wait("spawned", waited, status);
  char* missing[] = {"nowhere", NULL};
  rc = posix_spawn(&child, "/nonexistent/program", NULL, NULL, missing, environ);
  printf("posix_spawn of nothing: %s\n", strerrorname_np(rc));
  waited = wait(&status);
  report_wait("no child left", waited, status);

  /* A child that copies its parent's epoll descriptor, closes the copy, and puts another copy
   * over a number of its own (a daemon's helper tidying what it inherited). */
  const int poller = epoll_create1(EPOLL_CLOEXEC);
  child = fork();
  if (child == 0) {
    const int copy = dup(poller);
    close(copy);
    const int spare = dup(STDERR_FILENO);
    dup2(poller, spare);
    close(spare);
    _exit(0);
  }
  waited = waitpid(child, &status, 0);
  report_wait("epoll copied in a child", waited, status);
  close(poller);

  /* SIGCHLD ignored: Linux reaps the children itself. */
  signal(SIGCHLD, SIG_IGN);
  child = fork();
  if (child == 0) _exit(0);
  waited = waitpid(child, &status, 0);
  report_wait("ignored SIGCHLD", waited, status);
  if (listener >= 0) close(accept_one(listener));
  return 0;
}

/* "child-refused WHAT": a child that does what the seam does not serve before its exec. */
int child_refused_mode(const char* what) {
  const int listener = listen_on(8080);
  if (fork() == 0) {
    if (strcmp(what, "accept") == 0) accept4(listener, NULL, NULL, 0);
    if (strcmp(what, "exec-socket") == 0) {
      dup2(listener, STDIN_FILENO);
      execl("/bin/true", "true", (char*)NULL);
    }
    if (strcmp(what, "runs-on") == 0)
      for (;;) pause();
    _exit(0);
  }
  if (strcmp(what, "exec-self") == 0) execl("/bin/true", "true", (char*)NULL);
  for (;;) close(accept_one(listener));
}

/* A server that forks a child for each connection, as busybox's httpd does: the child reads the
 * request (blocking) and answers it, the parent closes its copy and accepts the next. With
 * "mute", the child answers nothing. */
int child_serves_mode(int mute) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int listener = listen_on(8080);
  signal(SIGCHLD, SIG_IGN);
  for (;;) {
    const int conn = accept_one(listener);
    if (fork() == 0) {
      close(listener);
      fcntl(conn, F_SETFL, 0);
      char request[1024];
      const ssize_t n = read(conn, request, sizeof request);
      /* Its clock, as a server's child dates its answer: the simulation's, as its parent's is. */
      printf("child's time %ld\n", (long)time(NULL));
      static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
      if (!mute && n > 0 && write(conn, answer, sizeof answer - 1) != (ssize_t)(sizeof answer - 1)) _exit(1);
      shutdown(conn, SHUT_WR);
      _exit(0);
    }
    close(conn);
  }
}
