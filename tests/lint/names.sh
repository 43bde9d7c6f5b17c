#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Constants are named k_snake_case (style.md); a kCamelCase constant beside them reads as a
# second convention.
set -euo pipefail
cd "${TFORK_SOURCE_DIR:-$(dirname "$0")/../..}"
command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1 || {
  echo "SKIP names.sh: not a git checkout" >&2
  exit 125
}
mapfile -t files < <(git ls-files '*.cpp' '*.hpp')
if found=$(grep -nwE 'k[A-Z][A-Za-z0-9]*' "${files[@]}"); then
  echo "FAIL names.sh: kCamelCase names (write k_snake_case):" >&2
  echo "$found" >&2
  exit 1
fi
echo "names: no kCamelCase constants in ${#files[@]} files"
