#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End-to-end, over real sockets: how `tfork serve` bounds connections (issue 9 §2).

* The connection cap (`--max-connections N`): with N connections open, the next one gets a
  clear `503 SlowDown` S3 error and is closed; once connections close, signed requests on new
  connections succeed again.
* The head deadline (`--head-timeout S`): a client trickling its headers one byte at a time,
  never idle long enough for the idle timeout, is cut off once S seconds have passed; one
  trickling its request line is cut off too. A head that arrives in pieces within the
  deadline is served.
Every wait is for a state (a response, a closed socket) with a generous deadline.
"""

import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tfork_server import TforkServer, TestFailure, check, check_eq, run_test, step  # noqa: E402
from serve_transport import Wire, srv_client, status_of  # noqa: E402

CAP = 4
HEAD_TIMEOUT = 2
GENEROUS = 25.0  # seconds; below the 30 s idle timeout, far above HEAD_TIMEOUT


def signed_get(wire, sock, path="/"):
    sock.sendall(wire.signed_head("GET", path))
    return Wire.read_response(sock)


def wait_closed(sock, trickle=None, interval=0.5, deadline=GENEROUS):
    """Sends `trickle` every `interval` s until the server closes the socket; returns what
    the server sent and the seconds it took, or fails after `deadline` s."""
    sock.settimeout(interval)
    received = b""
    start = time.monotonic()
    while time.monotonic() - start < deadline:
        if trickle is not None:
            try:
                sock.sendall(trickle)
            except OSError:
                return received, time.monotonic() - start
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            return received, time.monotonic() - start
        if not chunk:
            return received, time.monotonic() - start
        received += chunk
    raise TestFailure(f"the server kept the connection open for {deadline} s "
                      f"(received {received[:200]!r})")


def test_cap():
    with TforkServer(["--max-connections", str(CAP)]) as srv:
        wire = Wire(srv)
        step(f"{CAP} keep-alive connections, each with a signed request answered")
        holders = []
        try:
            for _ in range(CAP):
                sock = wire.connect(timeout=10)
                holders.append(sock)
                check_eq("status on a connection within the cap", 200,
                         status_of(signed_get(wire, sock)))

            step("one more connection: 503 SlowDown, then closed")
            with wire.connect(timeout=10) as extra:
                response = signed_get(wire, extra)
                check_eq("status beyond the cap", 503, status_of(response))
                check(b"<Code>SlowDown</Code>" in response, f"body: {response[-300:]!r}")
                check(b"application/xml" in response, "the refusal is not an S3 XML error")
                check(b"Connection: close" in response, "the refusal does not close")
                rest, _ = wait_closed(extra)
                check_eq("bytes after the refusal", b"", rest)

            step("the connections within the cap still work")
            check_eq("status on a held connection", 200, status_of(signed_get(wire, holders[0])))
        finally:
            for sock in holders:
                sock.close()

        step("after they close, signed requests succeed again on new connections")
        start = time.monotonic()
        status = 0
        while time.monotonic() - start < GENEROUS:
            with wire.connect(timeout=10) as sock:
                status = status_of(signed_get(wire, sock))
            if status == 200:
                break
            check_eq("status while the slots free up", 503, status)
            time.sleep(0.1)
        check_eq("status once the held connections closed", 200, status)
        srv_client(srv).list_buckets()
        check(srv.alive(), "the server died")


def test_head_deadline():
    with TforkServer(["--head-timeout", str(HEAD_TIMEOUT)]) as srv:
        wire = Wire(srv)
        step("headers trickled one byte every 0.5 s are cut off at the head deadline")
        # Counted from before the connect: the server's deadline starts later (at its accept),
        # so the close can come no sooner than HEAD_TIMEOUT however slow this machine is.
        start = time.monotonic()
        with wire.connect(timeout=10) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            received, _ = wait_closed(sock, trickle=b"a")
        took = time.monotonic() - start
        check(took >= HEAD_TIMEOUT, f"closed after {took:.2f} s, before the deadline")
        if received:
            check_eq("status of a head that missed its deadline", 400, status_of(received))
            check(b"<Code>RequestTimeout</Code>" in received, f"body: {received[-300:]!r}")

        step("a request line trickled one byte every 0.5 s is cut off too")
        with wire.connect(timeout=10) as sock:
            sock.sendall(b"GET /")
            wait_closed(sock, trickle=b"a")

        step("a head sent in pieces within the deadline is served")
        with wire.connect(timeout=10) as sock:
            head = wire.signed_head("GET", "/")
            third = len(head) // 3
            for piece in (head[:third], head[third:2 * third], head[2 * third:]):
                sock.sendall(piece)
                time.sleep(0.2)
            check_eq("status of a head sent in pieces", 200,
                     status_of(Wire.read_response(sock)))
        srv_client(srv).list_buckets()
        check(srv.alive(), "the server died")


def main():
    test_cap()
    test_head_deadline()


if __name__ == "__main__":
    run_test(main)
