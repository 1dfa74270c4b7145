#!/usr/bin/env python3
"""A TCP relay that holds every byte for DELAY seconds each way, plus a
random JITTER, for tests/cli/shaped_links.sh and bench/netfaults (this
kernel has no netem to add latency).

  delay_relay.py LISTEN_PORT TARGET_HOST:TARGET_PORT DELAY_SECONDS [JITTER_SECONDS]

Each connection accepted on 127.0.0.1:LISTEN_PORT is joined to one to the
target; what either side sends reaches the other DELAY seconds later, in
order. With JITTER, each chunk read is held DELAY plus a uniform draw from
[0, JITTER) more, but never leaves before the chunk read ahead of it: a
byte stream cannot reorder, so a long draw holds back what follows it, as a
retransmission on a real link does. A side that sends faster than the other reads is held back once
MAX_HELD bytes wait, so the relay never hides the shaped link's rate behind
a growing queue.
"""
import asyncio
import random
import sys

MAX_HELD = 4 << 20


async def pump(reader, writer, delay, jitter):
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()
    held = 0
    last_due = 0.0
    room = asyncio.Event()
    room.set()

    async def send():
        nonlocal held
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                writer.close()
                return
            writer.write(data)
            await writer.drain()
            held -= len(data)
            if held < MAX_HELD:
                room.set()

    sender = asyncio.create_task(send())
    try:
        while True:
            await room.wait()
            data = await reader.read(1 << 16)
            last_due = max(last_due, loop.time() + delay + random.uniform(0, jitter))
            queue.put_nowait((last_due, data))
            if not data:
                break
            held += len(data)
            if held >= MAX_HELD:
                room.clear()
        await sender
    except (ConnectionError, OSError):
        sender.cancel()
        writer.close()


async def main(port, target, delay, jitter):
    host, tport = target.rsplit(":", 1)

    async def serve(c_reader, c_writer):
        try:
            t_reader, t_writer = await asyncio.open_connection(host, int(tport))
        except OSError:
            c_writer.close()
            return
        await asyncio.gather(pump(c_reader, t_writer, delay, jitter), pump(t_reader, c_writer, delay, jitter))

    server = await asyncio.start_server(serve, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], float(sys.argv[3]),
                     float(sys.argv[4]) if len(sys.argv) > 4 else 0.0))
