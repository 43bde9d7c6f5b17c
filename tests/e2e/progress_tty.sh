#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end (issue 11): a live progress line for every batch — fork create (forks, keys),
# teardown, bucket rm, snapshot rm — with done/total, failures and elapsed time, redrawn in
# place on a terminal; nothing when stderr is not a terminal, with -q or with --no-progress.
# The real binary runs with its stderr on a pseudo-terminal (python3's pty module) and its
# stdout in a file, against a real `tfork serve`.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_tfork
require_cmd python3
start_server
cd "$WORK"

tf() { timeout 120 "$TFORK" --no-progress "$@"; }

# on_pty NAME ARGS...: tfork ARGS with stderr on a pty (saved in $WORK/NAME.err, raw bytes) and
# stdout in $WORK/NAME.out; sets RC.
on_pty() {
  local name=$1
  shift
  RC=0
  python3 - "$WORK/$name.out" "$WORK/$name.err" "$TFORK" "$@" <<'PY' || RC=$?
import os, pty, subprocess, sys
out_path, err_path, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
master, slave = pty.openpty()
with open(out_path, "wb") as out:
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=slave)
os.close(slave)
data = b""
while True:
    try:
        chunk = os.read(master, 65536)
    except OSError:  # EIO: every holder of the pty's other end has closed it
        break
    if not chunk:
        break
    data += chunk
os.close(master)
open(err_path, "wb").write(data)
try:
    code = child.wait(timeout=120)
except subprocess.TimeoutExpired:
    child.kill()
    code = 124
sys.exit(code)
PY
}

# on_pipe NAME ARGS...: the same with stderr on a pipe.
on_pipe() {
  local name=$1
  shift
  { timeout 120 "$TFORK" "$@" 2>&1 >"$WORK/$name.out" && echo 0 >"$WORK/$name.rc" ||
    echo $? >"$WORK/$name.rc"; } | cat >"$WORK/$name.err"
  RC=$(cat "$WORK/$name.rc")
}

# has_progress NAME LABEL DONE TOTAL [FAILED]: the pty output redraws "LABEL d/TOTAL, …" in place
# and ends with a final "LABEL DONE/TOTAL[, FAILED failed], Ns" line; stdout has none of it.
has_progress() {
  python3 - "$WORK/$1.err" "$WORK/$1.out" "$2" "$3" "$4" "${5:-0}" <<'PY' || fail "$1: no progress line for $2 on the terminal: $(od -c "$WORK/$1.err" | head -20)"
import re, sys
err = open(sys.argv[1], "rb").read().decode()
out = open(sys.argv[2], "rb").read().decode()
label, done, total, failed = sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6])
redraw = re.findall(r"\r\x1b\[K" + re.escape(label) + r" (\d+)/" + total + r"(?:, (\d+) failed)?, (\d+(?:m\d\ds)?s)", err)
assert redraw, "no redrawn line"
counts = [int(d) for d, _, _ in redraw]
assert counts == sorted(counts), counts          # never goes backwards
assert counts[0] < int(done) or len(redraw) == 1, counts  # it moved while running
tail = label + " " + done + "/" + total + (", %d failed" % failed if failed else "") + ", "
assert re.search(re.escape(tail) + r"\d+s\r?\n", err), "final line missing: " + repr(err[-300:])
assert "\x1b[K" not in out and "\r" not in out, "progress on stdout"
PY
}

no_progress() {
  python3 - "$WORK/$1.err" "$WORK/$1.out" <<'PY' || fail "$1: unexpected progress output: $(od -c "$WORK/$1.err" | head -20)"
import re, sys
for path in sys.argv[1:]:
    text = open(path, "rb").read().decode()
    assert "\x1b[K" not in text, path
    assert not re.search(r"\b(forks|keys|buckets|snapshots) \d+/\d+", text), path
PY
}

tf bucket create prog-src --snapshots >/dev/null

step "fork create on a terminal: forks and keys lines, ending at 8/8"
on_pty create fork create prog-src -n 8 --prefix pa --manifest "$WORK/pa.json"
check_eq "fork create exit" 0 "$RC"
has_progress create forks 8 8
has_progress create keys 8 8
check_contains "the table is on stdout" "$(cat "$WORK/create.out")" "pa-8"

step "teardown on a terminal"
on_pty teardown teardown --manifest "$WORK/pa.json"
check_eq "teardown exit" 0 "$RC"
has_progress teardown forks 8 8

step "stderr on a pipe: no progress at all"
on_pipe create_pipe fork create prog-src -n 8 --prefix pb --keys none
check_eq "fork create (pipe) exit" 0 "$RC"
no_progress create_pipe
on_pipe teardown_pipe teardown --source prog-src --prefix pb
check_eq "teardown (pipe) exit" 0 "$RC"
no_progress teardown_pipe

step "-q and --no-progress on a terminal: no progress"
on_pty create_quiet -q fork create prog-src -n 8 --prefix pc --keys none
check_eq "fork create -q exit" 0 "$RC"
no_progress create_quiet
on_pty teardown_noprog --no-progress teardown --source prog-src --prefix pc
check_eq "teardown --no-progress exit" 0 "$RC"
no_progress teardown_noprog

step "bucket rm on a terminal counts a failure (a bucket that is not empty)"
for i in 1 2 3 4; do tf bucket create "prog-rm-$i" >/dev/null; done
s3 PUT /prog-rm-4/object --body hello
check_status 200
on_pty bucket_rm bucket rm prog-rm-1 prog-rm-2 prog-rm-3 prog-rm-4
check_eq "bucket rm with one non-empty bucket exit (partial)" 7 "$RC"
has_progress bucket_rm buckets 4 4 1
on_pipe bucket_rm_pipe bucket rm prog-rm-4 --force
check_eq "bucket rm --force exit" 0 "$RC"
no_progress bucket_rm_pipe

step "snapshot rm of many versions on a terminal"
versions=()
for i in 1 2 3 4 5; do versions+=("$(tf snapshot take prog-src)"); done
on_pty snapshot_rm snapshot rm prog-src "${versions[@]}"
check_eq "snapshot rm exit" 0 "$RC"
has_progress snapshot_rm snapshots 5 5

step "the elapsed time moves while nothing finishes (every answer 3 s late)"
stop_server
start_server --latency 3000
for i in 1 2 3 4; do tf bucket create "prog-slow-$i" >/dev/null; done
on_pty slow bucket rm prog-slow-1 prog-slow-2 prog-slow-3 prog-slow-4
check_eq "slow bucket rm exit" 0 "$RC"
has_progress slow buckets 4 4
# Redrawn with nothing done yet (0/4, whenever the tick came) and at least a second gone: the
# line is alive, not only a counter. No bound on the seconds: the line itself says none is done.
grep -qE $'\r\e\\[Kbuckets 0/4, [1-9][0-9]*s' "$WORK/slow.err" ||
  fail "no tick while waiting: $(od -c "$WORK/slow.err" | head -20)"
