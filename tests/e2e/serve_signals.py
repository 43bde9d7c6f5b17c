# SPDX-License-Identifier: Apache-2.0
"""Every SIGTERM or SIGINT ends `tfork serve` cleanly, however early it arrives (issue 24 §3).

A CI script starts the server in the background and its cleanup trap signals it, perhaps
before the server has even opened its store. Each of ~30 starts is signalled at a different
moment: as soon as tfork runs (its main() blocks both signals first of all: the test waits
for that state in /proc, since a signal that lands while the dynamic loader is still mapping
the binary meets no code of tfork's at all), a few milliseconds later, or once the server
printed its export lines and answered a request. Every one must exit 0 (cli.md §8) within a
generous deadline, and leave no process behind. The delays only spread the moments the
signal lands on; what is judged is the exit status, waited for.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from tfork_server import (TestFailure, TforkServer, check, run_test, step,  # noqa: E402
                         tfork_binary)

EXIT_DEADLINE = 30.0  # seconds: far beyond a clean stop's few milliseconds
DELAYS = [0.0, 0.0005, 0.001, 0.002, 0.004, 0.008, 0.015, 0.03, 0.06, 0.12]


def processes_using(marker: str) -> list[int]:
    """The pids whose command line mentions `marker` (the test's own directory)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(name))
        except OSError:
            pass
    return found


def wait_until_running(proc: subprocess.Popen, what: str) -> None:
    """Until tfork's main() has blocked SIGINT and SIGTERM: SigBlk of any of its threads. (The
    main thread alone is not enough: while it waits in sigwait the kernel shows the waited
    signals unblocked there, and the threads it started keep them blocked.)"""
    wanted = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1))
    deadline = time.monotonic() + EXIT_DEADLINE
    while True:
        try:
            for task in os.listdir(f"/proc/{proc.pid}/task"):
                with open(f"/proc/{proc.pid}/task/{task}/status") as f:
                    blocked = next(int(line.split()[1], 16) for line in f
                                   if line.startswith("SigBlk:"))
                if blocked & wanted == wanted:
                    return
        except (OSError, StopIteration):
            pass
        check(proc.poll() is None, f"{what}: tfork serve exited ({proc.returncode}) unsignalled")
        check(time.monotonic() < deadline, f"{what}: tfork never blocked SIGINT and SIGTERM")
        os.sched_yield()


def expect_clean_exit(proc: subprocess.Popen, what: str, err_path: str) -> None:
    try:
        rc = proc.wait(timeout=EXIT_DEADLINE)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise TestFailure(f"{what}: tfork serve still running {EXIT_DEADLINE:.0f} s after "
                             "the signal (the signal was lost)")
    with open(err_path, "rb") as f:
        log = f.read().decode("utf-8", "replace")
    check(rc == 0, f"{what}: tfork serve exited with status {rc}, expected 0; log:\n{log}")


def main() -> None:
    binary = tfork_binary()
    # A server whose setup is done once: the directory the early starts reuse holds a store.
    with TforkServer() as srv:
        work = srv.work
        data = os.path.join(work, "data")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("AWS_", "TIGRIS_", "TFORK_ROOT_"))}
        err_path = os.path.join(work, "early.err")
        out_path = os.path.join(work, "early.out")
        runs = 0
        before_listening = 0  # runs that ended without printing their export lines
        srv.stop()
        for _ in range(3):
            for delay in DELAYS:
                sig = signal.SIGTERM if (runs % 2 == 0) else signal.SIGINT
                what = f"run {runs}: {sig.name} {delay * 1000:.1f} ms after tfork started"
                with open(err_path, "wb") as err, open(out_path, "wb") as out:
                    proc = subprocess.Popen(
                        [binary, "serve", "--data", data, "--listen", "127.0.0.1:0"],
                        stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env)
                wait_until_running(proc, what)
                if delay:
                    time.sleep(delay)
                proc.send_signal(sig)
                expect_clean_exit(proc, what, err_path)
                before_listening += os.path.getsize(out_path) == 0
                runs += 1
        # Which moment each signal met is up to the scheduler: shown, not judged.
        step(f"{runs} starts signalled early: each exited 0 ({before_listening} of them before "
             "listening)")

        # Once listening, after a request: both signals still end it with 0.
        for sig in (signal.SIGTERM, signal.SIGINT):
            late = TforkServer(data_dir=data)
            late.start()
            try:  # one request answered (anonymous: refused) before the signal
                direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
                direct.open(late.endpoint + "/", timeout=30).close()
            except urllib.error.HTTPError:
                pass
            proc, late.proc = late.proc, None
            proc.send_signal(sig)
            expect_clean_exit(proc, f"{sig.name} once listening", late.stderr_path)
            late._cleanup()
            runs += 1
        step("SIGTERM and SIGINT once listening: exit 0")

        leftover = processes_using(work)
        check(not leftover, f"processes left behind: {leftover}")
        step(f"{runs} starts, no process left behind")


if __name__ == "__main__":
    run_test(main)
