#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end: `tfork completion bash|zsh|fish`.
#  1. The committed scripts under completions/ equal the command's output (no drift).
#  2. Each script parses in its shell (bash -n, zsh -n, fish -n).
#  3. Each completes for real:
#     bash  calls _tfork with COMP_WORDS/COMP_CWORD and reads COMPREPLY;
#     fish  uses its own non-interactive `complete -C 'tfork fo'`;
#     zsh   runs an interactive `zsh -f -i` under zsh/zpty with the committed _tfork on
#           $fpath and compinit, types "tfork fo<TAB>" and reads the redrawn line, so the
#           whole completion system (compdef, _describe, prefix matching) is exercised.
# Needs no server. Exit 0 pass, 1 fail, 125 skip.
set -euo pipefail

SOURCE_DIR=${TFORK_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
TFORK=${TFORK:-$SOURCE_DIR/build/tfork}
COMPLETIONS="$SOURCE_DIR/completions"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tfork-e2e-completion.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

fail() {
  printf 'FAIL completion.sh: %s\n' "$*" >&2
  exit 1
}
step() { printf '== completion.sh: %s\n' "$*" >&2; }
check_eq() { [[ "$2" == "$3" ]] || fail "$1: expected [$2], got [$3]"; }

[[ -x "$TFORK" ]] || {
  echo "SKIP completion.sh: no tfork binary at $TFORK" >&2
  exit 125
}
# All three shells or a visible skip: a pass must mean every script was tried in its shell.
for shell in zsh fish; do
  command -v "$shell" >/dev/null 2>&1 || {
    echo "SKIP completion.sh: $shell is not installed (scripts/bootstrap installs it)" >&2
    exit 125
  }
done

step "committed scripts equal the command's output"
for pair in bash:tfork.bash zsh:_tfork fish:tfork.fish; do
  shell=${pair%%:*} file=${pair#*:}
  "$TFORK" completion "$shell" >"$WORK/$file" || fail "tfork completion $shell failed"
  diff -u "$COMPLETIONS/$file" "$WORK/$file" >&2 ||
    fail "completions/$file differs from 'tfork completion $shell' (regenerate: build/tfork completion $shell > completions/$file)"
done
rc=0
"$TFORK" completion tcsh >/dev/null 2>&1 || rc=$?
check_eq "completion of an unknown shell" 64 "$rc"

step "bash"
bash -n "$COMPLETIONS/tfork.bash" || fail "bash -n"
bash_complete() { # bash_complete WORD... : the candidates for the last word
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _tfork; echo "${COMPREPLY[*]}"' \
    _ "$COMPLETIONS/tfork.bash" "$@"
}
check_eq "bash: tfork fo" "fork" "$(bash_complete tfork fo)"
check_eq "bash: tfork fork h" "head" "$(bash_complete tfork fork h)"
check_eq "bash: tfork --json fork h (global flag first)" "head" "$(bash_complete tfork --json fork h)"
check_eq "bash: tfork snapshot ''" "ls prune rm take" "$(bash_complete tfork snapshot '')"
check_eq "bash: tfork bucket create x --s" "--snapshots" "$(bash_complete tfork bucket create x --s)"
check_eq "bash: tfork snapshot prune x --k" "--keep-last" "$(bash_complete tfork snapshot prune x --k)"
check_eq "bash: tfork snapshot prune x --u" "--unused" "$(bash_complete tfork snapshot prune x --u)"
check_eq "bash: tfork bucket ls --f" "--forks-of" "$(bash_complete tfork bucket ls --f)"
check_eq "bash: tfork bucket ls --t" "--tree" "$(bash_complete tfork bucket ls --t)"
check_eq "bash: tfork --output ''" "table json" "$(bash_complete tfork --output '')"
check_eq "bash: tfork fork ls x -o j (global after subcommand)" "json" "$(bash_complete tfork fork ls x -o j)"
check_eq "bash: tfork fork create s --keys ''" "editor readonly none" "$(bash_complete tfork fork create s --keys '')"
check_eq "bash: tfork completion ''" "bash zsh fish" "$(bash_complete tfork completion '')"
check_eq "bash: tfork fork exec --sandbox ''" "auto bwrap none" "$(bash_complete tfork fork exec --sandbox '')"
check_eq "bash: tfork run s --keep-on" "--keep-on-interrupt" "$(bash_complete tfork run s --keep-on)"
check_eq "bash: tfork fork exec --ro" "--ro-bind" "$(bash_complete tfork fork exec --ro)"
check_eq "bash: tfork run s --u" "--usage" "$(bash_complete tfork run s --u)"
check_eq "bash: --output=j" "json" "$(bash_complete tfork --output = j)"
mkdir -p "$WORK/files" && : >"$WORK/files/ca.pem"
check_eq "bash: --ca-bundle completes files" "$WORK/files/ca.pem" "$(bash_complete tfork --ca-bundle "$WORK/files/c")"

step "fish"
fish -n "$COMPLETIONS/tfork.fish" || fail "fish -n"
fish_complete() { # the candidate words (descriptions dropped) for a command line
  fish -c 'source $argv[1]; complete -C $argv[2]' "$COMPLETIONS/tfork.fish" "$1" | cut -f1 | tr '\n' ' ' | sed 's/ $//'
}
check_eq "fish: tfork fo" "fork" "$(fish_complete 'tfork fo')"
check_eq "fish: tfork --json fork h" "head" "$(fish_complete 'tfork --json fork h')"
check_eq "fish: tfork snapshot " "ls prune rm take" "$(fish_complete 'tfork snapshot ')"
check_eq "fish: tfork -o " "json table" "$(fish_complete 'tfork -o ')"
check_eq "fish: tfork fork create s --keys " "editor none readonly" "$(fish_complete 'tfork fork create s --keys ')"
check_eq "fish: tfork completion " "bash fish zsh" "$(fish_complete 'tfork completion ')"
check_eq "fish: tfork run s --sandbox " "auto bwrap none" "$(fish_complete 'tfork run s --sandbox ')"
check_eq "fish: tfork fork exec --wo" "--workdir" "$(fish_complete 'tfork fork exec --wo')"
check_eq "fish: tfork bucket create x --ex" "--exist-ok" "$(fish_complete 'tfork bucket create x --ex')"

step "zsh"
zsh -n "$COMPLETIONS/_tfork" || fail "zsh -n"
# zsh_tab LINE PATTERN: types LINE<TAB> into an interactive zsh and reads the screen until
# it matches the glob PATTERN (escapes stripped) or a generous deadline passes; prints what
# it read. It waits for a state, never for a fixed time, so a loaded machine only makes it
# slower.
cat >"$WORK/tab.zsh" <<'ZSH'
setopt extendedglob
zmodload zsh/zpty || exit 125
zmodload zsh/datetime || exit 125
integer deadline_seconds=60
screen() { # the text of everything read so far, escape sequences and CR/BEL/BS removed
local s=${out//$'\e'\[[0-9;?]#[A-Za-z]/}
print -r -- "${s//[$'\r\a\b']/}"
}
wait_for() { # wait_for PATTERN: 0 once the screen matches, 1 at the deadline
local chunk
local -F deadline=$(( EPOCHREALTIME + deadline_seconds ))
while (( EPOCHREALTIME < deadline )); do
  if zpty -r -t z chunk; then
    out+=$chunk
    [[ "$(screen)" == $~1 ]] && return 0
  else
    sleep 0.02
  fi
done
return 1
}
zpty z 'zsh -f -i'
# The marker is printed as "READY" but typed as RE''ADY, so the terminal's echo of the
# command line cannot be mistaken for its output.
zpty -w z "PS1='>' PROMPT_EOL_MARK=''; fpath=($1 \$fpath); autoload -Uz compinit; compinit -u -D; echo RE''ADY"
out=''
wait_for '*READY*' || { print -r -- "shell did not start: $(screen)"; zpty -d z; exit 1 }
out=''
zpty -w -n z "$2"$'\t'
wait_for "$3"
rc=$?
zpty -d z
screen
exit $rc
ZSH
zsh_tab() {
  timeout 120 zsh -f "$WORK/tab.zsh" "$COMPLETIONS" "$1" "$2"
}
out=$(zsh_tab 'tfork fo' '*tfork fork *') || fail "zsh: 'tfork fo<TAB>' did not become 'tfork fork ': [$out]"
out=$(zsh_tab 'tfork fork create src --keys r' '*--keys readonly*') || fail "zsh: --keys r<TAB>: [$out]"
out=$(zsh_tab 'tfork snapshot ' '*ls*rm*take*') || fail "zsh: snapshot <TAB> lists no subcommands: [$out]"
out=$(zsh_tab 'tfork --output t' '*--output table*') || fail "zsh: --output t<TAB>: [$out]"

step "all passed"
