#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end (issue 26 §2): runs that clean up after themselves in CI. A failed fork create
# leaves no timestamped manifest behind when it made nothing; --json names the manifest; and
# `fork env` speaks GitHub Actions, Kubernetes and fish. The real binary against `tfork serve`.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_cmd python3
start_server
OUT="$WORK/out"
mkdir -p "$OUT" "$WORK/run"
cd "$WORK/run"

step "setup"
expect_rc "bucket create" 0 tf bucket create ci-data --snapshots
s3 PUT /ci-data/a.txt --body one
check_status 200

step "--json names the manifest it wrote"
expect_rc "fork create --json" 0 tf fork create ci-data -n 2 --prefix ci --manifest ci.json --json
check_eq "manifest" ci.json "$(json_get 'd["manifest"]' <"$OUT/stdout")"
expect_rc "fork create --keys none --json" 0 tf fork create ci-data -n 1 --prefix nokey --keys none --json
check_eq "no manifest" null "$(json_get 'd["manifest"]' <"$OUT/stdout")"
expect_rc "teardown nokey" 0 tf teardown nokey-1 -q

step "a failed fork create that made nothing leaves no timestamped manifest"
dead=http://127.0.0.1:$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
expect_rc "fork create, IAM down, default manifest" 5 tf fork create ci-data -n 2 --iam-endpoint-url "$dead" --json
check_eq "manifest in the output" null "$(json_get 'd["manifest"]' <"$OUT/stdout")"
check_eq "rolled back" "rolled-back rolled-back" "$(json_get '" ".join(f["status"] for f in d["forks"])' <"$OUT/stdout")"
check_eq "manifests left here" "" "$(ls ./*.manifest.json 2>/dev/null || true)"
expect_rc "fork create, a snapshot that is not there" 3 tf fork create ci-data -n 2 --snapshot nosuch
check_eq "manifests left here" "" "$(ls ./*.manifest.json 2>/dev/null || true)"
expect_rc "a failed create with --manifest keeps the file it was asked for" 5 \
  tf fork create ci-data -n 1 --prefix asked --manifest asked.json --iam-endpoint-url "$dead"
[[ -f asked.json ]] || fail "asked.json was removed"

step "fork env --format github: the variables appended to \$GITHUB_ENV, the secret masked"
secret=$(json_get '[f["secret_access_key"] for f in d["forks"]][0]' <ci.json)
key=$(json_get '[f["access_key_id"] for f in d["forks"]][0]' <ci.json)
expect_rc "without GITHUB_ENV" 64 env -u GITHUB_ENV "$TFORK" fork env --manifest ci.json 1 --format github
check_contains "says why" "$(stderr)" "GITHUB_ENV is not set"
printf 'EARLIER=kept\n' >"$WORK/github_env"
expect_rc "with GITHUB_ENV" 0 env GITHUB_ENV="$WORK/github_env" "$TFORK" fork env --manifest ci.json 1 --format github
check_eq "stdout: one mask, for the secret" "::add-mask::$secret" "$(cat "$OUT/stdout")"
check_not_contains "the key on stdout" "$(stdout)" "$key"
# Read back as the runner reads the file: NAME=value lines and NAME<<DELIMITER blocks.
parsed=$(python3 - "$WORK/github_env" <<'PY'
import sys
lines = open(sys.argv[1]).read().split("\n")
env, i = {}, 0
while i < len(lines):
    line = lines[i]; i += 1
    if not line: continue
    if "<<" in line:
        name, delim = line.split("<<", 1); value = []
        while lines[i] != delim: value.append(lines[i]); i += 1
        i += 1; env[name] = "\n".join(value)
    else:
        name, value = line.split("=", 1); env[name] = value
print(env["EARLIER"], env["AWS_ACCESS_KEY_ID"], env["TFORK_BUCKET"], env["AWS_ENDPOINT_URL_S3"])
PY
)
check_contains "earlier lines kept, the key and fork appended" "$parsed" "kept $key ci-1"
check_contains "the endpoint" "$parsed" "$AWS_ENDPOINT_URL"
grep -qF "$secret" "$WORK/github_env" || fail "the secret is not in \$GITHUB_ENV"
expect_rc "GITHUB_ENV naming a file not there yet" 0 env GITHUB_ENV="$WORK/new_github_env" \
  "$TFORK" fork env --manifest ci.json 1 --format github
check_eq "a file made for the secret is the owner's alone" 600 "$(stat -c %a "$WORK/new_github_env")"

step "fork env --format k8s-secret: a Secret with the variables as stringData"
expect_rc "k8s-secret" 0 tf fork env --manifest ci.json ci-2 --format k8s-secret
check_contains "kind" "$(stdout)" "kind: Secret"
check_contains "name" "$(stdout)" 'name: "tfork-ci-2"'
key2=$(json_get '[f["access_key_id"] for f in d["forks"]][1]' <ci.json)
check_contains "the key" "$(stdout)" "  AWS_ACCESS_KEY_ID: \"$key2\""

step "fork env --format fish: fish sets exactly what the POSIX form sets"
if command -v fish >/dev/null; then
  expect_rc "fish" 0 tf fork env --manifest ci.json 1 --format fish
  got=$(AWS_PROFILE=operator fish --no-config -c "source $OUT/stdout; echo \$AWS_ACCESS_KEY_ID; set -q AWS_PROFILE; and echo profile-left; or echo profile-gone")
  check_eq "the key, and no profile" "$key
profile-gone" "$got"
else
  skip "fish is not installed (scripts/bootstrap installs it): fish format unchecked"
fi

expect_rc "teardown" 0 tf teardown --manifest ci.json -q
expect_rc "teardown asked" 0 tf teardown --manifest asked.json -q --iam-endpoint-url "$AWS_ENDPOINT_URL"
