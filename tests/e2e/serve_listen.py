# SPDX-License-Identifier: Apache-2.0
"""Where `tfork serve` listens (issue 24 §3, cli.md §15).

- `--listen localhost:0` and `--listen 127.0.0.2:0` work; `[::1]:0` works too (skipped, exit
  125, when this machine has no IPv6 loopback).
- Each start prints `tfork serve: listening on URL` on stderr without -v, and the URL is the
  one in the export lines, answering HTTP.
- An address other machines reach is refused with exit 64 and one line naming
  `--allow-remote`, before anything is created; with `--allow-remote` it is warned about and
  tried (here an address this machine does not have, so nothing is ever exposed: exit 5).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from tfork_server import (SKIP, TestFailure, check, check_eq, run_test, step,  # noqa: E402
                          tfork_binary)

START_DEADLINE = 30.0
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no proxy, ever


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "TIGRIS_", "TFORK_ROOT_"))}
    env["NO_PROXY"] = env["no_proxy"] = "*"
    return env


def serve(binary: str, work: str, listen: str, expected_host: str) -> None:
    """Starts `serve --listen LISTEN`, waits for its listening line, checks it, stops it."""
    data = os.path.join(work, "data")
    err_path = os.path.join(work, "serve.err")
    out_path = os.path.join(work, "serve.out")
    with open(err_path, "wb") as err, open(out_path, "wb") as out:
        proc = subprocess.Popen([binary, "serve", "--data", data, "--listen", listen],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=clean_env())
    try:
        deadline = time.monotonic() + START_DEADLINE
        url = None
        while url is None:
            with open(err_path) as f:
                for line in f:
                    if line.startswith("tfork serve: listening on "):
                        url = line.split()[-1]
            if url is None:
                check(proc.poll() is None,
                      f"--listen {listen}: exited {proc.returncode}: {open(err_path).read()!r}")
                check(time.monotonic() < deadline,
                      f"--listen {listen}: no listening line on stderr: {open(err_path).read()!r}")
                time.sleep(0.02)
        check(url.startswith(f"http://{expected_host}:"), f"--listen {listen}: listening on {url}")
        with open(out_path) as f:
            exports = f.read()
        check(f"export AWS_ENDPOINT_URL={url}\n" in exports,
              f"--listen {listen}: the export lines name another endpoint: {exports!r}")
        try:
            DIRECT.open(url + "/", timeout=30).close()
            status = 200
        except urllib.error.HTTPError as e:
            status = e.code
        check_eq(f"--listen {listen}: an anonymous GET / at {url}", 403, status)
        proc.send_signal(signal.SIGTERM)
        check_eq(f"--listen {listen}: exit after SIGTERM", 0, proc.wait(timeout=START_DEADLINE))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.strip().splitlines()
            if not line.startswith("Run 'tfork serve --help'")]


def has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def main() -> None:
    binary = tfork_binary()
    work = tempfile.mkdtemp(prefix="tfork-e2e-listen.")
    try:
        checks(binary, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def checks(binary: str, work: str) -> None:

    step("--listen localhost:0")
    serve(binary, work, "localhost:0", "127.0.0.1")
    step("--listen 127.0.0.2:0 (all of 127/8 is loopback)")
    serve(binary, work, "127.0.0.2:0", "127.0.0.2")

    step("--listen 0.0.0.0:0 without --allow-remote: refused, exit 64")
    fresh = os.path.join(work, "fresh")
    for listen in ("0.0.0.0:0", "[::]:0", "192.0.2.1:0"):
        try:
            refused = subprocess.run(
                [binary, "serve", "--data", fresh, "--listen", listen], env=clean_env(),
                stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20)
        except subprocess.TimeoutExpired:
            raise TestFailure(f"--listen {listen} was accepted: the server started")
        check_eq(f"--listen {listen}: exit (stderr {refused.stderr!r})", 64, refused.returncode)
        lines = error_lines(refused.stderr)
        check_eq(f"--listen {listen}: lines on stderr ({refused.stderr!r})", 1, len(lines))
        check("--allow-remote" in lines[0], f"the refusal does not name --allow-remote: {lines}")
        check_eq(f"--listen {listen}: stdout", "", refused.stdout)
        check(not os.path.exists(fresh), f"--listen {listen}: the data directory was created")

    step("--allow-remote: warned about, then tried (an address this machine lacks: exit 5)")
    tried = subprocess.run(
        [binary, "serve", "--data", fresh, "--listen", "192.0.2.1:0", "--allow-remote"],
        env=clean_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    check_eq(f"exit (stderr {tried.stderr!r})", 5, tried.returncode)
    check("not a loopback address" in tried.stderr, f"no warning: {tried.stderr!r}")

    step("--listen with a host name: refused, exit 64")
    named = subprocess.run([binary, "serve", "--data", fresh, "--listen", "example.com:0"],
                           env=clean_env(), stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=60)
    check_eq(f"exit (stderr {named.stderr!r})", 64, named.returncode)

    if not has_ipv6_loopback():
        print(f"SKIP {os.path.basename(sys.argv[0])}: the [::1] case: no IPv6 loopback here "
              "(every other case passed)", file=sys.stderr)
        sys.exit(SKIP)
    step("--listen [::1]:0")
    serve(binary, work, "[::1]:0", "[::1]")


if __name__ == "__main__":
    run_test(main)
