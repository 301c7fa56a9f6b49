"""A small HTTP server on Python's asyncio, written the way the documentation shows.

asyncio makes a socketpair for its self-pipe, and add_signal_handler hands one end to
signal.set_wakeup_fd, which checks it with fstat. When accept() fails with EMFILE, asyncio
stops watching the listener and tries again after ACCEPT_RETRY_DELAY (1 s).

    python3 asyncio_http.py [--port N]
"""
import asyncio
import signal
import sys

port = int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else 8080


async def handle(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            close = b"connection: close" in head.lower()
            body = b"hello\n"
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s"
                         % (len(body), b"Connection: close\r\n" if close else b"", body))
            await writer.drain()
            if close:
                break
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    writer.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", port)
    stop = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set_result, None)
    async with server:
        await stop


asyncio.run(main())
