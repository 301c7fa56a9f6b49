/* The probe's socket-family modes: an IPv6 listener beside the IPv4 one, and what a program may
 * ask of it, compared with Linux (posix/seam_test.cpp); a CPU-time timer, as haproxy's watchdog
 * sets one. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

static void said(const char* what, int rc) { printf("%s %d %s\n", what, rc, rc < 0 ? strerrorname_np(errno) : "ok"); }

int families_mode(int alone) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int listener = alone ? -1 : listen_on(8080);

  /* IPv6: IPV6_V6ONLY off by default, set before bind, refused after, and not an IPv4 option. */
  int six = socket(AF_INET6, SOCK_STREAM, 0);
  int on = 1, value = -1;
  socklen_t length = sizeof value;
  getsockopt(six, IPPROTO_IPV6, IPV6_V6ONLY, &value, &length);
  printf("IPV6_V6ONLY at first %d\n", value);
  said("set IPV6_V6ONLY", setsockopt(six, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on));
  struct sockaddr_in6 any6;
  memset(&any6, 0, sizeof any6);
  any6.sin6_family = AF_INET6;
  any6.sin6_port = htons(18089);
  any6.sin6_addr = in6addr_any;
  said("bind [::]:18089", bind(six, (struct sockaddr*)&any6, sizeof any6));
  said("set IPV6_V6ONLY after bind", setsockopt(six, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on));
  said("listen", listen(six, 16));
  struct sockaddr_in6 name;
  length = sizeof name;
  getsockname(six, (struct sockaddr*)&name, &length);
  char text[64];
  inet_ntop(AF_INET6, &name.sin6_addr, text, sizeof text);
  printf("name family %s [%s]:%d length %u\n", name.sin6_family == AF_INET6 ? "AF_INET6" : "?", text,
         ntohs(name.sin6_port), (unsigned)length);
  length = sizeof value;
  getsockopt(six, SOL_SOCKET, SO_DOMAIN, &value, &length);
  printf("SO_DOMAIN %s\n", value == AF_INET6 ? "AF_INET6" : "?");
  struct sockaddr_in four;
  memset(&four, 0, sizeof four);
  four.sin_family = AF_INET;
  int other = socket(AF_INET6, SOCK_STREAM, 0);
  said("bind an IPv4 address to an IPv6 socket", bind(other, (struct sockaddr*)&four, sizeof four));
  close(other);
  int v4 = socket(AF_INET, SOCK_STREAM, 0);
  said("IPV6_V6ONLY on an IPv4 socket", setsockopt(v4, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on));
  close(v4);
  close(six);

  /* A CPU-time timer (haproxy's watchdog): armed, and no CPU time passes while the program
   * waits, so what is left stays. */
  struct sigevent event;
  memset(&event, 0, sizeof event);
  event.sigev_notify = SIGEV_NONE;
  timer_t timer;
  said("timer_create(CLOCK_THREAD_CPUTIME_ID)", timer_create(CLOCK_THREAD_CPUTIME_ID, &event, &timer));
  struct itimerspec second = {{0, 0}, {1, 0}}, left;
  said("timer_settime", timer_settime(timer, 0, &second, NULL));
  const struct timespec tenth = {0, 100 * 1000 * 1000};
  nanosleep(&tenth, NULL);
  timer_gettime(timer, &left);
  printf("left after a sleep, to the tenth: %ld tenths\n",
         (long)((left.it_value.tv_sec * 1000 + left.it_value.tv_nsec / 1000000 + 50) / 100));
  said("timer_delete", timer_delete(timer));
  if (listener >= 0) close(accept_one(listener));
  return 0;
}

/* A UDP socket, as haproxy's resolvers and a syslog client use one: the seam's network has no
 * one to answer it. Natively what comes back depends on the machine (an ICMP refusal), so only
 * the seam's lines are checked. */
int datagrams_mode(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int listener = listen_on(8080);
  int udp = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  int type = 0;
  socklen_t length = sizeof type;
  getsockopt(udp, SOL_SOCKET, SO_TYPE, &type, &length);
  printf("SO_TYPE %s\n", type == SOCK_DGRAM ? "SOCK_DGRAM" : "?");
  said("send before connect", (int)send(udp, "x", 1, 0));
  struct sockaddr_in server;
  memset(&server, 0, sizeof server);
  server.sin_family = AF_INET;
  server.sin_port = htons(53);
  server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  said("sendto", (int)sendto(udp, "query", 5, 0, (struct sockaddr*)&server, sizeof server));
  said("connect", connect(udp, (struct sockaddr*)&server, sizeof server));
  said("send", (int)send(udp, "query", 5, 0));
  char answer[512];
  said("recv", (int)recv(udp, answer, sizeof answer, 0));
  said("listen", listen(udp, 1));
  struct sockaddr_in peer;
  length = sizeof peer;
  getpeername(udp, (struct sockaddr*)&peer, &length);
  printf("peer port %d\n", ntohs(peer.sin_port));
  close(udp);
  close(accept_one(listener));
  return 0;
}

/* "sndbuf": what SO_SNDBUF says of an accepted connection before and after one large write (K11).
 * The simulation grows the buffer at the first write that would be short, where Linux has grown
 * it as the connection was set up: so this is checked against the scenario, not against Linux. */
int sndbuf_mode(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int fd = accept_one(listen_on(8080));
  int size = 0;
  socklen_t length = sizeof size;
  getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, &length);
  printf("SO_SNDBUF at accept %d\n", size);
  static char megabyte[1 << 20];
  const ssize_t n = write(fd, megabyte, sizeof megabyte);
  length = sizeof size;
  getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, &length);
  printf("a write of 1 MiB took %zd, SO_SNDBUF after %d\n", n, size);
  close(fd);
  return 0;
}
