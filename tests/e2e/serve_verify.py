#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End-to-end: `tfork serve --verify`, the scrub of a data directory (issue 9 §4).

A data directory filled by a real server (plain and multipart objects) verifies clean; after a
blob file is altered on disk, and another removed, --verify prints one line for each (with the
blob's hash), then the counts, exits 1, and starts no server. A directory a running server
holds, and one that is not a tfork data directory, are refused and left as they were.
"""

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tfork_server import TforkServer, check, check_eq, run_test, skip, step  # noqa: E402

try:
    import boto3
    from botocore.config import Config
except ImportError as e:  # pragma: no cover
    skip(f"boto3 is not available to {sys.executable}: {e}")

MiB = 1024 * 1024


def verify(srv, data):
    child_env = {k: v for k, v in os.environ.items()
                 if not k.startswith(("AWS_", "TIGRIS_", "TFORK_ROOT_"))}
    return subprocess.run([srv.binary, "serve", "--data", data, "--verify"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          env=child_env, timeout=120)


def blob_file(data, content: bytes) -> str:
    digest = hashlib.sha256(content).hexdigest()
    for root, _dirs, files in os.walk(os.path.join(data, "blobs")):
        if digest in files:
            return os.path.join(root, digest)
    raise AssertionError(f"no blob file named {digest} under {data}/blobs")


def main():
    srv = TforkServer()
    srv.start()
    data = os.path.join(srv.work, "data")
    s3 = boto3.client("s3", endpoint_url=srv.endpoint, region_name="auto",
                      aws_access_key_id=srv.access_key, aws_secret_access_key=srv.secret_key,
                      config=Config(s3={"addressing_style": "path"}))
    s3.create_bucket(Bucket="scrub")
    # "plain" owns its bytes in the metadata database (small), "other" is a blob file; the
    # parts of "multi" are shared blobs, the last one small (its bytes in the database too).
    bodies = {"plain": b"plain object\n", "other": os.urandom(64 * 1024)}
    for key, body in bodies.items():
        s3.put_object(Bucket="scrub", Key=key, Body=body)
    parts = [os.urandom(5 * MiB), b"last part"]
    up = s3.create_multipart_upload(Bucket="scrub", Key="multi")
    done = [{"PartNumber": n, "ETag": s3.upload_part(Bucket="scrub", Key="multi", PartNumber=n,
                                                     UploadId=up["UploadId"], Body=b)["ETag"]}
            for n, b in enumerate(parts, start=1)]
    s3.complete_multipart_upload(Bucket="scrub", Key="multi", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": done})

    step("--verify refuses a directory a running server holds")
    held = verify(srv, data)
    check(held.returncode != 0, f"--verify ran beside a server: {held.stdout!r}")
    check(held.stderr.strip() != "", "no reason given for the refusal")
    check(srv.alive(), "the running server died")
    srv.stop()

    step("a clean data directory verifies: exit 0, the counts, no server")
    clean = verify(srv, data)
    check_eq("exit status of a clean --verify", 0, clean.returncode)
    check("export AWS_ENDPOINT_URL" not in clean.stdout, "--verify started a server")
    check_eq("output of a clean --verify", ["verified 4 blobs"],
             [line.split(" (")[0] for line in clean.stdout.splitlines()])
    check(clean.stdout.rstrip().endswith(": 0 corrupt, 0 missing"), f"stdout: {clean.stdout!r}")

    step("a blob altered on disk, one removed, two altered in the database: a line each, exit 1")
    altered = blob_file(data, parts[0])
    os.chmod(altered, 0o600)
    with open(altered, "r+b") as f:
        f.seek(MiB)
        byte = f.read(1)
        f.seek(MiB)
        f.write(bytes([byte[0] ^ 0xFF]))
    removed = blob_file(data, bodies["other"])
    os.remove(removed)
    plain_hash = hashlib.sha256(bodies["plain"]).hexdigest()
    part_hash = hashlib.sha256(parts[1]).hexdigest()
    db = sqlite3.connect(os.path.join(data, "meta.db"))
    with db:
        owned = db.execute("UPDATE blob_data SET data=? WHERE id="
                           "(SELECT data_id FROM versions WHERE blob=?)",
                           (b"plain 0bject\n", plain_hash)).rowcount
        shared = db.execute("UPDATE blob_data SET data=? WHERE id="
                            "(SELECT data_id FROM blobs WHERE hash=?)",
                            (b"last p4rt", part_hash)).rowcount
    db.close()
    check_eq("small bytes an object owns altered in meta.db", 1, owned)
    check_eq("small bytes of a shared part altered in meta.db", 1, shared)
    bad = verify(srv, data)
    check_eq("exit status with a bad blob", 1, bad.returncode)
    lines = bad.stdout.splitlines()
    check_eq("lines printed", 5, len(lines))
    altered_hash = hashlib.sha256(parts[0]).hexdigest()
    removed_hash = hashlib.sha256(bodies["other"]).hexdigest()
    check(any(line.startswith(f"corrupt {altered_hash}: ") for line in lines),
          f"no line for the altered blob: {lines}")
    check(any(line.startswith(f"missing {removed_hash}: ") for line in lines),
          f"no line for the removed blob: {lines}")
    for name, digest in (("object's own bytes", plain_hash), ("shared part", part_hash)):
        check(any(line.startswith(f"corrupt {digest}: ") and "meta.db" in line for line in lines),
              f"no line for the {name} altered in the database: {lines}")
    # Each line names what a person lost: the object whose bytes (or part) these are.
    for digest, key in ((altered_hash, "multi"), (removed_hash, "other"), (plain_hash, "plain"),
                        (part_hash, "multi")):
        line = next(line for line in lines if digest in line)
        check(line.endswith(f" [scrub/{key}]"), f"the line of {key} does not name it: {line!r}")
    check(lines[-1].startswith("verified 4 blobs") and lines[-1].endswith(
        ": 3 corrupt, 1 missing"), f"summary: {lines[-1]!r}")
    check("4 of 4 blobs" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1,
          f"stderr: {bad.stderr!r}")
    check(os.path.exists(altered), "--verify removed the corrupt blob")

    step("a directory that is not a tfork data directory is refused, and not created")
    missing_dir = os.path.join(srv.work, "nothing-here")
    refused = verify(srv, missing_dir)
    check_eq("exit status for a missing directory", 1, refused.returncode)
    check("not a tfork data directory" in refused.stderr, f"stderr: {refused.stderr!r}")
    check(not os.path.exists(missing_dir), "--verify created the directory")
    srv._cleanup()


if __name__ == "__main__":
    run_test(main)
