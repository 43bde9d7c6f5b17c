#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End-to-end: presigned URLs whose key and parameters hold '+' and a space (issue 9 §3).

URLs made by boto3 and by the AWS CLI (`aws s3 presign`, SigV4), fetched with curl:
* as made (every '+' is %2B, every space %20), they work and mean what they say;
* with the %2B written as '+' (SigV4 reads '+' as a plus) they still mean a plus, and with the
  %20 written as '+' (a client that form-encoded the URL after signing) they mean a space:
  the reading the signature verifies with is the one the request is carried out with;
* with both written as '+', no reading matches the signature: 403.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
from urllib.parse import unquote

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tfork_server import TforkServer, check, check_eq, run_test, skip, step  # noqa: E402

try:
    import boto3
    from botocore.config import Config
except ImportError as e:  # pragma: no cover
    skip(f"boto3 is not available to {sys.executable}: {e}")

if not shutil.which("curl"):
    skip("curl is not installed")

BUCKET = "plus-bucket"
KEY = "dir/a+b c.txt"
BODY = b"plus and space\n"
DISPOSITION = 'attachment; filename="a+b c.txt"'


def curl(url, *extra):
    """(status, headers as a lowercased dict, body) of `curl URL`."""
    done = subprocess.run(["curl", "-sS", "--max-time", "30", "-D", "-", "-o", "-", *extra, url],
                          capture_output=True, timeout=60)
    check(done.returncode == 0, f"curl failed: {done.stderr!r}")
    head, _, body = done.stdout.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers, body


def in_query(url, escape):
    """`url` with each `escape` of its query written as '+'."""
    path, _, query = url.partition("?")
    return path + "?" + query.replace(escape, "+")


def test_boto3(srv, s3):
    url = s3.generate_presigned_url(
        "get_object", ExpiresIn=300,
        Params={"Bucket": BUCKET, "Key": KEY, "ResponseContentDisposition": DISPOSITION})
    check("%2B" in url and "%20" in url, f"boto3 made an unexpected URL {url}")

    step("boto3's presigned GET, as made and with '+' for %2B or for %20")
    for variant in (url, in_query(url, "%2B"), in_query(url, "%20")):
        status, headers, body = curl(variant)
        check_eq(f"status of {variant}", 200, status)
        check_eq("body", BODY, body)
        check_eq(f"Content-Disposition of {variant}", DISPOSITION,
                 headers.get("content-disposition"))

    step("with both written as '+' the signature matches neither reading")
    status, _, body = curl(in_query(in_query(url, "%2B"), "%20"))
    check_eq("status with both as '+'", 403, status)
    check(b"<Code>SignatureDoesNotMatch</Code>" in body, f"body: {body[:300]!r}")

    step("a presigned listing by a prefix with '+' and a space, '+' for %20")
    url = s3.generate_presigned_url("list_objects_v2", ExpiresIn=300,
                                    Params={"Bucket": BUCKET, "Prefix": "dir/a+b c"})
    for variant in (url, in_query(url, "%20")):
        status, _, body = curl(variant)
        check_eq(f"status of {variant}", 200, status)
        check("<EncodingType>url</EncodingType>" in body.decode(), f"body: {body[:300]!r}")
        keys = [unquote(k) for k in re.findall(r"<Key>([^<]*)</Key>", body.decode())]
        check_eq("keys listed (EncodingType=url)", [KEY], keys)

    step("a presigned PUT of a key with '+' and a space stores that key")
    url = s3.generate_presigned_url("put_object", ExpiresIn=300,
                                    Params={"Bucket": BUCKET, "Key": "up/a+b c"})
    status, _, _ = curl(url, "-X", "PUT", "--data-binary", "uploaded")
    check_eq("status of the presigned PUT", 200, status)
    check_eq("the stored key", b"uploaded",
             s3.get_object(Bucket=BUCKET, Key="up/a+b c")["Body"].read())


def test_aws_cli(srv):
    if not shutil.which("aws"):
        step("SKIPPED the AWS CLI part: aws is not installed")
        return
    step("aws s3 presign (SigV4) of a key with '+' and a space, fetched with curl")
    work = tempfile.mkdtemp(prefix="tfork-e2e-presign.")
    try:
        config = os.path.join(work, "config")
        with open(config, "w") as f:  # the CLI v1 presigns with SigV2 unless told
            f.write("[default]\nregion = auto\ns3 =\n    signature_version = s3v4\n")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("AWS_", "TIGRIS_"))}
        env.update(AWS_CONFIG_FILE=config, AWS_SHARED_CREDENTIALS_FILE=os.path.join(work, "none"),
                   AWS_ACCESS_KEY_ID=srv.access_key, AWS_SECRET_ACCESS_KEY=srv.secret_key,
                   AWS_DEFAULT_REGION="auto")
        done = subprocess.run(["aws", "--endpoint-url", srv.endpoint, "s3", "presign",
                               f"s3://{BUCKET}/{KEY}", "--expires-in", "300"],
                              capture_output=True, text=True, env=env, timeout=120)
        check(done.returncode == 0, f"aws s3 presign failed: {done.stderr}")
        url = done.stdout.strip()
        check("X-Amz-Signature=" in url, f"not a SigV4 URL: {url}")
        check("a%2Bb%20c.txt" in url, f"the key is not encoded as expected: {url}")
        status, _, body = curl(url)
        check_eq("status of the CLI's URL", 200, status)
        check_eq("body", BODY, body)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    with TforkServer() as srv:
        s3 = boto3.client(
            "s3", endpoint_url=srv.endpoint, region_name="auto",
            aws_access_key_id=srv.access_key, aws_secret_access_key=srv.secret_key,
            config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                          retries={"max_attempts": 1}))
        s3.create_bucket(Bucket=BUCKET)
        s3.put_object(Bucket=BUCKET, Key=KEY, Body=BODY)
        test_boto3(srv, s3)
        test_aws_cli(srv)
        check(srv.alive(), "the server died")


if __name__ == "__main__":
    run_test(main)
