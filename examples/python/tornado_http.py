"""A tornado web application, as its tutorial writes one: Debian's python3-tornado, unmodified.

It answers "/" and "/slow" (a coroutine that sleeps 50 ms before it answers, on tornado's
IOLoop, which is asyncio's), and stops on SIGTERM after its open requests finish.
"""
import argparse
import asyncio
import signal

import tornado.web


class Main(tornado.web.RequestHandler):
    def get(self):
        self.write("hello from tornado\n")


class Slow(tornado.web.RequestHandler):
    async def get(self):
        await asyncio.sleep(0.05)
        self.write("slow answer\n")


async def main(port):
    app = tornado.web.Application([(r"/", Main), (r"/slow", Slow)])
    server = app.listen(port, address="127.0.0.1")
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    server.stop()
    await server.close_all_connections()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8080)
    asyncio.run(main(parser.parse_args().port))
