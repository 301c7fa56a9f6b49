"""A small HTTP server on Python's selectors module, written the way many are.

The listener is registered level-triggered (epoll, as selectors.DefaultSelector gives on
Linux). When accept() fails, the naive handler just goes back to select(): with the descriptor
table full, the listener is still readable, so select() returns it at once, accept() fails
again, and the loop spins for as long as the error lasts (the EMFILE spin of libuv/Node and
others). With --pause, the fix many servers use: stop watching the listener for a while.

With --strict, an accept error is not caught at all: the server dies of it, as an asyncio-less
script with no handler does.

    python3 selectors_http.py [--port N] [--pause | --strict]
"""
import selectors
import socket
import sys
import time

port = 8080
pause = "--pause" in sys.argv
strict = "--strict" in sys.argv
if "--port" in sys.argv:
    port = int(sys.argv[sys.argv.index("--port") + 1])

sel = selectors.DefaultSelector()
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(128)
listener.setblocking(False)
sel.register(listener, selectors.EVENT_READ, None)
paused_until = None

while True:
    timeout = 1.0
    if paused_until is not None:
        timeout = max(0.0, paused_until - time.monotonic())
    events = sel.select(timeout=timeout)
    if paused_until is not None and time.monotonic() >= paused_until:
        sel.register(listener, selectors.EVENT_READ, None)
        paused_until = None
    for key, _ in events:
        if key.data is None:
            try:
                conn, _ = listener.accept()
            except BlockingIOError:
                continue
            except OSError:
                if strict:
                    raise
                if pause:  # out of descriptors: stop asking for 10 ms
                    sel.unregister(listener)
                    paused_until = time.monotonic() + 0.01
                continue  # naive: straight back to select(), which returns the listener again
            conn.setblocking(False)
            sel.register(conn, selectors.EVENT_READ, b"")
            continue
        conn = key.fileobj
        data = conn.recv(4096)
        if not data:
            sel.unregister(conn)
            conn.close()
            continue
        pending = key.data + data
        while b"\r\n\r\n" in pending:
            _, pending = pending.split(b"\r\n\r\n", 1)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        sel.modify(conn, selectors.EVENT_READ, pending)
