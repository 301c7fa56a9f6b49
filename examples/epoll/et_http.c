/*
 * et_http.c - a keep-alive HTTP/1.1 server on plain epoll, edge-triggered, with the classic
 * partial-drain bug planted behind a flag.
 *
 * Both the listener and the connections are registered EPOLLIN | EPOLLET. The listener is
 * drained to EAGAIN on each edge. A connection's edge is answered with ONE read of
 * --read-size bytes (default 16384): every complete request in what was read (each ends with
 * "\r\n\r\n") is answered "200 OK", body "ok". A client that pipelines more bytes than one read
 * takes leaves the rest in the socket; edge-triggered readiness reports no new edge for bytes
 * that were already there, so they wait for ever, unanswered. With --drain, a connection is
 * read until EAGAIN on each edge, as epoll(7) asks of an edge-triggered reader.
 *
 * An accept that fails for want of a descriptor (EMFILE, ENFILE, ENOBUFS) leaves its
 * connection queued, and no new edge will come for it, so the loop waits at most 10 ms while an
 * accept is owed and then drains the listener again. `loopsim generate` found the strand this
 * prevents, on the first version, which stopped at the error and waited for an edge that never
 * came; --no-accept-retry plants that version back (et-emfile.toml).
 *
 * Usage: et_http [--port N] [--read-size N] [--drain] [--no-accept-retry]
 *        (defaults: 8080, 16384)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

static const char RESPONSE[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

struct conn {
    int fd;
    int match; /* how many bytes of "\r\n\r\n" have been matched */
};

static int write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1; /* includes EAGAIN: a full socket ends the connection here */
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Answers every request that ends in `data`; -1 when the connection must close. */
static int serve(struct conn *c, const char *data, size_t n) {
    static const char end[] = "\r\n\r\n";
    for (size_t i = 0; i < n; i++) {
        c->match = data[i] == end[c->match] ? c->match + 1 : (data[i] == '\r' ? 1 : 0);
        if (c->match == 4) {
            c->match = 0;
            if (write_all(c->fd, RESPONSE, sizeof RESPONSE - 1) < 0) return -1;
        }
    }
    return 0;
}

/* One edge on a connection: one read, or reads until EAGAIN with `drain`. -1: close it. */
static int on_readable(struct conn *c, char *buffer, size_t size, int drain) {
    do {
        ssize_t n = read(c->fd, buffer, size);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return 0;
        if (n <= 0) return -1;
        if (serve(c, buffer, (size_t)n) < 0) return -1;
    } while (drain);
    return 0;
}

int main(int argc, char **argv) {
    int port = 8080, drain = 0, retry = 1;
    size_t read_size = 16384;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--drain") == 0) drain = 1;
        else if (strcmp(argv[i], "--no-accept-retry") == 0) retry = 0;
        else if (strcmp(argv[i], "--port") == 0 && i + 1 < argc) port = atoi(argv[++i]);
        else if (strcmp(argv[i], "--read-size") == 0 && i + 1 < argc) read_size = (size_t)atol(argv[++i]);
        else {
            fprintf(stderr, "usage: et_http [--port N] [--read-size N] [--drain] [--no-accept-retry]\n");
            return 2;
        }
    }
    if (read_size == 0) read_size = 1;
    char *buffer = malloc(read_size);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port),
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (buffer == NULL || lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(lfd, 128) < 0) {
        perror("et_http: listen");
        return 1;
    }
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    struct epoll_event events[64];
    int accept_owed = 0; /* an accept failed for want of a descriptor: the listener is drained again */
    for (;;) {
        int n = epoll_wait(ep, events, 64, accept_owed ? 10 : -1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return 1;
        int listener_ready = accept_owed;
        for (int i = 0; i < n; i++)
            if (events[i].data.ptr == NULL) listener_ready = 1;
        if (listener_ready) { /* drained to EAGAIN */
            accept_owed = 0;
            for (;;) {
                int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
                if (fd < 0 && (errno == EINTR || errno == ECONNABORTED)) continue;
                if (fd < 0) {
                    accept_owed = retry && errno != EAGAIN;
                    break;
                }
                struct conn *c = calloc(1, sizeof *c);
                c->fd = fd;
                struct epoll_event cev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.ptr = c};
                epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
            }
        }
        for (int i = 0; i < n; i++) {
            struct conn *c = events[i].data.ptr;
            if (c == NULL) continue; /* the listener, drained above */
            if (on_readable(c, buffer, read_size, drain) < 0) {
                close(c->fd);
                free(c);
            }
        }
    }
}
