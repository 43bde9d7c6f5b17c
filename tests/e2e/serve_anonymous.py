#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End-to-end, over real sockets: nothing anonymous costs `tfork serve` more than a few KiB
(issue 24 §2).

* An IAM call that signs its body's hash (no x-amz-content-sha256: botocore, the AWS CLI, Go)
  is checked from its head before its body is read: an unknown key, a credential scope of
  another service or date, a skewed clock, or a body over 16 KiB is answered at once, with
  the body never sent. Such a call from a real signer still works.
* At most 64 such bodies are read at once: the next is answered 503 SlowDown at once, and
  once one of them ends another is admitted.
* Slow heads cannot keep signed requests out: with `--max-connections 64`, 200 connections that
  never finish their head leave room for 20 signed GETs on new connections, each answered 200
  (the oldest anonymous heads are closed to make room).
* `--max-anonymous-per-peer N`: past N slow heads from one address, one of that address's
  (its oldest as the server saw them) is closed, told 503 SlowDown once its request line was
  read, and the rest stay open; a signed GET from it is still served, in another's place.
* Every body has a deadline (`--body-timeout S`): a signed PUT whose body trickles in one byte
  every 0.5 s is answered 400 RequestTimeout and closed once S seconds have passed.
Every wait is for a state (a response, a closed socket) with a generous deadline.
"""

import datetime
import os
import select
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tfork_server import TforkServer, TestFailure, check, check_eq, run_test, step  # noqa: E402
from serve_transport import Wire, status_of  # noqa: E402
from serve_connections import wait_closed  # noqa: E402

from botocore.auth import SigV4Auth  # noqa: E402  (serve_transport skips without boto3)
from botocore.awsrequest import AWSRequest  # noqa: E402

GENEROUS = 25.0  # seconds; below the 30 s idle timeout, which would answer nothing
FORM = b"Action=ListAccessKeys"
UNAUTHENTICATED_BODIES = 64  # HttpLimits::unauthenticated_bodies
BODY_TIMEOUT = 2


def amz_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def iam_head(wire, key_id, length, date8=None, service="iam", amz_date=None, expect=False):
    """The head of a POST / whose Authorization names `key_id` (its signature is never
    right: the server must refuse before it could check one)."""
    amz_date = amz_date or amz_now()
    scope = f"{date8 or amz_date[:8]}/auto/{service}/aws4_request"
    return (f"POST /?Detailed= HTTP/1.1\r\nHost: {wire.address[0]}:{wire.address[1]}\r\n"
            "Content-Type: application/x-www-form-urlencoded\r\n"
            + ("Expect: 100-continue\r\n" if expect else "") +
            f"Content-Length: {length}\r\nX-Amz-Date: {amz_date}\r\n"
            f"Authorization: AWS4-HMAC-SHA256 Credential={key_id}/{scope}, "
            f"SignedHeaders=content-type;host;x-amz-date, Signature={'0' * 64}\r\n\r\n").encode()


def refused_from_head(wire, head, status, code):
    """Sends `head` and no body; the answer must come without it."""
    with wire.connect(timeout=GENEROUS) as sock:
        sock.sendall(head)
        response = Wire.read_response(sock)
    check_eq(f"status of a head refused for {code}", status, status_of(response))
    check(code.encode() in response, f"expected {code}, got {response[-300:]!r}")


def signed_iam_call(wire):
    """ListAccessKeys signed by botocore as its IAM client signs: service iam, the body's hash
    in the signature and no x-amz-content-sha256."""
    request = AWSRequest(method="POST", url=wire.srv.endpoint + "/?Detailed=", data=FORM,
                         headers={"Content-Type": "application/x-www-form-urlencoded",
                                  "Accept": "application/json"})
    SigV4Auth(wire.credentials, "iam", "auto").add_auth(request)
    check("x-amz-content-sha256" not in request.headers, "botocore signed the body's hash header")
    lines = ["POST /?Detailed= HTTP/1.1", f"Host: {wire.address[0]}:{wire.address[1]}",
             f"Content-Length: {len(FORM)}"]
    lines += [f"{name}: {value}" for name, value in request.headers.items()
              if name.lower() != "host"]
    with wire.connect(timeout=GENEROUS) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + FORM)
        return Wire.read_response(sock)


def test_iam_head_checks(srv, wire):
    step("an IAM call's head with an unknown key is refused before its 1 MiB body is sent")
    refused_from_head(wire, iam_head(wire, "tid_NOSUCHKEY", 1 << 20), 403, "InvalidAccessKeyId")

    step("a credential date other than the signing date, another service, a skewed clock")
    key = srv.access_key
    refused_from_head(wire, iam_head(wire, key, 1000, date8="19990101"), 400,
                      "AuthorizationHeaderMalformed")
    refused_from_head(wire, iam_head(wire, key, 1000, service="sts"), 400,
                      "AuthorizationHeaderMalformed")
    refused_from_head(wire, iam_head(wire, key, 1000, amz_date="20000101T000000Z"), 403,
                      "RequestTimeTooSkewed")

    step("a real key, but a body over 16 KiB: refused before it is sent")
    refused_from_head(wire, iam_head(wire, key, 16 * 1024 + 1), 400, "MaxMessageLengthExceeded")

    step("the same call signed by botocore's IAM signer is served")
    response = signed_iam_call(wire)
    check_eq("status of a signed IAM call", 200, status_of(response))
    check(b'"Keys"' in response, f"body: {response[-300:]!r}")


def admitted_body(wire):
    """A connection whose IAM head was admitted: the server asked for its body (100 Continue),
    or None when it was refused (the response)."""
    sock = wire.connect(timeout=GENEROUS)
    sock.sendall(iam_head(wire, wire.srv.access_key, len(FORM), expect=True))
    response = Wire.read_response(sock)
    if status_of(response) == 100:
        return sock, response
    sock.close()
    return None, response


def test_unauthenticated_bodies(wire):
    step(f"{UNAUTHENTICATED_BODIES} IAM heads admitted, their bodies not sent")
    holders = []
    try:
        for _ in range(UNAUTHENTICATED_BODIES):
            sock, response = admitted_body(wire)
            check(sock is not None, f"a head within the bound was refused: {response[:300]!r}")
            holders.append(sock)

        step("the next one is answered 503 SlowDown at once")
        sock, response = admitted_body(wire)
        check(sock is None, "a body beyond the bound was asked for")
        check_eq("status beyond the bound", 503, status_of(response))
        check(b"<Code>SlowDown</Code>" in response and b"Retry-After" in response,
              f"response: {response[:400]!r}")

        step("once one of them is answered (its signature, checked with the body, is wrong), "
             "another is admitted")
        holders[0].sendall(FORM)
        response = Wire.read_response(holders[0])
        check_eq("status of a forged IAM call", 403, status_of(response))
        check(b"SignatureDoesNotMatch" in response, f"response: {response[-300:]!r}")
        deadline = time.monotonic() + GENEROUS
        while True:
            sock, response = admitted_body(wire)
            if sock is not None:
                holders.append(sock)
                break
            check(time.monotonic() < deadline, "no body admitted after one was answered")
            check_eq("status while the slot frees up", 503, status_of(response))
            time.sleep(0.1)
    finally:
        for sock in holders:
            sock.close()


def signed_get(wire, sock):
    sock.sendall(wire.signed_head("GET", "/"))
    return Wire.read_response(sock)


def test_slow_heads():
    cap, slow_count = 64, 200
    with TforkServer(["--max-connections", str(cap), "--max-anonymous-per-peer", "0"]) as srv:
        wire = Wire(srv)
        step(f"{slow_count} slow heads against --max-connections {cap}")
        slow = []
        try:
            for i in range(slow_count):
                slow.append(slow_head(wire, i))
            step("20 signed GETs, each on a new connection, are answered 200")
            for _ in range(20):
                with wire.connect(timeout=GENEROUS) as sock:
                    check_eq("status of a signed GET among slow heads", 200,
                             status_of(signed_get(wire, sock)))
            step("the oldest slow head was closed to make room")
            wait_closed(slow[0])
        finally:
            for sock in slow:
                sock.close()
        check(srv.alive(), "the server died")


def slow_head(wire, i):
    sock = wire.connect(timeout=GENEROUS)
    sock.sendall(f"GET /slow/{i} HTTP/1.1\r\nHost: x\r\nX-Slow: ".encode())
    return sock


def open_ones(socks):
    """Which of `socks` the server has not closed (a non-blocking peek, no waiting)."""
    still = []
    for sock in socks:
        sock.setblocking(False)
        try:
            sock.recv(1, socket.MSG_PEEK)  # data (a 503) or end of stream: closed
        except BlockingIOError:
            still.append(sock)
        except OSError:
            pass
        finally:
            sock.setblocking(True)
    return still


def wait_one_closed(socks, deadline=GENEROUS):
    """Waits until the server closes one of `socks`; returns it and what it was sent.
    Which one is the server's choice: libmicrohttpd's pool of event threads accepts
    connections in an order of its own, so the oldest it saw need not be the first opened."""
    start = time.monotonic()
    while time.monotonic() - start < deadline:
        readable, _, _ = select.select(socks, [], [], 0.5)
        for sock in readable:
            received, _ = wait_closed(sock, deadline=deadline)
            return sock, received
    raise TestFailure(f"none of {len(socks)} connections was closed within {deadline} s")


def test_per_peer():
    per_peer = 4
    with TforkServer(["--max-anonymous-per-peer", str(per_peer)]) as srv:
        wire = Wire(srv)
        step(f"{per_peer + 1} slow heads from 127.0.0.1 against --max-anonymous-per-peer "
             f"{per_peer}: one of them is closed, the others stay open")
        slow = []
        try:
            for i in range(per_peer + 1):
                slow.append(slow_head(wire, i))
            closed, received = wait_one_closed(slow)
            if received:  # told why when the server had read its request line
                check_eq("status of the slow head closed for a newer one", 503,
                         status_of(received))
                check(b"<Code>SlowDown</Code>" in received, f"body: {received[-300:]!r}")
            rest = [sock for sock in slow if sock is not closed]
            check_eq("slow heads still open", per_peer, len(open_ones(rest)))

            step("a signed GET from the same address is served, in the place of another")
            with wire.connect(timeout=GENEROUS) as sock:
                check_eq("status of a signed GET", 200, status_of(signed_get(wire, sock)))
            second, _ = wait_one_closed(rest)
            check_eq("slow heads still open", per_peer - 1,
                     len(open_ones([sock for sock in rest if sock is not second])))
        finally:
            for sock in slow:
                sock.close()
        check(srv.alive(), "the server died")


def test_body_deadline():
    with TforkServer(["--body-timeout", str(BODY_TIMEOUT)]) as srv:
        wire = Wire(srv)
        step("a signed PUT's body trickled one byte every 0.5 s is cut off at its deadline")
        with wire.connect(timeout=10) as sock:
            sock.sendall(wire.signed_head("PUT", "/slow-body"))  # a bucket to put into
            check_eq("CreateBucket", 200, status_of(Wire.read_response(sock)))
            # Counted from before the head is sent: the server's deadline starts later.
            start = time.monotonic()
            sock.sendall(wire.signed_head("PUT", "/slow-body/key", {"Content-Length": "1000"}))
            received, _ = wait_closed(sock, trickle=b"a")
        took = time.monotonic() - start
        check(took >= BODY_TIMEOUT, f"closed after {took:.2f} s, before the deadline")
        check_eq("status of a body that missed its deadline", 400, status_of(received))
        check(b"<Code>RequestTimeout</Code>" in received, f"body: {received[-300:]!r}")
        check(srv.alive(), "the server died")


def main():
    with TforkServer() as srv:
        wire = Wire(srv)
        test_iam_head_checks(srv, wire)
        test_unauthenticated_bodies(wire)
        check(srv.alive(), "the server died")
    test_slow_heads()
    test_per_peer()
    test_body_deadline()


if __name__ == "__main__":
    run_test(main)
