#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Listing a fork whose keys were all deleted (issue 24 §2.2): a page steps over at most
max-keys + 1000 rows, so the server answers truncated pages with no keys and a continuation
token; boto3's paginators (which the AWS CLI shares) follow them to the end. ListObjectsV2
and ListObjects v1, with and without a delimiter, list nothing but the keys left."""

import os
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tfork_server import (TforkServer, boto3_client, check, check_eq, run_test,  # noqa: E402
                          signed_headers, step)

KEYS = 3000  # tombstones for three pages of the row bound, with the source's rows they shadow


def main():
    with TforkServer() as srv:
        s3 = boto3_client(srv)
        with signed_headers(s3, "CreateBucket", {"X-Tigris-Enable-Snapshot": "true"}):
            s3.create_bucket(Bucket="source")
        keys = [f"dir/{i:05d}" for i in range(KEYS)]
        step(f"{KEYS} keys in the source, forked, then deleted in the fork")
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda key: s3.put_object(Bucket="source", Key=key, Body=b"x"), keys))
        s3.put_object(Bucket="source", Key="kept", Body=b"kept")
        with signed_headers(s3, "CreateBucket", {"X-Tigris-Fork-Source-Bucket": "source"}):
            s3.create_bucket(Bucket="emptied")
        for start in range(0, KEYS, 1000):
            answer = s3.delete_objects(Bucket="emptied", Delete={
                "Objects": [{"Key": key} for key in keys[start:start + 1000]], "Quiet": True})
            check_eq("DeleteObjects errors", [], answer.get("Errors", []))

        step("the first page has no key, is truncated, and says where to go on")
        first = s3.list_objects_v2(Bucket="emptied", MaxKeys=1000)
        check_eq("keys on the first page", 0, first["KeyCount"])
        check(first["IsTruncated"], "the first page of deleted keys is not truncated")
        check(first.get("NextContinuationToken"), "a truncated page without a token")

        for operation, delimiter in (("list_objects_v2", ""), ("list_objects_v2", "/"),
                                     ("list_objects", ""), ("list_objects", "/")):
            step(f"{operation} paginator, delimiter {delimiter!r}")
            pages = list(s3.get_paginator(operation).paginate(Bucket="emptied",
                                                              Delimiter=delimiter))
            listed = [o["Key"] for page in pages for o in page.get("Contents", [])]
            prefixes = [p["Prefix"] for page in pages for p in page.get("CommonPrefixes", [])]
            check_eq(f"{operation} keys", ["kept"], listed)
            check_eq(f"{operation} common prefixes", [], prefixes)
            check(len(pages) > 1, f"{operation}: one page stepped over every deleted key")

        step("with only deleted keys under the prefix, the listing is empty and ends")
        pages = list(s3.get_paginator("list_objects_v2").paginate(Bucket="emptied", Prefix="dir/"))
        check_eq("keys under dir/", 0, sum(page["KeyCount"] for page in pages))
        check(not pages[-1]["IsTruncated"], "the last page is truncated")


if __name__ == "__main__":
    run_test(main)
