/*
 * ev_http.c - a minimal keep-alive HTTP/1.1 server on libevent 2.1, with a
 * classic edge-triggered accept bug.
 *
 * The listening socket is registered EV_READ|EV_PERSIST|EV_ET and on_accept
 * accepts exactly ONE connection per callback. With edge-triggered readiness
 * a burst of simultaneous connects produces one edge, so all but the first
 * connection can sit in the accept queue unserved until another client
 * arrives. With --fixed, on_accept re-activates the listener event after each
 * successful accept, so the loop comes back and drains the queue until
 * accept4 returns EAGAIN.
 *
 * Connections use plain read()/write() with a level-triggered persistent
 * event; every request terminated by "\r\n\r\n" gets "200 OK" with body "ok".
 *
 * Usage: ev_http [--port N] [--backlog N] [--fixed]   (defaults: 8080, 128)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <event2/event.h>
#include <event2/util.h>

static const char RESPONSE[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

struct server {
    struct event_base *base;
    struct event *listener;
    int fixed;
};

struct conn {
    int fd;
    int match;  /* how many bytes of "\r\n\r\n" have been matched */
    struct event *ev;
};

static void conn_close(struct conn *c) {
    event_free(c->ev);
    close(c->fd);
    free(c);
}

static int write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;  /* includes EAGAIN: a full socket is fatal here */
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void on_read(evutil_socket_t fd, short what, void *arg) {
    static const char END[] = "\r\n\r\n";
    struct conn *c = arg;
    char buf[16 * 1024];
    (void)what;

    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) { conn_close(c); return; }  /* EOF or error */

    for (ssize_t i = 0; i < n; i++) {
        if (buf[i] == END[c->match]) c->match++;
        else c->match = (buf[i] == '\r');
        if (c->match == 4) {
            c->match = 0;
            if (write_all(fd, RESPONSE, sizeof RESPONSE - 1) < 0) {
                conn_close(c);
                return;
            }
        }
    }
}

static void on_accept(evutil_socket_t lfd, short what, void *arg) {
    struct server *srv = arg;
    (void)what;

    int cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);  /* ONE per callback */
    if (cfd < 0) return;

    struct conn *c = calloc(1, sizeof *c);
    if (c) {
        c->fd = cfd;
        c->ev = event_new(srv->base, cfd, EV_READ | EV_PERSIST, on_read, c);
    }
    if (!c || !c->ev || event_add(c->ev, NULL) != 0) {
        if (c && c->ev) event_free(c->ev);
        free(c);
        close(cfd);
    }

    if (srv->fixed)  /* the fix: come back for the rest of the burst */
        event_active(srv->listener, EV_READ, 0);
}

int main(int argc, char **argv) {
    int port = 8080, backlog = 128, one = 1;
    struct server srv = {0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--fixed") == 0) srv.fixed = 1;
        else if (strcmp(argv[i], "--port") == 0 && i + 1 < argc) port = atoi(argv[++i]);
        else if (strcmp(argv[i], "--backlog") == 0 && i + 1 < argc) backlog = atoi(argv[++i]);
    }

    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0 ||
        listen(lfd, backlog) < 0 || evutil_make_socket_nonblocking(lfd) < 0) {
        perror("ev_http");
        return 1;
    }

    srv.base = event_base_new();
    srv.listener = event_new(srv.base, lfd, EV_READ | EV_PERSIST | EV_ET, on_accept, &srv);
    if (!srv.base || !srv.listener || event_add(srv.listener, NULL) != 0) {
        fprintf(stderr, "ev_http: libevent setup failed\n");
        return 1;
    }
    printf("listening on 127.0.0.1:%d\n", port);
    fflush(stdout);
    return event_base_dispatch(srv.base);
}
