#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every command's --help has the same shape (issue 26 §4): arguments named as the rest of the
# help names them (upper case), values named in words (no CLI11 type such as TEXT or
# UINT:INT 1-100000), the global options it honours, and examples that are real command lines.
set -euo pipefail
: "${TFORK:?}"
failed=0
complain() { echo "$*"; failed=1; }
while read -r command; do
  help=$("$TFORK" $command --help)
  # CLI11's own type words, its range text and its REQUIRED marker.
  if leak=$(grep -nE '\b(TEXT|UINT|INT|FLOAT|BOOLEAN)\b|:[A-Z]+ in \[|\{[a-z-]+,[a-z,-]+\}| REQUIRED\b' <<<"$help"); then
    complain "tfork $command --help leaks CLI11 wording: $leak"
  fi
  # Arguments are upper case, as the usage line and the man page name them.
  while read -r argument; do
    [[ -z "$argument" ]] && continue
    [[ "$argument" =~ ^[A-Z]+$ ]] || complain "tfork $command: argument '$argument' is not upper case"
  done < <(sed -n '/^Arguments:/,/^$/p' <<<"$help" | sed '1d' | awk '{print $1}')
  grep -q '^Global options (see tfork --help):' <<<"$help" ||
    complain "tfork $command --help does not list the global options it honours"
  grep -q -- '--verbose' <<<"$(sed -n '/^Global options/,/^$/p' <<<"$help")" ||
    complain "tfork $command --help: the global options lack --verbose"
  examples=$(sed -n '/^Examples:/,/^$/p' <<<"$help" | sed '1d' | sed 's/^  //')
  [[ -n "$examples" ]] || complain "tfork $command --help has no examples"
  # Each example is a command line of this command, and every option it uses is one this help
  # lists (its own, or a global one it honours).
  while read -r example; do
    [[ -z "$example" ]] && continue
    line=${example#*\$(}
    line=${line#\( eval \"\$(}
    [[ "$line" == "tfork $command"* ]] || { complain "tfork $command: example is not of this command: $example"; continue; }
    line=${line%% -- *}
    for option in $(grep -oE -- '(^| )--?[a-z][a-z0-9-]*' <<<"$line"); do
      grep -qE -- "(^|[ ,])$option([ ,=]|$)" <<<"$help" ||
        complain "tfork $command: example uses $option, which its help does not list: $example"
    done
  done <<<"$examples"
done <"$(dirname "${BASH_SOURCE[0]}")/leaf_commands.txt"
# A value's own name is shown whole, colons and all (a formatter that cut at the first colon
# showed `--listen HOST`).
for expect in 'serve|--listen HOST:PORT' 'mcp|--listen HOST:PORT' 'fork exec|--bind SRC[:DST]' \
  'fork exec|--ro-bind SRC[:DST]'; do
  command=${expect%%|*} want=${expect#*|}
  "$TFORK" $command --help | grep -qF -- "$want " ||
    complain "tfork $command --help does not show '$want'"
done
exit $failed
