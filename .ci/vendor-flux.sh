#!/usr/bin/env bash
# Make a real Flux available to the tests: build flux-core 0.88 from ../shared/vendor when no
# flux is installed (cached by the vendored script: ~6 min the first time, < 1 s after), then let
# the project venv import Flux's Python bindings (a .pth file, plus the bindings' own Python
# dependencies, which flux-core's Debian build takes from apt).
#
# Fluxion (flux-sched) is built beside it, in its own prefix (/opt/flux-sched).
#
# Usage: .ci/vendor-flux.sh VENV_PYTHON      Prints the flux-core prefix on its last line.
# Without ../shared/vendor and with no flux installed it builds nothing: the Flux tests skip.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${1:?usage: .ci/vendor-flux.sh VENV_PYTHON}"
vendor="$(cd .. && pwd)/shared/vendor"

prefix="${RUSH_FLUX_PREFIX:-}"
if [ -z "$prefix" ] && command -v flux >/dev/null 2>&1; then
  prefix="$(cd "$(dirname "$(command -v flux)")/.." && pwd)"
fi
if [ -z "$prefix" ]; then
  if [ -x "$vendor/build-flux-core.sh" ]; then
    echo "vendor-flux: building flux-core from $vendor (cached after the first run)"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    prefix="$($SUDO bash "$vendor/build-flux-core.sh" | tail -1)"
  else
    echo "vendor-flux: no flux installed and no $vendor/build-flux-core.sh: the Flux tests will skip"
    exit 0
  fi
fi
[ -x "$prefix/bin/flux" ] || { echo "vendor-flux: error: $prefix/bin/flux missing" >&2; exit 1; }
# flux-accounting (fair-share priorities, mf_priority.so) into the same prefix, for the tests of
# rush beside a site's fair-share (about 45 s the first time, cached after).
if [ ! -e "$prefix/lib/flux/job-manager/plugins/mf_priority.so" ] && [ -x "$vendor/build-flux-accounting.sh" ]; then
  echo "vendor-flux: building flux-accounting from $vendor (cached after the first run)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO bash "$vendor/build-flux-accounting.sh" "$prefix" >/dev/null
fi
# Fluxion (flux-sched 0.54: the scheduler production Flux systems run) into its own prefix, so
# instances keep sched-simple unless a test loads Fluxion (tests/flux/fluxion.py); 4-6 min on 2
# cores the first time, cached after. RUSH_FLUXION_PREFIX overrides where the tests look.
fluxion="${RUSH_FLUXION_PREFIX:-/opt/flux-sched}"
if [ ! -e "$fluxion/lib/flux/modules/sched-fluxion-qmanager.so" ] && [ -x "$vendor/build-flux-sched.sh" ]; then
  echo "vendor-flux: building Fluxion from $vendor into $fluxion (cached after the first run)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO nice -n 10 bash "$vendor/build-flux-sched.sh" "$fluxion" "$prefix" >/dev/null \
    || echo "vendor-flux: the Fluxion build failed: the Fluxion tests will skip"
fi

site="$(ls -d "$prefix"/lib/python3*/site-packages 2>/dev/null | head -1)"
[ -n "$site" ] || { echo "vendor-flux: error: no Python bindings under $prefix/lib" >&2; exit 1; }
purelib="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$site" >"$purelib/flux-core.pth"
# The bindings need cffi's runtime, ply (jobspec/constraint parsers) and yaml, which the venv
# does not have; versions as Debian 12 ships them are fine.
if ! "$PY" -c 'import _cffi_backend, ply, yaml' 2>/dev/null; then
  "$PY" -m pip install -q --disable-pip-version-check cffi ply pyyaml
fi
"$PY" -c 'import flux, flux.job, flux.scheduler' || { echo "vendor-flux: error: the venv cannot import flux" >&2; exit 1; }
echo "$prefix"
