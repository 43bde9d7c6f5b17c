# SPDX-License-Identifier: Apache-2.0
"""Start and stop a real `tfork serve` for the Python end-to-end tests.

    from tfork_server import TforkServer, skip, check, check_eq

    with TforkServer() as srv:
        s3 = boto3.client("s3", endpoint_url=srv.endpoint, ...,
                          aws_access_key_id=srv.access_key, aws_secret_access_key=srv.secret_key)

The server runs as `$TFORK serve --data <tmp> --listen 127.0.0.1:0`; the printed
`export NAME=value` lines (cli.md §8) are parsed into `srv.env`. Leaving the `with` block
sends SIGTERM and expects exit status 0 within 10 s; the temporary directory is removed
whatever happens (set KEEP_WORK=1 to keep it).

Exit codes of a test: 0 pass, 1 fail, 125 skipped (reason on stderr).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

SKIP = 125


class TestFailure(AssertionError):
    pass


def skip(reason: str) -> None:
    print(f"SKIP {os.path.basename(sys.argv[0])}: {reason}", file=sys.stderr)
    sys.exit(SKIP)


def step(msg: str) -> None:
    print(f"== {os.path.basename(sys.argv[0])}: {msg}", file=sys.stderr, flush=True)


def check(cond: bool, msg: str) -> None:
    if not cond:
        raise TestFailure(msg)


def check_eq(what: str, expected, actual) -> None:
    if expected != actual:
        raise TestFailure(f"{what}: expected {expected!r}, got {actual!r}")


def tfork_binary() -> str:
    path = os.environ.get("TFORK")
    if not path:
        src = os.environ.get("TFORK_SOURCE_DIR") or os.path.abspath(
            os.path.join(os.path.dirname(__file__), "..", "..")
        )
        path = os.path.join(src, "build", "tfork")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        skip(f"tfork binary not found at {path!r} (set TFORK or build it first)")
    return path


class TforkServer:
    """A `tfork serve` child process on 127.0.0.1 with a private data directory."""

    def __init__(self, extra_args: list[str] | None = None, start_timeout: float = 20.0,
                 data_dir: str | None = None, extra_env: dict[str, str] | None = None):
        self.binary = tfork_binary()
        self.data_dir = data_dir  # default: <work>/data
        self.extra_args = list(extra_args or [])
        self.extra_env = dict(extra_env or {})  # added to the server's cleaned environment
        self.start_timeout = start_timeout
        self.work = tempfile.mkdtemp(prefix="tfork-e2e-py.")
        self.proc: subprocess.Popen | None = None
        self.env: dict[str, str] = {}
        self._stdout_lines: list[str] = []
        self._lock = threading.Condition()
        atexit.register(self._cleanup)

    # --- lifecycle --------------------------------------------------------------------
    def start(self) -> "TforkServer":
        data = self.data_dir or os.path.join(self.work, "data")
        os.makedirs(data, exist_ok=self.data_dir is not None)
        self.stderr_path = os.path.join(self.work, "serve.err")
        child_env = {k: v for k, v in os.environ.items()
                     if not k.startswith(("AWS_", "TIGRIS_", "TFORK_ROOT_"))}
        child_env.update(self.extra_env)
        with self._lock:  # a restart prints a new endpoint: wait for it, not the last one's
            self.env = {}
            self._stdout_lines = []
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--data", data, "--listen", "127.0.0.1:0", *self.extra_args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=open(self.stderr_path, "wb"),
            env=child_env,
        )
        threading.Thread(target=self._drain, daemon=True).start()
        # AWS_REGION is the last of the export lines: once it is read, they all are.
        wanted = {"AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"}
        deadline = time.monotonic() + self.start_timeout
        with self._lock:
            while not wanted <= self.env.keys():
                if self.proc.poll() is not None:
                    raise TestFailure(
                        f"tfork serve exited with status {self.proc.returncode} before printing "
                        f"its export lines; stdout={''.join(self._stdout_lines)!r}"
                        + self.log_tail())
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TestFailure(
                        f"tfork serve printed no export lines within {self.start_timeout}s; "
                        f"stdout={''.join(self._stdout_lines)!r}" + self.log_tail())
                self._lock.wait(min(left, 0.2))
        check(self.endpoint.startswith("http://127.0.0.1:"),
              f"unexpected AWS_ENDPOINT_URL {self.endpoint!r}")
        check_eq("AWS_REGION printed by serve", "auto", self.env.get("AWS_REGION"))
        step(f"server pid {self.proc.pid} at {self.endpoint}")
        return self

    def _drain(self) -> None:
        assert self.proc and self.proc.stdout
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace")
            with self._lock:
                self._stdout_lines.append(line)
                stripped = line.strip()
                if stripped.startswith("export "):
                    parts = shlex.split(stripped[len("export "):])
                    for part in parts:
                        if "=" in part:
                            name, value = part.split("=", 1)
                            self.env[name] = value
                self._lock.notify_all()

    def stop(self) -> None:
        """SIGTERM; the server must exit 0 within 10 s (cli.md §8)."""
        if not self.proc or self.proc.poll() is not None:
            rc = self.proc.returncode if self.proc else 0
            self.proc = None
            check(rc == 0, f"tfork serve had already exited with status {rc}" + self.log_tail())
            return
        proc, self.proc = self.proc, None
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise TestFailure("tfork serve did not exit within 10 s of SIGTERM")
        check(rc == 0, f"tfork serve exited with status {rc} after SIGTERM (expected 0)"
              + self.log_tail())

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _cleanup(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if os.environ.get("KEEP_WORK") == "1":
            print(f"kept work directory {self.work}", file=sys.stderr)
        else:
            shutil.rmtree(self.work, ignore_errors=True)

    def __enter__(self) -> "TforkServer":
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None:
                self.stop()
            else:
                print(self.log_tail(), file=sys.stderr)
        finally:
            self._cleanup()

    # --- what clients need ---------------------------------------------------------------
    @property
    def endpoint(self) -> str:
        return self.env["AWS_ENDPOINT_URL"]

    @property
    def access_key(self) -> str:
        return self.env["AWS_ACCESS_KEY_ID"]

    @property
    def secret_key(self) -> str:
        return self.env["AWS_SECRET_ACCESS_KEY"]

    def log_tail(self, lines: int = 40) -> str:
        try:
            with open(self.stderr_path, "rb") as f:
                tail = f.read().decode("utf-8", "replace").splitlines()[-lines:]
        except OSError:
            return ""
        return "\n--- last lines of the server log ---\n" + "\n".join(tail) + "\n--- end ---"



# ---- boto3 helpers shared by the boto3 tests (boto3 is imported by the caller first, which
# skips the test when it is missing)


def boto3_client(srv, access_key=None, secret_key=None):
    """An S3 client for `srv`: path-style, SigV4, one attempt (a test sees every answer)."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=srv.endpoint,
        region_name="auto",
        aws_access_key_id=access_key or srv.access_key,
        aws_secret_access_key=secret_key or srv.secret_key,
        config=Config(
            signature_version="s3v4",
            s3={"addressing_style": "path"},
            retries={"max_attempts": 1, "mode": "standard"},
            connect_timeout=10,
            read_timeout=60,
        ),
    )


@contextlib.contextmanager
def signed_headers(client, operation, headers):
    """Add headers to every `operation` request before it is signed (Tigris docs' recipe)."""

    def add(request, **_kwargs):
        for name, value in headers.items():
            if name in request.headers:
                del request.headers[name]
            request.headers[name] = value

    event = f"before-sign.s3.{operation}"
    client.meta.events.register(event, add)
    try:
        yield
    finally:
        client.meta.events.unregister(event, add)


def client_error(fn, **kwargs):
    """Call fn, which must fail with a ClientError; return (status, code)."""
    from botocore.exceptions import ClientError

    try:
        fn(**kwargs)
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Code")
    raise TestFailure(f"{fn.__name__}({kwargs}) unexpectedly succeeded")


def run_test(main) -> None:
    """Run main(); map a failed check to exit 1 with the server log, a skip to 125."""
    try:
        main()
    except TestFailure as e:
        print(f"FAIL {os.path.basename(sys.argv[0])}: {e}", file=sys.stderr)
        sys.exit(1)
    print(f"== {os.path.basename(sys.argv[0])}: PASS", file=sys.stderr)


if __name__ == "__main__":
    # The CMake glob registers every tests/e2e/*.py; this one is only a helper module.
    skip("tfork_server.py is a helper module for the Python tests; nothing to run")
