#!/usr/bin/env python3
"""Adds an SPDX-License-Identifier line to every source file of the tree that lacks one."""
import pathlib, subprocess, sys
root = pathlib.Path(sys.argv[1])
files = subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True, text=True, check=True).stdout.split()
TAG = "SPDX-License-Identifier: Apache-2.0"
slash = {".cpp", ".hpp", ".h", ".in", ".mjs", ".js"}
hashc = {".sh", ".py", ".cmake", ".txt"}
changed = 0
for name in files:
    p = root / name
    if name.startswith(("tests/node/package", "completions/")) or name.endswith((".json", ".md")):
        continue
    suffix = p.suffix
    base = p.name
    if base in ("CMakeLists.txt",) or suffix in hashc or (suffix == "" and name.startswith(("scripts/", ".ci/"))):
        comment = "# " + TAG
    elif suffix in slash:
        comment = "// " + TAG
    else:
        continue
    if suffix == ".txt" and base != "CMakeLists.txt":
        continue
    text = p.read_text()
    if TAG in text[:400]:
        continue
    lines = text.split("\n")
    if lines and lines[0].startswith("#!"):
        lines.insert(1, comment)
    else:
        lines.insert(0, comment)
    p.write_text("\n".join(lines))
    changed += 1
print(f"spdx: {changed} files")
