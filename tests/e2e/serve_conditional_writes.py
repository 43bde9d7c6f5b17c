#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End-to-end: conditional writes are atomic (issue 24 §1), over real sockets.

N clients, each on a connection of its own opened beforehand, send their request at once:
- 16 PutObject with `If-None-Match: *` of one key: exactly one 200 and fifteen 412
  PreconditionFailed, in rounds with small bodies (kept in memory, committed together) and
  with bodies streamed to files; the refused bodies leave no blob file behind;
- 16 CompleteMultipartUpload of one key with `If-None-Match: *`: exactly one completes;
- 16 CopyObject to one key with `If-None-Match: *`: exactly one copies;
- 16 PutObject with `If-Match` on the key's current ETag: exactly one wins, and the key holds
  the winner's body.
Requests are signed with botocore's SigV4 (Debian's botocore 1.29 has no IfNoneMatch or
IfMatch parameters on these operations, so they are sent as plain signed requests).
"""

import hashlib
import http.client
import os
import re
import sys
import threading
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tfork_server import TforkServer, check, check_eq, run_test, skip, step  # noqa: E402

try:
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
except ImportError as e:  # pragma: no cover
    skip(f"botocore is not available to {sys.executable}: {e} (Debian package python3-boto3)")

RACERS = 16
ROUNDS = 4
BIG = 64 * 1024  # above the store's in-database limit (16 KiB): streamed to a file


class Client:
    """Signed requests on connections of their own."""

    def __init__(self, srv):
        self.endpoint = srv.endpoint
        parts = urllib.parse.urlsplit(srv.endpoint)
        self.host, self.port = parts.hostname, parts.port
        self.credentials = Credentials(srv.access_key, srv.secret_key)

    def connect(self):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        conn.connect()
        return conn

    def headers(self, method, path, body=b"", headers=None):
        request = AWSRequest(method=method, url=self.endpoint + path, data=body,
                             headers=dict(headers or {}))
        request.headers["x-amz-content-sha256"] = hashlib.sha256(body).hexdigest()
        SigV4Auth(self.credentials, "s3", "auto").add_auth(request)
        return {name: value for name, value in request.headers.items()
                if name.lower() != "host"}

    def send(self, conn, method, path, body=b"", headers=None):
        """One request on `conn`; returns (status, body)."""
        conn.request(method, path, body=body, headers=self.headers(method, path, body, headers))
        response = conn.getresponse()
        return response.status, response.read()

    def once(self, method, path, body=b"", headers=None):
        conn = self.connect()
        try:
            return self.send(conn, method, path, body, headers)
        finally:
            conn.close()


def error_code(body: bytes) -> str:
    match = re.search(rb"<Code>([^<]*)</Code>", body)
    return match.group(1).decode() if match else ""


def race(client, requests):
    """Sends each (method, path, body, headers) on a connection opened beforehand, all
    released together; returns the (status, body) of each, in order."""
    conns = [client.connect() for _ in requests]
    # Signed before the start, so the requests leave as close together as they can.
    signed = [(m, p, b, client.headers(m, p, b, h)) for m, p, b, h in requests]
    barrier = threading.Barrier(len(requests))
    results = [None] * len(requests)

    def run(i):
        method, path, body, headers = signed[i]
        barrier.wait()
        try:
            conns[i].request(method, path, body=body, headers=headers)
            response = conns[i].getresponse()
            results[i] = (response.status, response.read())
        except Exception as e:  # noqa: BLE001 - reported as a failed racer below
            results[i] = (0, repr(e).encode())
        finally:
            conns[i].close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def check_one_winner(what, results):
    """Exactly one 200, every other answer 412 PreconditionFailed; returns the winner's index."""
    winners = [i for i, (status, _) in enumerate(results) if status == 200]
    refused = [i for i, (status, body) in enumerate(results)
               if status == 412 and error_code(body) == "PreconditionFailed"]
    others = [(status, body[:200]) for i, (status, body) in enumerate(results)
              if i not in winners and i not in refused]
    check(len(winners) == 1 and len(refused) == len(results) - 1,
          f"{what}: {len(winners)} answered 200 and {len(refused)} 412 PreconditionFailed of "
          f"{len(results)} (expected 1 and {len(results) - 1}); other answers: {others}")
    return winners[0]


def blob_files(data_dir):
    count = 0
    for _, _, files in os.walk(os.path.join(data_dir, "blobs")):
        count += len(files)
    return count


def body_of(round_no, racer, size):
    text = f"round {round_no} racer {racer} ".encode()
    return (text * (size // len(text) + 1))[:size]


def create_only_puts(client, data_dir):
    for round_no in range(ROUNDS):
        size = BIG if round_no % 2 else 100
        step(f"round {round_no}: {RACERS} create-only PUTs of one key ({size} bytes each)")
        key = f"/cond/put-{round_no}"
        files_before = blob_files(data_dir)
        bodies = [body_of(round_no, i, size) for i in range(RACERS)]
        results = race(client, [("PUT", key, body, {"If-None-Match": "*"}) for body in bodies])
        winner = check_one_winner(f"PutObject If-None-Match round {round_no}", results)
        status, stored = client.once("GET", key)
        check_eq(f"status of GET {key}", 200, status)
        check(stored == bodies[winner], f"{key} does not hold the winner's body")
        # The refused bodies were streamed to files and adopted as blobs before their write
        # was refused: none of them is left in the store.
        expected = files_before + (1 if size == BIG else 0)
        check_eq(f"blob files after round {round_no}", expected, blob_files(data_dir))


def create_only_completes(client):
    for round_no in range(ROUNDS):
        step(f"round {round_no}: {RACERS} CompleteMultipartUpload of one key with If-None-Match")
        key = f"/cond/mpu-{round_no}"
        uploads = []
        for i in range(RACERS):
            status, body = client.once("POST", key + "?uploads")
            check_eq("status of CreateMultipartUpload", 200, status)
            upload_id = re.search(rb"<UploadId>([^<]+)</UploadId>", body).group(1).decode()
            part = body_of(round_no, i, 1000)
            query = urllib.parse.urlencode({"partNumber": 1, "uploadId": upload_id})
            status, _ = client.once("PUT", f"{key}?{query}", part)
            check_eq("status of UploadPart", 200, status)
            etag = hashlib.md5(part).hexdigest()
            complete = (f"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>"
                        f"<ETag>\"{etag}\"</ETag></Part></CompleteMultipartUpload>").encode()
            uploads.append((upload_id, part, complete))
        results = race(client, [
            ("POST", f"{key}?{urllib.parse.urlencode({'uploadId': u})}", complete,
             {"If-None-Match": "*"})
            for u, _, complete in uploads])
        winner = check_one_winner(f"CompleteMultipartUpload If-None-Match round {round_no}",
                                  results)
        status, stored = client.once("GET", key)
        check_eq(f"status of GET {key}", 200, status)
        check(stored == uploads[winner][1], f"{key} does not hold the winning upload's part")
        # A refused Complete leaves its upload in place (it may be retried): abort them.
        for i, (upload_id, _, _) in enumerate(uploads):
            if i == winner:
                continue
            status, _ = client.once(
                "DELETE", f"{key}?{urllib.parse.urlencode({'uploadId': upload_id})}")
            check_eq("status of AbortMultipartUpload after a refused Complete", 204, status)


def create_only_copies(client):
    status, _ = client.once("PUT", "/cond/copy-source", b"the source of every copy")
    check_eq("status of PUT /cond/copy-source", 200, status)
    for round_no in range(ROUNDS):
        step(f"round {round_no}: {RACERS} CopyObject to one key with If-None-Match")
        key = f"/cond/copy-{round_no}"
        headers = {"x-amz-copy-source": "/cond/copy-source", "If-None-Match": "*"}
        results = race(client, [("PUT", key, b"", headers)] * RACERS)
        check_one_winner(f"CopyObject If-None-Match round {round_no}", results)
        status, stored = client.once("GET", key)
        check_eq(f"status of GET {key}", 200, status)
        check_eq(f"content of {key}", b"the source of every copy", stored)


def if_match_puts(client):
    key = "/cond/replace"
    for round_no in range(ROUNDS):
        size = BIG if round_no % 2 else 100
        step(f"round {round_no}: {RACERS} PUTs with If-Match on the current ETag")
        base = body_of(round_no, -1, size)
        status, _ = client.once("PUT", key, base)
        check_eq(f"status of PUT {key}", 200, status)
        etag = '"' + hashlib.md5(base).hexdigest() + '"'
        bodies = [body_of(round_no, i, size) for i in range(RACERS)]
        results = race(client, [("PUT", key, body, {"If-Match": etag}) for body in bodies])
        winner = check_one_winner(f"PutObject If-Match round {round_no}", results)
        status, stored = client.once("GET", key)
        check_eq(f"status of GET {key}", 200, status)
        check(stored == bodies[winner], f"{key} does not hold the winner's body")


def main():
    with TforkServer() as srv:
        client = Client(srv)
        status, _ = client.once("PUT", "/cond")
        check_eq("status of CreateBucket", 200, status)
        create_only_puts(client, os.path.join(srv.work, "data"))
        create_only_completes(client)
        create_only_copies(client)
        if_match_puts(client)


if __name__ == "__main__":
    run_test(main)
