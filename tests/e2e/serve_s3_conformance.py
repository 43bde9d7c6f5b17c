#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End-to-end: what current S3 clients expect of `tfork serve` (issue 9 §5), with boto3.

Conditional writes (If-None-Match / If-Match on PutObject and CompleteMultipartUpload),
multipart rules (EntityTooSmall, InvalidPartOrder, re-uploaded parts, InvalidRange on part
copies), multipart checksums (ChecksumAlgorithm echoed, part checksums, the composite checksum
on Complete, HeadObject and GetObject, read back with boto3's response validation on),
GetObject/HeadObject with PartNumber, ListMultipartUploads, GetObjectAttributes, BadDigest,
presigned expiry, EncodingType=url listings and the bucket location.
"""

import base64
import hashlib
import os
import sys
import time
import urllib.error
import urllib.request
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tfork_server import TestFailure, TforkServer, check, check_eq, run_test, skip, step  # noqa: E402
from tfork_server import boto3_client as make_client, signed_headers as extra_headers, client_error as error_of  # noqa: E402

try:
    import boto3
    import botocore
except ImportError as e:  # pragma: no cover
    skip(f"boto3 is not available to {sys.executable}: {e} (Debian package python3-boto3)")

MiB = 1024 * 1024


def crc32_b64(data: bytes) -> str:
    return base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()


def upload(s3, bucket, key, bodies, **create):
    """Create an upload and send each body as a part; returns (upload id, parts)."""
    up = s3.create_multipart_upload(Bucket=bucket, Key=key, **create)
    parts = []
    for number, body in enumerate(bodies, start=1):
        extra = {"ChecksumAlgorithm": create["ChecksumAlgorithm"]} if create else {}
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=up["UploadId"], PartNumber=number,
                           Body=body, **extra)
        part = {"PartNumber": number, "ETag": r["ETag"]}
        for name in ("ChecksumCRC32", "ChecksumCRC32C", "ChecksumSHA1", "ChecksumSHA256"):
            if name in r:
                part[name] = r[name]
        parts.append(part)
    return up, parts


def conditional_writes(s3, b):
    step("If-None-Match: * and If-Match on PutObject and CompleteMultipartUpload")
    with extra_headers(s3, "PutObject", {"If-None-Match": "*"}):
        s3.put_object(Bucket=b, Key="cond", Body=b"one")
        check_eq("PutObject If-None-Match over a key", (412, "PreconditionFailed"),
                 error_of(s3.put_object, Bucket=b, Key="cond", Body=b"two"))
    etag = s3.head_object(Bucket=b, Key="cond")["ETag"]
    with extra_headers(s3, "PutObject", {"If-Match": '"0000"'}):
        check_eq("PutObject If-Match another ETag", (412, "PreconditionFailed"),
                 error_of(s3.put_object, Bucket=b, Key="cond", Body=b"two"))
    up, parts = upload(s3, b, "cond", [os.urandom(5 * MiB), b"tail"])
    args = {"Bucket": b, "Key": "cond", "UploadId": up["UploadId"],
            "MultipartUpload": {"Parts": parts}}
    with extra_headers(s3, "CompleteMultipartUpload", {"If-None-Match": "*"}):
        check_eq("Complete If-None-Match over a key", (412, "PreconditionFailed"),
                 error_of(s3.complete_multipart_upload, **args))
    with extra_headers(s3, "CompleteMultipartUpload", {"If-Match": '"0000"'}):
        check_eq("Complete If-Match another ETag", (412, "PreconditionFailed"),
                 error_of(s3.complete_multipart_upload, **args))
    with extra_headers(s3, "CompleteMultipartUpload", {"If-Match": etag}):
        s3.complete_multipart_upload(**args)
    check_eq("replaced length", 5 * MiB + 4, s3.head_object(Bucket=b, Key="cond")["ContentLength"])


def multipart_rules(s3, b):
    step("multipart rules: EntityTooSmall, InvalidPartOrder, re-uploaded parts, copy ranges")
    up, parts = upload(s3, b, "small", [b"tiny", b"last"])
    check_eq("small first part", (400, "EntityTooSmall"),
             error_of(s3.complete_multipart_upload, Bucket=b, Key="small",
                      UploadId=up["UploadId"], MultipartUpload={"Parts": parts}))
    up, parts = upload(s3, b, "order", [os.urandom(5 * MiB), b"last"])
    check_eq("parts out of order", (400, "InvalidPartOrder"),
             error_of(s3.complete_multipart_upload, Bucket=b, Key="order",
                      UploadId=up["UploadId"], MultipartUpload={"Parts": parts[::-1]}))
    again = s3.upload_part(Bucket=b, Key="order", UploadId=up["UploadId"], PartNumber=2,
                           Body=b"replaced last")
    parts[1]["ETag"] = again["ETag"]
    parts[1].pop("ChecksumCRC32", None)
    s3.complete_multipart_upload(Bucket=b, Key="order", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": parts})
    body = s3.get_object(Bucket=b, Key="order")["Body"].read()
    check(body.endswith(b"replaced last"), "a re-uploaded part replaces the first")

    s3.put_object(Bucket=b, Key="source", Body=b"0123456789")
    up = s3.create_multipart_upload(Bucket=b, Key="copied")
    check_eq("copy range past the source", (416, "InvalidRange"),
             error_of(s3.upload_part_copy, Bucket=b, Key="copied", UploadId=up["UploadId"],
                      PartNumber=1, CopySource={"Bucket": b, "Key": "source"},
                      CopySourceRange="bytes=0-21"))
    check_eq("malformed copy range", (400, "InvalidArgument"),
             error_of(s3.upload_part_copy, Bucket=b, Key="copied", UploadId=up["UploadId"],
                      PartNumber=1, CopySource={"Bucket": b, "Key": "source"},
                      CopySourceRange="bytes=0-2,3-5"))


def multipart_checksums(s3, b):
    step("multipart checksums: algorithm echoed, part checksums, composite on Complete/Head/Get")
    first, second = os.urandom(5 * MiB), os.urandom(1234)
    up, parts = upload(s3, b, "crc", [first, second], ChecksumAlgorithm="CRC32")
    check_eq("CreateMultipartUpload ChecksumAlgorithm", "CRC32", up.get("ChecksumAlgorithm"))
    check_eq("part 1 checksum", crc32_b64(first), parts[0].get("ChecksumCRC32"))
    check_eq("part 2 checksum", crc32_b64(second), parts[1].get("ChecksumCRC32"))
    composite = crc32_b64(base64.b64decode(crc32_b64(first)) +
                          base64.b64decode(crc32_b64(second))) + "-2"
    done = s3.complete_multipart_upload(Bucket=b, Key="crc", UploadId=up["UploadId"],
                                        MultipartUpload={"Parts": parts})
    check_eq("Complete ChecksumCRC32", composite, done.get("ChecksumCRC32"))
    head = s3.head_object(Bucket=b, Key="crc", ChecksumMode="ENABLED")
    check_eq("HeadObject ChecksumCRC32", composite, head.get("ChecksumCRC32"))
    got = s3.get_object(Bucket=b, Key="crc", ChecksumMode="ENABLED")
    check_eq("GetObject ChecksumCRC32", composite, got.get("ChecksumCRC32"))
    check(got["Body"].read() == first + second, "the composite-checksum object reads back")
    # boto3 validates the checksums it is given: a part GET carries that part's, not the
    # whole object's, and each part keeps its own after Complete (as S3).
    for number, body in ((1, first), (2, second)):
        part = s3.get_object(Bucket=b, Key="crc", PartNumber=number, ChecksumMode="ENABLED")
        check(part["Body"].read() == body, f"part {number} of the checksummed object")
        check_eq(f"GetObject part {number} ChecksumCRC32", crc32_b64(body),
                 part.get("ChecksumCRC32"))
        head = s3.head_object(Bucket=b, Key="crc", PartNumber=number, ChecksumMode="ENABLED")
        check_eq(f"HeadObject part {number} ChecksumCRC32", crc32_b64(body),
                 head.get("ChecksumCRC32"))
    attrs = s3.get_object_attributes(Bucket=b, Key="crc", ObjectAttributes=["ObjectParts"])
    check_eq("GetObjectAttributes ObjectParts checksums",
             [(1, len(first), crc32_b64(first)), (2, len(second), crc32_b64(second))],
             [(p["PartNumber"], p["Size"], p.get("ChecksumCRC32"))
              for p in attrs["ObjectParts"].get("Parts", [])])

    step("a one-part upload keeps its part's checksum too")
    only = os.urandom(1000)
    up, parts = upload(s3, b, "one-part", [only], ChecksumAlgorithm="SHA256")
    s3.complete_multipart_upload(Bucket=b, Key="one-part", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": parts})
    attrs = s3.get_object_attributes(Bucket=b, Key="one-part", ObjectAttributes=["ObjectParts"])
    check_eq("the one part's ChecksumSHA256",
             base64.b64encode(hashlib.sha256(only).digest()).decode(),
             attrs["ObjectParts"]["Parts"][0].get("ChecksumSHA256"))

    step("a wrong checksum or Content-MD5 is BadDigest")
    check_eq("wrong ChecksumCRC32", (400, "BadDigest"),
             error_of(s3.put_object, Bucket=b, Key="bad", Body=b"body",
                      ChecksumCRC32=crc32_b64(b"other")))
    check_eq("wrong Content-MD5", (400, "BadDigest"),
             error_of(s3.put_object, Bucket=b, Key="bad", Body=b"body",
                      ContentMD5=base64.b64encode(b"0" * 16).decode()))


def part_numbers(s3, b):
    step("GetObject/HeadObject with PartNumber")
    bodies = [os.urandom(5 * MiB), os.urandom(5 * MiB + 1), b"end"]
    up, parts = upload(s3, b, "parts", bodies)
    s3.complete_multipart_upload(Bucket=b, Key="parts", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": parts})
    for number, body in enumerate(bodies, start=1):
        head = s3.head_object(Bucket=b, Key="parts", PartNumber=number)
        check_eq(f"part {number} PartsCount", 3, head.get("PartsCount"))
        check_eq(f"part {number} ContentLength", len(body), head["ContentLength"])
        got = s3.get_object(Bucket=b, Key="parts", PartNumber=number)
        check_eq(f"part {number} status", 206, got["ResponseMetadata"]["HTTPStatusCode"])
        check(got["Body"].read() == body, f"part {number} bytes")
    check_eq("part past the last", (416, "InvalidPartNumber"),
             error_of(s3.get_object, Bucket=b, Key="parts", PartNumber=4))
    s3.put_object(Bucket=b, Key="whole", Body=b"whole body")
    check(s3.get_object(Bucket=b, Key="whole", PartNumber=1)["Body"].read() == b"whole body",
          "an object uploaded whole is its own part 1")
    check_eq("part 2 of a whole object", (416, "InvalidPartNumber"),
             error_of(s3.get_object, Bucket=b, Key="whole", PartNumber=2))


def uploads_and_attributes(s3, b):
    step("ListMultipartUploads with a prefix")
    one = s3.create_multipart_upload(Bucket=b, Key="pending/one")["UploadId"]
    two = s3.create_multipart_upload(Bucket=b, Key="pending/two",
                                     ChecksumAlgorithm="SHA256")["UploadId"]
    s3.create_multipart_upload(Bucket=b, Key="elsewhere")
    listed = s3.list_multipart_uploads(Bucket=b, Prefix="pending/")
    check_eq("uploads under pending/", [("pending/one", one), ("pending/two", two)],
             [(u["Key"], u["UploadId"]) for u in listed.get("Uploads", [])])
    check_eq("ChecksumAlgorithm of an upload", "SHA256", listed["Uploads"][1].get("ChecksumAlgorithm"))
    s3.abort_multipart_upload(Bucket=b, Key="pending/one", UploadId=one)
    check_eq("after abort", ["pending/two"],
             [u["Key"] for u in s3.list_multipart_uploads(Bucket=b, Prefix="pending/")["Uploads"]])

    step("GetObjectAttributes")
    attrs = s3.get_object_attributes(
        Bucket=b, Key="parts", ObjectAttributes=["ETag", "ObjectSize", "StorageClass", "ObjectParts"])
    check_eq("ObjectSize", 10 * MiB + 4, attrs.get("ObjectSize"))
    check_eq("StorageClass", "STANDARD", attrs.get("StorageClass"))
    check(attrs.get("ETag", "").endswith("-3"), f"multipart ETag, got {attrs.get('ETag')!r}")
    check_eq("TotalPartsCount", 3, attrs.get("ObjectParts", {}).get("TotalPartsCount"))
    attrs = s3.get_object_attributes(Bucket=b, Key="crc", ObjectAttributes=["Checksum"])
    check(attrs.get("Checksum", {}).get("ChecksumCRC32", "").endswith("-2"),
          f"composite checksum in the attributes, got {attrs.get('Checksum')!r}")


def requests_and_listing(s3, b):
    step("presigned URLs: X-Amz-Expires bounds and expiry")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "whole"},
                                    ExpiresIn=604801)
    try:
        urllib.request.urlopen(url, timeout=10)
        raise TestFailure("a presigned URL valid for more than a week was accepted")
    except urllib.error.HTTPError as e:
        check_eq("X-Amz-Expires=604801", 400, e.code)
        check(b"AuthorizationQueryParametersError" in e.read(), "AuthorizationQueryParametersError")
    url = s3.generate_presigned_url("put_object", Params={"Bucket": b, "Key": "late"}, ExpiresIn=1)
    deadline = time.monotonic() + 30
    while True:  # until the URL has expired by the server's clock
        request = urllib.request.Request(url, data=b"late", method="PUT")
        try:
            urllib.request.urlopen(request, timeout=10)
        except urllib.error.HTTPError as e:
            check_eq("expired presigned PUT", 403, e.code)
            check(b"Request has expired" in e.read(), "the message says the request expired")
            break
        check(time.monotonic() < deadline, "a presigned URL never expired")
        time.sleep(0.2)

    step("EncodingType=url listings and the bucket location")
    keys = ["enc/a b+c%/x", "enc/a b+c%/y", "enc/plain"]
    for key in keys:
        s3.put_object(Bucket=b, Key=key, Body=b"v")
    page = s3.list_objects_v2(Bucket=b, Prefix="enc/a b", Delimiter="/", StartAfter="enc/a",
                              EncodingType="url")
    # Asked for explicitly, botocore leaves the answer encoded.
    check_eq("encoded common prefix", ["enc/a%20b%2Bc%25/"],
             [p["Prefix"] for p in page.get("CommonPrefixes", [])])
    check_eq("encoded Prefix", "enc/a%20b", page.get("Prefix"))
    check_eq("EncodingType", "url", page.get("EncodingType"))
    # Not asked for, botocore adds encoding-type=url itself and decodes what comes back.
    page = s3.list_objects(Bucket=b, Prefix="enc/")
    check_eq("v1 keys decoded by botocore", keys, [o["Key"] for o in page.get("Contents", [])])
    check_eq("bucket location", "auto", s3.get_bucket_location(Bucket=b).get("LocationConstraint"))


def main():
    step(f"boto3 {boto3.__version__}, botocore {botocore.__version__}")
    with TforkServer() as srv:
        s3 = make_client(srv)
        b = "conformance"
        s3.create_bucket(Bucket=b)
        for part in (conditional_writes, multipart_rules, multipart_checksums, part_numbers,
                     uploads_and_attributes, requests_and_listing):
            part(s3, b)


if __name__ == "__main__":
    run_test(main)
