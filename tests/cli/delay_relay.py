#!/usr/bin/env python3
"""A TCP relay that holds every byte for DELAY seconds each way, for
tests/cli/shaped_links.sh (this kernel has no netem to add latency).

  delay_relay.py LISTEN_PORT TARGET_HOST:TARGET_PORT DELAY_SECONDS

Each connection accepted on 127.0.0.1:LISTEN_PORT is joined to one to the
target; what either side sends reaches the other DELAY seconds later, in
order. A side that sends faster than the other reads is held back once
MAX_HELD bytes wait, so the relay never hides the shaped link's rate behind
a growing queue.
"""
import asyncio
import sys

MAX_HELD = 4 << 20


async def pump(reader, writer, delay):
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()
    held = 0
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
            queue.put_nowait((loop.time() + delay, data))
            if not data:
                break
            held += len(data)
            if held >= MAX_HELD:
                room.clear()
        await sender
    except (ConnectionError, OSError):
        sender.cancel()
        writer.close()


async def main(port, target, delay):
    host, tport = target.rsplit(":", 1)

    async def serve(c_reader, c_writer):
        try:
            t_reader, t_writer = await asyncio.open_connection(host, int(tport))
        except OSError:
            c_writer.close()
            return
        await asyncio.gather(pump(c_reader, t_writer, delay), pump(t_reader, c_writer, delay))

    server = await asyncio.start_server(serve, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], float(sys.argv[3])))
