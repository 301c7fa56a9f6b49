/*
 * uv_http.c - a minimal keep-alive HTTP/1.1 server on plain libuv.
 *
 * Demonstrates an ordinary, unmodified libuv server: uv_tcp_bind + uv_listen,
 * a connection callback that leaves error handling (EMFILE reserve fd, accept
 * loop) entirely to libuv, uv_read_start for input and uv_write for output.
 * Every request terminated by "\r\n\r\n" gets "200 OK" with body "ok"; the
 * connection stays open until the peer closes it (or a read error occurs).
 *
 * Usage: uv_http [--port N] [--backlog N]     (defaults: 8080, 128)
 */
#define _POSIX_C_SOURCE 200809L  /* uv.h needs POSIX types under -std=c11 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

static const char RESPONSE[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

typedef struct {
    uv_tcp_t handle;  /* first member: a uv_tcp_t* is also a conn_t* */
    int match;        /* how many bytes of "\r\n\r\n" have been matched */
} conn_t;

static uv_loop_t *loop;

static void on_close(uv_handle_t *h) { free(h); }

static void on_write(uv_write_t *req, int status) {
    (void)status;  /* on failure the read side sees the error and closes */
    free(req);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    static char slab[64 * 1024];  /* single thread; consumed inside on_read */
    (void)h; (void)suggested;
    *buf = uv_buf_init(slab, sizeof slab);
}

/* Count complete requests (terminated by "\r\n\r\n") in this chunk. */
static int count_requests(conn_t *c, const char *p, ssize_t n) {
    static const char END[] = "\r\n\r\n";
    int done = 0;
    for (ssize_t i = 0; i < n; i++) {
        if (p[i] == END[c->match]) c->match++;
        else c->match = (p[i] == '\r');
        if (c->match == 4) { done++; c->match = 0; }
    }
    return done;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    conn_t *c = (conn_t *)s;
    if (nread < 0) {  /* UV_EOF or a real error */
        uv_close((uv_handle_t *)s, on_close);
        return;
    }
    for (int n = count_requests(c, buf->base, nread); n > 0; n--) {
        uv_write_t *req = malloc(sizeof *req);
        uv_buf_t out = uv_buf_init((char *)RESPONSE, sizeof RESPONSE - 1);
        if (!req || uv_write(req, s, &out, 1, on_write) != 0) {
            free(req);
            uv_close((uv_handle_t *)s, on_close);
            return;
        }
    }
}

static void on_connection(uv_stream_t *server, int status) {
    if (status < 0) return;  /* let libuv handle it as it normally does */
    conn_t *c = calloc(1, sizeof *c);
    if (!c) return;
    uv_tcp_init(loop, &c->handle);
    if (uv_accept(server, (uv_stream_t *)&c->handle) == 0)
        uv_read_start((uv_stream_t *)&c->handle, on_alloc, on_read);
    else
        uv_close((uv_handle_t *)&c->handle, on_close);
}

int main(int argc, char **argv) {
    int port = 8080, backlog = 128;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--port") == 0) port = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--backlog") == 0) backlog = atoi(argv[i + 1]);
    }

    loop = uv_default_loop();
    if (loop == NULL) {  /* uv_loop_init failed: no descriptor for its epoll (EMFILE) */
        fprintf(stderr, "uv_http: no event loop (uv_default_loop failed)\n");
        return 1;
    }
    uv_tcp_t server;
    struct sockaddr_in addr;
    int r = uv_tcp_init(loop, &server);
    uv_ip4_addr("127.0.0.1", port, &addr);

    if (r == 0) r = uv_tcp_bind(&server, (const struct sockaddr *)&addr, 0);
    if (r == 0) r = uv_listen((uv_stream_t *)&server, backlog, on_connection);
    if (r != 0) {
        fprintf(stderr, "uv_http: %s\n", uv_strerror(r));
        return 1;
    }
    printf("listening on 127.0.0.1:%d\n", port);
    fflush(stdout);
    return uv_run(loop, UV_RUN_DEFAULT);
}
