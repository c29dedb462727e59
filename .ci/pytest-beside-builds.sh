#!/usr/bin/env bash
# The test suite on a machine that has none of the vendored RJMS builds yet (./setup.sh test
# calls it then): the builds (.ci/vendor-flux.sh, vendor-slurm.sh, vendor-pyslurm.sh: flux-core,
# flux-accounting, Fluxion, Slurm 25.11 and pyslurm, about 15 min on 2 cores the first time)
# run in the background, niced, while the tests that need none of them run: Debian Slurm
# 22.05's live tests, which mostly wait on real jobs (RUSH_TEST_PART=debian-slurm,
# tests/xdist_groups.py). Then every other test, once the builds are done (RUSH_TEST_PART=rest).
# The two parts are complementary by construction: together they are the whole selection, each
# test once.
#
# Usage: .ci/pytest-beside-builds.sh VENV_PYTHON WORKERS [PYTEST ARGS]
# Exit status: a failed build fails the run (its log's tail printed, the second part not run);
# otherwise pytest's, the first part's failure first; "no tests" (5) only if neither part ran any.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${1:?usage: .ci/pytest-beside-builds.sh VENV_PYTHON WORKERS [PYTEST ARGS]}"
workers="${2:?usage: .ci/pytest-beside-builds.sh VENV_PYTHON WORKERS [PYTEST ARGS]}"
shift 2

log="$(mktemp "${TMPDIR:-/tmp}/rush-vendor-builds.XXXXXX")"
echo "setup.sh: building the vendored RJMS in the background (log: $log);" \
  "meanwhile the tests that need none of them (Debian Slurm's live tests)"
# One chain, in the order ./setup.sh runs them (each script may apt-get: never two at once).
nice -n 10 bash -c 'set -e; bash .ci/vendor-flux.sh "$1"; bash .ci/vendor-slurm.sh; bash .ci/vendor-pyslurm.sh "$1"' \
  _ "$PY" >"$log" 2>&1 &
builds=$!
# The builds must not outlive an interrupted run.
trap 'kill "$builds" 2>/dev/null || true; exit 130' INT TERM

pytest_part() {
  local part="$1"
  shift
  RUSH_TEST_PART="$part" "$PY" -m pytest -q -ra -n "$workers" --dist loadgroup --durations=40 "$@"
}

first=0
# tests/flux is not collected in this part: none of its tests is in it, and a module there that
# checks for Flux at import would find it half-installed.
pytest_part debian-slurm --ignore=tests/flux "$@" || first=$?
echo "setup.sh: waiting for the vendored builds (log: $log)"
built=0
wait "$builds" || built=$?
trap - INT TERM
if [ "$built" -ne 0 ]; then
  tail -40 "$log" >&2
  echo "setup.sh: error: the vendored builds failed (exit $built); the whole log: $log" >&2
  echo "  fix: see the log above; ./setup.sh test rebuilds what is missing" >&2
  exit 1
fi
grep -E '^(vendor-|/)' "$log" || true  # what the build scripts said (prefixes, installs)
second=0
pytest_part rest "$@" || second=$?

echo "setup.sh: tests beside the builds: pytest exit $first; the rest: pytest exit $second"
for rc in "$first" "$second"; do
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ]; then
    exit "$rc"
  fi
done
if [ "$first" -eq 5 ] && [ "$second" -eq 5 ]; then
  exit 5
fi
exit 0
