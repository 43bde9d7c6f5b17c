#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End-to-end, over real sockets: nothing anonymous costs `tfork serve` more than a few KiB
(issue 24 §2).

* An IAM call that signs its body's hash (no x-amz-content-sha256: botocore, the AWS CLI, Go)
  is checked from its head before its body is read: an unknown key, a credential scope of
  another service or date, a skewed clock, or a body over 16 KiB is answered at once, with
  the body never sent. Such a call from a real signer still works.
Every wait is for a state (a response, a closed socket) with a generous deadline.
"""

import datetime
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tfork_server import TforkServer, check, check_eq, run_test, step  # noqa: E402
from serve_transport import Wire, status_of  # noqa: E402

from botocore.auth import SigV4Auth  # noqa: E402  (serve_transport skips without boto3)
from botocore.awsrequest import AWSRequest  # noqa: E402

GENEROUS = 25.0  # seconds; below the 30 s idle timeout, which would answer nothing
FORM = b"Action=ListAccessKeys"


def amz_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def iam_head(wire, key_id, length, date8=None, service="iam", amz_date=None):
    """The head of a POST / whose Authorization names `key_id` (its signature is never
    right: the server must refuse before it could check one)."""
    amz_date = amz_date or amz_now()
    scope = f"{date8 or amz_date[:8]}/auto/{service}/aws4_request"
    return (f"POST /?Detailed= HTTP/1.1\r\nHost: {wire.address[0]}:{wire.address[1]}\r\n"
            "Content-Type: application/x-www-form-urlencoded\r\n"
            f"Content-Length: {length}\r\nX-Amz-Date: {amz_date}\r\n"
            f"Authorization: AWS4-HMAC-SHA256 Credential={key_id}/{scope}, "
            f"SignedHeaders=content-type;host;x-amz-date, Signature={'0' * 64}\r\n\r\n").encode()


def refused_from_head(wire, head, status, code):
    """Sends `head` and no body; the answer must come without it."""
    with wire.connect(timeout=GENEROUS) as sock:
        sock.sendall(head)
        response = Wire.read_response(sock)
    check_eq(f"status of a head refused for {code}", status, status_of(response))
    check(code.encode() in response, f"expected {code}, got {response[-300:]!r}")


def signed_iam_call(wire):
    """ListAccessKeys signed by botocore as its IAM client signs: service iam, the body's hash
    in the signature and no x-amz-content-sha256."""
    request = AWSRequest(method="POST", url=wire.srv.endpoint + "/?Detailed=", data=FORM,
                         headers={"Content-Type": "application/x-www-form-urlencoded",
                                  "Accept": "application/json"})
    SigV4Auth(wire.credentials, "iam", "auto").add_auth(request)
    check("x-amz-content-sha256" not in request.headers, "botocore signed the body's hash header")
    lines = ["POST /?Detailed= HTTP/1.1", f"Host: {wire.address[0]}:{wire.address[1]}",
             f"Content-Length: {len(FORM)}"]
    lines += [f"{name}: {value}" for name, value in request.headers.items()
              if name.lower() != "host"]
    with wire.connect(timeout=GENEROUS) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + FORM)
        return Wire.read_response(sock)


def test_iam_head_checks(srv, wire):
    step("an IAM call's head with an unknown key is refused before its 1 MiB body is sent")
    refused_from_head(wire, iam_head(wire, "tid_NOSUCHKEY", 1 << 20), 403, "InvalidAccessKeyId")

    step("a credential date other than the signing date, another service, a skewed clock")
    key = srv.access_key
    refused_from_head(wire, iam_head(wire, key, 1000, date8="19990101"), 400,
                      "AuthorizationHeaderMalformed")
    refused_from_head(wire, iam_head(wire, key, 1000, service="sts"), 400,
                      "AuthorizationHeaderMalformed")
    refused_from_head(wire, iam_head(wire, key, 1000, amz_date="20000101T000000Z"), 403,
                      "RequestTimeTooSkewed")

    step("a real key, but a body over 16 KiB: refused before it is sent")
    refused_from_head(wire, iam_head(wire, key, 16 * 1024 + 1), 400, "MaxMessageLengthExceeded")

    step("the same call signed by botocore's IAM signer is served")
    response = signed_iam_call(wire)
    check_eq("status of a signed IAM call", 200, status_of(response))
    check(b'"Keys"' in response, f"body: {response[-300:]!r}")


def main():
    with TforkServer() as srv:
        wire = Wire(srv)
        test_iam_head_checks(srv, wire)
        check(srv.alive(), "the server died")


if __name__ == "__main__":
    run_test(main)
