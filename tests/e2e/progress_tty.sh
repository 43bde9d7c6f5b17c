#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end (issue 11, issue 26 §1): long work is visible everywhere.
#  * On a terminal: one live line per phase (count, rate and time left), redrawn in place,
#    replaced, not stacked, by the next phase's line, and erased at the end, where a one-line
#    summary says what was made and the next step (fork create: the manifest, fork exec and
#    teardown).
#  * Not on a terminal (a CI log): plain lines, one at each phase's end and one every few
#    seconds while a phase runs.
#  * --progress json: one JSON event per line on stderr (phase, item, status, counts, request
#    id), on a terminal or not.
#  * Nothing with -q or --no-progress.
# The real binary runs with its stderr on a pseudo-terminal (python3's pty module) or a pipe,
# and its stdout in a file, against a real `tfork serve`. What a terminal shows at the end is
# computed from the bytes it received (carriage returns, erase-line, newlines).
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

# check_terminal NAME SUMMARY PHASE:DONE/TOTAL[:FAILED]...: the pty output drew each phase's
# live line in place (its count never going back, and moving while it ran) up to its last
# count; at the end of the run the screen holds no progress line, and its last line is the
# summary (starting with SUMMARY; "-": no summary); stdout has none of it.
check_terminal() {
  python3 - "$WORK/$1.err" "$WORK/$1.out" "${@:2}" <<'PY' || fail "$1: terminal progress: $(od -c "$WORK/$1.err" | head -30)"
import re, sys
err = open(sys.argv[1], "rb").read().decode()
out = open(sys.argv[2], "rb").read().decode()
summary, phases = sys.argv[3], sys.argv[4:]

# The screen as a terminal leaves it: \r returns, ESC[K erases to the end of the line.
lines, col, i = [""], 0, 0
while i < len(err):
    if err.startswith("\x1b[K", i):
        lines[-1] = lines[-1][:col]
        i += 3
        continue
    c = err[i]
    if c == "\r":
        col = 0
    elif c == "\n":
        lines.append("")
        col = 0
    else:
        line = lines[-1].ljust(col)
        lines[-1] = line[:col] + c + line[col + 1:]
        col += 1
    i += 1
screen = [line for line in lines if line.strip()]
progress = re.compile(r"^(checks|keys|forks|buckets|snapshots) \d+/\d+")
assert not any(progress.match(line) for line in screen), ("a progress line stayed", screen)
if summary == "-":
    assert not any(line.startswith(("Created", "Tore down")) for line in screen), screen
else:
    assert screen and screen[-1].startswith(summary), screen

for spec in phases:
    label, count, *failed = spec.split(":")
    done, total = count.split("/")
    draws = re.findall(r"\r\x1b\[K" + re.escape(label) + r" (\d+)/" + total + r"(, \d+ failed)?, ([^\r\n]*)", err)
    assert draws, "no line for " + label
    counts = [int(d) for d, _, _ in draws]
    assert counts == sorted(counts), (label, counts)  # never goes backwards
    last = draws[-1]
    assert counts[-1] == int(done), (label, counts)
    assert last[2].startswith("done in "), (label, last)
    if failed:
        assert last[1] == ", %s failed" % failed[0], (label, last)
    running = [rest for d, _, rest in draws if int(d) < int(total)]
    assert running, (label, "never drawn while it ran")
    for rest in running:  # rate and time left once something is done, time spent before
        assert re.fullmatch(r"[\d.]+/s, ETA \S+|[\dhms.]+", rest), (label, rest)
# Replaced, not stacked: a newline never follows a progress line.
assert not re.search(r"\b(checks|keys|forks|buckets|snapshots) \d+/\d+[^\r\n]*\n", err), "a progress line was kept"
assert "\x1b[K" not in out and "\r" not in out, "progress on stdout"
PY
}

# check_plain NAME SUMMARY PHASE:DONE/TOTAL...: plain lines in a log, one per phase at its end,
# then the summary; no terminal controls at all.
check_plain() {
  python3 - "$WORK/$1.err" "${@:2}" <<'PY' || fail "$1: plain progress: $(cat "$WORK/$1.err")"
import re, sys
err = open(sys.argv[1], "rb").read().decode()
summary, phases = sys.argv[2], sys.argv[3:]
assert "\x1b" not in err and "\r" not in err, "terminal controls in a log"
lines = err.splitlines()
for spec in phases:
    label, count = spec.split(":")
    assert any(re.fullmatch(r"tfork: " + re.escape(label) + " " + count + r"(, \d+ failed)?, done in \S+", l)
               for l in lines), (label, lines)
if summary != "-":
    assert lines and lines[-1].startswith(summary), lines
PY
}

# no_progress NAME: neither stderr nor stdout has a progress line, controls or a summary.
no_progress() {
  python3 - "$WORK/$1.err" "$WORK/$1.out" <<'PY' || fail "$1: unexpected progress output: $(od -c "$WORK/$1.err" | head -20)"
import re, sys
for path in sys.argv[1:]:
    text = open(path, "rb").read().decode()
    # A log line on a terminal begins by clearing the line; nothing else may.
    assert not re.search(r"\x1b\[K(?!tfork: )", text), path
    assert not re.search(r"\b(checks|forks|keys|buckets|snapshots) \d+/\d+", text), path
    assert "Created " not in text and "Tore down" not in text, path
PY
}

tf bucket create prog-src --snapshots >/dev/null

step "fork create on a terminal: the forks line, replaced by the summary with the next step"
on_pty create fork create prog-src -n 8 --prefix pa --manifest "$WORK/pa.json"
check_eq "fork create exit" 0 "$RC"
check_terminal create "Created 8 forks of prog-src with Editor keys in " forks:8/8
check_contains "the summary names the manifest and the next commands" "$(cat "$WORK/create.err")" \
  "manifest $WORK/pa.json. Next: tfork fork exec --manifest $WORK/pa.json -- COMMAND; when done: tfork teardown --manifest $WORK/pa.json"
check_contains "the table is on stdout" "$(cat "$WORK/create.out")" "pa-8"

step "teardown on a terminal: checks, then forks (each with its key), one line replacing the other"
on_pty teardown teardown --manifest "$WORK/pa.json"
check_eq "teardown exit" 0 "$RC"
check_terminal teardown "Tore down 8 forks and revoked 8 keys; deleted 1 snapshot in " \
  checks:8/8 forks:8/8

step "stderr on a pipe (a CI log): a plain line at each phase's end, then the summary"
on_pipe create_pipe fork create prog-src -n 8 --prefix pb --keys none
check_eq "fork create (pipe) exit" 0 "$RC"
check_plain create_pipe "Created 8 forks of prog-src in " forks:8/8
check_contains "without a manifest the summary says how to tear down" \
  "$(tail -n 1 "$WORK/create_pipe.err")" "When done: tfork teardown --source prog-src --prefix pb"
on_pipe teardown_pipe teardown --source prog-src --prefix pb
check_eq "teardown (pipe) exit" 0 "$RC"
check_plain teardown_pipe "Tore down 8 forks and revoked 0 keys" checks:8/8 forks:8/8

step "-q and --no-progress on a terminal: nothing"
on_pty create_quiet -q fork create prog-src -n 8 --prefix pc --keys none
check_eq "fork create -q exit" 0 "$RC"
no_progress create_quiet
on_pty teardown_noprog --no-progress teardown --source prog-src --prefix pc
check_eq "teardown --no-progress exit" 0 "$RC"
no_progress teardown_noprog
on_pipe teardown_none --progress none fork create prog-src -n 4 --prefix pn --keys none
no_progress teardown_none
tf teardown --source prog-src --prefix pn >/dev/null

step "--progress json: one event per line, on a terminal and on a pipe, even with -q"
on_pty json_create --progress json -q fork create prog-src -n 5 --prefix pj --manifest "$WORK/pj.json"
check_eq "fork create --progress json exit" 0 "$RC"
on_pipe json_teardown --progress json teardown --manifest "$WORK/pj.json"
check_eq "teardown --progress json exit" 0 "$RC"
python3 - "$WORK/json_create.err" "$WORK/json_teardown.err" <<'PY' || fail "--progress json: $(cat "$WORK/json_create.err" "$WORK/json_teardown.err")"
import json, sys
def events(path):
    text = open(path, "rb").read().decode()
    assert "\x1b" not in text, "terminal controls among the events"
    return [json.loads(line) for line in text.replace("\r\n", "\n").splitlines() if line.strip()]
create, teardown = events(sys.argv[1]), events(sys.argv[2])
assert [e["event"] for e in create] == ["phase_started"] + ["item"] * 5 + ["phase_ended"], create
items = [e for e in create if e["event"] == "item"]
assert sorted(e["item"] for e in items) == ["pj-%d" % i for i in range(1, 6)], items
assert all(e["phase"] == "forks" and e["status"] == "created" and e["total"] == 5 for e in items)
assert [e["done"] for e in items] == [1, 2, 3, 4, 5]
assert all(isinstance(e["request_id"], str) and e["request_id"] for e in items), items
assert create[-1] == {**create[-1], "event": "phase_ended", "done": 5, "failed": 0, "total": 5}
assert isinstance(create[-1]["seconds"], (int, float))
phases = [e["phase"] for e in teardown if e["event"] == "phase_started"]
assert phases == ["checks", "forks", "snapshots"], phases
deleted = [e for e in teardown if e["event"] == "item" and e["phase"] == "forks"]
assert len(deleted) == 5 and all(e["status"] == "deleted" for e in deleted), deleted
PY

step "bucket rm on a terminal counts a failure (a bucket that is not empty)"
for i in 1 2 3 4; do tf bucket create "prog-rm-$i" >/dev/null; done
s3 PUT /prog-rm-4/object --body hello
check_status 200
on_pty bucket_rm bucket rm prog-rm-1 prog-rm-2 prog-rm-3 prog-rm-4
check_eq "bucket rm with one non-empty bucket exit (partial)" 7 "$RC"
check_terminal bucket_rm - buckets:4/4:1
on_pipe bucket_rm_pipe bucket rm prog-rm-4 --force --yes
check_eq "bucket rm --force exit" 0 "$RC"
no_progress bucket_rm_pipe  # one bucket: too quick for a line

step "snapshot rm of many versions on a terminal"
versions=()
for i in 1 2 3 4 5; do versions+=("$(tf snapshot take prog-src)"); done
on_pty snapshot_rm snapshot rm prog-src "${versions[@]}"
check_eq "snapshot rm exit" 0 "$RC"
check_terminal snapshot_rm - snapshots:5/5

step "while nothing finishes, the line still moves, and a log gets a line every few seconds"
for i in 1 2 3 4 5 6 7 8; do tf bucket create "prog-slow-$i" >/dev/null; done
stop_server
start_server --latency 6000  # every answer 6 s late: longer than the plain lines' interval
on_pty slow bucket rm prog-slow-1 prog-slow-2 prog-slow-3 prog-slow-4
check_eq "slow bucket rm exit" 0 "$RC"
check_terminal slow - buckets:4/4
# Redrawn with nothing done yet (0/4 in its checks or its deletes, whenever the tick came) and at least a second gone: the
# line is alive, not only a counter. No bound on the seconds: the line itself says none is done.
grep -qE $'\r\e\\[K(checks|buckets) 0/4, ([1-9][0-9]*\\.[0-9]|[1-9][0-9]*)s' "$WORK/slow.err" ||
  fail "no tick while waiting: $(od -c "$WORK/slow.err" | head -20)"
on_pipe slow_pipe bucket rm prog-slow-5 prog-slow-6 prog-slow-7 prog-slow-8
check_eq "slow bucket rm (pipe) exit" 0 "$RC"
check_plain slow_pipe - buckets:4/4
grep -qE '^tfork: (checks|buckets) 0/4, [0-9.]+s$' "$WORK/slow_pipe.err" ||
  fail "no plain line while waiting: $(cat "$WORK/slow_pipe.err")"
