# SPDX-License-Identifier: Apache-2.0
"""Run by tests/e2e/agent_isolation.sh inside `tfork fork exec`: boto3 with its default
credential chain (nothing passed in code but the endpoint) writes its own fork and is denied
on the source and a sibling. Exit 0 only when all of that holds. Args: SOURCE SIBLING."""
import os
import sys

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

source, sibling = sys.argv[1], sys.argv[2]
bucket = os.environ["TFORK_BUCKET"]
# Older boto3 ignores AWS_ENDPOINT_URL, so the endpoint comes from it explicitly; the keys do
# not: they come from whatever boto3 finds on its own.
s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"],
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
print("agent", os.environ["TFORK_AGENT_INDEX"], "in", bucket, "as",
      s3._request_signer._credentials.access_key[:8] + "...")
s3.put_object(Bucket=bucket, Key="boto3.txt", Body=b"written by boto3")
s3.list_objects_v2(Bucket=bucket)
for other in (source, sibling):
    for call in (lambda: s3.put_object(Bucket=other, Key="boto3.txt", Body=b"x"),
                 lambda: s3.list_objects_v2(Bucket=other)):
        try:
            call()
        except ClientError as e:
            code = e.response["Error"]["Code"]
            if code != "AccessDenied":
                print("unexpected error on", other, code)
                sys.exit(1)
            continue
        print("LEAK: reached", other)
        sys.exit(1)
print("isolated")
