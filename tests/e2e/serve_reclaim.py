#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End-to-end: deleting a big bucket does not stall the server, and survives kill -9
(issue 9 §4).

A bucket of 3,000 objects is force-deleted; the answer comes at once and the rows are
reclaimed in the background while other PUTs go on. The server is then killed with SIGKILL
in the middle of a second big delete, restarted on the same data directory: it starts
(the interrupted reclaim resumes in the background), the name is free, other buckets keep
their data, and the reclaimed blob files eventually disappear. Loopback only, bounded.
"""

import os
import shlex
import signal
import subprocess
import sqlite3
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tfork_server import check, check_eq, run_test, skip, step, tfork_binary  # noqa: E402

try:
    import boto3
    from botocore.config import Config
except ImportError as e:  # pragma: no cover
    skip(f"boto3 is not available: {e}")


def start(binary, data, log):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "TIGRIS_", "TFORK_ROOT_"))}
    proc = subprocess.Popen([binary, "serve", "--data", data, "--listen", "127.0.0.1:0"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=open(log, "ab"), env=env)
    exports = {}
    deadline = time.monotonic() + 60
    while len(exports) < 3 and time.monotonic() < deadline:
        line = proc.stdout.readline().decode()
        if not line:
            break
        if line.startswith("export "):
            name, _, value = line[len("export "):].strip().partition("=")
            exports[name] = shlex.split(value)[0] if value else ""
    check("AWS_SECRET_ACCESS_KEY" in exports, "the server did not print its export lines")
    client = boto3.client(
        "s3", endpoint_url=exports["AWS_ENDPOINT_URL"], region_name="auto",
        aws_access_key_id=exports["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=exports["AWS_SECRET_ACCESS_KEY"],
        config=Config(s3={"addressing_style": "path"}, max_pool_connections=16,
                      retries={"max_attempts": 2}))
    return proc, client


def force_delete(client, bucket):
    def add_header(request, **_):
        request.headers["Tigris-Force-Delete"] = "true"
    client.meta.events.register("before-sign.s3.DeleteBucket", add_header)
    try:
        client.delete_bucket(Bucket=bucket)
    finally:
        client.meta.events.unregister("before-sign.s3.DeleteBucket", add_header)


def fill(client, bucket, count):
    client.create_bucket(Bucket=bucket)
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda i: client.put_object(Bucket=bucket, Key=f"k/{i:05d}",
                                                  Body=f"{bucket} object {i}".encode()),
                      range(count)))


def stored_blobs(data):
    """Contents the store keeps: small ones' bytes in meta.db (an object's own, or a shared
    blob's), larger ones in files (shared blobs without bytes in meta.db). Read beside the
    running server, as WAL allows."""
    db = sqlite3.connect(f"file:{os.path.join(data, 'meta.db')}?mode=ro", uri=True, timeout=30)
    try:
        return db.execute("SELECT (SELECT count(*) FROM blob_data) + "
                          "(SELECT count(*) FROM blobs WHERE data_id IS NULL)").fetchone()[0]
    finally:
        db.close()


def main():
    binary = tfork_binary()
    work = tempfile.mkdtemp(prefix="tfork-e2e-reclaim.")
    data = os.path.join(work, "data")
    log = os.path.join(work, "serve.log")
    proc, s3 = start(binary, data, log)
    try:
        step("a force delete of 3,000 objects answers, and other writes go on")
        fill(s3, "keeper", 20)
        fill(s3, "big-one", 3000)
        force_delete(s3, "big-one")
        for i in range(20):
            s3.put_object(Bucket="keeper", Key=f"after/{i}", Body=b"still writing")
        s3.create_bucket(Bucket="big-one")  # the name is free at once
        s3.delete_bucket(Bucket="big-one")

        step("kill -9 in the middle of a second big delete")
        fill(s3, "big-two", 3000)
        before = stored_blobs(data)
        force_delete(s3, "big-two")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)

        step("the restart does not wait for the reclaim, and the data is intact")
        proc, s3 = start(binary, data, log)
        names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
        check("big-two" not in names, f"the deleted bucket is back: {names}")
        check_eq("keeper object", b"keeper object 7",
                 s3.get_object(Bucket="keeper", Key="k/00007")["Body"].read())
        s3.create_bucket(Bucket="big-two")
        s3.put_object(Bucket="big-two", Key="new", Body=b"a new life")
        check_eq("reused name", b"a new life",
                 s3.get_object(Bucket="big-two", Key="new")["Body"].read())
        check(not s3.list_objects_v2(Bucket="big-two", Prefix="k/").get("Contents"),
              "the new bucket shows the old bucket's objects")

        step("the interrupted reclaim finishes in the background")
        deadline = time.monotonic() + 120
        while stored_blobs(data) > before - 3000 + 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        check(stored_blobs(data) <= before - 3000 + 1,
              f"stored blobs: {before} before the delete, {stored_blobs(data)} now")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                check_eq("exit status after SIGTERM", 0, proc.wait(timeout=15))
            finally:
                if proc.poll() is None:
                    proc.kill()
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    run_test(main)
