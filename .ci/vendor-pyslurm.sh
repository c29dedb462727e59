#!/bin/bash
# Build pyslurm against the Slurm 25.11 that .ci/vendor-slurm.sh installs, and install it into
# the given virtual environment (rush's `pyslurm` RJMS backend needs it). Idempotent and cached.
#
# Usage:  .ci/vendor-pyslurm.sh VENV_PYTHON        e.g. .ci/vendor-pyslurm.sh .venv/bin/python
# Env:    RUSH_SLURM_25_PREFIX (default /opt/slurm-25.11, as tests/slurm/cluster.py),
#         PYSLURM_VERSION (default 25.11.2: its major.minor must be the Slurm's),
#         RUSH_WHEEL_CACHE (default ~/.cache/rush/wheels).
# Does nothing (exit 0, with a message) when the Slurm install is absent: pyslurm compiles
# against a Slurm's headers and libslurmfull and cannot be built without one.
# Cache:  the wheel is built once (about 4 min on 2 cores) into RUSH_WHEEL_CACHE under a key
#         made of the install's .built-from, the prefix, pyslurm's version and the Python tag,
#         because the wheel links that install's libslurmfull by path (rpath); a rebuilt Slurm
#         gets a new key. A venv that already has this wheel is left alone (under a second).
set -euo pipefail
py=${1:?usage: $0 VENV_PYTHON}
prefix=${RUSH_SLURM_25_PREFIX:-/opt/slurm-25.11}
version=${PYSLURM_VERSION:-25.11.2}
cache=${RUSH_WHEEL_CACHE:-$HOME/.cache/rush/wheels}

if [ ! -f "$prefix/.built-from" ] || [ ! -f "$prefix/include/slurm/slurm.h" ]; then
  echo "vendor-pyslurm: no Slurm built in $prefix (.ci/vendor-slurm.sh builds it); pyslurm not installed"
  exit 0
fi
if [ ! -x "$py" ]; then
  echo "vendor-pyslurm: $py is not an executable Python (pass the venv's python)" >&2
  exit 2
fi
# slurm_version.h has only SLURM_VERSION_NUMBER (0x190b07 is 25.11.7).
number=$(sed -n 's/^#define SLURM_VERSION_NUMBER \(0x[0-9a-fA-F]*\).*/\1/p' "$prefix/include/slurm/slurm_version.h")
if [ -z "$number" ]; then
  echo "vendor-pyslurm: no SLURM_VERSION_NUMBER in $prefix/include/slurm/slurm_version.h" >&2
  exit 2
fi
slurm_version=$((number >> 16 & 255)).$((number >> 8 & 255)).$((number & 255))
if [ "${slurm_version%.*}" != "${version%.*}" ]; then
  echo "vendor-pyslurm: pyslurm $version is for Slurm ${version%.*}, $prefix has Slurm $slurm_version;" \
    "set PYSLURM_VERSION to a ${slurm_version%.*}.x release" >&2
  exit 2
fi
# A compiler and the interpreter's headers (Debian: build-essential, python3-dev).
if ! command -v cc >/dev/null || ! "$py" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
  echo "vendor-pyslurm: building pyslurm needs a C compiler and Python.h for $py" \
    "(apt-get install build-essential python3-dev)" >&2
  exit 1
fi
pytag=$("$py" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
key=$(printf '%s\n' "$(cat "$prefix/.built-from")" "$prefix" "$version" "$pytag" | sha256sum | cut -c1-16)
dir=$cache/pyslurm-$version-$key
venv=$("$py" -c 'import sys; print(sys.prefix)')
marker=$venv/.rush-pyslurm

if [ "$(cat "$marker" 2>/dev/null)" = "$key" ] &&
  PYSLURM_DISABLE_AUTO_INIT=1 "$py" -c "import pyslurm, sys; sys.exit(pyslurm.__version__ != '$version')" 2>/dev/null; then
  echo "vendor-pyslurm: pyslurm $version for $prefix already installed"
  exit 0
fi

wheel=$(ls "$dir"/pyslurm-*.whl 2>/dev/null | head -1 || true)
if [ -z "$wheel" ]; then
  echo "vendor-pyslurm: building pyslurm $version against Slurm $slurm_version in $prefix (about 4 min)"
  mkdir -p "$cache"
  tmp=$(mktemp -d "$cache/.build-XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  log=$tmp/build.log
  # Both cores: Cython's translation (PYSLURM_BUILD_JOBS) and the C compiles (build_ext's
  # parallel, through setuptools' DIST_EXTRA_CONFIG).
  jobs=$(nproc)
  printf '[build_ext]\nparallel = %s\n' "$jobs" >"$tmp/build.cfg"
  # The wheel's extensions link $prefix/lib/slurm/libslurmfull.so by rpath. --no-cache-dir:
  # pip's own wheel cache knows nothing of the Slurm it was built against.
  if ! SLURM_INCLUDE_DIR=$prefix/include SLURM_LIB_DIR=$prefix/lib PYSLURM_BUILD_JOBS=$jobs \
    DIST_EXTRA_CONFIG=$tmp/build.cfg "$py" -m pip wheel --no-cache-dir --no-deps --no-binary pyslurm "pyslurm==$version" -w "$tmp/wheel" >"$log" 2>&1; then
    tail -30 "$log" >&2
    echo "vendor-pyslurm: building pyslurm failed (log above)" >&2
    exit 1
  fi
  # Whole or nothing: a killed build leaves no half wheel in the cache.
  rm -rf "$dir"
  mv "$tmp/wheel" "$dir"
  wheel=$(ls "$dir"/pyslurm-*.whl | head -1)
fi
"$py" -m pip install --quiet --no-deps --force-reinstall "$wheel"
echo "$key" >"$marker"
echo "vendor-pyslurm: installed $(basename "$wheel") (Slurm $slurm_version in $prefix)"
