#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""UploadPartCopy by reference (issue 24 §2.3): an Editor's concurrent part copies of a big
object once tied up the writer threads and put gigabytes in tmp/. Now a part copy of a range
inside one stored blob refers to that blob: 16 concurrent copies of 5 MiB ranges leave tmp/
empty and the blob files as they were, each part's ETag is the md5 of its range, and the
completed object reads back byte-exact whole, by range and by partNumber, also once its
source is deleted; the data directory verifies clean."""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tfork_server import TforkServer, boto3_client, check, check_eq, run_test, step  # noqa: E402

MiB = 1024 * 1024
PARTS = 16
PART = 5 * MiB
STRIDE = 256 * 1024


def files_under(directory):
    """{path: size} of the files under `directory`."""
    out = {}
    for root, _dirs, files in os.walk(directory):
        for name in files:
            path = os.path.join(root, name)
            out[path] = os.path.getsize(path)
    return out


def main():
    data = os.path.join(tempfile.mkdtemp(prefix="tfork-e2e-part-copy."), "data")
    srv = TforkServer(data_dir=data)
    with srv:
        s3 = boto3_client(srv)
        s3.create_bucket(Bucket="copies")
        source = os.urandom(12 * MiB)
        s3.put_object(Bucket="copies", Key="big", Body=source)
        blobs_before = files_under(os.path.join(data, "blobs"))

        step(f"{PARTS} concurrent UploadPartCopy of {PART // MiB} MiB ranges of one object")
        upload = s3.create_multipart_upload(Bucket="copies", Key="assembled")["UploadId"]
        ranges = [(i * STRIDE, i * STRIDE + PART - 1) for i in range(PARTS)]

        def copy(number):
            first, last = ranges[number - 1]
            answer = s3.upload_part_copy(Bucket="copies", Key="assembled", UploadId=upload,
                                         PartNumber=number,
                                         CopySource={"Bucket": "copies", "Key": "big"},
                                         CopySourceRange=f"bytes={first}-{last}")
            return answer["CopyPartResult"]["ETag"].strip('"')

        with ThreadPoolExecutor(PARTS) as pool:
            etags = list(pool.map(copy, range(1, PARTS + 1)))
        for number, (etag, (first, last)) in enumerate(zip(etags, ranges), 1):
            check_eq(f"ETag of part {number}", hashlib.md5(source[first:last + 1]).hexdigest(),
                     etag)
        check_eq("files in tmp/", {}, files_under(os.path.join(data, "tmp")))
        check_eq("blob files after the part copies", blobs_before,
                 files_under(os.path.join(data, "blobs")))

        step("a whole one-blob object copied as a part keeps its ETag")
        whole = s3.upload_part_copy(Bucket="copies", Key="assembled", UploadId=upload,
                                    PartNumber=PARTS + 1,
                                    CopySource={"Bucket": "copies", "Key": "big"})
        check_eq("ETag of the whole-object part", hashlib.md5(source).hexdigest(),
                 whole["CopyPartResult"]["ETag"].strip('"'))
        etags.append(whole["CopyPartResult"]["ETag"].strip('"'))
        ranges.append((0, len(source) - 1))
        check_eq("blob files after the whole copy", blobs_before,
                 files_under(os.path.join(data, "blobs")))

        step("the completed object reads back byte-exact, whole, by range and by part")
        s3.complete_multipart_upload(
            Bucket="copies", Key="assembled", UploadId=upload,
            MultipartUpload={"Parts": [{"PartNumber": n, "ETag": f'"{e}"'}
                                       for n, e in enumerate(etags, 1)]})
        expected = b"".join(source[first:last + 1] for first, last in ranges)
        s3.delete_object(Bucket="copies", Key="big")  # the parts keep its blob
        body = s3.get_object(Bucket="copies", Key="assembled")["Body"].read()
        check(body == expected, "the completed object reads back otherwise")
        first, last = PART - 1000, 3 * PART + 1000  # across four parts
        ranged = s3.get_object(Bucket="copies", Key="assembled", Range=f"bytes={first}-{last}")
        check(ranged["Body"].read() == expected[first:last + 1], "a ranged GET reads otherwise")
        part = s3.get_object(Bucket="copies", Key="assembled", PartNumber=3)
        check_eq("parts count", PARTS + 1, part["PartsCount"])
        check(part["Body"].read() == expected[2 * PART:3 * PART], "part 3 reads otherwise")
        check_eq("blob files after Complete", blobs_before,
                 files_under(os.path.join(data, "blobs")))

    step("the data directory verifies clean")
    verified = subprocess.run([srv.binary, "serve", "--data", data, "--verify"],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=120)
    check_eq("exit status of --verify", 0, verified.returncode)
    shutil.rmtree(os.path.dirname(data))


if __name__ == "__main__":
    run_test(main)
