#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every C++ file is formatted with the committed .clang-format.
set -euo pipefail
cd "${TFORK_SOURCE_DIR:?}"
command -v clang-format >/dev/null || { echo "SKIP: clang-format is not installed"; exit 125; }
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' 2>/dev/null || find src include tests -name '*.[ch]pp')
clang-format --dry-run --Werror "${files[@]}"
echo "formatted: ${#files[@]} files"
