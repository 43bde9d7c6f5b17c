#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every source, build and script file the repository tracks names its licence in an SPDX
# line near its top (generated completions, data and prose are left out).
set -euo pipefail
cd "${TFORK_SOURCE_DIR:-$(dirname "$0")/../..}"
command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1 || {
  echo "SKIP spdx.sh: not a git checkout" >&2
  exit 125
}
missing=()
while IFS= read -r file; do
  case "$file" in
    completions/* | wip/* | tests/node/package*.json | *.md | *.json | *.1 | LICENSE) continue ;;
    *.cpp | *.hpp | *.h | *.in | *.mjs | *.lua | *.sh | *.py | *.cmake | */CMakeLists.txt | CMakeLists.txt) ;;
    scripts/* | .ci/*) ;;
    *) continue ;;
  esac
  head -n 3 "$file" | grep -q 'SPDX-License-Identifier: Apache-2.0' || missing+=("$file")
done < <(git ls-files)
if ((${#missing[@]})); then
  printf 'FAIL spdx.sh: no SPDX-License-Identifier line in the first 3 lines of:\n' >&2
  printf '  %s\n' "${missing[@]}" >&2
  echo "add one: python3-style '# SPDX-License-Identifier: Apache-2.0' or '// …' for C++ and JavaScript" >&2
  exit 1
fi
echo "spdx: every tracked source file carries its licence"
