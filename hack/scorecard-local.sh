#!/usr/bin/env bash
# Runs the operator-sdk scorecard tests of bundle/tests/scorecard/config.yaml
# without a cluster: the very scorecard-test program the scorecard image runs
# (built from the operator-sdk module), once per test, over the bundle.
#
# scorecard-test reads the bundle from the fixed path /bundle (where the
# scorecard puts it inside the test pod), so each run happens in a private
# mount namespace with BUNDLE_DIR bind-mounted there; nothing outside this
# process sees the mount. Needs root (mount namespaces) and an existing
# /bundle directory, which it creates.
#
# usage: hack/scorecard-local.sh SCORECARD_TEST_BINARY [BUNDLE_DIR]
set -euo pipefail

bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
bundle=$(cd "${2:-bundle}" && pwd)
config=$bundle/tests/scorecard/config.yaml

# The tests are the second entrypoint word of each test in the config, so the
# set run here cannot drift from the set `operator-sdk scorecard` runs.
mapfile -t tests < <(awk '/^ *- scorecard-test$/ {getline; sub(/^ *- /, ""); print}' "$config")
if [ "${#tests[@]}" -eq 0 ]; then
  echo "no scorecard-test tests found in $config" >&2
  exit 1
fi

mkdir -p /bundle
failed=0
for t in "${tests[@]}"; do
  out=$(unshare -m sh -c 'mount --bind "$1" /bundle && exec "$2" "$3"' sh "$bundle" "$bin" "$t") || {
    echo "FAIL $t: scorecard-test exited with an error"; echo "$out"; failed=1; continue; }
  # The output is one JSON TestStatus; every result must be "pass".
  states=$(printf '%s\n' "$out" | sed -n 's/^ *"state": "\([a-z]*\)".*/\1/p')
  if [ -n "$states" ] && [ -z "$(printf '%s\n' "$states" | grep -v '^pass$')" ]; then
    echo "pass $t"
  else
    echo "FAIL $t"; echo "$out"; failed=1
  fi
done
exit $failed
