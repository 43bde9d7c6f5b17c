#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End-to-end: edges of S3 that clients and test harnesses rely on (issue 24 §4), with boto3.

- DeleteObjects with a VersionId takes DeleteObject's road: `null` on a regular bucket deletes
  the key (a harness that empties a bucket from ListObjectVersions can then delete it), and a
  specific version answers per key what DeleteObject answers for it;
- an empty ContinuationToken in ListObjectsV2 lists from the start and is echoed, as if absent
  (Ceph's s3-tests, test_bucket_listv2_continuationtoken_empty);
- a snapshot name the documented rule refuses (tigris-wire §2.3: CR, LF, ';'; more than 255
  bytes) is refused with 400 and not stored; one at the limit is kept.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tfork_server import TforkServer, check_eq, run_test, skip, step  # noqa: E402
from tfork_server import boto3_client as make_client, client_error as error_of, signed_headers as tigris_headers  # noqa: E402

try:
    import boto3  # noqa: F401 (imported to skip the test without it)
except ImportError as e:  # pragma: no cover
    skip(f"boto3 is not available to {sys.executable}: {e} (Debian package python3-boto3)")


def keys_of(s3, bucket):
    return [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]


def delete_objects_with_versions(s3):
    step("DeleteObjects with VersionId null empties a regular bucket, as DeleteObject does")
    b = "edges-versions"
    s3.create_bucket(Bucket=b)
    for key in ("a", "b", "c"):
        s3.put_object(Bucket=b, Key=key, Body=key.encode())
    # What harnesses do: list the versions, delete each by id, delete the bucket.
    versions = s3.list_object_versions(Bucket=b).get("Versions", [])
    check_eq("version ids listed", ["null"] * 3, [v["VersionId"] for v in versions])
    answer = s3.delete_objects(Bucket=b, Delete={"Objects": [
        {"Key": v["Key"], "VersionId": v["VersionId"]} for v in versions]})
    check_eq("DeleteObjects errors", [], answer.get("Errors", []))
    check_eq("DeleteObjects deleted", [("a", "null"), ("b", "null"), ("c", "null")],
             sorted((d["Key"], d.get("VersionId")) for d in answer.get("Deleted", [])))
    check_eq("keys left", [], keys_of(s3, b))
    s3.delete_bucket(Bucket=b)

    step("a specific version: the same answer from DeleteObject and DeleteObjects")
    b = "edges-one-version"
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="k", Body=b"v")
    s3.put_object(Bucket=b, Key="gone", Body=b"v")
    for version in ("1751631910196672425", "not-a-version"):
        single = error_of(s3.delete_object, Bucket=b, Key="k", VersionId=version)
        answer = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "k",
                                                                   "VersionId": version}]})
        errors = answer.get("Errors", [])
        check_eq(f"DeleteObjects errors for version {version}", 1, len(errors))
        check_eq(f"DeleteObjects code for version {version}", single[1], errors[0]["Code"])
        check_eq(f"DeleteObjects VersionId echoed for {version}", version,
                 errors[0].get("VersionId"))
    check_eq("keys left after refused version deletes", ["gone", "k"], keys_of(s3, b))
    # An empty VersionId is no version, as on DeleteObject.
    answer = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "gone", "VersionId": ""}]})
    check_eq("DeleteObjects errors for an empty VersionId", [], answer.get("Errors", []))
    check_eq("keys left", ["k"], keys_of(s3, b))


def empty_continuation_token(s3):
    step("an empty ContinuationToken lists from the start, as if absent")
    b = "edges-token"
    s3.create_bucket(Bucket=b)
    names = ["bar", "baz", "foo", "quxx"]
    for key in names:
        s3.put_object(Bucket=b, Key=key, Body=b"x")
    page = s3.list_objects_v2(Bucket=b, ContinuationToken="")
    check_eq("keys listed with an empty token", names,
             [o["Key"] for o in page.get("Contents", [])])
    check_eq("IsTruncated with an empty token", False, page["IsTruncated"])
    check_eq("ContinuationToken echoed", "", page.get("ContinuationToken"))
    page = s3.list_objects_v2(Bucket=b, ContinuationToken="", StartAfter="baz")
    check_eq("keys after StartAfter with an empty token", ["foo", "quxx"],
             [o["Key"] for o in page.get("Contents", [])])
    check_eq("a token that is not ours", (400, "InvalidArgument"),
             error_of(s3.list_objects_v2, Bucket=b, ContinuationToken="!!"))


def snapshot_names(s3):
    step("snapshot names: past 255 bytes or with ';' refused, 255 bytes kept")
    b = "edges-snapshots"
    with tigris_headers(s3, "CreateBucket", {"X-Tigris-Enable-Snapshot": "true"}):
        s3.create_bucket(Bucket=b)

    def take(name):
        with tigris_headers(s3, "CreateBucket", {"X-Tigris-Snapshot": f"true; name={name}"}):
            return s3.create_bucket(Bucket=b)

    def names():
        with tigris_headers(s3, "ListBuckets", {"X-Tigris-Snapshot": b}):
            listed = s3.list_buckets()["Buckets"]
        return [entry["Name"].split("; name=", 1)[1] for entry in listed
                if "; name=" in entry["Name"]]

    longest = "n" * 255
    check_eq("status of a 255-byte name", 200,
             take(longest)["ResponseMetadata"]["HTTPStatusCode"])
    for what, name in (("a 256-byte name", "n" * 256),
                       ("a name with ';'", "one;two")):
        check_eq(f"snapshot with {what}", (400, "InvalidArgument"), error_of(take, name=name))
    check_eq("names stored", [longest], names())


def main():
    with TforkServer() as srv:
        s3 = make_client(srv)
        delete_objects_with_versions(s3)
        empty_continuation_token(s3)
        snapshot_names(s3)


if __name__ == "__main__":
    run_test(main)
