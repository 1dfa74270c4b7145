"""One raw HTTP exchange with the admin console, for the CLI tests: the
request goes out as given (so malformed ones can be sent too), the whole
answer is read until the console closes the connection."""
import socket


def exchange(port, request, host="127.0.0.1"):
    """Returns (head, body) as bytes."""
    with socket.create_connection((host, port), timeout=10) as s:
        s.sendall(request)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    head, _, body = out.partition(b"\r\n\r\n")
    return head, body


def get(port, path, host="127.0.0.1"):
    return exchange(port, b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n", host)
