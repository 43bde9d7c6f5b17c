#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# man/tfork.1 renders without warnings, and documents every subcommand and global option
# that `tfork --help` shows.
set -euo pipefail
cd "${TFORK_SOURCE_DIR:?}"
warnings=$(MANWIDTH=100 man --warnings -l man/tfork.1 2>&1 >/dev/null)
[[ -z "$warnings" ]] || { echo "man warnings:"; echo "$warnings"; exit 1; }
page=$(MANWIDTH=200 man -l man/tfork.1 2>/dev/null | col -b)
missing=0
for option in $("${TFORK:?}" --help | grep -oE -- '--[a-z][a-z0-9-]+' | sort -u); do
  [[ "$option" == --help || "$option" == --version ]] && continue
  grep -q -- "$option" <<<"$page" || { echo "man page lacks global option $option"; missing=1; }
done
for command in $("$TFORK" --help | awk '/^Subcommands:/{on=1; next} on && /^  [a-z]/ {print $1}'); do
  grep -qE "tfork $command|^ *$command" <<<"$page" || { echo "man page lacks command $command"; missing=1; }
done
# Each subcommand's own options (from its --help, up to the global options).
while read -r command; do
  for option in $("$TFORK" $command --help | sed -n '/^Options:/,/^Global options:/p' |
                  grep -oE -- '--[a-z][a-z0-9-]+' | sort -u); do
    [[ "$option" == --help ]] && continue
    grep -q -- "$option" <<<"$page" || { echo "man page lacks $command $option"; missing=1; }
  done
# Every leaf command but `version`, which has no options of its own.
done < <(grep -v '^version$' tests/lint/leaf_commands.txt)
exit $missing
