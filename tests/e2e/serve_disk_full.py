#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A full disk under `tfork serve` (issue 9 §4): a write that cannot be stored is answered
507 InsufficientStorage, with the cause in the server's log; nothing half-written is left
(no object, no temporary file); what was stored before stays readable; and once space is
back, service is whole again without a restart. A PUT declaring more than the disk has room
for is refused from its head, before its body is sent. Small objects (kept in SQLite) and large ones
(blob files) alike. And a full disk is recovered through the API (issue 24 §2.1): on it,
DeleteObject, DeleteObjects, AbortMultipartUpload and a forced DeleteBucket succeed and free
space, also after a restart on the still-full disk, while new data is refused 507. The data
directory is a small tmpfs mounted for the test, so it needs root and mount(2); without them
the test says so and is skipped."""

import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tfork_server import (TforkServer, check, check_eq, run_test, signed_headers, skip,  # noqa: E402
                         step)

try:
    import boto3
    from botocore.config import Config
    from botocore.exceptions import ClientError
except ImportError:  # pragma: no cover
    skip("boto3 is not installed")

KiB = 1024


def fill(directory, name="filler"):
    """Writes a filler file until the filesystem refuses another byte; returns its path."""
    path = os.path.join(directory, name)
    chunk = b"\0" * (64 * KiB)
    with open(path, "wb", buffering=0) as f:
        while True:
            try:
                f.write(chunk)
            except OSError:
                break
        while True:  # the last partial chunk
            try:
                f.write(b"\0" * 512)
            except OSError:
                break
    return path


def status_of(call):
    """The HTTP status and S3 code of a refused call, or (200, '') when it succeeded."""
    try:
        call()
        return 200, ""
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"]


def client_of(srv):
    """A boto3 client that never retries: each refusal is seen as it was answered."""
    return boto3.client("s3", endpoint_url=srv.endpoint, region_name="auto",
                        aws_access_key_id=srv.access_key, aws_secret_access_key=srv.secret_key,
                        config=Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1, "mode": "standard"}))


def free_bytes(directory):
    """Free space on the tmpfs, counting the room the server keeps in reserve for deletes
    (data/reserve, made again once the disk has room for it)."""
    st = os.statvfs(directory)
    reserve = os.path.join(directory, "data", "reserve")
    return st.f_bavail * st.f_frsize + (os.path.getsize(reserve) if os.path.exists(reserve) else 0)


def wait_for(what, condition, timeout=30.0):
    """Polls `condition` until it holds; fails after `timeout` s (a bound, not a decision)."""
    deadline = time.monotonic() + timeout
    while not condition():
        check(time.monotonic() < deadline, f"{what}: not within {timeout} s")
        time.sleep(0.05)


def too_big_is_refused_before_its_body(srv, mnt):
    """A PUT that declares more than the disk has room for is answered 507 from its head: its
    body is never sent, nothing lands in tmp/, and the reserve kept for deletes stays."""
    step("a PUT declaring 64 MiB on a 32 MiB disk is refused 507 before its body is sent")
    from serve_transport import Wire, status_of as wire_status  # boto3 is there (above)
    wire = Wire(srv)
    with wire.connect(timeout=30) as sock:
        sock.sendall(wire.signed_head("PUT", "/full/too-big",
                                      {"Content-Length": str(64 * 1024 * KiB)}))
        answer = Wire.read_response(sock)
    check_eq("status of the too-big PUT", 507, wire_status(answer))
    check(b"<Code>InsufficientStorage</Code>" in answer, f"body: {answer[-300:]!r}")
    check_eq("temporary files after the refusal", [], os.listdir(os.path.join(mnt, "data", "tmp")))
    check(os.path.exists(os.path.join(mnt, "data", "reserve")), "the reserve was given up")
    s3 = client_of(srv)
    s3.put_object(Bucket="full", Key="fits", Body=b"a body that fits")
    check_eq("a PUT that fits, after", b"a body that fits",
             s3.get_object(Bucket="full", Key="fits")["Body"].read())


def recovers_through_the_api(srv, mnt):
    """Issue 24 §2.1: a full disk is emptied through the API, before and after a restart."""
    s3 = client_of(srv)
    big = 1024 * KiB
    for bucket in ("doomed", "doomed-later"):
        s3.create_bucket(Bucket=bucket)
        s3.put_object(Bucket=bucket, Key="big", Body=os.urandom(big))
    for i in range(6):
        s3.put_object(Bucket="full", Key=f"big/{i}", Body=os.urandom(big))
    upload = s3.create_multipart_upload(Bucket="full", Key="unfinished")["UploadId"]
    s3.upload_part(Bucket="full", Key="unfinished", UploadId=upload, PartNumber=1,
                   Body=os.urandom(big))

    step("the disk fills up again; new data is refused 507")
    fillers = [fill(mnt, "filler-1")]
    check_eq("PUT on a full disk", (507, "InsufficientStorage"),
             status_of(lambda: s3.put_object(Bucket="full", Key="refused", Body=b"x" * 100)))

    step("DeleteObject, DeleteObjects, AbortMultipartUpload, force DeleteBucket succeed")
    before = free_bytes(mnt)
    s3.delete_object(Bucket="full", Key="big/0")
    check(free_bytes(mnt) > before, "DeleteObject freed no space")
    before = free_bytes(mnt)
    answer = s3.delete_objects(Bucket="full", Delete={"Objects": [{"Key": "big/1"},
                                                                  {"Key": "big/2"}]})
    check_eq("DeleteObjects errors", [], answer.get("Errors", []))
    check(free_bytes(mnt) > before, "DeleteObjects freed no space")
    before = free_bytes(mnt)
    s3.abort_multipart_upload(Bucket="full", Key="unfinished", UploadId=upload)
    check(free_bytes(mnt) > before, "AbortMultipartUpload freed no space")
    before = free_bytes(mnt)
    check_eq("force DeleteBucket on a full disk", 200, delete_bucket_forced(s3, "doomed"))
    wait_for(f"the deleted bucket's blobs are freed ({before} free before)",
             lambda: free_bytes(mnt) > before)

    step("a restart on the full disk: deletes still succeed, new data is still refused")
    srv.stop()
    fillers.append(fill(mnt, "filler-2"))
    check(os.statvfs(mnt).f_bavail == 0, "the tmpfs still has free blocks")
    srv.start()
    s3 = client_of(srv)
    check_eq("PUT after the restart on a full disk", (507, "InsufficientStorage"),
             status_of(lambda: s3.put_object(Bucket="full", Key="refused", Body=b"x" * 100)))
    before = free_bytes(mnt)
    s3.delete_object(Bucket="full", Key="big/3")
    check(free_bytes(mnt) > before, "DeleteObject after the restart freed no space")
    before = free_bytes(mnt)
    answer = s3.delete_objects(Bucket="full", Delete={"Objects": [{"Key": "big/4"}]})
    check_eq("DeleteObjects errors after the restart", [], answer.get("Errors", []))
    check(free_bytes(mnt) > before, "DeleteObjects after the restart freed no space")
    before = free_bytes(mnt)
    check_eq("force DeleteBucket after the restart", 200, delete_bucket_forced(s3, "doomed-later"))
    wait_for("the bucket deleted after the restart has its blobs freed",
             lambda: free_bytes(mnt) > before)

    step("space is back: new data is stored again, without a restart")
    for filler in fillers:
        os.remove(filler)
    body = os.urandom(big)
    s3.put_object(Bucket="full", Key="big/after", Body=body)
    check(s3.get_object(Bucket="full", Key="big/after")["Body"].read() == body,
          "the object stored after the recovery reads back otherwise")
    check_eq("what is left of the large objects", ["big/5", "big/after"],
             sorted(o["Key"] for o in s3.list_objects_v2(Bucket="full", Prefix="big/")
                    .get("Contents", [])))
    return srv


def delete_bucket_forced(s3, bucket):
    """DeleteBucket with Tigris's force header; its HTTP status."""
    with signed_headers(s3, "DeleteBucket", {"tigris-force-delete": "true"}):
        return status_of(lambda: s3.delete_bucket(Bucket=bucket))[0]


def main():
    mnt = tempfile.mkdtemp(prefix="tfork-e2e-full.")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m,mode=0700", "tmpfs", mnt],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        os.rmdir(mnt)
        skip(f"cannot mount a small tmpfs (needs root): {mounted.stderr.strip()}")
    srv = None
    try:
        srv = TforkServer(data_dir=os.path.join(mnt, "data")).start()
        s3 = client_of(srv)
        s3.create_bucket(Bucket="full")
        big_before = os.urandom(96 * KiB)
        s3.put_object(Bucket="full", Key="small-before", Body=b"stored before the disk filled")
        s3.put_object(Bucket="full", Key="big-before", Body=big_before)

        step("the disk fills up")
        filler = fill(mnt)
        check(os.statvfs(mnt).f_bavail == 0, "the tmpfs still has free blocks")

        step("small PUTs: each is stored or refused 507, until they are refused")
        stored, refused = [], []
        for i in range(4000):
            key = f"small/{i:05d}"
            body = f"small object {i} ".encode() * 100
            status, code = status_of(lambda: s3.put_object(Bucket="full", Key=key, Body=body))
            if status == 200:
                stored.append((key, body))
                continue
            check_eq(f"status of the refused PUT {key}", (507, "InsufficientStorage"),
                     (status, code))
            refused.append(key)
            if len(refused) >= 3:
                break
        check(len(refused) >= 3, f"no small PUT was refused; {len(stored)} stored on a full disk")

        step("a large PUT and a multipart part are refused 507 as well")
        status = status_of(lambda: s3.put_object(Bucket="full", Key="big-refused",
                                                 Body=os.urandom(256 * KiB)))
        check_eq("large PUT on a full disk", (507, "InsufficientStorage"), status)

        step("the server is alive; what was stored reads back; nothing half-written is left")
        check(srv.alive(), "the server died on a full disk" + srv.log_tail())
        check_eq("small object stored before", b"stored before the disk filled",
                 s3.get_object(Bucket="full", Key="small-before")["Body"].read())
        check(s3.get_object(Bucket="full", Key="big-before")["Body"].read() == big_before,
              "the large object stored before changed")
        for key, body in stored:
            check(s3.get_object(Bucket="full", Key=key)["Body"].read() == body,
                  f"{key} was acknowledged but reads back otherwise")
        for key in refused + ["big-refused"]:
            status = status_of(lambda: s3.head_object(Bucket="full", Key=key))
            check_eq(f"HEAD of the refused {key}", 404, status[0])
        listed = set()
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket="full"):
            listed.update(o["Key"] for o in page.get("Contents", []))
        check_eq("listing after the refusals",
                 {"small-before", "big-before"} | {key for key, _ in stored}, listed)
        tmp = os.path.join(mnt, "data", "tmp")
        check_eq("temporary files left in the data directory", [], os.listdir(tmp))
        with open(srv.stderr_path, encoding="utf-8", errors="replace") as f:
            log = f.read()
        check("507 InsufficientStorage" in log, "no refusal in the server log" + srv.log_tail())
        check("full" in log or "No space left" in log,
              "the server log does not say the disk is full" + srv.log_tail())

        step("space is back: small and large PUTs are stored again, without a restart")
        os.remove(filler)
        s3.put_object(Bucket="full", Key="small-after", Body=b"stored after")
        big_after = os.urandom(256 * KiB)
        s3.put_object(Bucket="full", Key="big-after", Body=big_after)
        check_eq("small object after", b"stored after",
                 s3.get_object(Bucket="full", Key="small-after")["Body"].read())
        check(s3.get_object(Bucket="full", Key="big-after")["Body"].read() == big_after,
              "the large object stored after reads back otherwise")
        too_big_is_refused_before_its_body(srv, mnt)
        recovers_through_the_api(srv, mnt)
        srv.stop()

        step("the data directory verifies clean")
        verified = subprocess.run([srv.binary, "serve", "--data", os.path.join(mnt, "data"),
                                   "--verify"], stdin=subprocess.DEVNULL, capture_output=True,
                                  text=True, timeout=120)
        check_eq("exit status of --verify", 0, verified.returncode)
    finally:
        if srv is not None:
            srv._cleanup()
        subprocess.run(["umount", mnt], check=False)
        os.rmdir(mnt)


if __name__ == "__main__":
    run_test(main)
