#!/usr/bin/env python3
"""Raw TCP throughput through a shaped link, for tests/cli/shaped_links.sh.

  tcp_rate.py recv PORT SECONDS [N]  accept N connections (1), read each
                                     until it closes, print JSON: each flow's
                                     arrivals over time
  tcp_rate.py rates FILE...          the flows of every recv's output: print
                                     JSON, each flow's rate over the window
                                     they all ran in, and their sum
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

Rates count only what arrives after WARMUP seconds from the last flow's
first byte: slow start and the token bucket's initial burst would otherwise
make a short run look faster or slower than the link's steady rate, which
is what the planner is told.
"""
import json
import socket
import sys
import threading
import time

WARMUP = 0.5


def count(conn, seconds, out):
    """Appends conn's arrivals to out: [[time, bytes so far], ...], CLOCK_MONOTONIC,
    a sample at most every 10 ms."""
    conn.settimeout(seconds + 10)
    total, samples = 0, []
    while True:
        data = conn.recv(1 << 20)
        now = time.monotonic()
        if not data:
            break
        total += len(data)
        if not samples or now - samples[-1][0] >= 0.01:
            samples.append([now, total])
        else:
            samples[-1][1] = total
    out.append(samples)


def recv(port, seconds, connections):
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", port))
    server.listen(connections)
    server.settimeout(seconds + 10)
    flows, threads = [], []
    for _ in range(connections):
        conn, _ = server.accept()
        threads.append(threading.Thread(target=count, args=(conn, seconds, flows)))
        threads[-1].start()
    for t in threads:
        t.join()
    print(json.dumps({"flows": flows}))


def rates(flows):
    """Each flow's rate (B/s) over the window all of them were running in,
    less WARMUP at its start: flows that ran at other times (one starved
    while another ran alone) would otherwise add up to more than the link."""
    begin = max(f[0][0] for f in flows) + WARMUP
    end = min(f[-1][0] for f in flows)
    if end <= begin:
        raise SystemExit("tcp_rate: the flows never ran together past the warm-up")
    def at(f, t):  # bytes so far at t, interpolated
        for (t0, b0), (t1, b1) in zip(f, f[1:]):
            if t0 <= t <= t1:
                return b0 + (b1 - b0) * (t - t0) / (t1 - t0) if t1 > t0 else b1
        return f[-1][1] if t > f[-1][0] else f[0][1]
    return [(at(f, end) - at(f, begin)) / (end - begin) for f in flows]


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
    elif sys.argv[1] == "rates":
        r = rates([f for path in sys.argv[2:] for f in json.load(open(path))["flows"]])
        print(json.dumps({"rates": r, "rate": sum(r)}))
    elif sys.argv[1] == "burst-recv":
        burst_recv(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    elif sys.argv[1] == "burst-send":
        burst_send(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])
    else:
        send(float(sys.argv[2]), sys.argv[3:])
