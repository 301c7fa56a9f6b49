"""Python's standard HTTPServer, as its documentation shows it: one connection at a time, with
socketserver's poll()-based serve_forever (selectors.PollSelector).

Its handler speaks HTTP/1.0 by default and closes after each answer. With --http11 it keeps
connections alive: then, being single-threaded, it reads the next request of one client while
every other waits.

    python3 poll_http.py [--port N] [--http11]
"""
import http.server
import sys

port = int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else 8080


class Handler(http.server.BaseHTTPRequestHandler):
    if "--http11" in sys.argv:
        protocol_version = "HTTP/1.1"

    def do_GET(self):
        body = b"hello\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
