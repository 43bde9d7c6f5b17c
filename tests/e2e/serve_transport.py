#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End-to-end, over real sockets: the HTTP layer of `tfork serve` (issue 9 §1, §2).

* An anonymous request never gets its body read: a compressed bomb (4 MiB of gzip that would
  inflate to 4 GiB) is refused 403 from its head, and the server's memory stays small.
* Content-Encoding is stored metadata, never decoded: a gzip object comes back byte for byte.
* Expect: 100-continue is answered only after authentication (403 instead of 100 for a bad
  signature; 100 and then 200 for a good one).
* Limits: a head over 64 KiB gets 431, a 1 MiB header line too (and costs no memory);
  a malformed Content-Length (-1, abc, two values...) gets one S3 XML 400 at once, not
  libmicrohttpd's HTML page; an XML body over 1 MiB gets 400.
* 1,000 slow connections (a head never finished) do not stop signed requests, and cost no
  threads: the server's thread count stays small.
* A GET racing overwrites of the same key never answers 200 with a torn body.
Everything is bounded and loopback only; the slow connections are closed by the test.
"""

import gzip
import hashlib
import os
import resource
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tfork_server import TforkServer, check, check_eq, run_test, skip, step  # noqa: E402

try:
    import boto3
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.config import Config
    from botocore.credentials import Credentials
except ImportError as e:  # pragma: no cover
    skip(f"boto3 is not available to {sys.executable}: {e}")

MiB = 1024 * 1024


def status_of(raw: bytes) -> int:
    line = raw.split(b"\r\n", 1)[0].split()
    return int(line[1]) if len(line) > 1 else 0


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def threads_of(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


class Wire:
    """Raw HTTP/1.1 requests on one socket, signed with botocore's SigV4 when asked."""

    def __init__(self, srv):
        self.srv = srv
        host, port = srv.endpoint[len("http://"):].split(":")
        self.address = (host, int(port))
        self.credentials = Credentials(srv.access_key, srv.secret_key)

    def connect(self, timeout=30.0) -> socket.socket:
        return socket.create_connection(self.address, timeout=timeout)

    def signed_head(self, method, path, headers=None, payload="UNSIGNED-PAYLOAD",
                    secret=None) -> bytes:
        url = self.srv.endpoint + path
        request = AWSRequest(method=method, url=url, headers=dict(headers or {}))
        request.headers["x-amz-content-sha256"] = payload
        credentials = self.credentials
        if secret is not None:
            credentials = Credentials(self.srv.access_key, secret)
        SigV4Auth(credentials, "s3", "auto").add_auth(request)
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.address[0]}:{self.address[1]}"]
        for name, value in request.headers.items():
            if name.lower() == "host":
                continue
            lines.append(f"{name}: {value}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    @staticmethod
    def read_response(sock) -> bytes:
        """Reads one response (head + Content-Length body), or until the peer closes."""
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return data
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        return head + b"\r\n\r\n" + rest


def compressed_bomb() -> bytes:
    # Concatenated gzip members are one valid gzip stream: 256 x 16 MiB of zeros.
    member = gzip.compress(b"\0" * (16 * MiB), compresslevel=9)
    return member * 256


def test_bomb(srv, wire):
    step("an anonymous compressed bomb is refused from its head")
    bomb = compressed_bomb()
    check(len(bomb) < 8 * MiB, f"the bomb is {len(bomb)} bytes")
    before = rss_kib(srv.proc.pid)
    with wire.connect() as sock:
        head = (f"PUT /victim-bucket/bomb HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\n"
                f"Content-Type: application/octet-stream\r\nContent-Length: {len(bomb)}\r\n\r\n")
        sock.sendall(head.encode())
        try:
            sock.sendall(bomb)
        except OSError:
            pass  # the server may close before the whole body was sent
        response = Wire.read_response(sock)
    check_eq("status of the anonymous bomb", 403, status_of(response))
    after = rss_kib(srv.proc.pid)
    check(after - before < 64 * 1024, f"server RSS grew from {before} KiB to {after} KiB")

    step("a signed gzip object is stored as sent, Content-Encoding kept")
    s3 = srv_client(srv)
    s3.create_bucket(Bucket="gzip-bucket")
    payload = gzip.compress(b"hello, compressed world\n" * 1000)
    s3.put_object(Bucket="gzip-bucket", Key="g.gz", Body=payload, ContentEncoding="gzip")
    got = s3.get_object(Bucket="gzip-bucket", Key="g.gz")
    check_eq("Content-Encoding returned", "gzip", got.get("ContentEncoding"))
    check(got["Body"].read() == payload, "the gzip body came back changed")


def srv_client(srv):
    return boto3.client(
        "s3", endpoint_url=srv.endpoint, region_name="auto",
        aws_access_key_id=srv.access_key, aws_secret_access_key=srv.secret_key,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))


def test_continue(srv, wire):
    step("Expect: 100-continue is answered 403 when the signature is wrong")
    body = b"x" * 1000
    headers = {"Content-Length": str(len(body)), "Expect": "100-continue"}
    with wire.connect() as sock:
        sock.sendall(wire.signed_head("PUT", "/gzip-bucket/c1", headers, secret="wrong-secret"))
        response = Wire.read_response(sock)
    check_eq("status for a bad signature with Expect", 403, status_of(response))

    step("and 100 Continue, then 200, when it is right")
    with wire.connect() as sock:
        sock.sendall(wire.signed_head("PUT", "/gzip-bucket/c2", headers))
        interim = sock.recv(4096)
        check(interim.startswith(b"HTTP/1.1 100"), f"expected 100 Continue, got {interim[:40]!r}")
        sock.sendall(body)
        rest = interim.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in interim else b""
        response = rest if rest.startswith(b"HTTP/1.1 2") else Wire.read_response(sock)
    check_eq("status after 100 Continue", 200, status_of(response))


def test_limits(srv, wire):
    step("a head over 64 KiB gets 431")
    with wire.connect() as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (70 * 1024) + b"\r\n\r\n")
        status = status_of(Wire.read_response(sock))
    check(status in (431, 400), f"a 70 KiB header got {status}")

    step("a 1 MiB header line is cut off, and costs no memory")
    before = rss_kib(srv.proc.pid)
    with wire.connect() as sock:
        try:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Huge: " + b"b" * MiB + b"\r\n\r\n")
        except OSError:
            pass
        status = status_of(Wire.read_response(sock))
    check(status in (0, 400, 413, 414, 431), f"a 1 MiB header got {status}")
    check(rss_kib(srv.proc.pid) - before < 16 * 1024, "a 1 MiB header line grew the server")

    step("a malformed Content-Length gets one S3 XML 400 at once, then the connection closes")
    cases = [(b"Content-Length: -1", b"InvalidArgument"),
             (b"Content-Length: abc", b"InvalidArgument"),
             (b"Content-Length: 1.5", b"InvalidArgument"),
             (b"Content-Length: +5", b"InvalidArgument"),
             (b"Content-Length: ", b"InvalidArgument"),
             (b"Content-Length: 5\r\nContent-Length: 6", b"InvalidArgument"),
             (b"Content-Length: 99999999999999999999999", b"EntityTooLarge")]
    for header, code in cases:
        with wire.connect(timeout=20) as sock:
            sock.sendall(b"PUT /gzip-bucket/neg HTTP/1.1\r\nHost: x\r\n" + header + b"\r\n\r\n")
            response = b""
            while True:  # everything up to the close: exactly one response
                chunk = sock.recv(65536)
                if not chunk:
                    break
                response += chunk
        check_eq(f"status for {header!r}", 400, status_of(response))
        check_eq(f"status lines for {header!r}", 1, response.count(b"HTTP/1.1 "))
        head, _, body = response.partition(b"\r\n\r\n")
        check(b"content-type: application/xml" in head.lower(), f"head for {header!r}: {head!r}")
        check(body.startswith(b"<?xml") and b"<Code>" + code + b"</Code>" in body,
              f"body for {header!r}: {body[:300]!r}")
        check(b"<Resource>/gzip-bucket/neg</Resource>" in body, f"body: {body[:300]!r}")

    step("an XML body over 1 MiB gets 400 MaxMessageLengthExceeded")
    big = b"<Delete>" + b" " * (2 * MiB) + b"</Delete>"
    with wire.connect() as sock:
        sock.sendall(wire.signed_head("POST", "/gzip-bucket?delete",
                                      {"Content-Length": str(len(big))}))
        try:
            sock.sendall(big)
        except OSError:
            pass
        response = Wire.read_response(sock)
    check_eq("status of a 2 MiB DeleteObjects body", 400, status_of(response))
    check(b"MaxMessageLengthExceeded" in response, f"unexpected body {response[-300:]!r}")


def test_slow_connections(srv, wire):
    step("1,000 slow connections while signed requests still complete")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    before_rss = rss_kib(srv.proc.pid)
    slow = []
    try:
        for i in range(1000):
            sock = wire.connect(timeout=10)
            sock.sendall(f"PUT /slow/{i} HTTP/1.1\r\nHost: x\r\nX-Slow: ".encode())
            slow.append(sock)
        s3 = srv_client(srv)
        for i in range(20):
            s3.put_object(Bucket="gzip-bucket", Key=f"during-{i}", Body=b"d" * 4096)
            got = s3.get_object(Bucket="gzip-bucket", Key=f"during-{i}")["Body"].read()
            check(got == b"d" * 4096, "a GET during the slow connections returned wrong data")
        threads = threads_of(srv.proc.pid)
        check(threads < 64, f"the server runs {threads} threads for 1,000 connections")
        grown = rss_kib(srv.proc.pid) - before_rss
        check(grown < 64 * 1024, f"1,000 idle connections grew the server by {grown} KiB")
    finally:
        for sock in slow:
            sock.close()


def test_torn_reads(srv):
    step("GETs racing overwrites never answer 200 with a torn body")
    s3 = srv_client(srv)
    small, large = b"a" * MiB, b"b" * (2 * MiB)
    s3.put_object(Bucket="gzip-bucket", Key="race", Body=small)
    stop = threading.Event()
    errors = []

    def writer():
        flip = False
        while not stop.is_set():
            s3w = writer_client
            s3w.put_object(Bucket="gzip-bucket", Key="race", Body=large if flip else small)
            flip = not flip

    writer_client = srv_client(srv)
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(150):
            got = s3.get_object(Bucket="gzip-bucket", Key="race")
            body = got["Body"].read()
            if body not in (small, large) or len(body) != got["ContentLength"]:
                errors.append(len(body))
    finally:
        stop.set()
        thread.join()
    check(not errors, f"torn bodies of lengths {errors[:5]}")


def test_startup_rules():
    step("--root-secret-key-file gives the root secret; the printed lines carry it")
    import subprocess
    import tempfile
    work = tempfile.mkdtemp(prefix="tfork-e2e-keyfile.")
    secret_file = os.path.join(work, "secret")
    with open(secret_file, "w") as f:
        f.write("tsec_fromafile0123456789\n")
    os.chmod(secret_file, 0o600)
    with TforkServer(["--root-access-key", "tid_fromafile",
                      "--root-secret-key-file", secret_file]) as srv:
        check_eq("printed secret", "tsec_fromafile0123456789", srv.secret_key)
        srv_client(srv).list_buckets()

    step("--data on a directory that is not tfork's is refused (exit 6), mode untouched")
    foreign = os.path.join(work, "photos")
    os.makedirs(os.path.join(foreign, "tmp"))
    with open(os.path.join(foreign, "tmp", "keep.txt"), "w") as f:
        f.write("precious")
    os.chmod(foreign, 0o755)
    from tfork_server import tfork_binary
    done = subprocess.run([tfork_binary(), "serve", "--data", foreign, "--listen", "127.0.0.1:0"],
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    check_eq("exit status for a foreign --data", 6, done.returncode)
    check(b"not a tfork data directory" in done.stderr, f"stderr: {done.stderr[-300:]!r}")
    check_eq("mode of the foreign directory", 0o755, os.stat(foreign).st_mode & 0o777)
    check(os.path.exists(os.path.join(foreign, "tmp", "keep.txt")), "a file was removed")
    import shutil
    shutil.rmtree(work, ignore_errors=True)


def main():
    test_startup_rules()
    # 1,000 slow connections from 127.0.0.1: more than one peer may open by default.
    with TforkServer(["--max-anonymous-per-peer", "0"]) as srv:
        wire = Wire(srv)
        test_bomb(srv, wire)
        test_continue(srv, wire)
        test_limits(srv, wire)
        test_slow_connections(srv, wire)
        test_torn_reads(srv)
        check(srv.alive(), "the server died")


if __name__ == "__main__":
    run_test(main)
