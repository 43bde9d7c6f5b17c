# SPDX-License-Identifier: Apache-2.0
"""`tfork serve` takes its root secret from a file or the environment, never from argv
(issue 24 §3): a secret on the command line is visible to every user in `ps`.

- `--root-secret-key SECRET` is refused with exit 64 (usage) and one line naming
  `--root-secret-key-file` and `TFORK_ROOT_SECRET_KEY`; nothing is started or created.
- `--root-access-key` with `--root-secret-key-file FILE` and `TFORK_ROOT_ACCESS_KEY` with
  `TFORK_ROOT_SECRET_KEY` both work: the server prints that pair and a request signed with it
  is answered.
- `serve --help` does not offer the refused flag.
"""

from __future__ import annotations

import os
import subprocess
import sys
import shutil
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from tfork_server import (TestFailure, TforkServer, check, check_eq, run_test,  # noqa: E402
                         step, tfork_binary)

ACCESS = "tid_rootkeytest0000000001"
SECRET = "tsec_rootkeytestsecret000000000000000000001"


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("AWS_", "TIGRIS_", "TFORK_ROOT_"))}


def signed_request_works(binary: str, srv: TforkServer) -> None:
    """`tfork bucket create` and `bucket ls`, signed with the key the server printed."""
    env = clean_env()
    env.update(HOME=srv.work, AWS_ENDPOINT_URL=srv.endpoint, AWS_ACCESS_KEY_ID=srv.access_key,
               AWS_SECRET_ACCESS_KEY=srv.secret_key, AWS_REGION="auto")
    made = subprocess.run([binary, "bucket", "create", "root-key-check"], env=env,
                          capture_output=True, text=True, timeout=60)
    check_eq(f"bucket create with the root key (stderr {made.stderr!r})", 0, made.returncode)
    listed = subprocess.run([binary, "bucket", "ls"], env=env, capture_output=True, text=True,
                            timeout=60)
    check_eq("bucket ls with the root key", 0, listed.returncode)
    check("root-key-check" in listed.stdout, f"bucket ls: {listed.stdout!r}")


def main() -> None:
    binary = tfork_binary()
    work = tempfile.mkdtemp(prefix="tfork-e2e-rootkey.")
    try:
        checks(binary, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def checks(binary: str, work: str) -> None:
    data = os.path.join(work, "data")

    step("--root-secret-key on the command line: refused, exit 64, one line")
    try:
        refused = subprocess.run(
            [binary, "serve", "--data", data, "--listen", "127.0.0.1:0", "--root-access-key",
             ACCESS, "--root-secret-key", SECRET],
            env=clean_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=20)
    except subprocess.TimeoutExpired:
        raise TestFailure("--root-secret-key SECRET was accepted: the server started")
    check_eq(f"exit status (stderr {refused.stderr!r})", 64, refused.returncode)
    # One error line; the usage hint every usage error ends with may follow.
    lines = [line for line in refused.stderr.strip().splitlines()
             if not line.startswith("Run 'tfork serve --help'")]
    check_eq(f"lines on stderr ({refused.stderr!r})", 1, len(lines))
    for named in ("--root-secret-key-file", "TFORK_ROOT_SECRET_KEY"):
        check(named in lines[0], f"the refusal does not name {named}: {lines[0]!r}")
    check(SECRET not in refused.stderr, "the refusal repeats the secret")
    check_eq("stdout", "", refused.stdout)
    check(not os.path.exists(data), "a refused start created the data directory")

    step("serve --help does not offer it")
    shown = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True,
                           timeout=60)
    check_eq("serve --help", 0, shown.returncode)
    check("--root-secret-key-file" in shown.stdout, "serve --help lacks --root-secret-key-file")
    check("--root-secret-key " not in shown.stdout.replace("--root-secret-key-file", ""),
          "serve --help still offers --root-secret-key")

    step("--root-access-key with --root-secret-key-file")
    secret_file = os.path.join(work, "secret")
    with open(secret_file, "w") as f:
        f.write(SECRET + "\n")
    os.chmod(secret_file, 0o600)
    with TforkServer(["--root-access-key", ACCESS, "--root-secret-key-file", secret_file]) as srv:
        check_eq("access key printed", ACCESS, srv.access_key)
        check_eq("secret printed", SECRET, srv.secret_key)
        signed_request_works(binary, srv)

    step("TFORK_ROOT_ACCESS_KEY and TFORK_ROOT_SECRET_KEY")
    with TforkServer(extra_env={"TFORK_ROOT_ACCESS_KEY": ACCESS,
                                "TFORK_ROOT_SECRET_KEY": SECRET}) as srv:
        check_eq("access key printed", ACCESS, srv.access_key)
        check_eq("secret printed", SECRET, srv.secret_key)
        signed_request_works(binary, srv)


if __name__ == "__main__":
    run_test(main)
