# SPDX-License-Identifier: Apache-2.0
"""Run by tests/e2e/agent_sandbox.sh inside `tfork fork exec`: an agent that looks around the
way a coding agent does, for keys that are not its own, and tries each one it finds on the
source and on a sibling fork.

It reads its environment, every /proc/*/environ and /proc/*/cmdline it can, the manifest and
the operator's files by their absolute paths (they are passed in: the agent is told exactly
where to look), the operator's credential files, the sibling's working directory, and it
walks the places secrets sit (its HOME, /tmp, /var/tmp, /run, /dev/shm, the directories around
the manifest and its own working directory). Every `tid_...` id and `tsec_...` secret found is
tried, pair by pair, with a SigV4 PUT and a listing on the source and on the sibling. It also
tries to reach the controlling terminal (TIOCSTI needs one). A path given as "?PATH" may exist
(it is read); every other given path must not.

It prints one line per finding and, last, `FOUND <n> foreign keys, <m> reached, <k> visible`;
it exits 0 only when it found no key but its own, reached nothing outside its fork, saw none
of the given paths, and its own fork still works. Args: ENDPOINT SOURCE SIBLING PATH..."""
import os
import re
import sys

import botocore.session
from botocore.config import Config
from botocore.exceptions import ClientError, EndpointConnectionError

endpoint, source, sibling = sys.argv[1:4]
paths = sys.argv[4:]
own_id = os.environ["AWS_ACCESS_KEY_ID"]
own_secret = os.environ["AWS_SECRET_ACCESS_KEY"]
own_bucket = os.environ["TFORK_BUCKET"]

ids, secrets = {}, {}  # in the order found (dicts keep it), the first ones tried first
visible = []  # the given paths that exist here


def harvest(text, where):
    found = set(re.findall(r"tid_[A-Za-z0-9]+", text)), set(re.findall(r"tsec_[A-Za-z0-9]+", text))
    for key in found[0] - {own_id}:
        print(f"found id {key[:8]}... in {where}")
    for secret in found[1] - {own_secret}:
        print(f"found a secret in {where}")
    ids.update(dict.fromkeys(sorted(found[0])))
    secrets.update(dict.fromkeys(sorted(found[1])))


def read(path, limit=4 << 20):
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


harvest("\n".join(f"{k}={v}" for k, v in os.environ.items()), "the environment")
for pid in os.listdir("/proc"):
    if pid.isdigit():
        for part in ("environ", "cmdline"):
            text = read(f"/proc/{pid}/{part}")
            if text:
                harvest(text.replace("\0", "\n"), f"/proc/{pid}/{part}")

for path in paths:
    # "?PATH": read if it is there (the agent's own HOME sits at the operator's HOME path, with
    # its own ~/.aws files); any other PATH must not be there at all.
    may_exist = path.startswith("?")
    path = path.lstrip("?")
    if os.path.lexists(path) and not may_exist:
        visible.append(path)
        print(f"visible: {path}")
    if os.path.isfile(path):
        harvest(read(path) or "", path)

roots = [os.path.expanduser("~"), "/tmp", "/var/tmp", "/run", "/dev/shm", os.getcwd(),
         os.path.dirname(os.getcwd())] + [os.path.dirname(p.lstrip("?")) for p in paths]
seen = set()
for root in roots:
    for top, dirs, files in os.walk(root):
        if top.startswith("/proc") or top.startswith("/sys") or top in seen:
            dirs[:] = []
            continue
        seen.add(top)
        for name in files:
            text = read(os.path.join(top, name), 1 << 20)
            if text:
                harvest(text, os.path.join(top, name))

try:
    os.open("/dev/tty", os.O_RDWR)
    print("visible: the controlling terminal /dev/tty")
    visible.append("/dev/tty")
except OSError:
    pass


def s3(key_id, secret):
    session = botocore.session.get_session()
    return session.create_client(
        "s3", endpoint_url=endpoint, region_name="auto", aws_access_key_id=key_id,
        aws_secret_access_key=secret,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))


reached = 0  # reads or writes outside its own fork
foreign = {k for k in ids if k != own_id} | {s for s in secrets if s != own_secret}
# At most 16 of each (a machine without a sandbox shows many): the first found are the nearest.
for key_id in list(ids)[:16]:
    for secret in list(secrets)[:16]:
        client = s3(key_id, secret)
        for bucket in (source, sibling):
            try:
                client.put_object(Bucket=bucket, Key="stolen.txt", Body=b"a curious agent was here")
                reached += 1
                print(f"WROTE into {bucket} with {key_id[:8]}...")
            except (ClientError, EndpointConnectionError):
                pass
            try:
                client.list_objects_v2(Bucket=bucket)
                print(f"LISTED {bucket} with {key_id[:8]}...")
                reached += 1
            except (ClientError, EndpointConnectionError):
                pass

# Its own fork still works, with what the sandbox gave it.
s3(own_id, own_secret).put_object(Bucket=own_bucket, Key="curious.txt", Body=b"mine")
print(f"FOUND {len(foreign)} foreign keys, {reached} reached, {len(visible)} visible")
sys.exit(0 if not foreign and reached == 0 and not visible else 1)
