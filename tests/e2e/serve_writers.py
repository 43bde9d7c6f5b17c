#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A request that changes the store never holds one of `tfork serve`'s event threads.

Writes wait for the store's writer (its group commit); the event threads, one per core, read
every connection and answer reads. Here another process holds SQLite's write lock on the data
directory's meta.db, so every PUT waits in the server. Told by states, not durations:
- twelve PUTs (more than any machine here has cores) are all read by the server: each
  server-side socket's receive queue is empty while none of them is answered; PUTs that held
  their event thread would leave the others' requests unread in their sockets;
- a GET and a HEAD on other connections are answered meanwhile;
- once the lock is released, every PUT is answered 200 and reads back.
Then SIGTERM while PUTs wait for the store, the lock held until the server has ended its
writer threads (after its grace period for open connections): the server answers each PUT
once it is committed, exits 0, and a server started again on the same directory reads every
one back.
"""

import os
import shutil
import signal
import socket
import sqlite3
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tfork_server import TforkServer, check, check_eq, run_test, skip, step  # noqa: E402

try:
    import boto3
    from botocore.config import Config
except ImportError:  # pragma: no cover
    skip("boto3 is not installed")

PUTS = 12


def unread_requests(port, socks):
    """How many of the server-side ends of `socks` (connected to `port`) still hold bytes
    the server has not read, or are not established yet."""
    clients = {f":{sock.getsockname()[1]:04X}" for sock in socks}
    drained = 0
    with open("/proc/net/tcp", encoding="ascii") as f:
        next(f)
        for line in f:
            fields = line.split()
            local, remote, state, queues = fields[1], fields[2], fields[3], fields[4]
            if (local.endswith(f":{port:04X}") and remote[-5:] in clients and state == "01"
                    and queues.split(":")[1] == "00000000"):
                drained += 1
    return len(socks) - drained


def raw_put(url, body):
    """Sends a whole presigned PUT on a connection of its own; returns the socket."""
    parts = urllib.parse.urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port))
    head = (f"PUT {parts.path}?{parts.query} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    sock.sendall(head + body)  # over loopback: in the server's socket once this returns
    return sock


def unanswered(sock):
    try:
        sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        return False  # an answer, or the connection closed
    except BlockingIOError:
        return True


def check_answered_200(socks, srv):
    """Reads each socket's answer (closing it): each must be 200."""
    for i, sock in enumerate(socks):
        sock.settimeout(300)
        answer = sock.recv(4096)
        sock.close()
        check(answer.startswith(b"HTTP/1.1 200"), f"PUT {i}: {answer[:200]!r}" + srv.log_tail())


def main():
    work = tempfile.mkdtemp(prefix="tfork-e2e-writers.")
    try:
        writes_wait_reads_go(os.path.join(work, "data"))
        sigterm_answers_waiting_writes(os.path.join(work, "data"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def wait_for(what, ready, srv, seconds=120):
    """Waits until ready() holds; the state it saw is the one judged (asked once more, a
    state that has moved on since would be reported as never reached)."""
    deadline = time.monotonic() + seconds
    while not (reached := ready()) and time.monotonic() < deadline:
        time.sleep(0.05)
    check(reached, f"{what}: not within {seconds} s" + srv.log_tail())


def thread_names(pid):
    names = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm", encoding="utf-8") as f:
                names.append(f.read().strip())
        except OSError:
            pass  # the thread ended meanwhile
    return names


def sigterm_answers_waiting_writes(data):
    srv = TforkServer(data_dir=data).start()
    s3 = boto3.client("s3", endpoint_url=srv.endpoint, region_name="auto",
                      aws_access_key_id=srv.access_key, aws_secret_access_key=srv.secret_key,
                      config=Config(s3={"addressing_style": "path"},
                                    retries={"max_attempts": 1, "mode": "standard"}))
    urls = [s3.generate_presigned_url("put_object", Params={"Bucket": "writers",
                                                            "Key": f"at-exit/{i:02d}"})
            for i in range(PUTS)]
    port = urllib.parse.urlsplit(srv.endpoint).port
    proc = srv.proc

    step(f"SIGTERM while {PUTS} PUTs wait for the store's write lock")
    lock = sqlite3.connect(os.path.join(data, "meta.db"), isolation_level=None, timeout=0)
    lock.execute("BEGIN IMMEDIATE")
    socks = []
    try:
        socks = [raw_put(url, f"written at exit {i}\n".encode() * 40) for i, url in
                 enumerate(urls)]
        wait_for("the server reads every PUT", lambda: unread_requests(port, socks) == 0, srv)
        check("http-writer" in thread_names(proc.pid), "no thread named http-writer to watch")
        proc.send_signal(signal.SIGTERM)

        # Past its grace period for open connections, the server ends its writer threads and
        # then waits for the writes it queued: held here by the lock.
        wait_for("the server ends its writer threads",
                 lambda: "http-writer" not in thread_names(proc.pid), srv)
        check(proc.poll() is None, "the server exited with PUTs still waiting" + srv.log_tail())
        check(all(unanswered(s) for s in socks), "a PUT was answered before its commit")
    finally:
        lock.rollback()
        lock.close()

    step("the lock is released: every PUT is answered 200, then the server exits 0")
    check_answered_200(socks, srv)
    check_eq("exit status after SIGTERM", 0, proc.wait(timeout=120))
    srv.proc = None

    step("started again on the same directory, the server reads every PUT back")
    with TforkServer(data_dir=data) as again:
        s3 = boto3.client("s3", endpoint_url=again.endpoint, region_name="auto",
                          aws_access_key_id=again.access_key,
                          aws_secret_access_key=again.secret_key,
                          config=Config(s3={"addressing_style": "path"}))
        for i in range(PUTS):
            check_eq(f"at-exit/{i:02d}", f"written at exit {i}\n".encode() * 40,
                     s3.get_object(Bucket="writers", Key=f"at-exit/{i:02d}")["Body"].read())


def writes_wait_reads_go(data):
    with TforkServer(data_dir=data) as srv:
        s3 = boto3.client("s3", endpoint_url=srv.endpoint, region_name="auto",
                          aws_access_key_id=srv.access_key,
                          aws_secret_access_key=srv.secret_key,
                          config=Config(s3={"addressing_style": "path"},
                                        retries={"max_attempts": 1, "mode": "standard"},
                                        read_timeout=300))
        s3.create_bucket(Bucket="writers")
        s3.put_object(Bucket="writers", Key="before", Body=b"stored before the lock")
        urls = [s3.generate_presigned_url("put_object", Params={"Bucket": "writers",
                                                                "Key": f"waiting/{i:02d}"})
                for i in range(PUTS)]
        port = urllib.parse.urlsplit(srv.endpoint).port

        step("another process takes the store's write lock")
        lock = sqlite3.connect(os.path.join(data, "meta.db"), isolation_level=None, timeout=0)
        lock.execute("BEGIN IMMEDIATE")
        socks = []
        try:
            step(f"{PUTS} PUTs are all read by the server, and all wait")
            socks = [raw_put(url, f"body of PUT {i}\n".encode() * 50) for i, url in
                     enumerate(urls)]
            deadline = time.monotonic() + 120
            while unread_requests(port, socks) and time.monotonic() < deadline:
                time.sleep(0.05)
            check_eq("PUTs whose request the server has not read", 0,
                     unread_requests(port, socks))
            check(all(unanswered(s) for s in socks), "a PUT was answered while the store's "
                  "write lock was held elsewhere" + srv.log_tail())

            step("reads on other connections are answered meanwhile")
            check_eq("GET while the PUTs wait", b"stored before the lock",
                     s3.get_object(Bucket="writers", Key="before")["Body"].read())
            check_eq("HEAD while the PUTs wait", 22,
                     s3.head_object(Bucket="writers", Key="before")["ContentLength"])
            check(all(unanswered(s) for s in socks), "a PUT was answered while the store's "
                  "write lock was held elsewhere" + srv.log_tail())
        finally:
            lock.rollback()
            lock.close()

        step("the lock is released: every PUT is answered 200 and reads back")
        check_answered_200(socks, srv)
        for i in range(PUTS):
            check_eq(f"waiting/{i:02d}", f"body of PUT {i}\n".encode() * 50,
                     s3.get_object(Bucket="writers", Key=f"waiting/{i:02d}")["Body"].read())


if __name__ == "__main__":
    run_test(main)
