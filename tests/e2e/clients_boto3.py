#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End-to-end: Debian boto3 (1.26 / botocore 1.29) against a real `tfork serve`.

Plain S3: round trips with awkward keys, the ListObjectsV2 and ListObjects paginators
(botocore adds encoding-type=url; keys contain '%' and '+'), multipart (managed and by
hand), DeleteObjects.

Tigris extensions, sent the way the Tigris docs show for boto3 (handlers on
`before-sign.s3.<Operation>` that add the X-Tigris-* headers, so they are signed):
snapshot-enabled bucket, named snapshot, list snapshots, reads at a snapshot version (and
at an arbitrary nanosecond timestamp), forks from a snapshot and from "now", HeadBucket
fork metadata, fork isolation, snapshot deletion, parent deletion refused while forks
exist, force delete.
"""

import contextlib
import hashlib
import io
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tfork_server import TestFailure, TforkServer, check, check_eq, run_test, skip, step  # noqa: E402
from tfork_server import boto3_client as make_client, signed_headers as tigris_headers  # noqa: E402

try:
    import boto3
    import botocore
    from boto3.s3.transfer import TransferConfig
    from botocore.config import Config
    from botocore.exceptions import ClientError
except ImportError as e:  # pragma: no cover
    skip(f"boto3 is not available to {sys.executable}: {e} (Debian package python3-boto3)")

MiB = 1024 * 1024


def resp_headers(resp):
    return resp["ResponseMetadata"]["HTTPHeaders"]


def error_of(fn, *args, **kwargs):
    """Call fn, which must fail with a ClientError; return (status, code)."""
    try:
        fn(*args, **kwargs)
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Code")
    raise TestFailure(f"{fn.__name__}{args}{kwargs} unexpectedly succeeded")


def body_of(s3, bucket, key, **kw):
    return s3.get_object(Bucket=bucket, Key=key, **kw)["Body"].read()


def all_keys(s3, bucket, prefix="", page_size=1000, snapshot=None):
    ctx = (tigris_headers(s3, "ListObjectsV2", {"X-Tigris-Snapshot-Version": snapshot})
           if snapshot else contextlib.nullcontext())
    keys = []
    with ctx:
        for page in s3.get_paginator("list_objects_v2").paginate(
                Bucket=bucket, Prefix=prefix, PaginationConfig={"PageSize": page_size}):
            keys += [o["Key"] for o in page.get("Contents", [])]
    return keys


def utf8_sorted(keys):
    return sorted(keys, key=lambda k: k.encode("utf-8"))


# ----------------------------------------------------------------------------------------
def plain_s3(s3):
    b = "boto3-plain"
    step("create_bucket returns Location")
    r = s3.create_bucket(Bucket=b)
    check_eq("Location", f"/{b}", r.get("Location"))
    check_eq("head_bucket", 200, s3.head_bucket(Bucket=b)["ResponseMetadata"]["HTTPStatusCode"])
    status, code = error_of(s3.head_bucket, Bucket="boto3-missing")
    check_eq("head missing bucket", 404, status)

    step("round trips with awkward keys")
    awkward = [
        "100% sure.txt", "a+b+c.txt", "space key.txt", "%2F-not-a-slash.txt", "plus+%2B+mixed",
        "unicode/ünï©ødé 日本 ✓.bin", "deep/a/b/c/d/e/f.txt", "q?uestion=mark&amp.txt",
        "tab\tand-newline-free.txt", "hash#frag.txt", "~tilde", "colon:semicolon;.txt",
    ]
    payloads = {}
    for i, key in enumerate(awkward):
        data = (f"{key}\n".encode() + os.urandom(37 * (i + 1)))
        payloads[key] = data
        put = s3.put_object(Bucket=b, Key=key, Body=data, Metadata={"n": str(i)},
                            ContentType="application/x-e2e")
        check_eq(f"put ETag {key!r}", f'"{hashlib.md5(data).hexdigest()}"', put["ETag"])
        got = s3.get_object(Bucket=b, Key=key)
        check_eq(f"get body {key!r}", data, got["Body"].read())
        check_eq(f"get ETag {key!r}", put["ETag"], got["ETag"])
        check_eq(f"get metadata {key!r}", {"n": str(i)}, got["Metadata"])
        head = s3.head_object(Bucket=b, Key=key)
        check_eq(f"head length {key!r}", len(data), head["ContentLength"])
        check_eq(f"head type {key!r}", "application/x-e2e", head["ContentType"])
        check("last-modified" in resp_headers(head), "HeadObject without Last-Modified")

    step("ListObjectsV2 paginator (encoding-type=url) over 30 keys with '%' and '+', page size 7")
    paged = [f"pg/{i:02d} {'%' if i % 3 == 0 else '+'}{'%25' if i % 5 == 0 else ''}+end"
             for i in range(30)]
    for k in paged:
        s3.put_object(Bucket=b, Key=k, Body=k.encode())
    pages = list(s3.get_paginator("list_objects_v2").paginate(
        Bucket=b, Prefix="pg/", PaginationConfig={"PageSize": 7}))
    check_eq("number of pages", 5, len(pages))
    check_eq("page sizes", [7, 7, 7, 7, 2], [p["KeyCount"] for p in pages])
    got = [o["Key"] for p in pages for o in p.get("Contents", [])]
    check_eq("paged keys", utf8_sorted(paged), got)
    check_eq("every key listed once", len(set(got)), len(got))
    check_eq("all awkward keys listed (page size 5)", utf8_sorted(awkward),
             [k for k in all_keys(s3, b, page_size=5) if not k.startswith("pg/")])

    step("ListObjects (v1) paginator, page size 7")
    got_v1 = []
    for page in s3.get_paginator("list_objects").paginate(
            Bucket=b, Prefix="pg/", PaginationConfig={"PageSize": 7}):
        got_v1 += [o["Key"] for o in page.get("Contents", [])]
    check_eq("v1 paged keys", utf8_sorted(paged), got_v1)

    step("delimiter with an awkward prefix")
    for k in ["dl/a+b/1", "dl/a+b/2", "dl/a b/3", "dl/100%/4", "dl/top"]:
        s3.put_object(Bucket=b, Key=k, Body=b"x")
    r = s3.list_objects_v2(Bucket=b, Prefix="dl/", Delimiter="/")
    check_eq("CommonPrefixes", utf8_sorted(["dl/a+b/", "dl/a b/", "dl/100%/"]),
             [p["Prefix"] for p in r.get("CommonPrefixes", [])])
    check_eq("Contents", ["dl/top"], [o["Key"] for o in r.get("Contents", [])])
    check_eq("Prefix round-trips", "dl/", r["Prefix"])
    r = s3.list_objects_v2(Bucket=b, Prefix="dl/a+b/")
    check_eq("prefix containing '+'", ["dl/a+b/1", "dl/a+b/2"], [o["Key"] for o in r["Contents"]])
    r = s3.list_objects_v2(Bucket=b, Prefix="dl/100%/")
    check_eq("prefix containing '%'", ["dl/100%/4"], [o["Key"] for o in r["Contents"]])

    step("managed multipart upload (upload_fileobj, 5 MiB parts) and download")
    big = os.urandom(13 * MiB + 7)
    cfg = TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB, max_concurrency=3)
    s3.upload_fileobj(io.BytesIO(big), b, "mp/big blob+1.bin", Config=cfg)
    head = s3.head_object(Bucket=b, Key="mp/big blob+1.bin")
    parts = [big[i:i + 5 * MiB] for i in range(0, len(big), 5 * MiB)]
    expected_etag = '"%s-%d"' % (hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest(), len(parts))
    check_eq("multipart ETag", expected_etag, head["ETag"])
    check_eq("multipart length", len(big), head["ContentLength"])
    out = io.BytesIO()
    s3.download_fileobj(b, "mp/big blob+1.bin", out, Config=cfg)
    check_eq("multipart round trip sha256", hashlib.sha256(big).hexdigest(),
             hashlib.sha256(out.getvalue()).hexdigest())
    r = s3.get_object(Bucket=b, Key="mp/big blob+1.bin", Range="bytes=5242870-5242889")
    check_eq("range across a part boundary", big[5242870:5242890], r["Body"].read())
    check_eq("range status", 206, r["ResponseMetadata"]["HTTPStatusCode"])

    step("multipart by hand: parts out of order, list_parts, complete")
    key = "mp/by hand%.bin"
    up = s3.create_multipart_upload(Bucket=b, Key=key, ContentType="application/x-parts")["UploadId"]
    p1, p2, p3 = os.urandom(5 * MiB), os.urandom(5 * MiB), b"the end"
    e3 = s3.upload_part(Bucket=b, Key=key, UploadId=up, PartNumber=3, Body=p3)["ETag"]
    e1 = s3.upload_part(Bucket=b, Key=key, UploadId=up, PartNumber=1, Body=p1)["ETag"]
    e2 = s3.upload_part(Bucket=b, Key=key, UploadId=up, PartNumber=2, Body=p2)["ETag"]
    listed = s3.list_parts(Bucket=b, Key=key, UploadId=up)["Parts"]
    check_eq("list_parts numbers", [1, 2, 3], [p["PartNumber"] for p in listed])
    check_eq("list_parts sizes", [5 * MiB, 5 * MiB, 7], [p["Size"] for p in listed])
    status, code = error_of(s3.complete_multipart_upload, Bucket=b, Key=key, UploadId=up,
                            MultipartUpload={"Parts": [{"PartNumber": 2, "ETag": e2},
                                                       {"PartNumber": 1, "ETag": e1}]})
    check_eq("parts out of order", (400, "InvalidPartOrder"), (status, code))
    r = s3.complete_multipart_upload(Bucket=b, Key=key, UploadId=up, MultipartUpload={"Parts": [
        {"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}, {"PartNumber": 3, "ETag": e3}]})
    check(r["ETag"].endswith('-3"'), f"completed ETag {r['ETag']}")
    got = s3.get_object(Bucket=b, Key=key)
    check_eq("completed body", p1 + p2 + p3, got["Body"].read())
    check_eq("content type from create", "application/x-parts", got["ContentType"])
    status, code = error_of(s3.list_parts, Bucket=b, Key=key, UploadId=up)
    check_eq("upload gone after complete", (404, "NoSuchUpload"), (status, code))

    step("copy_object with awkward source and destination keys")
    s3.copy_object(Bucket=b, Key="copy/dest 100%+.txt", CopySource={"Bucket": b, "Key": "a+b+c.txt"})
    check_eq("copied body", payloads["a+b+c.txt"], body_of(s3, b, "copy/dest 100%+.txt"))

    step("delete_objects: present, missing and awkward keys")
    victims = ["100% sure.txt", "a+b+c.txt", "space key.txt", "missing key+%.txt"]
    r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": k} for k in victims]})
    check_eq("Deleted", sorted(victims), sorted(d["Key"] for d in r.get("Deleted", [])))
    check_eq("Errors", [], r.get("Errors", []))
    left = all_keys(s3, b)
    for k in victims:
        check(k not in left, f"{k!r} still listed after delete_objects")
    check("plus+%2B+mixed" in left, "a survivor of delete_objects disappeared")

    step("delete_object and NoSuchKey afterwards")
    s3.delete_object(Bucket=b, Key="~tilde")
    check_eq("get deleted", (404, "NoSuchKey"), error_of(s3.get_object, Bucket=b, Key="~tilde"))

    step("non-empty bucket delete is BucketNotEmpty; force delete works")
    check_eq("delete non-empty", (409, "BucketNotEmpty"), error_of(s3.delete_bucket, Bucket=b))
    with tigris_headers(s3, "DeleteBucket", {"Tigris-Force-Delete": "true"}):
        s3.delete_bucket(Bucket=b)
    check_eq("force-deleted bucket", 404, error_of(s3.head_bucket, Bucket=b)[0])


# ----------------------------------------------------------------------------------------
def snapshots_and_forks(s3):
    src = "boto3-src"
    step("CreateBucket with X-Tigris-Enable-Snapshot: true")
    with tigris_headers(s3, "CreateBucket", {"X-Tigris-Enable-Snapshot": "true"}):
        r = s3.create_bucket(Bucket=src)
    check_eq("snapshot bucket Location", f"/{src}", r.get("Location"))
    h = resp_headers(s3.head_bucket(Bucket=src))
    check_eq("X-Tigris-Enable-Snapshot on HeadBucket", "true", h.get("x-tigris-enable-snapshot"))
    check("x-tigris-fork-source-bucket" not in h, "a plain bucket reports a fork source")
    check("x-tigris-is-fork-parent" not in h, "a bucket without forks reports X-Tigris-Is-Fork-Parent")

    step("a new snapshot-enabled bucket has no snapshots")
    with tigris_headers(s3, "ListBuckets", {"X-Tigris-Snapshot": src}):
        r = s3.list_buckets()
    check_eq("snapshots of a new bucket", [], r.get("Buckets", []))

    for k, v in [("keep.txt", b"keep v1"), ("change.txt", b"change v1"), ("gone.txt", b"gone v1"),
                 ("dir/nested.txt", b"nested v1")]:
        s3.put_object(Bucket=src, Key=k, Body=v)

    step("named snapshot (X-Tigris-Snapshot: true; name=...) returns X-Tigris-Snapshot-Version")
    with tigris_headers(s3, "CreateBucket", {"X-Tigris-Snapshot": "true; name=before the change"}):
        r = s3.create_bucket(Bucket=src)
    v1 = resp_headers(r).get("x-tigris-snapshot-version", "")
    check(re.fullmatch(r"[0-9]{16,20}", v1) is not None, f"snapshot version {v1!r} is not ns-epoch")
    time.sleep(0.01)
    t_between = str(time.time_ns())
    time.sleep(0.01)

    s3.put_object(Bucket=src, Key="change.txt", Body=b"change v2")
    s3.delete_object(Bucket=src, Key="gone.txt")
    s3.put_object(Bucket=src, Key="new.txt", Body=b"new v2")

    step("unnamed snapshot after the changes")
    with tigris_headers(s3, "CreateBucket", {"X-Tigris-Snapshot": "true"}):
        v2 = resp_headers(s3.create_bucket(Bucket=src)).get("x-tigris-snapshot-version", "")
    check(v2.isdigit() and int(v2) > int(v1), f"second snapshot {v2!r} not after {v1!r}")

    step("ListBuckets with X-Tigris-Snapshot lists both, newest first")
    with tigris_headers(s3, "ListBuckets", {"X-Tigris-Snapshot": src}):
        r = s3.list_buckets()
    names = [x["Name"] for x in r["Buckets"]]
    check_eq("snapshot list", [v2, f"{v1}; name=before the change"], names)
    check(all("CreationDate" in x for x in r["Buckets"]), "snapshot without CreationDate")

    step("reads at the snapshot version see the old state")
    with tigris_headers(s3, "GetObject", {"X-Tigris-Snapshot-Version": v1}):
        check_eq("changed object at v1", b"change v1", body_of(s3, src, "change.txt"))
        check_eq("deleted object at v1", b"gone v1", body_of(s3, src, "gone.txt"))
        check_eq("new object at v1", (404, "NoSuchKey"), error_of(s3.get_object, Bucket=src, Key="new.txt"))
    with tigris_headers(s3, "HeadObject", {"X-Tigris-Snapshot-Version": v1}):
        check_eq("head at v1", len(b"change v1"), s3.head_object(Bucket=src, Key="change.txt")["ContentLength"])
        check_eq("head new at v1", 404, error_of(s3.head_object, Bucket=src, Key="new.txt")[0])
    check_eq("list at v1", ["change.txt", "dir/nested.txt", "gone.txt", "keep.txt"],
             all_keys(s3, src, snapshot=v1))
    check_eq("list at v1, page size 1", ["change.txt", "dir/nested.txt", "gone.txt", "keep.txt"],
             all_keys(s3, src, page_size=1, snapshot=v1))
    check_eq("list now", ["change.txt", "dir/nested.txt", "keep.txt", "new.txt"], all_keys(s3, src))
    check_eq("current read", b"change v2", body_of(s3, src, "change.txt"))

    step("reads at an arbitrary nanosecond timestamp (between v1 and the changes)")
    check_eq("list at a timestamp", ["change.txt", "dir/nested.txt", "gone.txt", "keep.txt"],
             all_keys(s3, src, snapshot=t_between))
    with tigris_headers(s3, "GetObject", {"X-Tigris-Snapshot-Version": t_between}):
        check_eq("read at a timestamp", b"change v1", body_of(s3, src, "change.txt"))

    step("CopyObject from a snapshot version")
    with tigris_headers(s3, "CopyObject", {"X-Tigris-Snapshot-Version": v1}):
        s3.copy_object(Bucket=src, Key="restored-gone.txt", CopySource={"Bucket": src, "Key": "gone.txt"})
    check_eq("restored from snapshot", b"gone v1", body_of(s3, src, "restored-gone.txt"))
    s3.delete_object(Bucket=src, Key="restored-gone.txt")

    step("fork from snapshot v1 and fork from the current state")
    fa, fb = "boto3-fork-a", "boto3-fork-b"
    with tigris_headers(s3, "CreateBucket", {"X-Tigris-Fork-Source-Bucket": src,
                                             "X-Tigris-Fork-Source-Bucket-Snapshot": v1}):
        r = s3.create_bucket(Bucket=fa)
    check_eq("fork Location", f"/{fa}", r.get("Location"))
    with tigris_headers(s3, "CreateBucket", {"X-Tigris-Fork-Source-Bucket": src}):
        s3.create_bucket(Bucket=fb)
    ha = resp_headers(s3.head_bucket(Bucket=fa))
    hb = resp_headers(s3.head_bucket(Bucket=fb))
    hs = resp_headers(s3.head_bucket(Bucket=src))
    check_eq("fork a source", src, ha.get("x-tigris-fork-source-bucket"))
    check_eq("fork a snapshot", v1, ha.get("x-tigris-fork-source-bucket-snapshot"))
    check_eq("fork a snapshot-enabled", "true", ha.get("x-tigris-enable-snapshot"))
    check_eq("fork b source", src, hb.get("x-tigris-fork-source-bucket"))
    vb = hb.get("x-tigris-fork-source-bucket-snapshot", "")
    check(vb.isdigit() and int(vb) >= int(v2), f"fork b implicit snapshot {vb!r} should be >= {v2}")
    check_eq("source is a fork parent", "true", hs.get("x-tigris-is-fork-parent"))
    check("x-tigris-fork-source-bucket" not in hs, "the source reports a fork source")

    step("fork contents: a = state at v1, b = state now")
    check_eq("fork a keys", ["change.txt", "dir/nested.txt", "gone.txt", "keep.txt"], all_keys(s3, fa))
    check_eq("fork a change.txt", b"change v1", body_of(s3, fa, "change.txt"))
    check_eq("fork b keys", ["change.txt", "dir/nested.txt", "keep.txt", "new.txt"], all_keys(s3, fb))
    check_eq("fork b change.txt", b"change v2", body_of(s3, fb, "change.txt"))

    step("fork isolation: writes in a fork never show in the source or the sibling")
    s3.put_object(Bucket=fa, Key="keep.txt", Body=b"edited in a")
    s3.put_object(Bucket=fa, Key="only-in-a.txt", Body=b"a")
    s3.delete_object(Bucket=fa, Key="dir/nested.txt")
    s3.delete_objects(Bucket=fb, Delete={"Objects": [{"Key": "keep.txt"}, {"Key": "new.txt"}]})
    s3.put_object(Bucket=fb, Key="only-in-b.txt", Body=b"b")
    s3.put_object(Bucket=src, Key="only-in-src.txt", Body=b"s")
    check_eq("source after fork writes", ["change.txt", "dir/nested.txt", "keep.txt", "new.txt", "only-in-src.txt"],
             all_keys(s3, src))
    check_eq("source keep.txt", b"keep v1", body_of(s3, src, "keep.txt"))
    check_eq("fork a after writes", ["change.txt", "gone.txt", "keep.txt", "only-in-a.txt"], all_keys(s3, fa))
    check_eq("fork a keep.txt", b"edited in a", body_of(s3, fa, "keep.txt"))
    check_eq("fork b after writes", ["change.txt", "dir/nested.txt", "only-in-b.txt"], all_keys(s3, fb))
    check_eq("fork b nested", b"nested v1", body_of(s3, fb, "dir/nested.txt"))
    check_eq("source snapshot v1 unchanged", ["change.txt", "dir/nested.txt", "gone.txt", "keep.txt"],
             all_keys(s3, src, snapshot=v1))

    step("snapshot of a fork, and a fork of a fork")
    with tigris_headers(s3, "CreateBucket", {"X-Tigris-Snapshot": "true; name=fork a state"}):
        va = resp_headers(s3.create_bucket(Bucket=fa)).get("x-tigris-snapshot-version", "")
    check(va.isdigit(), f"fork snapshot version {va!r}")
    faa = "boto3-fork-a-child"
    with tigris_headers(s3, "CreateBucket", {"X-Tigris-Fork-Source-Bucket": fa,
                                             "X-Tigris-Fork-Source-Bucket-Snapshot": va}):
        s3.create_bucket(Bucket=faa)
    check_eq("grandchild keys", ["change.txt", "gone.txt", "keep.txt", "only-in-a.txt"], all_keys(s3, faa))
    check_eq("grandchild source", fa, resp_headers(s3.head_bucket(Bucket=faa)).get("x-tigris-fork-source-bucket"))
    s3.put_object(Bucket=faa, Key="only-in-grandchild.txt", Body=b"g")
    check("only-in-grandchild.txt" not in all_keys(s3, fa), "grandchild write leaked into its parent fork")

    step("DeleteBucket with X-Tigris-Snapshot-Version deletes only that snapshot")
    with tigris_headers(s3, "DeleteBucket", {"X-Tigris-Snapshot-Version": v2}):
        s3.delete_bucket(Bucket=src)
    with tigris_headers(s3, "ListBuckets", {"X-Tigris-Snapshot": src}):
        names = [x["Name"] for x in s3.list_buckets()["Buckets"]]
    check(v2 not in names, f"deleted snapshot {v2} still listed: {names}")
    check(f"{v1}; name=before the change" in names, f"snapshot v1 vanished: {names}")
    check_eq("source still there", 200, s3.head_bucket(Bucket=src)["ResponseMetadata"]["HTTPStatusCode"])
    with tigris_headers(s3, "DeleteBucket", {"X-Tigris-Snapshot-Version": "1000000000000000000"}):
        check_eq("unknown snapshot delete", 404, error_of(s3.delete_bucket, Bucket=src)[0])

    step("errors: snapshot of a regular bucket, fork of a regular bucket, fork of a missing bucket")
    s3.create_bucket(Bucket="boto3-regular")
    with tigris_headers(s3, "CreateBucket", {"X-Tigris-Snapshot": "true"}):
        status, _ = error_of(s3.create_bucket, Bucket="boto3-regular")
    check(400 <= status < 500, f"snapshot of a regular bucket: status {status}")
    with tigris_headers(s3, "CreateBucket", {"X-Tigris-Fork-Source-Bucket": "boto3-regular"}):
        status, _ = error_of(s3.create_bucket, Bucket="boto3-bad-fork")
    check(400 <= status < 500, f"fork of a regular bucket: status {status}")
    with tigris_headers(s3, "CreateBucket", {"X-Tigris-Fork-Source-Bucket": "boto3-nowhere"}):
        check_eq("fork of a missing bucket", (404, "NoSuchBucket"), error_of(s3.create_bucket, Bucket="boto3-bad-fork"))
    check_eq("failed forks leave no bucket", 404, error_of(s3.head_bucket, Bucket="boto3-bad-fork")[0])
    with tigris_headers(s3, "CreateBucket", {"X-Tigris-Fork-Source-Bucket": src}):
        status, code = error_of(s3.create_bucket, Bucket=fa)
    check(status == 409, f"fork onto an existing name: {status} {code}")

    step("a parent with forks cannot be deleted, even with force")
    status, _ = error_of(s3.delete_bucket, Bucket=src)
    check_eq("delete parent", 409, status)
    with tigris_headers(s3, "DeleteBucket", {"Tigris-Force-Delete": "true"}):
        check_eq("force delete parent", 409, error_of(s3.delete_bucket, Bucket=src)[0])
    check_eq("parent survives", "keep v1", body_of(s3, src, "keep.txt").decode())

    step("force-delete forks children first (both header spellings), then the source")
    with tigris_headers(s3, "DeleteBucket", {"X-Tigris-Force-Delete": "true"}):
        s3.delete_bucket(Bucket=faa)
        s3.delete_bucket(Bucket=fa)
    with tigris_headers(s3, "DeleteBucket", {"Tigris-Force-Delete": "true"}):
        s3.delete_bucket(Bucket=fb)
    for f in (faa, fa, fb):
        check_eq(f"{f} gone", 404, error_of(s3.head_bucket, Bucket=f)[0])
    check("x-tigris-is-fork-parent" not in resp_headers(s3.head_bucket(Bucket=src)) or
          resp_headers(s3.head_bucket(Bucket=src))["x-tigris-is-fork-parent"] != "true",
          "source still reports being a fork parent after its forks are gone")
    check_eq("source intact after fork deletion", ["change.txt", "dir/nested.txt", "keep.txt", "new.txt",
                                                   "only-in-src.txt"], all_keys(s3, src))
    with tigris_headers(s3, "DeleteBucket", {"Tigris-Force-Delete": "true"}):
        s3.delete_bucket(Bucket=src)
        s3.delete_bucket(Bucket="boto3-regular")
    check_eq("source gone", 404, error_of(s3.head_bucket, Bucket=src)[0])


def main():
    step(f"boto3 {boto3.__version__}, botocore {botocore.__version__}")
    with TforkServer() as srv:
        s3 = make_client(srv)
        # Both parts always run (on separate buckets), so one failure does not hide the other.
        failures = []
        for part in (plain_s3, snapshots_and_forks):
            try:
                part(s3)
            except (TestFailure, ClientError) as e:
                print(f"FAIL {part.__name__}: {e}", file=sys.stderr)
                failures.append(f"{part.__name__}: {e}")
        if failures:
            raise TestFailure("; ".join(failures))
        step("the server still answers")
        s3.list_buckets()


if __name__ == "__main__":
    run_test(main)
