#!/usr/bin/env bash
# The README's two set-up commands (make demo / make test are aliases of these):
#
#   ./setup.sh demo   install rush into .venv/ and compare FCFS/SPF/SAF/WFP3/F1 on the embedded
#                     synthetic Lublin workload; plots in runs/demo/plots
#   ./setup.sh test   install the system packages the tests use (Slurm, munge, Prometheus,
#                     OpenMPI, ...), rush with every extra into .venv/, and run the test suite
#                     (extra arguments go to pytest, e.g. ./setup.sh test tests/simulator), one
#                     pytest-xdist worker per core and one more, the 40 slowest tests and the
#                     slowest xdist groups listed at the end
#
# Needs only Debian 12's python3 (and root or sudo when a Debian package is missing). Both
# commands install the same editable rush into the project's virtual environment .venv/, in
# either order and as often as you like: never into the system Python (PEP 668 forbids it on
# Debian 12), and never a second, non-editable copy (its numba cache files would shadow the
# editable install).
set -euo pipefail
cd "$(dirname "$0")"

VENV="${RUSH_VENV:-.venv}"
PY="$VENV/bin/python"
# The rush that the environment imports is this checkout's (editable) one.
IS_OURS='import os, sys, rush.cli.main; sys.exit(os.path.dirname(os.path.dirname(os.path.realpath(rush.__file__))) != os.path.realpath("."))'

die() {
  echo "setup.sh: error: $1" >&2
  [ -n "${2:-}" ] && echo "  fix: $2" >&2
  exit 2
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    die "installing Debian packages needs root: $*" "run this script as root, or install sudo"
  fi
}

apt_install() {
  command -v apt-get >/dev/null 2>&1 || die "missing system packages: $*" "install them with your package manager"
  echo "setup.sh: installing Debian packages: $*"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

ensure_venv() {
  if [ -x "$PY" ] && "$PY" -m pip --version >/dev/null 2>&1; then
    return
  fi
  command -v python3 >/dev/null 2>&1 || die "python3 not found" "apt-get install python3"
  python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
    die "rush needs Python >= 3.11, found $(python3 --version 2>&1)" "use Debian 12 or newer"
  if [ -e "$VENV" ]; then
    [ -f "$VENV/pyvenv.cfg" ] || die "$VENV exists and is not a virtual environment" "move it away, or set RUSH_VENV"
    rm -rf "$VENV"  # a half-made environment (no pip) from an interrupted run
  fi
  # Debian ships venv's pip bootstrap (ensurepip) in a separate package, python3-venv.
  if ! python3 -m venv "$VENV" >/dev/null 2>&1; then
    rm -rf "$VENV"
    apt_install python3-venv
    python3 -m venv "$VENV"
  fi
}

install_rush() {
  local extras="$1"
  local stamp="$VENV/.rush-install"
  local want
  want="$(cat pyproject.toml; echo "extras=$extras"; pwd)"
  want="$(printf '%s' "$want" | "$PY" -c 'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')"
  # A non-editable copy (e.g. an earlier `pip install .`) leaves rush/ in site-packages, whose
  # __pycache__ (numba's cache, before it moved to ~/.cache/rush/numba) turns it into a
  # namespace package hiding the editable install.
  local purelib
  purelib="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  if [ -d "$purelib/rush" ]; then
    echo "setup.sh: removing a non-editable copy of rush from $purelib"
    "$PY" -m pip uninstall -y -q rush >/dev/null 2>&1 || true
    rm -rf "$purelib/rush"
  fi
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && "$PY" -c "$IS_OURS" 2>/dev/null; then
    echo "setup.sh: rush is installed in $VENV (up to date)"
  else
    echo "setup.sh: installing rush (editable${extras:+, extras: $extras}) into $VENV"
    "$PY" -m pip install -q --disable-pip-version-check -e ".${extras:+[$extras]}"
    echo "$want" >"$stamp"
  fi
  # Compile the numba kernels now rather than at the first simulation (about 30 s, once).
  "$VENV/bin/rush" warmup
}

demo() {
  ensure_venv
  install_rush ""
  "$VENV/bin/rush" compare lublin --policies FCFS,SPF,SAF,WFP3,F1 --out runs/demo
  "$VENV/bin/rush" report runs/demo --out runs/demo/plots
  echo "setup.sh: plots in runs/demo/plots; run rush as $VENV/bin/rush (or: source $VENV/bin/activate)"
}

# Whether to build the vendored RJMS beside the first tests: when ../shared/vendor is there,
# no vendored build is (a fresh machine), and the builds can run unattended (root, or sudo
# without a password: a background sudo cannot ask for one).
beside_builds() {
  case "${RUSH_TEST_BESIDE_BUILDS:-}" in
    1) return 0 ;;
    0) return 1 ;;
  esac
  [ -d ../shared/vendor ] || return 1
  [ "$(id -u)" -eq 0 ] || sudo -n true 2>/dev/null || return 1
  local flux="${RUSH_FLUX_PREFIX:-}"
  if [ -z "$flux" ] && command -v flux >/dev/null 2>&1; then
    return 1  # a flux installed by other means: the builds are the site's, not ours
  fi
  [ -x "${flux:-/opt/flux-core}/bin/flux" ] && return 1
  [ -f "${RUSH_SLURM_25_PREFIX:-/opt/slurm-25.11}/.built-from" ] && return 1
  return 0
}

# The test command's settings, checked before anything is installed (a typo must not cost the
# minutes of Debian packages and the environment first).
check_test_settings() {
  case "${RUSH_TEST_BESIDE_BUILDS:-}" in
    1 | 0 | "") ;;
    *) die "RUSH_TEST_BESIDE_BUILDS must be 1 or 0, not '$RUSH_TEST_BESIDE_BUILDS'" "unset it, or set it to 1 or 0" ;;
  esac
  [[ "${RUSH_TEST_WORKERS:-0}" =~ ^[0-9]+$ ]] ||
    die "RUSH_TEST_WORKERS must be a number of workers, not '$RUSH_TEST_WORKERS'" "unset it, or set it to e.g. 2 (0: no workers)"
}

run_tests() {
  check_test_settings
  bash .ci/install-deps.sh
  ensure_venv
  install_rush "test,mpi,cassandra,dask"
  # XNES for the mixed-policy study comes from pypop7, whose declared dependencies (nevergrad,
  # gymnasium, seaborn, ...) its XNES does not use: installed without them.
  "$PY" -c 'import pypop7' 2>/dev/null ||
    "$PY" -m pip install -q --disable-pip-version-check --no-deps pypop7==0.0.82
  export RUSH_TRACE_MIRROR="${RUSH_TRACE_MIRROR:-$(cd .. && pwd)/shared/traces}"
  # One pytest-xdist worker per core and one more (RUSH_TEST_WORKERS overrides; 0 runs in this
  # process): the live Slurm groups, which go out first, mostly wait on real jobs (the replay
  # fidelity tests used 17 % of a core), so the extra worker keeps both cores busy meanwhile.
  # loadgroup keeps each group on one worker: one per Slurm install, so its cluster starts
  # once, and one per module for the rest (tests/conftest.py). Arguments given after
  # `test` come last, so `-n 0` there wins.
  local workers="${RUSH_TEST_WORKERS:-$(($(nproc 2>/dev/null || echo 1) + 1))}"
  local rc=0
  # The RJMS builds the suite runs against beside Debian's Slurm 22.05, from ../shared/vendor
  # (cached: minutes the first time, seconds after; nothing is built when it is absent and
  # those tests skip with the reason). On a machine that has none of them yet, they run in the
  # background while Debian Slurm's live tests run (RUSH_TEST_BESIDE_BUILDS=1 forces it, 0
  # turns it off).
  if beside_builds; then
    bash .ci/pytest-beside-builds.sh "$PY" "$workers" "$@" || rc=$?
  else
    bash .ci/vendor-flux.sh "$PY"
    bash .ci/vendor-slurm.sh
    bash .ci/vendor-pyslurm.sh "$PY"
    # --durations=40: the figures tests/slow_tests.txt keeps (the groups' order) come from it.
    "$PY" -m pytest -q -ra -n "$workers" --dist loadgroup --durations=40 "$@" || rc=$?
  fi
  if [ "$rc" -eq 5 ]; then
    echo "setup.sh: error: pytest collected no tests" >&2  # an empty run must not pass CI
  fi
  return "$rc"
}

case "${1:-}" in
  demo) shift; demo ;;
  test) shift; run_tests "$@" ;;
  install) shift; ensure_venv; install_rush "${1:-}" ;;
  *)
    echo "usage: ./setup.sh demo | test [PYTEST ARGS] | install [EXTRAS]" >&2
    exit 2
    ;;
esac
