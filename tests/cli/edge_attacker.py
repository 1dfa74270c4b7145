#!/usr/bin/env python3
"""Hostile peers against a ps's ports, for tests/cli/hostile_ports.sh.

    edge_attacker.py PORT PS_PID phase

Phase `before` runs while the ps waits for its devices: 64 KiB of garbage,
forged headers (CAF BASP's and the project's framing) claiming up to 4 GiB
one at a time and eight at once, and a flood of valid-looking results for
tasks never sent from a peer that joined. Phase `during` runs while the
devices train: 200 idle connections, a trickle of one byte a second, and the
forged headers again. Phase `console` attacks the admin console's HTTP port
(PORT is that port): a head without end past the 8 KiB cap, one sent a byte
a second, a POST claiming a 1 GiB body and one sending 1 MiB, a chunked
POST, a control without the token, and 200 connections at once; after
each, GET /api/state still answers. Each attack checks the ps closed the connection (or
kept it harmless) and the ps's peak resident memory (VmHWM) stays under
1 GiB; the last line is `peak_rss_mib N`. Every loop is bounded in count and
time, and only 127.0.0.1 is contacted.
"""
import os
import re
import socket
import struct
import sys
import threading
import time

HOST = "127.0.0.1"
MAGIC = 0x46564C43
KIND_HELLO = 0xFF00
EDGE_JOIN, EDGE_WELCOME, EDGE_RESULT = 1, 2, 6
# The build's own message schema version, so a join is refused for what the
# test means to send, never for a stale version.
SCHEMA_VERSION = int(re.search(
    r"message_schema_version = (\d+);",
    open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../schema/messages.hpp")).read()).group(1))
FOUR_GIB_LESS_ONE = (1 << 32) - 1


def header(kind, length, tag=0):
    return struct.pack("<IHHQQ", MAGIC, 1, kind, length, tag)


def hello():
    return header(KIND_HELLO, 16) + struct.pack("<QQ", 1 << 26, 256 << 20)


def basp_header(payload_len):
    # CAF 0.17 BASP: operation, 3 bytes of padding/flags, u32 payload length,
    # u64 operation data, two u64 actor ids (network byte order).
    return struct.pack(">BBBBIQQQ", 0, 0, 0, 0, payload_len, 0, 0, 0)


def join_payload(name="attacker"):
    n = name.encode()
    return (struct.pack("<IH", SCHEMA_VERSION, len(n)) + n
            + struct.pack("<dQddd", 1e13, 8 << 30, 1e10, 1e10, 1e-4) + struct.pack("<HH", 0, 0))


def result_payload(tile):
    rows = cols = 4
    # key, device, cache hits, shape, busy seconds, the wire's precision (fp32), the values
    return (struct.pack("<QII", 1, 0, tile) + struct.pack("<iIqqdB", 0, 0, rows, cols, 0.0, 0)
            + b"\0" * (4 * rows * cols))


def connect():
    s = socket.create_connection((HOST, PORT), timeout=5)
    s.settimeout(5)
    return s


def closed_by_peer(s, limit=15.0):
    """True once the ps closes the connection (reads and discards until then)."""
    end = time.time() + limit
    s.settimeout(1)
    while time.time() < end:
        try:
            if not s.recv(65536):
                return True
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False


def send(s, data):
    try:
        s.sendall(data)
    except (ConnectionResetError, BrokenPipeError):
        pass


failures = []
peak = [0]


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what, flush=True)
    if not ok:
        failures.append(what)


def sample_rss():
    while not stop.is_set():
        try:
            with open(f"/proc/{PS_PID}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak[0] = max(peak[0], int(line.split()[1]))
        except OSError:
            return
        stop.wait(0.1)


def forged_headers():
    for name, data in [("BASP header claiming 4 GiB", basp_header(FOUR_GIB_LESS_ONE)),
                       ("frame header claiming 4 GiB", hello() + header(EDGE_JOIN, FOUR_GIB_LESS_ONE)),
                       ("result header claiming 60 MiB as a first frame", hello() + header(EDGE_RESULT, 60 << 20)),
                       ("join header claiming 1 MiB", hello() + header(EDGE_JOIN, 1 << 20))]:
        s = connect()
        send(s, data)
        check(closed_by_peer(s), f"{name}: closed")
        s.close()
    socks = [connect() for _ in range(8)]
    for i, s in enumerate(socks):
        send(s, basp_header(FOUR_GIB_LESS_ONE) if i % 2 else hello() + header(EDGE_RESULT, FOUR_GIB_LESS_ONE))
    check(all(closed_by_peer(s) for s in socks), "eight forged headers at once: all closed")
    for s in socks:
        s.close()


def before():
    s = connect()
    send(s, os.urandom(64 << 10))
    check(closed_by_peer(s), "64 KiB of garbage: closed")
    s.close()
    forged_headers()
    s = connect()
    send(s, hello() + header(EDGE_JOIN, len(join_payload())) + join_payload())
    flood = b"".join(header(EDGE_RESULT, len(result_payload(t))) + result_payload(t) for t in range(500))
    send(s, flood)
    check(closed_by_peer(s), "a joined peer flooding results for tasks never sent: dropped")
    s.close()


def during():
    idle = []
    for _ in range(200):
        idle.append(connect())
    trickle = connect()
    start = time.time()
    t_closed = None
    for b in hello() + header(EDGE_JOIN, 64):
        try:
            trickle.send(bytes([b]))
        except OSError:
            t_closed = time.time() - start
            break
        if time.time() - start > 20:
            break
        time.sleep(1)
    if t_closed is None:
        t_closed = time.time() - start if closed_by_peer(trickle, 5) else None
    check(t_closed is not None and t_closed < 20, f"a trickle of one byte a second: closed after {t_closed} s")
    closed = sum(1 for s in idle if closed_by_peer(s, 5))
    check(closed == len(idle), f"200 idle connections: {closed} closed by the handshake timeout")
    for s in idle:
        s.close()
    forged_headers()


def status_of(s, limit=10.0):
    """The status line the console answered on `s`, or '' if it closed first."""
    s.settimeout(1)
    got, end = b"", time.time() + limit
    while time.time() < end:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError):
            break
        if not chunk:
            break
        got += chunk
        if b"\r\n" in got:
            break
    return got.split(b"\r\n")[0].decode(errors="replace")


def console_answers():
    s = connect()
    send(s, b"GET /api/state HTTP/1.1\r\nHost: x\r\n\r\n")
    ok = status_of(s) == "HTTP/1.1 200 OK"
    s.close()
    return ok


def console():
    for name, data, want in [
            ("a head without end past 8 KiB", b"GET /" + b"a" * (64 << 10), "431"),
            ("a POST claiming a 1 GiB body", b"POST /api/control/pause HTTP/1.1\r\nContent-Length: 1073741824\r\n\r\n", "413"),
            ("a POST sending 1 MiB", b"POST /api/control/pause HTTP/1.1\r\nContent-Length: 1048576\r\n\r\n" + b"x" * (1 << 20), "413"),
            ("a chunked POST", b"POST /api/control/pause HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffff\r\n", "411"),
            ("a control without the token", b"POST /api/control/pause HTTP/1.1\r\nContent-Length: 0\r\n\r\n", "401"),
            ("a control with a wrong token", b"POST /api/control/drain/0 HTTP/1.1\r\nAuthorization: Bearer x\r\nContent-Length: 0\r\n\r\n", "401")]:
        s = connect()
        send(s, data)
        status = status_of(s)
        s.close()
        check(want in status and console_answers(), f"{name}: {status or 'closed'}, then GET /api/state answers")
    trickle = connect()
    start = time.time()
    for b in b"GET /api/state HTTP/1.1\r\n":
        try:
            trickle.send(bytes([b]))
        except OSError:
            break
        if time.time() - start > 12:
            break
        time.sleep(1)
    closed = closed_by_peer(trickle, 5)
    check(closed and time.time() - start < 12, f"a head sent a byte a second: closed after {time.time() - start:.1f} s")
    trickle.close()
    many = [connect() for _ in range(200)]
    open_ones = sum(1 for s in many if not closed_by_peer(s, 0.2))
    check(open_ones <= 16, f"200 connections at once: {open_ones} kept open (at most 16)")
    for s in many:
        s.close()
    time.sleep(0.2)
    check(console_answers(), "after them all, GET /api/state answers")


PORT, PS_PID, PHASE = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
stop = threading.Event()
sampler = threading.Thread(target=sample_rss, daemon=True)
sampler.start()
{"before": before, "during": during, "console": console}[PHASE]()
stop.set()
sampler.join()
check(peak[0] < 1 << 20, f"the ps's peak resident memory: {peak[0] // 1024} MiB (limit 1024)")
print(f"peak_rss_mib {peak[0] // 1024}")
sys.exit(1 if failures else 0)
