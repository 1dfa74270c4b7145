#!/usr/bin/env python3
"""Raw TCP throughput through a shaped link, for tests/cli/shaped_links.sh.

  tcp_rate.py recv PORT SECONDS [N]  accept N connections (1), read each
                                     until it closes, print JSON: the rates
                                     of the flows and their sum
  tcp_rate.py send SECONDS HOST:PORT...  one thread per target, each writing
                                     64 KiB buffers for SECONDS, then close
  tcp_rate.py burst-recv PORT BYTES ROUNDS   accept one connection; per
                                     round, print when (CLOCK_MONOTONIC) the
                                     round's BYTES had all arrived
  tcp_rate.py burst-send BYTES ROUNDS HOST:PORT...  connect to every target,
                                     then per round write BYTES to all of them
                                     at once (a thread each), print when it
                                     began, and wait a second for the next

The burst modes time transfers that start together, as a product's operands
do: the namespaces share one monotonic clock, so a receiver's finish less
the sender's start is the transfer's time.

The receiver counts only what arrives after WARMUP seconds from its first
byte: slow start and the token bucket's initial burst would otherwise make
a short run look faster or slower than the link's steady rate, which is
what the planner is told.
"""
import json
import socket
import sys
import threading
import time

WARMUP = 0.5


def count(conn, seconds, out):
    """Appends conn's steady rate (B/s) to out."""
    conn.settimeout(seconds + 10)
    first = last = None
    counted = 0
    while True:
        data = conn.recv(1 << 20)
        now = time.monotonic()
        if not data:
            break
        if first is None:
            first = now
        if now - first >= WARMUP:
            counted += len(data)
            last = now
    span = (last - first - WARMUP) if last else 0
    out.append(counted / span if span > 0 else 0)


def recv(port, seconds, connections):
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", port))
    server.listen(connections)
    server.settimeout(seconds + 10)
    rates, threads = [], []
    for _ in range(connections):
        conn, _ = server.accept()
        threads.append(threading.Thread(target=count, args=(conn, seconds, rates)))
        threads[-1].start()
    for t in threads:
        t.join()
    print(json.dumps({"rates": rates, "rate": sum(rates)}))


def send(seconds, targets):
    buf = b"\0" * (64 << 10)
    def one(target):
        host, port = target.rsplit(":", 1)
        for _ in range(200):  # the receiver may still be starting
            try:
                s = socket.create_connection((host, int(port)), timeout=5)
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise SystemExit(f"tcp_rate: cannot reach {target}")
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            s.sendall(buf)
        s.close()
    threads = [threading.Thread(target=one, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def burst_recv(port, size, rounds):
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", port))
    server.listen(1)
    server.settimeout(60)
    conn, _ = server.accept()
    conn.settimeout(60)
    finished = []
    for _ in range(rounds):
        left = size
        while left > 0:
            data = conn.recv(min(left, 1 << 20))
            if not data:
                raise SystemExit("tcp_rate: the sender closed early")
            left -= len(data)
        finished.append(time.monotonic())
    print(json.dumps({"finished": finished}))


def burst_send(size, rounds, targets):
    socks = []
    for target in targets:
        host, port = target.rsplit(":", 1)
        for _ in range(200):
            try:
                socks.append(socket.create_connection((host, int(port)), timeout=30))
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise SystemExit(f"tcp_rate: cannot reach {target}")
    buf = b"\0" * size
    started = []
    for _ in range(rounds):
        time.sleep(1)  # idle between rounds, as between a step's products
        threads = [threading.Thread(target=s.sendall, args=(buf,)) for s in socks]
        started.append(time.monotonic())
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    time.sleep(1)
    for s in socks:
        s.close()
    print(json.dumps({"started": started}))


if __name__ == "__main__":
    if sys.argv[1] == "recv":
        recv(int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 1)
    elif sys.argv[1] == "burst-recv":
        burst_recv(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    elif sys.argv[1] == "burst-send":
        burst_send(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])
    else:
        send(float(sys.argv[2]), sys.argv[3:])
