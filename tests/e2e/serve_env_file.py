# SPDX-License-Identifier: Apache-2.0
"""`tfork serve --env-file PATH` (issue 24 §3, cli.md §15): what a script sources to reach the
server, there only once the server listens.

- The file appears whole (renamed into place, no temporary file left beside it), mode 0600,
  and when it exists the server accepts connections at the endpoint it names.
- It holds AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL_IAM,
  TIGRIS_STORAGE_ENDPOINT, the root key as AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY and
  TIGRIS_STORAGE_ACCESS_KEY_ID/TIGRIS_STORAGE_SECRET_ACCESS_KEY, and AWS_REGION=auto: the
  same lines serve prints on stdout.
- The key works: requests signed by tfork from the AWS_* variables alone, and from the
  TIGRIS_STORAGE_* ones alone, are answered, and the Tigris CLI given the whole file lists
  this server's buckets (it reads AWS_ENDPOINT_URL_S3, never AWS_ENDPOINT_URL).
- A server that cannot listen writes no file (and a stale one at PATH is gone); a stopped one
  removes its file.
- The README's serve block, run as written (port 0, HOME in the test's directory), waits for
  the file and works.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from tfork_server import (TestFailure, check, check_eq, run_test, skip, step,  # noqa: E402
                          tfork_binary)

DEADLINE = 30.0
NAMES = ["AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL_S3",
         "AWS_ENDPOINT_URL_IAM", "TIGRIS_STORAGE_ENDPOINT", "TIGRIS_STORAGE_ACCESS_KEY_ID",
         "TIGRIS_STORAGE_SECRET_ACCESS_KEY", "AWS_REGION"]


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "TIGRIS_", "TFORK_ROOT_"))}
    env["NO_PROXY"] = env["no_proxy"] = "*"
    return env


def parse_exports(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        check(line.startswith("export "), f"not an export line: {line!r}")
        name, _, value = line[len("export "):].partition("=")
        out[name] = shlex.split(value)[0] if value else ""
    return out


def source_dir() -> str:
    return os.environ.get("TFORK_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")


def tfork(binary: str, home: str, variables: dict[str, str], *args: str) -> str:
    env = clean_env()
    env.update(HOME=home, **variables)
    done = subprocess.run([binary, *args], env=env, capture_output=True, text=True, timeout=60)
    check_eq(f"tfork {' '.join(args)} with {sorted(variables)} (stderr {done.stderr!r})", 0,
             done.returncode)
    return done.stdout


def main() -> None:
    binary = tfork_binary()
    work = tempfile.mkdtemp(prefix="tfork-e2e-envfile.")
    try:
        checks(binary, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def checks(binary: str, work: str) -> None:
    env_dir = os.path.join(work, "env")
    os.makedirs(env_dir)
    path = os.path.join(env_dir, "tfork.env")
    with open(path, "w") as f:  # what a killed server would leave behind
        f.write("export AWS_ENDPOINT_URL=http://127.0.0.1:1\n")

    step("a server that cannot listen writes no file")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        failed = subprocess.run(
            [binary, "serve", "--data", os.path.join(work, "data"), "--listen",
             f"127.0.0.1:{port}", "--env-file", path],
            env=clean_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=60)
    check_eq(f"exit of a server whose port is taken (stderr {failed.stderr!r})", 5,
             failed.returncode)
    check(not os.path.exists(path), "an env file exists although the server never listened")

    step("--env-file: appears whole, once listening")
    stdout_path = os.path.join(work, "serve.out")
    with open(stdout_path, "wb") as out, open(os.path.join(work, "serve.err"), "wb") as err:
        proc = subprocess.Popen(
            [binary, "serve", "--data", os.path.join(work, "data"), "--listen", "127.0.0.1:0",
             "--env-file", path],
            env=clean_env(), stdin=subprocess.DEVNULL, stdout=out, stderr=err)
    try:
        deadline = time.monotonic() + DEADLINE
        while not os.path.exists(path):
            check(proc.poll() is None, f"serve exited {proc.returncode} before the env file")
            check(time.monotonic() < deadline, "no env file within the deadline")
            time.sleep(0.01)
        with open(path) as f:
            text = f.read()
        variables = parse_exports(text)
        check_eq("variables in the env file", NAMES, list(variables))
        # When the file is there, the server listens at the endpoint it names.
        match = re.fullmatch(r"http://127\.0\.0\.1:(\d+)", variables["AWS_ENDPOINT_URL"])
        check(match is not None, f"endpoint {variables['AWS_ENDPOINT_URL']!r}")
        socket.create_connection(("127.0.0.1", int(match.group(1))), timeout=10).close()
        check_eq("mode of the env file", 0o600, stat.S_IMODE(os.stat(path).st_mode))
        check_eq("files beside it (no temporary one left)", ["tfork.env"], os.listdir(env_dir))
        endpoint = variables["AWS_ENDPOINT_URL"]
        for name in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_IAM", "TIGRIS_STORAGE_ENDPOINT"):
            check_eq(name, endpoint, variables[name])
        check_eq("TIGRIS_STORAGE_ACCESS_KEY_ID", variables["AWS_ACCESS_KEY_ID"],
                 variables["TIGRIS_STORAGE_ACCESS_KEY_ID"])
        check_eq("TIGRIS_STORAGE_SECRET_ACCESS_KEY", variables["AWS_SECRET_ACCESS_KEY"],
                 variables["TIGRIS_STORAGE_SECRET_ACCESS_KEY"])
        check_eq("AWS_REGION", "auto", variables["AWS_REGION"])
        with open(stdout_path) as f:
            check_eq("serve's stdout", text, f.read())

        step("the key works, from the AWS_* variables and from the TIGRIS_STORAGE_* ones")
        home = os.path.join(work, "home")
        os.makedirs(home)
        aws_only = {k: v for k, v in variables.items() if k.startswith("AWS_")
                    and k != "AWS_ENDPOINT_URL"}
        tfork(binary, home, aws_only, "bucket", "create", "env-file-check")
        tigris_only = {k: v for k, v in variables.items() if k.startswith("TIGRIS_")}
        listed = tfork(binary, home, tigris_only, "bucket", "ls")
        check("env-file-check" in listed, f"bucket ls with TIGRIS_STORAGE_*: {listed!r}")

        tigris_cli = os.path.join(source_dir(), "tests", "node", "node_modules", "@tigrisdata",
                                  "cli", "dist", "cli.js")
        node = shutil.which("node")
        if node and os.path.isfile(tigris_cli):
            step("the Tigris CLI, after `. tfork.env`, lists this server's buckets")
            env = clean_env()
            env.update(HOME=home, NODE_NO_WARNINGS="1", **variables)
            listed = subprocess.run([node, tigris_cli, "ls"], env=env, stdin=subprocess.DEVNULL,
                                    capture_output=True, text=True, timeout=180)
            check_eq(f"tigris ls (stderr {listed.stderr[-800:]!r})", 0, listed.returncode)
            check("env-file-check" in listed.stdout, f"tigris ls: {listed.stdout[-800:]!r}")
        else:
            step("no node or Tigris CLI in tests/node: its check is left out")

        step("stopped: exit 0, the file is gone")
        proc.send_signal(signal.SIGTERM)
        check_eq("exit after SIGTERM", 0, proc.wait(timeout=DEADLINE))
        check(not os.path.exists(path), "the env file outlived the server")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    step("the README's serve block, as written")
    with open(os.path.join(source_dir(), "README.md")) as f:
        readme = f.read()
    blocks = re.findall(r"```sh\n(.*?)```", readme, re.S)
    block = next((b for b in blocks if "tfork serve --data" in b), None)
    check(block is not None, "README.md has no block that starts tfork serve")
    check("--env-file" in block, f"the README's serve block does not use --env-file:\n{block}")
    aws = shutil.which("aws", path="/usr/bin:/usr/local/bin")
    if aws is None:
        skip("no aws CLI for the README's serve block (every other check passed)")
    bin_dir = os.path.join(work, "bin")
    os.makedirs(bin_dir)
    os.symlink(os.path.abspath(binary), os.path.join(bin_dir, "tfork"))
    os.symlink(aws, os.path.join(bin_dir, "aws"))
    readme_home = os.path.join(work, "readme-home")
    os.makedirs(readme_home)
    script = ("set -euo pipefail\n"
              "trap 'kill -TERM $(jobs -p) 2>/dev/null || true' EXIT\n"
              + block.replace("127.0.0.1:9000", "127.0.0.1:0")
              + 'printf "%s\\n" "$AWS_ENDPOINT_URL_S3" "$TIGRIS_STORAGE_ACCESS_KEY_ID" >seen.txt\n'
              + 'kill -TERM %1\nwait %1\n')
    env = clean_env()
    env.update(HOME=readme_home, PATH=bin_dir + os.pathsep + env.get("PATH", ""))
    try:
        ran = subprocess.run(["bash", "-c", script], cwd=readme_home, env=env,
                             capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        raise TestFailure("the README's serve block did not finish within 120 s")
    check_eq(f"the README's serve block (stderr {ran.stderr!r})", 0, ran.returncode)
    with open(os.path.join(readme_home, "seen.txt")) as f:
        seen = f.read().splitlines()
    check(seen[0].startswith("http://127.0.0.1:"), f"AWS_ENDPOINT_URL_S3 after it: {seen[0]!r}")
    check(seen[1].startswith("tid_"), f"TIGRIS_STORAGE_ACCESS_KEY_ID after it: {seen[1]!r}")


if __name__ == "__main__":
    run_test(main)
